"""``countdown-rl demo --task NAME --task_options K=V ...``: the task and its options as train and eval take them,
each bad one refused in one line before any model loads and before anything is written."""

import pytest

from countdown_rl.commands import demo as demo_cli


def _refusal(argv, tmp_path, capsys) -> str:
    out = tmp_path / "o"
    with pytest.raises(SystemExit) as exit_info:
        demo_cli.main([*argv, "--quick", "--output_dir", str(out)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("countdown-rl demo: error: "), err
    assert not out.exists()
    return err


@pytest.mark.parametrize(("argv", "expected"), [
    (["--task", "nosuch"], "argument --task: invalid choice: 'nosuch'"),
    (["--task", "reasoning_gym"], "--task reasoning_gym needs --task_options datasets="),
    (["--task", "reasoning_gym", "--task_options", "datasets=chain_sun"], "near: chain_sum"),
    (["--task", "reasoning_gym", "--task_options", "datasets=chain_sum", "colour=red"],
     "unknown reasoning_gym option 'colour'; known: allow_defective, config, datasets, levels, timeout_seconds"),
    (["--task", "gsm8k"], "--task gsm8k has no demonstrations"),
    (["--task", "countdown", "--task_options", "colour=red"], "unknown countdown option 'colour'"),
    (["--task_options", "unary_minus=true"], "--task_options: the demo's Countdown puzzles take none"),
    (["--task", "format_copy", "--task_options", "max_digits=3", "--sampling", "expression"],
     "--sampling: Countdown's, not --task format_copy's"),
])
def test_a_bad_task_or_option_is_one_line_before_a_model_loads(argv, expected, tmp_path, capsys, no_loading):
    err = _refusal(["--model_name_or_path", "smollm2", *argv], tmp_path, capsys)
    assert expected in err, err


def test_another_task_needs_a_real_model(tmp_path, capsys):
    err = _refusal(["--task", "format_copy"], tmp_path, capsys)
    assert "--task format_copy needs --model_name_or_path: the tiny demo is Countdown's" in err


def test_a_task_and_its_options_reach_the_config(tiny_model_dir):
    args = demo_cli.build_parser().parse_args(["--model_name_or_path", str(tiny_model_dir), "--quick", "--task",
                                               "reasoning_gym", "--task_options", "datasets=chain_sum"])
    config = demo_cli.config_from_args(args)
    assert (config.task, config.task_options) == ("reasoning_gym", ("datasets=chain_sum",))
    assert (config.num_transfer, config.transfer_budgets) == (0, ())  # the reference puzzles are Countdown's
    countdown = demo_cli.config_from_args(demo_cli.build_parser().parse_args(["--quick"]))
    assert (countdown.task, countdown.task_options) == ("countdown", ())


def test_several_runs_are_countdowns_only_so_far(tmp_path, capsys):
    err = _refusal(["--model_name_or_path", "smollm2", "--task", "reasoning_gym", "--task_options",
                    "datasets=chain_sum", "--seeds", "1", "2"], tmp_path, capsys)
    assert "--seeds and several --algorithm values combine Countdown's runs only, not --task reasoning_gym's" in err


def test_several_runs_pass_the_task_on(tmp_path):
    parser = demo_cli.build_parser()
    options = ["datasets=chain_sum:1,lcm:1", "timeout_seconds=5"]
    args = parser.parse_args(["--seeds", "1", "2", "--task", "reasoning_gym", "--task_options", *options])
    argv = demo_cli.child_argv(parser, args, seed=1)
    assert argv[argv.index("--task") + 1] == "reasoning_gym"
    assert argv[argv.index("--task_options") + 1: argv.index("--task_options") + 3] == options
