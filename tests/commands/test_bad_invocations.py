"""Every user-facing command errs in one line: a table of bad invocations run as real subprocesses.

Each case runs ``python -m countdown_rl.cli COMMAND ...`` in a scratch folder holding a tiny model, puzzles, a
recipe and a few bad files, offline (``HF_HUB_OFFLINE=1``: no Hub request can leave). For each one:

1. the exit code is not 0;
2. stderr has exactly one error line, ``countdown-rl COMMAND: error: ...``, naming the thing (the words given
   below), and it is the last line; no traceback, no usage block, no other line that says "error". (Lines before
   it may only be ``countdown-rl train``'s INFO log records, for errors found after the data is read);
3. nothing was written or deleted: the scratch folder's listing, sizes and mtimes are the same before and after.

The cases run four at a time (a ``train`` process spends ~9-14 s CPU importing torch and TRL; the others are
fast). The ``train`` cases with a twin tested in process (tests/commands/test_train.py: the same mistake, the
same words) run as processes in the slow tier only; every other case runs in the default tier. The
output-directory guard and the Hub checks of ``train`` are tested in process in tests/training/test_reliability.py.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import pytest

# the cases and how a run is judged are shared with benchmarks/reliability.py (which may not import a test)
from benchmarks._common import CASES, build_scratch, problems, run, snapshot

@pytest.fixture(scope="module")
def scratch(tmp_path_factory, tiny_model_dir):
    return build_scratch(tmp_path_factory.mktemp("scratch"), tiny_model_dir)


# train case -> its in-process twin in tests/commands/test_train.py (RECIPE_ERRORS, or the test named)
SLOW_CASES = {
    "train-missing-recipe": "test_a_recipe_that_is_no_file_is_one_line",
    "train-recipe-is-a-folder": "test_a_recipe_that_is_no_file_is_one_line",
    "train-negative-max-steps": "max-steps-negative",
    "train-zero-batch": "batch-zero",
    "train-budget-schedule-not-from-step-0": "budget-schedule-not-from-step-0",
    "train-bad-yaml": "invalid-yaml",
    "train-unknown-key-in-yaml": "unknown-key-in-yaml",
    "train-wrongly-typed-key": "max-completion-length-not-an-int",
    "train-zero-budget": "max-completion-length-zero",
    "train-group-does-not-divide-batch": "batch-not-divisible-by-group",
    "train-missing-checkpoint": "resume-from-missing-path",
    "train-hub-dataset-offline": "test_dataset_errors_are_one_line_before_the_model_is_loaded",
    "train-hub-model-offline": "test_model_errors_are_one_line_before_training",
    "train-lora-target-matches-nothing": "test_model_errors_are_one_line_before_training",
    "train-empty-after-filtering": "test_model_errors_are_one_line_before_training",
}


def check_cases(cases: list[str], scratch) -> None:
    before = snapshot(scratch)
    # Each case its own output_dir: concurrent jobs on one folder are refused (runs.guard), which is not the point here
    def own_output_dir(case):
        return [f"out-{case}" if arg == "out" else arg for arg in CASES[case][0]]

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(cases, pool.map(lambda case: run(own_output_dir(case), scratch), cases)))
    failures = {case: found for case, done in results.items() if (found := problems(case, done))}
    assert not failures, "\n".join(f"{case}: {found}\n{results[case].stderr[-1500:]}"
                                   for case, found in failures.items())
    assert snapshot(scratch) == before, "a bad invocation wrote or deleted something"


def test_every_bad_invocation_is_one_line_and_touches_nothing(scratch):
    assert len(CASES) >= 25 and set(SLOW_CASES) < set(CASES)
    twins = (Path(__file__).parent / "test_train.py").read_text()  # read, not imported: tests import no test
    assert all(f'"{twin}":' in twins or f"def {twin}(" in twins for twin in SLOW_CASES.values())
    cases = [case for case in CASES if case not in SLOW_CASES]
    assert {case.split("-")[0] for case in cases} == {case.split("-")[0] for case in CASES}  # every command
    check_cases(cases, scratch)


@pytest.mark.slow
def test_the_other_train_cases_as_processes(scratch):
    check_cases(sorted(SLOW_CASES), scratch)
