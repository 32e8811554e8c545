#!/usr/bin/env bash
# The comparison tests (marker `comparison`: ours vs TRL's, prompt-once vs plain, resumed vs uninterrupted, one
# process vs two) again under another processor's kernels, at two torch threads, so that no tolerance rests on this
# machine's kernels. Run from the repository root, in the environment the tests use:
#
#   bash scripts/other_kernels.sh            # the comparison tests of both tiers
#   bash scripts/other_kernels.sh -m 'comparison and not slow'   # extra pytest arguments go last (a later -m wins)
#   bash scripts/other_kernels.sh -m slow    # the whole slow tier (-m 'not slow': the whole default tier)
#
# torch, MKL and oneDNN each pick their kernels from the processor, and each has its own switch to pick older ones:
# on a machine with AVX-512 this runs AVX2's (most laptops, AMD before Zen 4); on one without, the portable ones
# (no vector extensions past SSE4). `torch.backends.cpu.get_cpu_capability()` says which torch took.
set -euo pipefail
cd "$(dirname "$0")/.."

native=$(python -c "import torch; print(torch.backends.cpu.get_cpu_capability())")
case "$native" in
    AVX512*) kernels=(ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2) ;;
    *) kernels=(ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 ONEDNN_MAX_CPU_ISA=SSE41) ;;
esac
# torch.compile's kernel cache on disk (inductor's) does not key its kernels on ATEN_CPU_CAPABILITY: a kernel built for
# this processor's vector instructions, read back under the portable set, fails to compile (torch 2.13: "'at::vec'
# has not been declared"; the compiled backend and vLLM's engine then fail). So each kernel set has its own cache.
kernels+=(TORCHINDUCTOR_CACHE_DIR="${TMPDIR:-/tmp}/torchinductor_$(id -u)_${kernels[0]#ATEN_CPU_CAPABILITY=}")
took=$(env "${kernels[@]}" python -c "import torch; print(torch.backends.cpu.get_cpu_capability())")
echo "other kernels: this processor's are $native; running under ${kernels[*]} (torch: $took), 2 threads"
env "${kernels[@]}" OMP_NUM_THREADS=2 python -m pytest -q -m comparison "$@"
