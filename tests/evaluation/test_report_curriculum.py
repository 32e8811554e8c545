"""The report (``countdown_rl.evaluation.report``) on curriculum runs: the run list names a budget schedule."""

from countdown_rl.evaluation.report import load_run, results_markdown
from countdown_rl.runs.record import RunRecord, write_run_record


def test_the_report_names_the_schedule(tmp_path):
    """The report's run list says which run trained with a budget schedule, once, and the other's fixed budget."""
    scheduled, fixed = tmp_path / "scheduled", tmp_path / "fixed"
    write_run_record(scheduled, RunRecord(task="countdown", algorithm="dr_grpo", max_completion_length=64,
                                          budget_schedule=[[0, 40], [150, 48], [300, 64]]))
    write_run_record(fixed, RunRecord(task="countdown", algorithm="grpo", max_completion_length=64))
    for run in (scheduled, fixed):
        (run / "trainer_state.json").write_text('{"global_step": 0, "log_history": []}')
    runs = [load_run(scheduled), load_run(fixed)]
    listing = results_markdown(runs, [None, None]).split("## Runs")[1]
    assert "max_completion_length 64, budget_schedule 40 (step 0) -> 48 (step 150) -> 64 (step 300)," in listing
    assert listing.count("budget_schedule") == 1
