"""Offline GSM8K-like word problems in GSM8K's layout (no download), for tests and demos.

1. Draw one of six kinds (packs, wages, sharing, a percentage, pages over three days, a recipe), a name and an item.
2. Draw the numbers; compute every step and the gold exactly with ``fractions.Fraction``.
3. Write the question and a worked solution with ``<<a*b=c>>`` calculator annotations, ending with ``#### gold``.
"""

from __future__ import annotations

import random
from fractions import Fraction

__all__ = ["generate_gsm8k"]

_NAMES = ("Natalia", "Weng", "Betty", "Julie", "James", "Albert", "Ken", "Alexis", "Tina", "Mark", "Ana", "Ravi")
_ITEMS = ("apples", "pencils", "stickers", "marbles", "cookies", "books", "shells", "cards")


def _num(value: int, rng: random.Random) -> str:
    """A number as a question writes it: 1,200 now and then (a third of the time, from 1,000 up)."""
    return f"{value:,}" if value >= 1000 and rng.random() < 1 / 3 else str(value)


def _decimal(value: Fraction) -> str:
    """A terminating fraction as a decimal ("2.5"); the generators only divide by 2, 4, 5 and 10."""
    if value.denominator == 1:
        return str(value.numerator)
    scale = 10 ** 4
    whole = value * scale
    assert whole.denominator == 1, value  # a generator bug, not data
    text = f"{whole.numerator // scale}.{whole.numerator % scale:04d}".rstrip("0")
    return text


def _packs(rng: random.Random, name: str, item: str) -> tuple[str, list[str], Fraction]:
    packs, per_pack = rng.randint(2, 30), rng.randint(3, 60)
    total = packs * per_pack
    given = rng.randint(1, total - 1)
    left = total - given
    question = (
        f"{name} buys {packs} packs of {item}. Each pack has {per_pack} {item}. "
        f"{name} gives away {_num(given, rng)} {item}. How many {item} does {name} have left?"
    )
    steps = [
        f"{name} buys {packs}*{per_pack} = <<{packs}*{per_pack}={total}>>{total} {item}.",
        f"After giving some away, {name} has {total}-{given} = <<{total}-{given}={left}>>{left} {item} left.",
    ]
    return question, steps, Fraction(left)


def _wages(rng: random.Random, name: str, _item: str) -> tuple[str, list[str], Fraction]:
    rate, hours, days = rng.randint(8, 60), rng.randint(2, 10), rng.randint(3, 30)
    daily = rate * hours
    total = daily * days
    question = (
        f"{name} earns ${rate} an hour and works {hours} hours a day. "
        f"How much money does {name} earn in {days} days?"
    )
    steps = [
        f"In a day {name} earns {rate}*{hours} = $<<{rate}*{hours}={daily}>>{daily}.",
        f"In {days} days {name} earns {daily}*{days} = $<<{daily}*{days}={total}>>{total}.",
    ]
    return question, steps, Fraction(total)


def _share(rng: random.Random, name: str, item: str) -> tuple[str, list[str], Fraction]:
    friends, each, extra = rng.randint(2, 12), rng.randint(2, 40), rng.randint(1, 20)
    total = friends * each
    final = each + extra
    question = (
        f"{name} has {_num(total, rng)} {item} and shares them equally among {friends} friends. "
        f"Then each friend finds {extra} more {item}. How many {item} does each friend have now?"
    )
    steps = [
        f"Each friend gets {total}/{friends} = <<{total}/{friends}={each}>>{each} {item}.",
        f"Each friend then has {each}+{extra} = <<{each}+{extra}={final}>>{final} {item}.",
    ]
    return question, steps, Fraction(final)


def _percent(rng: random.Random, _name: str, item: str) -> tuple[str, list[str], Fraction]:
    percent = rng.choice((10, 20, 25, 40, 50, 60, 75, 80))
    stock = rng.randint(1, 60) * 20  # a multiple of 20: every listed percent of it is whole
    sold = stock * percent // 100
    left = stock - sold
    question = (
        f"A shop has {_num(stock, rng)} {item}. On Monday it sells {percent}% of them. "
        f"How many {item} are left?"
    )
    steps = [
        f"The shop sells {stock}*{percent}/100 = <<{stock}*{percent}/100={sold}>>{sold} {item}.",
        f"So {stock}-{sold} = <<{stock}-{sold}={left}>>{left} {item} are left.",
    ]
    return question, steps, Fraction(left)


def _pages(rng: random.Random, name: str, _item: str) -> tuple[str, list[str], Fraction]:
    monday, fewer = rng.randint(5, 80), rng.randint(1, 4)
    tuesday = 2 * monday
    wednesday = tuesday - fewer
    first_two = monday + tuesday
    total = first_two + wednesday
    question = (
        f"{name} reads {monday} pages on Monday, twice as many on Tuesday, and {fewer} fewer pages on Wednesday "
        f"than on Tuesday. How many pages does {name} read in the three days?"
    )
    steps = [
        f"On Tuesday {name} reads 2*{monday} = <<2*{monday}={tuesday}>>{tuesday} pages.",
        f"On Wednesday {name} reads {tuesday}-{fewer} = <<{tuesday}-{fewer}={wednesday}>>{wednesday} pages.",
        f"Monday and Tuesday make {monday}+{tuesday} = <<{monday}+{tuesday}={first_two}>>{first_two} pages.",
        f"In total {first_two}+{wednesday} = <<{first_two}+{wednesday}={total}>>{total} pages.",
    ]
    return question, steps, Fraction(total)


def _recipe(rng: random.Random, name: str, _item: str) -> tuple[str, list[str], Fraction]:
    # A non-integer gold now and then ("2.5"), as a few GSM8K answers are.
    cakes = rng.choice((2, 4, 5, 10))
    cups = rng.randint(cakes + 1, 6 * cakes)
    food = rng.choice(("flour", "sugar", "milk", "oats"))
    per_cake = Fraction(cups, cakes)
    question = (
        f"{name} uses {cups} cups of {food} to bake {cakes} cakes. How many cups of {food} does one cake need?"
    )
    value = _decimal(per_cake)
    steps = [f"One cake needs {cups}/{cakes} = <<{cups}/{cakes}={value}>>{value} cups of {food}."]
    return question, steps, per_cake


_GENERATORS = (_packs, _wages, _share, _percent, _pages, _recipe)


def generate_gsm8k(n: int, seed: int = 0) -> list[dict[str, str]]:
    """``n`` synthetic word problems in GSM8K's layout (``question``, ``answer`` ending with ``#### N``).

    Golds are computed from the drawn numbers; a fifth of the integer golds of 1,000 and up are written with a
    thousands comma after ``####`` (real GSM8K never does; it exercises the parser).

    >>> row = generate_gsm8k(1, seed=0)[0]
    >>> sorted(row), row["answer"].splitlines()[-1].startswith("#### ")
    (['answer', 'question'], True)
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        make = rng.choice(_GENERATORS)
        question, steps, gold = make(rng, rng.choice(_NAMES), rng.choice(_ITEMS))
        final = _decimal(gold)
        if gold.denominator == 1 and gold >= 1000 and rng.random() < 0.2:
            final = f"{gold.numerator:,}"
        rows.append({"question": question, "answer": "\n".join([*steps, f"#### {final}"])})
    return rows
