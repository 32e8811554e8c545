"""Every recipe goes through the real, strict parser; the Qwen3 recipes carry the report's hyperparameters.

Recipes are parsed by ``countdown_rl.training.recipe.parse_args(["--config", path])``, the same call ``countdown-rl train``
makes, so a key TRL or countdown-rl no longer knows fails here. The GPU recipes set ``bf16: true``, which
TrainingArguments refuses on a machine without a GPU unless ``use_cpu`` is set; the tests add only
``--use_cpu true`` on the command line (it moves nothing but the device: every key of the file is still parsed
and validated by GRPOConfig/CountdownGRPOConfig/ModelConfig).
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from pathlib import Path

import pytest

from countdown_rl.training.recipe import check_recipe, parse_args

from tests.helpers.env import ROOT
RECIPES = sorted((ROOT / "recipes").rglob("*.yaml"))
QWEN_DIR = ROOT / "recipes" / "countdown" / "qwen3-1.7b"
QWEN = sorted(QWEN_DIR.glob("*.yaml"))
SMOKE = sorted((ROOT / "recipes" / "smoke").glob("*.yaml"))

# Recipe -> the report's trained accuracy (the reference report, performance table), quoted in the recipe's header.
REPORT_ACCURACY = {
    "grpo_256": "32.91%",
    "grpo_512": "53.32%",
    "grpo_1024": "61.04%",
    "dr_grpo_256": "26.86%",
    "dr_grpo_512": "55.18%",
    "dr_grpo_1024": "4.88%",
}
VARIANTS = {"grpo_1024_lora", "grpo_512_24gb", "grpo_1024_multigpu_server"}
# Training processes a recipe is written for (its header's launch line); 1 unless listed.
TRAINING_PROCESSES = {"grpo_1024_multigpu_server": 4}
# Section comments, open-r1 style, each a line of its own.
SECTIONS = [
    "# Model arguments",
    "# Data and prompt",
    "# GRPO / Dr.GRPO",
    "# Generation (vLLM colocate)|# Generation (vLLM server)",
    "# Batch sizes",
    "# Optimisation",
    "# Evaluation",
    "# Logging and saving",
]
CPU_OVERRIDE = ["--use_cpu", "true"]


@lru_cache(maxsize=None)
def _parse(path: str, *overrides: str):
    return parse_args(["--config", path, *overrides])


def parse(path: Path, *overrides: str):
    return _parse(str(path), *CPU_OVERRIDE, *overrides)


def value(x):
    """Enum members (IntervalStrategy, ...) as their plain value."""
    return getattr(x, "value", x)


def ids(paths):
    return [str(p.relative_to(ROOT / "recipes")) for p in paths]


# Folders whose recipes tests/tasks/<task>/test_recipes.py check against their seeds.
TASK_RECIPE_DIRS = ["gsm8k/qwen2.5-1.5b-instruct", "math/qwen2.5-math-1.5b", "math/qwen2.5-1.5b", "format_copy",
                    "reasoning_gym"]


def test_the_recipe_set_is_complete():
    assert {p.stem for p in QWEN} == set(REPORT_ACCURACY) | VARIANTS
    assert {p.stem for p in SMOKE} == {"cpu_tiny", "cpu_tiny_lora"}
    others = {p for d in TASK_RECIPE_DIRS for p in (ROOT / "recipes" / d).glob("*.yaml")}
    assert set(RECIPES) == set(QWEN) | set(SMOKE) | others, "a recipe outside the tested folders: give it assertions"


@pytest.mark.parametrize("path", RECIPES, ids=ids(RECIPES))
def test_every_recipe_parses_strictly_and_passes_the_recipe_checks(path, monkeypatch):
    script_args, training_args, model_args = parse(path)
    assert model_args.model_name_or_path
    assert training_args.loss_type is not None and training_args.scale_rewards is not None  # derived, never set
    # check_recipe refuses use_vllm where vllm is not installed (it needs CUDA); pretend it is, to run the rest
    # (reward names, reward weights, batch divisibility, test_size, peft import, merge_adapter).
    monkeypatch.setattr(importlib.import_module("trl.import_utils"), "is_vllm_available", lambda *a, **k: True)
    check_recipe(script_args, training_args, model_args)


def test_recipes_do_not_set_the_derived_trl_keys():
    import yaml

    for path in RECIPES:
        keys = set(yaml.safe_load(path.read_text()))
        assert not keys & {"loss_type", "scale_rewards", "steps_per_generation"}, path


@pytest.mark.parametrize("path", QWEN, ids=ids(QWEN))
def test_qwen_recipe_reproduces_the_report(path):
    script_args, t, model_args = parse(path)
    algorithm, budget = re.match(r"(dr_grpo|grpo)_(\d+)", path.stem).groups()
    budget = int(budget)
    processes = TRAINING_PROCESSES.get(path.stem, 1)

    # model and data
    assert model_args.model_name_or_path == "Qwen/Qwen3-1.7B"
    assert model_args.dtype == "bfloat16" and t.bf16 is True
    assert model_args.attn_implementation in ("sdpa", "flash_attention_2")
    assert script_args.dataset_name == "justinphan3110/Countdown-Tasks-3to4"
    assert script_args.test_size == 1024
    assert script_args.prompt_template == "r1_zero"
    assert script_args.reward_funcs == ["countdown"]

    # algorithm from the file name, and what countdown-rl derives from it
    assert t.algorithm == algorithm
    if algorithm == "grpo":
        assert (t.reduction, t.std_normalization, t.loss_type, t.scale_rewards) == (
            "masked_mean", "group", "grpo", "group")
    else:
        assert (t.reduction, t.std_normalization, t.loss_type, t.scale_rewards) == (
            "masked_mean_drgrpo", "none", "dr_grpo", "none")
        assert t.drgrpo_num_tokens in (None, budget)  # the reference setup's constant: the generation budget
    assert t.baseline == "group_mean"
    assert t.max_completion_length == budget

    # rollouts: 64 completions = 8 prompts x group of 8, one rollout per optimizer step
    assert t.generation_batch_size == 64
    assert t.num_generations == 8
    assert t.generation_batch_size % t.num_generations == 0
    assert t.generation_batch_size // t.num_generations == 8
    assert t.per_device_train_batch_size * processes * t.gradient_accumulation_steps == 64
    if processes == 1:
        assert t.steps_per_generation == t.gradient_accumulation_steps
    assert (t.per_device_eval_batch_size * processes) % t.num_generations == 0

    # optimisation
    assert t.epsilon == pytest.approx(0.2)
    assert t.epsilon_high is None or t.epsilon_high == pytest.approx(0.2)  # None: the trainer uses epsilon
    assert t.temperature == pytest.approx(1.0)
    assert t.beta == 0.0
    assert t.num_iterations == 1
    assert t.max_steps == 80
    if model_args.use_peft:
        assert 1e-5 <= t.learning_rate <= 5e-5, "LoRA wants a higher rate than full fine-tuning's 7e-6"
    else:
        assert t.learning_rate == pytest.approx(7e-6)

    # generation
    assert t.use_vllm is True
    assert t.vllm_mode == ("server" if "server" in path.stem else "colocate")
    if t.vllm_mode == "colocate":
        assert t.vllm_max_model_length is None or t.vllm_max_model_length >= budget + 256  # prompt + completion

    # evaluation, logging, saving
    assert value(t.eval_strategy) == "steps" and t.eval_steps == 10
    assert script_args.eval_subset_size > 0
    assert t.logging_steps == 1 and t.log_completions is True
    assert t.save_steps and t.save_total_limit
    assert "tensorboard" in t.report_to
    assert t.push_to_hub is False
    assert t.seed == 42
    assert Path(t.output_dir).as_posix().endswith(f"outputs/countdown/qwen3-1.7b/{path.stem}")


@pytest.mark.parametrize("path", QWEN, ids=ids(QWEN))
def test_qwen_recipe_is_documented(path):
    text = path.read_text()
    lines = text.splitlines()
    positions = [next((i for i, line in enumerate(lines) if line in s.split("|")), -1) for s in SECTIONS]
    assert all(p >= 0 for p in positions), [s for s, p in zip(SECTIONS, positions) if p < 0]
    assert positions == sorted(positions), "sections out of order"
    assert f"--config recipes/countdown/qwen3-1.7b/{path.stem}.yaml" in text
    assert "accelerate launch --config_file accelerate_configs/" in text
    for config in re.findall(r"accelerate_configs/([\w-]+)\.yaml", text):
        assert (ROOT / "accelerate_configs" / f"{config}.yaml").is_file(), config
    if path.stem in REPORT_ACCURACY:
        assert REPORT_ACCURACY[path.stem] in text.split("\n\n")[0], "the report's figure belongs in the header"
    # the reference setup -> TRL mapping, and the prompt decision with its alternative
    for term in ("generation_batch_size", "num_generations", "steps_per_generation", "num_iterations"):
        assert term in text
    assert "enable_thinking: false" in text


def test_the_documented_chat_alternative_parses(tmp_path):
    source = QWEN_DIR / "grpo_256.yaml"
    text = source.read_text().replace("prompt_template: r1_zero", "prompt_template: chat")
    copy = tmp_path / "grpo_256_chat.yaml"
    copy.write_text(text + "chat_template_kwargs: {enable_thinking: false}\n")
    script_args, t, _ = parse(copy)
    assert script_args.prompt_template == "chat"
    assert t.chat_template_kwargs == {"enable_thinking": False}


@pytest.mark.parametrize("stem", ["grpo_1024_lora", "grpo_512_24gb"])
def test_lora_recipes(stem):
    _, t, model_args = parse(QWEN_DIR / f"{stem}.yaml")
    assert model_args.use_peft is True
    assert (model_args.lora_r, model_args.lora_alpha, model_args.lora_dropout) == (64, 128, 0.05)
    assert model_args.lora_target_modules == "all-linear"


def test_24gb_recipe_saves_memory_without_changing_the_update():
    _, t, _ = parse(QWEN_DIR / "grpo_512_24gb.yaml")
    assert t.gradient_checkpointing is True
    assert t.vllm_mode == "colocate" and t.vllm_enable_sleep_mode is True
    assert t.vllm_gpu_memory_utilization <= 0.3
    assert t.per_device_train_batch_size < 4
    assert t.per_device_train_batch_size * t.gradient_accumulation_steps == t.generation_batch_size == 64


def test_multigpu_server_recipe_commands_add_up():
    from trl.scripts.vllm_serve import make_parser

    path = QWEN_DIR / "grpo_1024_multigpu_server.yaml"
    _, t, _ = parse(path)
    text = path.read_text()
    assert t.vllm_mode == "server"

    # `trl vllm-serve` commands: a GPU of their own, and arguments TRL's server parser accepts
    servers = re.findall(r"CUDA_VISIBLE_DEVICES=(\d+) trl vllm-serve (.+?) \\\n#\s+(.+)\n", text)
    assert [gpu for gpu, _, _ in servers] == ["4", "7"]
    for _, first, second in servers:
        server_args, extra = make_parser().parse_args_and_config(
            f"{first} {second}".split(), return_remaining_strings=True
        )
        assert not extra
        assert server_args.model == "Qwen/Qwen3-1.7B"
        assert server_args.max_model_len >= t.max_completion_length + 256
        assert (server_args.host, server_args.port) == (t.vllm_server_host, t.vllm_server_port)

    launches = re.findall(
        r"CUDA_VISIBLE_DEVICES=([\d,]+) accelerate launch --config_file accelerate_configs/ddp.yaml \\\n"
        r"#\s+--num_processes (\d+)",
        text,
    )
    assert launches == [("0,1,2,3", "4"), ("0,1,2,3,4,5,6", "7")]  # never the vLLM GPU

    # the 7-process alternative's overrides satisfy TRL's rules (and make a smaller batch than 64)
    alt = re.search(
        r"--generation_batch_size (\d+) --per_device_train_batch_size (\d+) --gradient_accumulation_steps (\d+)\n",
        text,
    )
    generation, micro, accumulation = map(int, alt.groups())
    assert generation % (micro * 7) == 0 and generation % t.num_generations == 0
    assert generation // (micro * 7) == accumulation  # one rollout per optimizer step
    assert (t.per_device_eval_batch_size * 7) % t.num_generations == 0
    _, t7, _ = parse(path, "--generation_batch_size", str(generation), "--per_device_train_batch_size", str(micro),
                     "--gradient_accumulation_steps", str(accumulation))
    assert t7.generation_batch_size == generation


@pytest.mark.parametrize("path", SMOKE, ids=ids(SMOKE))
def test_smoke_recipe(path, tmp_path):
    # No --use_cpu override: the smoke recipes must parse as written on a CPU-only machine.
    script_args, t, model_args = _parse(str(path))
    assert model_args.model_name_or_path == "outputs/tiny-model"
    assert script_args.dataset_name == "outputs/smoke-puzzles.jsonl"
    assert t.use_cpu is True and t.bf16 is False and t.use_vllm is False
    assert t.gradient_checkpointing is False
    assert t.max_steps == 4
    assert (t.per_device_train_batch_size, t.num_generations, t.max_completion_length) == (8, 4, 16)
    assert t.generation_batch_size % t.num_generations == 0
    assert script_args.test_size == 16 and script_args.eval_subset_size == 8
    assert value(t.eval_strategy) == "no"
    assert t.report_to in ([], "none", ["none"])
    assert value(t.save_strategy) == "steps" and t.save_steps == 2
    assert script_args.reward_funcs == ["countdown"]
    assert model_args.use_peft is (path.stem == "cpu_tiny_lora")
    # tests point the recipe at their own model and data on the command line
    script_args, t, model_args = parse_args([
        "--config", str(path), "--model_name_or_path", str(tmp_path / "m"),
        "--dataset_name", str(tmp_path / "p.jsonl"), "--output_dir", str(tmp_path / "out"),
    ])
    assert model_args.model_name_or_path == str(tmp_path / "m")
    assert script_args.dataset_name == str(tmp_path / "p.jsonl")
    assert t.output_dir == str(tmp_path / "out")


@pytest.mark.parametrize(
    "source", [QWEN_DIR / "grpo_256.yaml", QWEN_DIR / "dr_grpo_1024.yaml", ROOT / "recipes/smoke/cpu_tiny.yaml"],
    ids=lambda p: p.stem,
)
@pytest.mark.parametrize("key", ["not_a_real_key", "max_prompt_length"])  # the second one TRL 1.x removed
def test_an_unknown_key_fails_naming_the_key_and_the_file(source, key, tmp_path):
    copy = tmp_path / f"broken_{source.name}"
    copy.write_text(source.read_text() + f"\n{key}: 512\n")
    with pytest.raises(ValueError) as excinfo:
        parse_args(["--config", str(copy), *CPU_OVERRIDE])
    message = str(excinfo.value)
    assert key in message and str(copy) in message


@pytest.mark.slow
def test_cpu_smoke_recipe_trains_end_to_end(tiny_model_dir, tmp_path):
    from countdown_rl.commands.train import main
    from countdown_rl.tasks.countdown.puzzles import generate_countdown
    from countdown_rl.data.jsonl import write_jsonl

    puzzles = tmp_path / "puzzles.jsonl"
    write_jsonl(generate_countdown(64, seed=0), puzzles)
    out = tmp_path / "out"
    code = main([
        "--config", str(ROOT / "recipes/smoke/cpu_tiny.yaml"), "--model_name_or_path", str(tiny_model_dir),
        "--dataset_name", str(puzzles), "--output_dir", str(out),
    ])
    assert code == 0
    assert (out / "checkpoint-2").is_dir() and (out / "checkpoint-4").is_dir()
    assert (out / "config.json").is_file()
