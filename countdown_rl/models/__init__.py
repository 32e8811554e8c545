"""Models: where a model comes from and how it and its tokenizer load (train, eval, warmup, the demos).

- :mod:`.source`: a folder, a Hub id, a ``.gguf`` file or ``smollm2`` (converted once to a cached checkpoint),
  checked before anything loads.
- :mod:`.loading`: the tokenizer, the config and the weights (dtype, revision, ``trust_remote_code``, attention
  implementation), a recipe's model, an evaluated model or adapter, and the adapter merge.

May import: :mod:`countdown_rl.files`, :mod:`countdown_rl.runs` (the Hub's offline state),
:mod:`countdown_rl.generation` (a vLLM engine to evaluate with), torch, transformers, peft, huggingface_hub. Never
data, evaluation, training, sweeps, the demo or a command.
"""
