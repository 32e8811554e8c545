"""The recipe's data keys (:class:`DataArguments`, shared by ``countdown-rl train`` and ``countdown-rl eval``) and
the row counts one preparation leaves (:class:`DataInfo`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from countdown_rl.algorithms.curriculum import DATA_ORDERS, DEFAULT_REPLAY, DEFAULT_STAGES
from countdown_rl.tasks import DEFAULT_TASK, TASKS, get_task

if TYPE_CHECKING:
    from countdown_rl.tasks.base import Task

__all__ = ["GENERATED", "ON_INVALID", "DataArguments", "DataInfo"]

GENERATED = "generated"
"""``dataset_name`` that means: rows from the task's offline generator (``num_generated_rows`` of them)."""
ON_INVALID = ("raise", "drop")


@dataclass
class DataArguments:
    """Which task and data a run trains or evaluates on: the recipe's data keys, shared by ``train`` and ``eval``."""

    task: str = field(
        default=DEFAULT_TASK,
        metadata={"help": f"Task: one of {', '.join(sorted(TASKS))}.", "choices": sorted(TASKS)},
    )
    task_options: list[str] = field(
        default_factory=list,
        metadata={"help": "Task options as key=value (e.g. unary_minus=true for countdown, levels=5 for math)."},
    )
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "Hub dataset id, local .jsonl/.json/.parquet file or folder, or 'generated' (the task's "
                  "offline generator). Default: the task's dataset."},
    )
    dataset_config: str | None = field(
        default=None, metadata={"help": "Hub dataset config (e.g. 'main' for openai/gsm8k). Default: the task's."}
    )
    dataset_split: str = field(default="train", metadata={"help": "Split of the source dataset to train on."})
    eval_dataset_split: str | None = field(
        default=None,
        metadata={"help": "Split of the source to hold out (e.g. 'test'; problems also in it leave the training "
                  "rows). Default: hold out test_size rows of dataset_split."},
    )
    test_size: int = field(
        default=1024,
        metadata={"help": "Held-out rows: carved from dataset_split, or sampled (seeded) from eval_dataset_split."},
    )
    split_method: str = field(
        default="random",
        metadata={"help": "'random' (seeded, after dedupe) or a task's positional split ('tinyzero' for countdown)."},
    )
    split_seed: int = field(default=42, metadata={"help": "Seed of the held-out split (same in train and eval)."})
    on_invalid_rows: str = field(
        default="raise",
        metadata={"help": "A row the task cannot use: 'raise' (an error naming the row) or 'drop' (dropped and "
                  "counted).", "choices": list(ON_INVALID)},
    )
    prompt_template: str | None = field(
        default=None, metadata={"help": "Prompt template of the task (default: the task's)."}
    )
    num_generated_rows: int = field(
        default=2048, metadata={"help": "With dataset_name 'generated': how many rows the task's generator makes."}
    )
    data_order: str = field(
        default="random",
        metadata={"help": "Order of the training rows (the held-out rows are untouched): 'random' (TRL shuffles "
                  "each epoch), 'easy_to_hard' (stable sort by the task's difficulty) or 'staged' (difficulty "
                  "stages, each shuffled with a replay of earlier stages, seeded by split_seed). Not 'random': "
                  "shuffle_dataset is set to false.", "choices": list(DATA_ORDERS)},
    )
    curriculum_stages: int | None = field(
        default=None,
        metadata={"help": f"data_order 'staged': how many difficulty stages (default {DEFAULT_STAGES})."},
    )
    curriculum_replay: float | None = field(
        default=None,
        metadata={"help": "data_order 'staged': rows replayed from earlier stages, as a fraction of each stage's "
                  f"size, in [0, 1] (default {DEFAULT_REPLAY})."},
    )

    def __post_init__(self):
        if isinstance(self.task_options, str):  # one option on the command line
            self.task_options = [self.task_options]

    def get_task(self) -> Task:
        """The task with its options, checked (one-line errors naming the key)."""
        return get_task(self.task, self.task_options)

    def check(self) -> Task:
        """Everything that can be wrong in these keys without reading data; returns the task."""
        task = self.get_task()
        template = self.prompt_template or task.default_template
        if template not in task.prompt_templates:
            raise ValueError(
                f"prompt_template: {template!r} is not a template of task {task.name!r}; "
                f"choose one of {sorted(task.prompt_templates)}"
            )
        methods = ["random", *task.positional_splits]
        if self.split_method not in methods:
            raise ValueError(f"split_method: {self.split_method!r} is not one of {methods} (task {task.name!r})")
        if self.on_invalid_rows not in ON_INVALID:
            raise ValueError(f"on_invalid_rows: must be one of {list(ON_INVALID)}, got {self.on_invalid_rows!r}")
        if self.test_size <= 0:
            raise ValueError(f"test_size: must be positive, got {self.test_size}")
        if self.num_generated_rows <= 0:
            raise ValueError(f"num_generated_rows: must be positive, got {self.num_generated_rows}")
        if self.eval_dataset_split is not None and self.split_method != "random":
            raise ValueError(f"eval_dataset_split: cannot be combined with split_method={self.split_method!r}")
        if self.data_order not in DATA_ORDERS:
            raise ValueError(f"data_order: must be one of {list(DATA_ORDERS)}, got {self.data_order!r}")
        for key in ("curriculum_stages", "curriculum_replay"):
            if getattr(self, key) is not None and self.data_order != "staged":
                raise ValueError(f"{key}: only used with data_order 'staged', not {self.data_order!r}")
        if self.curriculum_stages is not None and self.curriculum_stages < 1:
            raise ValueError(f"curriculum_stages: must be >= 1, got {self.curriculum_stages}")
        if self.curriculum_replay is not None and not 0.0 <= self.curriculum_replay <= 1.0:
            raise ValueError(f"curriculum_replay: must be in [0, 1], got {self.curriculum_replay}")
        return task


@dataclass(frozen=True)
class DataInfo:
    """Row counts of one :func:`prepare_dataset` call (``duplicates_removed`` also counts training rows whose
    problem is in the held-out rows)."""

    task: str
    source: str
    raw: int
    invalid_dropped: int
    filtered_out: int
    duplicates_removed: int
    train: int
    test: int
    split_method: str
    data_order: str = "random"

    def as_dict(self) -> dict[str, Any]:
        """The counts as a plain dict (for logs and JSON)."""
        return asdict(self)
