"""A few CountdownGRPOTrainer steps, launched by tests/training/test_trainer.py with torchrun (1 or 2 processes).

Usage: torchrun --nproc_per_node N tests/helpers/ddp_run.py MODEL_DIR OUT_JSON ALGORITHM [SHARED_PROMPT on|off]
The global batch is fixed (8 completions per step); each process gets 8 / N. Rank 0 writes the loss trajectory.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from countdown_rl.generation.vllm_import import leave_vllm_out  # noqa: E402

leave_vllm_out()  # nothing here generates with vLLM (as `countdown-rl train` without use_vllm): keep it out
import torch  # noqa: E402
import trl.trainer.grpo_trainer as grpo_trainer_module  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from countdown_rl.runs.engine import end_launched_process  # noqa: E402
from countdown_rl.tasks import get_task  # noqa: E402
from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer  # noqa: E402
from tests.helpers.trainers import char_diversity_reward  # noqa: E402
from tests.helpers.vllm_standin import HFSamplingVLLMStandIn  # noqa: E402


def main():
    model_dir, out_path, algorithm = sys.argv[1:4]
    shared_prompt = (sys.argv[4] if len(sys.argv) > 4 else "on") == "on"
    world = int(os.environ.get("WORLD_SIZE", "1"))
    grpo_trainer_module.VLLMGeneration = HFSamplingVLLMStandIn  # generation backend cut at its class boundary
    rows = [{"prompt": f"Numbers {a} {b}, target {a + b}:", "nums": [a, b], "target": a + b} for a, b in
            [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11, 12), (13, 14), (15, 16)]]
    config = CountdownGRPOConfig(
        output_dir=os.path.join(os.path.dirname(out_path), f"run-{world}"),
        algorithm=algorithm, use_cpu=True, bf16=False, report_to="none", gradient_checkpointing=False,
        per_device_train_batch_size=8 // world, num_generations=4, max_completion_length=8, max_steps=3,
        learning_rate=1e-3, logging_steps=1, save_strategy="no", seed=0, use_vllm=True, beta=0.0,
        dataloader_num_workers=0, shared_prompt_forward=shared_prompt,
    )
    trainer = CountdownGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir), reward_funcs=[char_diversity_reward], args=config,
        train_dataset=Dataset.from_list(rows), processing_class=AutoTokenizer.from_pretrained(model_dir),
        task=get_task("countdown"),  # outcome metrics gathered across processes
    )
    trainer.train()
    if trainer.accelerator.is_main_process:
        history = [h for h in trainer.state.log_history if "loss" in h]
        with open(out_path, "w") as f:
            json.dump({k: [h[k] for h in history] for k in ("loss", "reward", "grad_norm")}, f)
    end_launched_process(0)  # every rank at a barrier, then out without tearing the process group down


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
