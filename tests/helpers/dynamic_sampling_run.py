"""Two dynamic-sampling steps over two processes, launched by tests/training/test_dynamic_sampling.py with torchrun.

Usage: torchrun --nproc_per_node 2 tests/helpers/dynamic_sampling_run.py MODEL_DIR OUT_DIR
One group per process (4 rows, num_generations 4), TRL's vLLM path with a stand-in backend; each rank writes
OUT_DIR/rank-R.json: per generation batch the puzzles of each round it scored and the puzzles it kept, and the
run's totals (``dynamic_sampling_ran``).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from countdown_rl.generation.vllm_import import leave_vllm_out  # noqa: E402

leave_vllm_out()  # the stand-in generates: keep vLLM out
import torch  # noqa: E402
import trl.trainer.grpo_trainer as grpo_trainer_module  # noqa: E402

from countdown_rl.runs.engine import end_launched_process  # noqa: E402
from tests.helpers.trainers import puzzle_rows, tiny_trainer  # noqa: E402
from tests.helpers.vllm_standin import HFSamplingVLLMStandIn  # noqa: E402
from tests.helpers.split_reward import G, batch_puzzles, puzzle_index, split_reward  # noqa: E402


def main():
    model_dir, out_dir = sys.argv[1:3]
    grpo_trainer_module.VLLMGeneration = HFSamplingVLLMStandIn  # generation backend cut at its class boundary
    trainer = tiny_trainer(model_dir, os.path.join(out_dir, "run"), reward=split_reward, task=None,
                           train_dataset=puzzle_rows(16), shuffle_dataset=False, per_device_train_batch_size=4,
                           max_steps=2, dynamic_sampling=True, use_vllm=True, dataloader_num_workers=0)
    batches = []
    score, fill = trainer._score_rollouts, trainer._dynamic_sampling_batch

    def scored(inputs):
        batches[-1]["rounds"].append([puzzle_index(row["prompt"]) for row in inputs[::G]])
        return score(inputs)

    def filled(inputs):
        batches.append({"rounds": []})
        output = fill(inputs)
        batches[-1]["kept"] = batch_puzzles(trainer, output)[::G]
        batches[-1]["rows"] = output["completion_ids"].size(0)
        return output

    trainer._score_rollouts, trainer._dynamic_sampling_batch = scored, filled
    trainer.train()
    rank = trainer.accelerator.process_index
    with open(os.path.join(out_dir, f"rank-{rank}.json"), "w") as f:
        json.dump({"batches": batches, "ran": trainer.dynamic_sampling_ran}, f)
    end_launched_process(0)  # every rank at a barrier, then out without tearing the process group down


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
