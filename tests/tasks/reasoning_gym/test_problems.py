"""reasoning-gym's generators behind the task (countdown_rl.tasks.reasoning_gym.problems): options checked, rows
generated per seed and regenerated from their ``source``."""

from __future__ import annotations

import json
import math

import pytest

from countdown_rl.tasks import get_task
from countdown_rl.tasks.reasoning_gym.problems import (
    HASH_SEEDED,
    check_datasets,
    dataset_config,
    dataset_names,
    dataset_seed,
    generate_rows,
    parse_source,
    source_entry,
    source_problem,
)

reasoning_gym = pytest.importorskip("reasoning_gym")

TINY = 'config={"chain_sum": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}}'


def fresh_entry(source: str) -> dict:
    """The entry ``source`` names, made by reasoning-gym itself (none of the task's caches): its curriculum at the
    recorded levels, then the recorded config keys over them."""
    import dataclasses

    from reasoning_gym.factory import DATASETS, create_curriculum

    fields = json.loads(source)
    name, levels = fields["dataset"], fields.get("levels")
    dataset_cls, config_cls = DATASETS[name]
    if levels is None:
        config = config_cls(seed=fields["seed"], size=fields["size"], **fields["config"])
    else:
        curriculum = create_curriculum(name)
        for attr, level in (levels.items() if isinstance(levels, dict) else ((a, levels) for a in curriculum.attributes)):
            curriculum.set_attr_level(attr, level)
        config = dataclasses.replace(curriculum.generate_configuration({"seed": fields["seed"], "size": fields["size"]}),
                                     **fields["config"])
    return dataset_cls(config=config)[fields["index"]]


# --------------------------------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["datasets=chain_sm"], "datasets: unknown reasoning-gym dataset 'chain_sm'; near: chain_sum"),
        (['config={"chain_sum": {"bogus": 1}}'],
         "config: dataset 'chain_sum' takes no key 'bogus'; it takes: min_terms, max_terms, min_digits, max_digits"),
        (['config={"chain_sum": {"seed": 1}}'], "config: chain_sum.seed is set by the task"),
        (["datasets=chain_sum:0,lcm:0"], "datasets: the weights of 'chain_sum:0,lcm:0' sum to 0"),
        (["datasets=chain_sum:-1,lcm:2"], "datasets: 'chain_sum:-1': a weight must be a finite number >= 0"),
        (["datasets=chain_sum:nan"], "datasets: 'chain_sum:nan': a weight must be a finite number >= 0"),
        (["datasets=chain_sum:x"], "datasets: 'chain_sum:x': the weight after ':' must be a number"),
        (["datasets=chain_sum,chain_sum"], "datasets: 'chain_sum' is listed twice"),
        (["datasets= , "], "datasets: name at least one reasoning-gym dataset"),
        (["datasets=composite"], "datasets: 'composite' is reasoning-gym's own mixture"),
        (["datasets=chain_sum:1,composite:1"], "datasets: 'composite' is reasoning-gym's own mixture"),
        (['config={"lcm": {"min_value": 2}}'], "config: 'lcm' is not one of the datasets (chain_sum)"),
        (['levels={"lcm": 1}'], "levels: 'lcm' is not one of the datasets (chain_sum)"),
        (["config={bad"], "config='{bad' is not JSON"),
        (["levels=[1, 2]"], "levels='[1, 2]': expected a JSON object mapping dataset names to settings"),
        (['config={"chain_sum": 3}'], "config: chain_sum: expected {key: value}, got 3"),
        (['levels={"chain_sum": 99}'], "levels: chain_sum.num_terms=99: expected a level from 0 to 10"),
        (['levels={"chain_sum": -1}'], "levels: chain_sum.num_terms=-1: expected a level from 0 to 10"),
        (['levels={"chain_sum": {"colour": 1}}'], "levels: dataset 'chain_sum' has no difficulty attribute 'colour'"),
        (['levels={"chain_sum": true}'], "levels: chain_sum: expected a level (int) or {attribute: level}"),
        # reasoning-gym's own validate() is the judge of values
        (['config={"chain_sum": {"min_terms": 5, "max_terms": 2}}'],
         "config: chain_sum {'min_terms': 5, 'max_terms': 2}: reasoning-gym refuses it: max_terms must be >= min_terms"),
        (["timeout_seconds=-1"], "timeout_seconds=-1.0: expected >= 0"),
    ],
)
def test_bad_options_are_one_line_errors(options, message):
    with pytest.raises(ValueError) as err:
        get_task("reasoning_gym", options)
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_an_unknown_name_lists_the_near_ones_and_how_to_see_all():
    with pytest.raises(ValueError) as err:
        get_task("reasoning_gym", ["datasets=chain_sum,basic_arithmatic:2"])
    message = str(err.value)
    near = message.split("near: ")[1].split(" (")[0].split(", ")
    assert "basic_arithmetic" in near and set(near) <= set(dataset_names())
    assert f"(all {len(dataset_names())}: " in message and "\n" not in message
    with pytest.raises(ValueError) as err:
        get_task("reasoning_gym", ["datasets=qqqqqqqqqqqq"])
    assert "near:" not in str(err.value)  # nothing close: no list of guesses


def test_options_resolve_weights_config_and_levels():
    specs = check_datasets("chain_sum:3, lcm", {"chain_sum": {"max_terms": 3}}, {})
    assert [(s.name, s.weight) for s in specs] == [("chain_sum", 3.0), ("lcm", 1.0)]
    assert dict(specs[0].config) == {"max_terms": 3} and dict(specs[1].config) == {}
    # A level sets every difficulty attribute from reasoning-gym's curriculum; an explicit config key wins.
    easy, hard, mixed = (check_datasets("chain_sum", config, {"chain_sum": level})[0]
                         for config, level in (({}, 0), ({}, 3), ({"chain_sum": {"max_digits": 1}}, 3)))
    easy, hard, mixed = (dataset_config(s.name, s.config, s.levels) for s in (easy, hard, mixed))
    assert easy != hard and hard["max_terms"] > easy["max_terms"]
    assert mixed["max_digits"] == 1 and mixed["max_terms"] == hard["max_terms"]
    # The options print canonically (sorted JSON) and stay hashable.
    options = get_task("reasoning_gym", ['config={"chain_sum":{"max_terms":3,"min_terms":2}}']).options
    assert options.config == '{"chain_sum": {"max_terms": 3, "min_terms": 2}}' and hash(options)


def test_levels_work_for_datasets_with_tuple_config_fields():
    # countdown's curriculum resolves tuple values (its operators): the row records the level, not the values.
    spec, = check_datasets("countdown", {}, {"countdown": 0})
    row, = generate_rows((spec,), 1, seed=0)
    assert source_problem(row["question"], row["source"]) is None


def test_missing_extra_is_one_line_naming_it(monkeypatch):
    # sys.modules[name] = None makes `import reasoning_gym` raise ImportError: it simulates the
    # [reasoning-gym] extra not being installed (the task imports the library only when it is made).
    monkeypatch.setitem(__import__("sys").modules, "reasoning_gym", None)
    with pytest.raises(ValueError) as err:
        get_task("reasoning_gym")
    message = str(err.value)
    assert "reasoning-gym" in message and "[reasoning-gym]" in message and "\n" not in message
    get_task("countdown")  # the other tasks do not need it


# ------------------------------------------------------------------------------------------------ generation


def test_generate_is_deterministic_per_seed():
    task = get_task("reasoning_gym")
    rows = task.generate(20, seed=1)
    assert rows == task.generate(20, seed=1) != task.generate(20, seed=2)
    assert task.generate(0) == []
    assert all(set(row) == {"question", "answer", "source"} for row in rows)
    assert len({row["question"] for row in rows}) > 15  # not one question repeated
    with pytest.raises(ValueError, match="n must be >= 0"):
        task.generate(-1)


def test_a_mixture_follows_its_weights():
    task = get_task("reasoning_gym", ["datasets=chain_sum:3,lcm:1"])
    rows = task.generate(1000, seed=0)
    counts = {"chain_sum": 0, "lcm": 0}
    for row in rows:
        counts[json.loads(row["source"])["dataset"]] += 1
    # Each row draws chain_sum with p = 3/4: the count is Binomial(1000, 0.75), sd = sqrt(1000 * 0.75 * 0.25) ~ 13.7;
    # 5 sd (about 68 rows) is a band a correct draw leaves with probability below 1e-6.
    sd = math.sqrt(1000 * 0.75 * 0.25)
    assert abs(counts["chain_sum"] - 750) < 5 * sd and counts["chain_sum"] + counts["lcm"] == 1000
    # A dataset's i-th use takes its entry i: the indices of each dataset run 0, 1, 2, ...
    for name, count in counts.items():
        indices = [json.loads(r["source"])["index"] for r in rows if json.loads(r["source"])["dataset"] == name]
        assert indices == list(range(count))
    # A weight of 0 keeps a dataset out.
    rows = get_task("reasoning_gym", ["datasets=chain_sum:1,lcm:0"]).generate(50, seed=0)
    assert {json.loads(r["source"])["dataset"] for r in rows} == {"chain_sum"}


def test_each_rows_source_regenerates_its_question_and_answer():
    task = get_task("reasoning_gym", ["datasets=chain_sum:1,lcm:1", 'levels={"lcm": 1}', TINY])
    rows = task.generate(12, seed=7)
    assert {json.loads(r["source"])["dataset"] for r in rows} == {"chain_sum", "lcm"}
    for row in rows:
        fields = json.loads(row["source"])
        assert set(fields) == {"dataset", "config", "seed", "size", "index"} | ({"levels"} if fields["dataset"] == "lcm"
                                                                               else set())
        assert fields["seed"] == dataset_seed(7, fields["dataset"])  # drawn from the split seed and the name
        entry = fresh_entry(row["source"])  # reasoning-gym alone, from the source's fields
        assert (entry["question"], entry["answer"]) == (row["question"], row["answer"])
        assert task.row_problem(row) is None
        name, _dataset, cached = source_entry(row["source"])
        assert name == fields["dataset"] and cached["question"] == row["question"]
    # The config travels in the source: the tiny chain_sum config gives one-digit, two-term sums.
    tiny = [json.loads(r["source"]) for r in rows if json.loads(r["source"])["dataset"] == "chain_sum"]
    assert all(s["config"]["max_digits"] == 1 for s in tiny)


def test_a_tampered_row_is_a_row_problem():
    task = get_task("reasoning_gym")
    row, other = task.generate(2, seed=0)
    assert row["question"] != other["question"]
    assert "'question' differs from the entry its 'source' regenerates" in task.row_problem(
        {**row, "question": other["question"]})
    fields = json.loads(row["source"])
    moved = json.dumps({**fields, "index": 1})  # names the other row's entry
    assert "differs" in task.row_problem({**row, "source": moved})
    assert task.row_problem({**other, "source": moved}) is None
    problems = {
        "not json": "{",
        "a list": "[1, 2]",
        "no dataset": json.dumps({k: v for k, v in fields.items() if k != "dataset"}),
        "index past size": json.dumps({**fields, "index": fields["size"]}),
        "negative index": json.dumps({**fields, "index": -1}),
        "string seed": json.dumps({**fields, "seed": "0"}),
        "boolean index": json.dumps({**fields, "index": True}),
        "unknown dataset": json.dumps({**fields, "dataset": "chain_sm"}),
        "config refused": json.dumps({**fields, "config": {"min_terms": 5, "max_terms": 2}}),
        "config key unknown": json.dumps({**fields, "config": {"bogus": 1}}),
    }
    for what, source in problems.items():
        problem = task.row_problem({**row, "source": source})
        assert isinstance(problem, str) and problem and "\n" not in problem, what
    assert "unknown reasoning-gym dataset 'chain_sm'" in source_problem(row["question"], problems["unknown dataset"])
    assert source_problem(row["question"], None).startswith("'source' is not a JSON object")
    assert task.row_problem({"question": row["question"]}).startswith("'source' is missing")
    assert task.row_problem({**row, "question": "  "}).startswith("'question' is '  ', expected non-empty text")
    assert task.row_problem({**row, "question": 7}).startswith("'question' is 7")


def test_parse_source():
    source = json.dumps({"dataset": "lcm", "config": {"b": 1, "a": 2}, "seed": 3, "size": 9, "index": 8})
    assert parse_source(source) == ("lcm", '{"a": 2, "b": 1}', "null", 3, 9, 8)
    with pytest.raises(ValueError, match="index < size"):
        source_entry(json.dumps({"dataset": "lcm", "config": {}, "seed": 3, "size": 9, "index": 9}))


def test_generated_rows_from_the_module_match_the_task():
    specs = check_datasets("chain_sum", {}, {})
    assert generate_rows(specs, 5, seed=4) == get_task("reasoning_gym").generate(5, seed=4)


def test_two_split_seeds_give_unrelated_rows():
    """reasoning-gym seeds entry i with seed + i: passed through, split seeds 0 and 1 would share all rows but one."""
    task = get_task("reasoning_gym", ["datasets=lcm"])
    first, second = ({r["question"] for r in task.generate(100, seed=s)} for s in (0, 1))
    assert len(first & second) <= 5  # lcm draws two numbers from 1..100: a repeat by chance is rare, not 99 in 100


@pytest.mark.parametrize("name", HASH_SEEDED)
def test_a_hash_seeded_dataset_needs_a_fixed_pythonhashseed(name, monkeypatch):
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    with pytest.raises(ValueError) as err:
        get_task("reasoning_gym", [f"datasets={name}"])
    assert "export PYTHONHASHSEED=0" in str(err.value) and "\n" not in str(err.value)
    assert "allow_defective=true" in str(err.value)
    assert get_task("reasoning_gym", [f"datasets={name}", "allow_defective=true"]).options.specs[0].name == name
    monkeypatch.setenv("PYTHONHASHSEED", "0")  # what every process making or scoring its rows then inherits
    assert get_task("reasoning_gym", [f"datasets={name}"]).options.specs[0].name == name
