"""The model card (``countdown_rl.evaluation.model_card``): what a run says about itself where people read it."""

from countdown_rl.evaluation.model_card import write_model_card
from countdown_rl.runs.record import RunRecord, write_run_record


def test_the_model_card_names_the_schedule(tmp_path):
    """A run trained with a budget schedule says so in its card; a run without one does not."""
    scheduled, fixed = tmp_path / "scheduled", tmp_path / "fixed"
    write_run_record(scheduled, RunRecord(task="countdown", algorithm="dr_grpo", max_completion_length=64,
                                          budget_schedule=[[0, 40], [150, 48], [300, 64]]))
    write_run_record(fixed, RunRecord(task="countdown", algorithm="grpo", max_completion_length=64))
    assert "| budget schedule | 40 (step 0) -> 48 (step 150) -> 64 (step 300) tokens |" in (
        write_model_card(scheduled).read_text())
    assert "budget schedule" not in write_model_card(fixed).read_text()


def test_the_front_matter_holds_any_dataset_description(tmp_path):
    """A reasoning-gym run's dataset description (options as JSON: ": ", "{", quotes, commas) stays one item of
    ``datasets`` in front matter that the Hub's card parser reads, as PEFT's adapter save does with this file."""
    from huggingface_hub import ModelCard

    dataset = ('generated reasoning_gym rows (datasets=chain_sum:1 config={"chain_sum": {"max_digits": 1, '
               '"operators": ["+", "-"]}}) # not a comment')
    write_run_record(tmp_path, RunRecord(task="reasoning_gym", algorithm="grpo", model="runs/sft: warm",
                                         dataset=dataset, max_completion_length=48))
    card = ModelCard(write_model_card(tmp_path).read_text())
    assert card.data.datasets == [dataset]
    assert card.data.base_model == "runs/sft: warm"
    assert card.data.tags == ["countdown-rl", "grpo", "trl", "reasoning_gym"]
