"""The demo's table: the best target-blind rule kept per model in demo_results.json."""

import pytest

from countdown_rl.demo import table


def test_the_results_blind_rule_keeps_every_models_split_and_refuses_other_puzzles():
    import doctest

    runner = doctest.DocTestRunner()
    for example in doctest.DocTestFinder().find(table.blind_rule_by_model, globs=vars(table)):
        runner.run(example)
    assert runner.tries > 0 and runner.failures == 0
    rule = {"rule": "a+b+c", "accuracy": 0.25, "solved": 1, "total": 4}
    before = {**rule, "by_budget": {"8": {"correct_on_solved": 1, "correct_on_rest": 0}}}
    after = {**rule, "by_budget": {"8": {"correct_on_solved": 1, "correct_on_rest": 2}}}
    assert table.blind_rule_by_model({"sft": before, "trained": after}) == {
        **rule, "by_model": {"sft": before["by_budget"], "trained": after["by_budget"]}}
    assert table.blind_rule_by_model({"sft": None, "trained": None}) is None
    with pytest.raises(ValueError, match="not on the same puzzles"):
        table.blind_rule_by_model({"sft": before, "trained": {**after, "total": 5}})
