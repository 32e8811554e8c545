"""The generation-backend registry (``countdown_rl.generation.backends``): every place that offers or dispatches on
a backend reads it, so a registered backend is offered and dispatched everywhere without another edit."""

import pytest

from countdown_rl.generation import backends
from countdown_rl.generation.backends import Backend, backend_names, evaluation_backends, get_backend


def test_the_module_examples_hold():
    import doctest

    assert doctest.testmod(backends).failed == 0


def test_the_registered_backends():
    assert backend_names() == ("transformers", "compiled", "vllm")
    assert evaluation_backends() == backend_names()
    assert get_backend("vllm").trl_keys == {"use_vllm": True} and get_backend("vllm").requires == "vllm"
    assert get_backend("compiled").rollouts and get_backend("transformers").rollouts is None


def test_an_unknown_backend_is_one_line_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"must be one of \['transformers', 'compiled', 'vllm'\], got 'tensorrt'"):
        get_backend("tensorrt")
    with pytest.raises(ValueError, match="already registered"):
        backends.register(Backend(name="vllm", help="again"))


def test_a_new_backend_is_offered_by_eval_and_dispatched_by_scoring(monkeypatch):
    """One registry entry: ``countdown-rl eval --backend`` offers it and ``evaluate_rows`` generates with it."""
    from countdown_rl.commands.evaluate import build_parser
    from countdown_rl.evaluation.scoring import evaluate_rows
    from countdown_rl.generation.sampling import Completion

    calls = []

    def echo(model, tokenizer, prompts, *, max_new_tokens, num_samples=1, **kwargs):
        calls.append((model, len(prompts), max_new_tokens))
        return [[Completion("<answer>1 + 2</answer>", 3, False)] * num_samples for _ in prompts]

    monkeypatch.setitem(backends.BACKENDS, "echo", Backend(name="echo", help="test", evaluation=f"{__name__}:ECHO"))
    monkeypatch.setitem(globals(), "ECHO", echo)
    args = build_parser().parse_args(["--model_name_or_path", "m", "--backend", "echo"])
    assert args.backend == "echo"
    result, rows = evaluate_rows("a model", object(), [{"nums": [1, 2], "target": 3, "prompt": "p"}],
                                    max_tokens=8, backend="echo")
    assert calls == [("a model", 1, 8)] and result.correct == 1

