"""Data order across processes: a few CountdownGRPOTrainer steps on easy-to-hard rows; each rank writes what it saw.

Usage: torchrun --nproc_per_node N tests/helpers/order_run.py MODEL_DIR PUZZLES_JSONL OUT_DIR
The global batch is fixed (2 prompts x 4 completions per step); each process gets 8 / N completions. Each rank
writes ``rank<R>.json``: per reward call, the optimizer step and the ``[nums, target]`` rows it scored.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from countdown_rl.generation.vllm_import import leave_vllm_out  # noqa: E402

leave_vllm_out()  # nothing here generates with vLLM (as `countdown-rl train` without use_vllm): keep it out
import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from countdown_rl.runs.engine import end_launched_process  # noqa: E402
from countdown_rl.tasks import get_task  # noqa: E402
from countdown_rl.data.prepare import prepare_dataset  # noqa: E402
from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer  # noqa: E402


def main():
    model_dir, puzzles, out_dir = sys.argv[1:4]
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    task = get_task("countdown")
    train, _, _ = prepare_dataset(task, puzzles, test_size=4, order="easy_to_hard")
    seen = []

    def order_reward(completions, nums, target, trainer_state, **kwargs):
        seen.append({"step": trainer_state.global_step, "rows": [[list(n), int(t)] for n, t in zip(nums, target)]})
        return [len(set(c)) / (1 + len(c)) for c in completions]

    config = CountdownGRPOConfig(
        output_dir=os.path.join(out_dir, f"run-{world}"), use_cpu=True, bf16=False, report_to="none",
        gradient_checkpointing=False, per_device_train_batch_size=8 // world, num_generations=4,
        max_completion_length=4, max_steps=3, learning_rate=1e-3, logging_steps=1, save_strategy="no", seed=0,
        dataloader_num_workers=0,
    )
    config.apply_data_order("easy_to_hard")
    trainer = CountdownGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir), reward_funcs=[order_reward], args=config,
        train_dataset=train, processing_class=AutoTokenizer.from_pretrained(model_dir), task=task,
    )
    trainer.train()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(seen, f)
    end_launched_process(0)  # every rank at a barrier, then out without tearing the process group down


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
