"""The generation backends, by name: what each is, where it serves, what it needs from the config.

Every place that offers or dispatches on a backend reads this registry: the config's ``generation_backend``
choices and checks (:mod:`countdown_rl.training.config`), the evaluation's dispatch
(:func:`countdown_rl.evaluation.scoring.evaluate_budgets`), ``countdown-rl eval --backend``, the trainer's rollout
hook (:mod:`countdown_rl.training.rollouts`) and the real-model demo's choice. Adding a backend is one module (its
generation code, knowing no trainer) and one :func:`register` call below.

A backend either leaves training's rollouts to TRL (``trl_keys``: the TRL config keys that select TRL's own path,
e.g. ``use_vllm``), or names a rollout generator (``rollouts``): a factory taking the keywords
``max_new_tokens, prompt_buckets, prompt_lengths`` (a callable: the sampled prompts' token counts) and ``rows``,
whose object has ``active``, ``compile_seconds``,
``warm_up(model, generation_config, rows) -> bool`` and ``generate(model, prompt_ids, generation_config)`` (the
completion ids, prompt removed); the trainer adapts it.

Functions are named ``"module:function"`` and imported when used, so reading the registry imports no torch.

>>> get_backend("compiled").own_keys, get_backend("vllm").trl_keys
(('generation_prompt_buckets',), {'use_vllm': True})
>>> evaluation_backends()
('transformers', 'compiled', 'vllm')
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BACKENDS", "Backend", "backend_names", "evaluation_backends", "get_backend", "register"]


def _load(path: str) -> Callable[..., Any]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Backend:
    """One generation backend (module docstring)."""

    name: str
    help: str
    evaluation: str | None = None  # "module:function" generating for evaluation (sampling.generate's keywords)
    evaluation_options: str | None = None  # "module:function" (tokenizer, prompts, max_new_tokens,
    # chat_template_kwargs, given) -> the extra keywords of ``evaluation``
    rollouts: str | None = None  # "module:factory" of a rollout generator; None: TRL generates the rollouts
    trl_keys: Mapping[str, Any] = field(default_factory=dict)  # TRL config keys that select this backend in TRL
    own_keys: tuple[str, ...] = ()  # config keys that only this backend reads (set with another: an error)
    clashes: tuple[str, ...] = ()  # TRL config flags that may not be true with this backend
    requires: str | None = None  # a module that must be importable

    @property
    def serves_evaluation(self) -> bool:
        return self.evaluation is not None

    def installed(self) -> bool:
        """Whether the module it needs can be imported (without importing it)."""
        return self.requires is None or importlib.util.find_spec(self.requires) is not None

    def evaluation_generator(self) -> Callable[..., Any]:
        if self.evaluation is None:
            raise ValueError(f"generation backend {self.name!r} does not serve evaluation")
        return _load(self.evaluation)

    def evaluation_keywords(self, tokenizer, prompts, max_new_tokens: int, chat_template_kwargs,
                            given: Any = None) -> dict[str, Any]:
        if self.evaluation_options is None:
            return {}
        return _load(self.evaluation_options)(tokenizer, prompts, max_new_tokens, chat_template_kwargs, given)

    def rollout_generator(self, **kwargs: Any):
        """A new rollout generator (``rollouts``' factory called with ``kwargs``); None when TRL generates."""
        return None if self.rollouts is None else _load(self.rollouts)(**kwargs)


BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    """Add ``backend`` to the registry (its name must be new)."""
    if backend.name in BACKENDS:
        raise ValueError(f"generation backend {backend.name!r} is already registered")
    BACKENDS[backend.name] = backend
    return backend


def get_backend(name: str) -> Backend:
    """The registered backend ``name``; an unknown name is one line listing the known ones."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"generation backend must be one of {list(BACKENDS)}, got {name!r}") from None


def backend_names() -> tuple[str, ...]:
    return tuple(BACKENDS)


def evaluation_backends() -> tuple[str, ...]:
    return tuple(name for name, backend in BACKENDS.items() if backend.serves_evaluation)


register(Backend(
    name="transformers",
    help="TRL's plain transformers generate",
    evaluation="countdown_rl.generation.sampling:generate",
))
register(Backend(
    name="compiled",
    help="static cache sized once + torch.compile'd decoding, prompts padded to buckets (falls back to plain "
         "generate where torch.compile cannot run)",
    evaluation="countdown_rl.generation.sampling:generate",
    evaluation_options="countdown_rl.generation.compiled:evaluation_options",
    rollouts="countdown_rl.generation.compiled:rollout_generator",
    own_keys=("generation_prompt_buckets",),
    clashes=("use_transformers_continuous_batching", "use_transformers_paged"),
))
register(Backend(
    name="vllm",
    help="vLLM (the same as use_vllm: true)",
    evaluation="countdown_rl.generation.sampling:generate_vllm",
    trl_keys={"use_vllm": True},
    requires="vllm",
))
