"""``countdown-rl demo --task NAME --task_options K=V ...``: the task and its options as train and eval take them,
each bad one refused in one line before any model loads and before anything is written."""

import pytest

from countdown_rl.commands import demo as demo_cli
from countdown_rl.demo import task_rows
from countdown_rl.demo.pretrained import pretrained_config


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
    (["--task", "reasoning_gym", "--transfer_options", "datasets=chain_sun"], "near: chain_sum"),
    (["--transfer_options", "datasets=chain_sum"], "--transfer_options: another task's; Countdown's transfer rows are "
                                                   "its reference puzzles"),
    (["--task", "format_copy", "--num_generations", "1"], "--num_generations must be at least 2"),
    (["--task", "format_copy", "--learning_rate", "0"], "--learning_rate must be positive, got 0"),
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
    def config(*argv):
        return demo_cli.config_from_args(demo_cli.build_parser().parse_args(
            ["--model_name_or_path", str(tiny_model_dir), "--quick", *argv]))

    given = config("--task", "reasoning_gym", "--task_options", "datasets=chain_sum")
    assert (given.task, given.task_options, given.transfer_options) == ("reasoning_gym", ("datasets=chain_sum",), ())
    assert given.transfer_budgets == (given.max_completion_length,)  # the transfer rows are scored at its budget
    default = config("--task", "reasoning_gym")  # the measured mixture, and its transfer setting
    assert (default.task_options, default.transfer_options) == (task_rows.DEFAULT_OPTIONS["reasoning_gym"],
                                                                task_rows.DEFAULT_TRANSFER["reasoning_gym"])
    assert default.transfer_options and default.num_transfer > 0
    tuned = config("--task", "format_copy", "--transfer_options", "max_digits=5", "--learning_rate", "3e-5",
                   "--prompts_per_step", "6", "--num_generations", "4")
    assert tuned.transfer_options == ("max_digits=5",)
    assert (tuned.grpo_learning_rate, tuned.prompts_per_step, tuned.num_generations) == (3e-5, 6, 4)
    countdown = demo_cli.config_from_args(demo_cli.build_parser().parse_args(["--quick"]))
    assert (countdown.task, countdown.task_options, countdown.transfer_options) == ("countdown", (), ())


def test_lora_on_another_task_trains_at_its_measured_rate_unless_given_one(tiny_model_dir):
    def config(*argv):
        return demo_cli.config_from_args(demo_cli.build_parser().parse_args(
            ["--model_name_or_path", str(tiny_model_dir), "--task", "reasoning_gym", *argv]))

    full, lora, given = config(), config("--lora"), config("--lora", "--learning_rate", "3e-5")
    assert (full.lora, full.grpo_learning_rate) == (False, 1e-5)
    assert (lora.lora, lora.grpo_learning_rate) == (True, 1e-4)
    assert (given.lora, given.grpo_learning_rate) == (True, 3e-5)
    countdown = demo_cli.config_from_args(demo_cli.build_parser().parse_args(  # Countdown keeps its own rate
        ["--model_name_or_path", str(tiny_model_dir), "--lora"]))
    assert countdown.lora and countdown.grpo_learning_rate == pretrained_config(str(tiny_model_dir)).grpo_learning_rate


def test_several_runs_pass_the_task_on(tmp_path):
    parser = demo_cli.build_parser()
    options = ["datasets=chain_sum:1,lcm:1", "timeout_seconds=5"]
    args = parser.parse_args(["--seeds", "1", "2", "--task", "reasoning_gym", "--task_options", *options,
                              "--transfer_options", "datasets=lcm"])
    argv = demo_cli.child_argv(parser, args, seed=1)
    assert argv[argv.index("--task") + 1] == "reasoning_gym"
    assert argv[argv.index("--task_options") + 1: argv.index("--task_options") + 3] == options
    assert argv[argv.index("--transfer_options") + 1:][:1] == ["datasets=lcm"]
