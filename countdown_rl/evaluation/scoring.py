"""Score a model on any task's held-out rows at one or more token budgets (eval, training, demo, benchmarks).

1. Generate (:mod:`countdown_rl.generation.sampling`): once, at the largest budget, with transformers or vLLM.
2. Score: :func:`score_samples` asks the task to judge every completion (outcome correct / partial / failed,
   the extracted answer, the task's main reward) and makes one JSON-ready row each, keeping the row's
   ground-truth columns.
3. Aggregate: :func:`summarise` turns rows into a :class:`BudgetResult` (accuracy on first samples, token use,
   truncation, unbiased pass@k). :func:`evaluate_budgets` cuts the same completions down to each smaller
   budget -- identical to separate runs, since a completion never sees its budget -- and
   :func:`evaluate_rows` is its one-budget form.
4. :func:`markdown_table` renders results; the files that hold them are :mod:`countdown_rl.evaluation.eval_files`'s.
5. :func:`outcome_metrics` gives the few fractions the trainer logs as ``eval_accuracy`` etc.
6. :func:`blind_split` puts the task's best blind rule (Countdown: the best fixed expression that never reads the
   target) on the same rows and splits each budget's correct answers into rows that rule solves and the rest;
   :func:`blind_table` renders it beside the results.

The task comes from the registry (:func:`countdown_rl.tasks.get_task`): this module imports no task. torch,
transformers and vllm are imported inside the functions that need them, so the report stays fast.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from countdown_rl.files import format_number, format_percent, render_markdown_table
from countdown_rl.generation.backends import get_backend
from countdown_rl.generation.compiled import compiled_for  # noqa: F401  (a public name of this module before)
from countdown_rl.generation.sampling import Completion, cut_to_budget
from countdown_rl.tasks import DEFAULT_TASK, Outcome, get_task

if TYPE_CHECKING:
    from countdown_rl.tasks.base import Task

__all__ = [
    "RENAMED_KEYS",
    "SAMPLE_FIELDS",
    "BudgetResult",
    "blind_split",
    "blind_table",
    "correct_beyond_rule",
    "evaluate_budgets",
    "evaluate_rows",
    "markdown_table",
    "outcome_metrics",
    "pass_at_k",
    "score_samples",
    "summarise",
    "upgrade_keys",
]



# --------------------------------------------------------------------------------------------------------------
# Data types
# --------------------------------------------------------------------------------------------------------------

RENAMED_KEYS = {"num_puzzles": "num_rows"}
"""Old key -> new key in ``eval.json``'s results and meta: files written under the old name must still read."""


def upgrade_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every old key of :data:`RENAMED_KEYS` under its new name (a new key already there wins).

    >>> upgrade_keys({"num_puzzles": 3, "accuracy": 0.5})
    {'accuracy': 0.5, 'num_rows': 3}
    """
    upgraded = {k: v for k, v in data.items() if k not in RENAMED_KEYS}
    for old, new in RENAMED_KEYS.items():
        if old in data:
            upgraded.setdefault(new, data[old])
    return upgraded

@dataclass
class BudgetResult:
    """Aggregate scores at one token budget.

    Accuracy and the correct / partial / failed counts are over each row's FIRST sample (greedy or sample 0),
    so they are comparable between greedy and sampled runs; token statistics, truncation and pass@k use every
    completion.
    """

    max_tokens: int
    num_rows: int
    num_samples: int
    accuracy: float
    correct: int
    partial: int
    failed: int
    mean_tokens: float
    max_tokens_used: int
    utilisation: float
    truncation_rate: float
    mean_tokens_correct: float | None
    mean_tokens_incorrect: float | None
    pass_at_k: dict[int, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (pass@k keys stay ints here; JSON turns them into strings).

        >>> r = summarise([{"outcome": "correct", "num_tokens": 4, "truncated": False, "sample_index": 0}], 8)
        >>> r.to_dict()["accuracy"], r.to_dict()["utilisation"]
        (1.0, 0.5)
        """
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BudgetResult:
        """Inverse of :meth:`to_dict`, also after a JSON round trip (string pass@k keys); unknown keys are ignored.

        Files written before a key was renamed still load (:data:`RENAMED_KEYS`).

        >>> r = summarise([{"outcome": "failed", "num_tokens": 2, "truncated": False, "sample_index": 0}], 4).to_dict()
        >>> r["num_puzzles"] = r.pop("num_rows")  # an eval.json written before the rename
        >>> BudgetResult.from_dict(r).num_rows
        1
        """
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in upgrade_keys(data).items() if k in known}
        values["pass_at_k"] = {int(k): float(v) for k, v in (data.get("pass_at_k") or {}).items()}
        return cls(**values)


# --------------------------------------------------------------------------------------------------------------
# Scoring and aggregation
# --------------------------------------------------------------------------------------------------------------


SAMPLE_FIELDS = ("prompt", "completion", "answer", "outcome", "reward", "num_tokens", "truncated", "sample_index")
"""What every sample row holds besides the task's ground-truth columns (and ``max_tokens`` in samples.jsonl)."""


def _json_safe(value: Any) -> Any:
    """Ground-truth values as JSON can hold them (numpy scalars and arrays from datasets become Python)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _resolve_task(task: Task | str | None) -> Task:
    return get_task(task or DEFAULT_TASK) if task is None or isinstance(task, str) else task


def score_samples(
    rows: Sequence[Mapping[str, Any]],
    prompts: Sequence[Any],
    completions: Sequence[Sequence[Completion]],
    *,
    task: Task | str | None = None,
) -> list[dict[str, Any]]:
    """One row per completion, problem-major: the task's columns, prompt, completion, answer, outcome, ...

    >>> rows = score_samples([{"nums": [7, 7, 65], "target": 51}], ["p"],
    ...                      [[Completion("<answer>(65 - 7) - 7</answer>", 9, False)]], task="countdown")
    >>> rows[0]["answer"], rows[0]["outcome"], rows[0]["reward"], rows[0]["nums"]
    ('(65 - 7) - 7', 'correct', 1.0, [7, 7, 65])
    """
    task = _resolve_task(task)
    if not len(rows) == len(prompts) == len(completions):
        raise ValueError(f"{len(rows)} rows, {len(prompts)} prompts and {len(completions)} completion lists")
    out = []
    for row, prompt, samples in zip(rows, prompts, completions):
        truth = {column: _json_safe(row[column]) for column in task.columns}
        for index, completion in enumerate(samples):
            verdict = task.judge(completion.text, row)
            out.append(
                {
                    **truth,
                    "prompt": prompt,
                    "completion": completion.text,
                    "answer": verdict.answer,
                    "outcome": verdict.outcome.value,
                    "reward": verdict.reward,
                    "num_tokens": completion.num_tokens,
                    "truncated": completion.truncated,
                    "sample_index": index,
                }
            )
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one row: ``1 - C(n - c, k) / C(n, k)`` with n samples of which c are correct.

    >>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 2), pass_at_k(4, 0, 4), pass_at_k(4, 1, 4)
    (0.25, 0.5, 0.0, 1.0)
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    # Product form: the binomials themselves overflow floats for large n.
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def _pass_ks(num_samples: int) -> list[int]:
    """1, 2, 4, ... below num_samples, and num_samples itself."""
    ks = [2**i for i in range(num_samples.bit_length()) if 2**i < num_samples]
    return [*ks, num_samples]


def summarise(samples: Sequence[Mapping[str, Any]], max_tokens: int, num_samples: int = 1) -> BudgetResult:
    """Aggregate rows from :func:`score_samples` (``num_samples`` consecutive rows per evaluated row) at one budget.

    >>> rows = [{"outcome": o, "num_tokens": t, "truncated": t == 8, "sample_index": 0}
    ...         for o, t in [("correct", 4), ("partial", 6), ("failed", 8)]]
    >>> r = summarise(rows, max_tokens=8)
    >>> r.accuracy, (r.correct, r.partial, r.failed), r.mean_tokens, r.truncation_rate
    (0.3333333333333333, (1, 1, 1), 6.0, 0.3333333333333333)
    """
    if max_tokens <= 0 or num_samples < 1:
        raise ValueError(f"need max_tokens > 0 and num_samples >= 1, got {max_tokens}, {num_samples}")
    if not samples:
        raise ValueError("no samples to summarise")
    if len(samples) % num_samples:
        raise ValueError(f"{len(samples)} rows are not a whole number of evaluated rows x {num_samples} samples")
    groups = [samples[i : i + num_samples] for i in range(0, len(samples), num_samples)]  # one per evaluated row
    for group in groups:
        if [row["sample_index"] for row in group] != list(range(num_samples)):
            raise ValueError("samples must be row-major with sample_index 0..num_samples-1 for each row")
    first = [Outcome(group[0]["outcome"]) for group in groups]
    tokens = [int(row["num_tokens"]) for row in samples]
    correct_tokens = [int(r["num_tokens"]) for r in samples if r["outcome"] == Outcome.CORRECT.value]
    incorrect_tokens = [int(r["num_tokens"]) for r in samples if r["outcome"] != Outcome.CORRECT.value]
    mean_tokens = sum(tokens) / len(tokens)
    ks = _pass_ks(num_samples) if num_samples > 1 else []
    hits = [sum(row["outcome"] == Outcome.CORRECT.value for row in group) for group in groups]
    return BudgetResult(
        max_tokens=max_tokens,
        num_rows=len(groups),
        num_samples=num_samples,
        accuracy=first.count(Outcome.CORRECT) / len(groups),
        correct=first.count(Outcome.CORRECT),
        partial=first.count(Outcome.PARTIAL),
        failed=first.count(Outcome.FAILED),
        mean_tokens=mean_tokens,
        max_tokens_used=max(tokens),
        utilisation=mean_tokens / max_tokens,
        truncation_rate=sum(bool(row["truncated"]) for row in samples) / len(samples),
        mean_tokens_correct=sum(correct_tokens) / len(correct_tokens) if correct_tokens else None,
        mean_tokens_incorrect=sum(incorrect_tokens) / len(incorrect_tokens) if incorrect_tokens else None,
        pass_at_k={k: sum(pass_at_k(num_samples, c, k) for c in hits) / len(hits) for k in ks},
    )


def blind_split(task: Task | str | None, samples_by_budget: Mapping[int, Sequence[Mapping[str, Any]]],
                results: Sequence[BudgetResult]) -> dict[str, Any] | None:
    """The task's best blind rule on the evaluated rows, and each budget's correct first answers split by whether
    that rule solves the row (``eval.json``'s ``blind_rule``); None for a task without a blind rule.

    >>> rows = [{"nums": [1, 2, 3], "target": 6, "outcome": "correct", "num_tokens": 3, "truncated": False,
    ...          "sample_index": 0}, {"nums": [2, 9, 3], "target": 15, "outcome": "correct", "num_tokens": 3,
    ...          "truncated": False, "sample_index": 0}]
    >>> split = blind_split("countdown", {8: rows}, [summarise(rows, 8)])
    >>> split["accuracy"], split["by_budget"]["8"]
    (0.5, {'correct_on_solved': 1, 'correct_on_rest': 1})
    """
    if not results:
        return None
    task = _resolve_task(task)
    first = [row for row in samples_by_budget.get(results[0].max_tokens, ()) if row["sample_index"] == 0]
    rule = task.blind_rule(first) if first else None
    if rule is None:
        return None
    by_budget = {}
    for result in results:
        firsts = [row for row in samples_by_budget.get(result.max_tokens, ()) if row["sample_index"] == 0]
        if len(firsts) != len(first):
            continue
        hits = [row["outcome"] == Outcome.CORRECT.value for row in firsts]
        by_budget[str(result.max_tokens)] = {
            "correct_on_solved": sum(h and s for h, s in zip(hits, rule.solved)),
            "correct_on_rest": sum(h and not s for h, s in zip(hits, rule.solved)),
        }
    return {"rule": rule.describe(), "accuracy": rule.accuracy, "solved": sum(rule.solved),
            "total": len(rule.solved), "by_budget": by_budget}


def correct_beyond_rule(blind: Mapping[str, Any] | None, max_tokens: int) -> int | None:
    """From a :func:`blind_split`: the correct first answers at ``max_tokens`` on the rows the blind rule does not
    solve (None: not recorded).

    >>> correct_beyond_rule({"by_budget": {"8": {"correct_on_solved": 1, "correct_on_rest": 2}}}, 8)
    2
    """
    split = (blind or {}).get("by_budget", {}).get(str(max_tokens))
    return None if split is None else split["correct_on_rest"]


def outcome_metrics(result: BudgetResult) -> dict[str, float]:
    """What the trainer logs at each evaluation (as ``eval/accuracy`` etc.): fractions of rows and mean tokens.

    >>> r = summarise([{"outcome": "partial", "num_tokens": 6, "truncated": False, "sample_index": 0}], 8)
    >>> outcome_metrics(r)
    {'accuracy': 0.0, 'partial': 1.0, 'failed': 0.0, 'mean_completion_tokens': 6.0}
    """
    return {
        "accuracy": result.accuracy,
        "partial": result.partial / result.num_rows,
        "failed": result.failed / result.num_rows,
        "mean_completion_tokens": result.mean_tokens,
    }


# --------------------------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------------------------


def prompts_for(task: Task, rows: Sequence[Mapping[str, Any]], template: str | None) -> list[Any]:
    return [row["prompt"] if row.get("prompt") is not None else task.prompt(row, template) for row in rows]


def _load_tokenizer(name_or_path):
    from countdown_rl.models.loading import load_tokenizer

    return load_tokenizer(name_or_path)


def evaluate_budgets(
    model,
    tokenizer,
    rows: Sequence[Mapping[str, Any]],
    *,
    budgets: Iterable[int],
    task: Task | str | None = None,
    template: str | None = None,
    batch_size: int = 32,
    temperature: float = 0.0,
    num_samples: int = 1,
    seed: int = 0,
    backend: str = "transformers",
    chat_template_kwargs: Mapping[str, Any] | None = None,
    show_progress: bool = True,
    compiled=None,
) -> list[tuple[BudgetResult, list[dict[str, Any]]]]:
    """Score ``rows`` (rows with the task's columns and optionally ``prompt``) at every budget from ONE
    generation at the largest budget; results in budget order. ``task`` is a task or its name (default
    countdown), ``template`` one of its prompt templates (default: the task's), used for rows without a prompt.
    ``backend="compiled"`` uses ``compiled`` (a ``CompiledGeneration``; default: one sized for these prompts).

    A completion never sees its budget, so its first B tokens are what a run with ``max_new_tokens=B`` makes
    (the same batches, the same seed): cutting is exact for greedy decoding and for seeded sampling alike.
    """
    budgets = sorted(set(int(b) for b in budgets))
    if not budgets or budgets[0] <= 0:
        raise ValueError(f"budgets must be positive token counts, got {budgets}")
    if not rows:
        raise ValueError("no rows to evaluate")
    generator = get_backend(backend)  # an unknown name: one line listing the known ones
    task = _resolve_task(task)
    rows = [dict(row) for row in rows]
    prompts = prompts_for(task, rows, template)
    if tokenizer is None:  # vLLM: the engine's tokenizer, or the one saved with the model
        tokenizer = model.get_tokenizer() if hasattr(model, "get_tokenizer") else _load_tokenizer(model)
    extra = generator.evaluation_keywords(tokenizer, prompts, budgets[-1], chat_template_kwargs, compiled)
    completions = generator.evaluation_generator()(
        model,
        tokenizer,
        prompts,
        max_new_tokens=budgets[-1],
        batch_size=batch_size,
        temperature=temperature,
        num_samples=num_samples,
        seed=seed,
        chat_template_kwargs=chat_template_kwargs,
        show_progress=show_progress,
        **extra,
    )
    out = []
    for budget in budgets:
        cut = [[cut_to_budget(c, budget, tokenizer) for c in samples] for samples in completions]
        scored = score_samples(rows, prompts, cut, task=task)
        out.append((summarise(scored, budget, num_samples), scored))
    return out


def evaluate_rows(model, tokenizer, rows: Sequence[Mapping[str, Any]], *, max_tokens: int,
                  **options: Any) -> tuple[BudgetResult, list[dict[str, Any]]]:
    """:func:`evaluate_budgets` at one budget: generate for ``rows`` and score them.

    ``model`` is a transformers model, or for ``backend="vllm"`` a ``vllm.LLM`` or a model path; ``options`` are
    :func:`evaluate_budgets`' keywords. Returns the :class:`BudgetResult` and the per-sample rows of
    :func:`score_samples`.
    """
    [(result, scored)] = evaluate_budgets(model, tokenizer, rows, budgets=[max_tokens], **options)
    return result, scored


# --------------------------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------------------------


def markdown_table(results: Sequence[BudgetResult]) -> str:
    """One row per budget: accuracy, outcome counts, token use, truncation and pass@k (when sampled)."""
    ks = sorted({k for r in results for k in r.pass_at_k})
    headers = [
        "max tokens", "accuracy", "correct / partial / failed", "mean tokens", "max tokens used", "utilisation",
        "truncated", "mean tokens (correct)", "mean tokens (incorrect)", *[f"pass@{k}" for k in ks],
    ]
    rows = [
        [
            r.max_tokens,
            format_percent(r.accuracy),
            f"{r.correct} / {r.partial} / {r.failed}",
            format_number(r.mean_tokens),
            r.max_tokens_used,
            format_percent(r.utilisation),
            format_percent(r.truncation_rate),
            format_number(r.mean_tokens_correct),
            format_number(r.mean_tokens_incorrect),
            *[format_percent(r.pass_at_k.get(k)) for k in ks],
        ]
        for r in results
    ]
    return render_markdown_table(headers, rows)


def blind_table(blind: Mapping[str, Any], results: Sequence[BudgetResult], label: str = "max tokens") -> str:
    """The best blind rule's row above one row per budget: accuracy, and correct answers on the rows the rule
    solves and on the rest (the part of an accuracy a target-blind answer could not have had)."""
    solved, rest = blind["solved"], blind["total"] - blind["solved"]
    headers = ["", "accuracy", f"correct of the {solved} rows the rule solves", f"correct of the {rest} others"]
    rows = [[f"best target-blind rule ({blind['rule']})", format_percent(blind["accuracy"]), solved, 0]]
    for r in results:
        split = blind["by_budget"].get(str(r.max_tokens))
        if split is not None:
            rows.append([f"{label} {r.max_tokens}", format_percent(r.accuracy), split["correct_on_solved"],
                         split["correct_on_rest"]])
    return render_markdown_table(headers, rows)
