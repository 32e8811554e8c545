"""Shared fixtures: the tiny offline tokenizer and Qwen3, built once per session and saved to disk."""

import os

# No Hub here, and TRL/transformers must not try to reach it (or send telemetry).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("WANDB_MODE", "disabled")
# Tiny models on a shared 2-core machine: one thread is several times faster than two fighting over cores.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# And where a process still runs several (a demo or benchmark that sets its own thread count, a vLLM engine), its
# idle OpenMP threads sleep instead of spinning on the cores the other worker's tests need: inherited by every
# process a test starts, and read by this one's OpenMP runtime when torch loads (after this file). Measured beside
# two busy processes: benchmarks/dynamic_sampling.py --quick took 154 s spinning, 43 s passive.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Every process a test starts inherits Python's fault handler: a rank that dies of a signal (SIGSEGV, SIGABRT) prints
# its threads' stacks to the stderr the test captures (tests/helpers/env.py's crash_report puts them first).
os.environ["PYTHONFAULTHANDLER"] = "1"

import pytest  # noqa: E402


# The files that take longest, longest first (as measured by --durations on 2 cores, slow tier then default tier).
# Under pytest-xdist (pyproject's addopts) a whole file goes to a worker as one unit, in collection order: a long file
# that started last would run alone while the other worker idles. The rest keep their order; a stale list only moves
# when a file starts.
LONGEST_FILES = (
    "tests/test_benchmarks.py",
    "tests/test_slurm.py",
    "tests/demo/test_pretrained.py",
    "tests/runs/test_engine.py",
    "tests/commands/test_evaluate_vllm.py",
    "tests/sweeps/test_runner.py",
    "tests/commands/test_bad_invocations.py",
    "tests/demo/test_stages.py",
    "tests/training/test_reliability.py",
    "tests/demo/test_seeds.py",
    "tests/tasks/countdown/test_blind.py",
)


def pytest_collection_modifyitems(config, items):
    """The files of :data:`LONGEST_FILES` first, in its order (a stable sort: each file's tests keep theirs)."""
    rank = {path: i for i, path in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): a worker per core this process may use, at most 4 (each test is one thread;
    more workers add memory, not speed, on the tiny models). xdist reads ``PYTEST_XDIST_AUTO_NUM_WORKERS`` first."""
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A saved tiny Qwen3 + tokenizer (``save_pretrained`` layout), deterministic for seed 0."""
    from countdown_rl.demo.tiny import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", size="test", seed=0)


@pytest.fixture(scope="session")
def tiny_vllm_model_dir(tmp_path_factory):
    """The tiny Qwen3 vLLM's CPU kernels run (head size 32; tests/helpers/vllm_tiny.py), saved once per session."""
    from tests.helpers.vllm_tiny import save_tiny_vllm_model

    return save_tiny_vllm_model(tmp_path_factory.mktemp("tiny-vllm") / "model")


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    """``COUNTDOWN_RL_CACHE`` for the tests that load a GGUF file (SmolLM2): one folder for the whole run, shared by
    the xdist workers (their base folders' parent), so the ~1-minute conversion runs once, not once per test. The
    conversion is staged and renamed (countdown_rl.models.source), so two workers converting at once is safe."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "model-cache"


@pytest.fixture
def no_loading(monkeypatch):
    """Tripwires on transformers' loaders: a test using this fails if a command gets as far as loading a model
    or tokenizer (its errors must come before)."""
    import transformers

    def tripwire(*args, **kwargs):
        raise AssertionError("a model or tokenizer was loaded before the error was reported")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", tripwire)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tripwire)


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module's tests (tiny models: one thread is faster than two fighting over cores)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def puzzles(tmp_path_factory):
    """64 generated Countdown puzzles (seed 0) in a JSONL file (one per session: tests only read it)."""
    from countdown_rl.tasks.countdown.puzzles import generate_countdown
    from countdown_rl.data.jsonl import write_jsonl

    path = tmp_path_factory.mktemp("data") / "puzzles.jsonl"
    write_jsonl(generate_countdown(64, seed=0), path)
    return path
