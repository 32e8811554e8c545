"""The distributed engine of a training run: what the launch asked for, what runs, and a refusal when they differ.

1. :func:`requested_engine` reads what the launcher asked for from its environment: ``accelerate launch`` says
   FSDP (``ACCELERATE_USE_FSDP``, ``FSDP_VERSION``) or DeepSpeed (``ACCELERATE_USE_DEEPSPEED``, the ZeRO stage);
   ``torchrun`` (which accelerate uses for more than one process) says how many processes form the job
   (``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``); SLURM says how many tasks its step started (``SLURM_STEP_NUM_TASKS``).
2. :func:`check_launch` (before any model loads) compares that with what transformers and accelerate will build
   from the recipe, and refuses in one line what they would quietly replace: N launched processes that would each
   train alone (``use_cpu: false`` without a GPU, or several SLURM tasks that are not one torch job), DeepSpeed
   on the CPU (accelerate drops it for DDP there), FSDP1 on the CPU.
3. FSDP on the CPU: accelerate 1.15 builds a multi-CPU state (DDP) whatever the launch asked; torch's FSDP2
   (``fully_shard``) runs over gloo, so :func:`enable_fsdp2_on_cpu` marks accelerate's state FSDP with the
   launch's own plugin as soon as the Trainer has built its Accelerator, before anything is prepared, and
   accelerate shards the model as it would on GPUs.
4. :func:`describe_engine` says what actually runs, from the Accelerator: the run record's ``engine`` and the
   first line of the log.
5. :func:`end_launched_process` ends a process of a multi-process launch once its run is written: every rank at a
   barrier, the exit handlers, then out without Python's teardown (which frees the process group whenever its
   garbage reaches it, each rank at its own moment).
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Engine", "LaunchError", "check_launch", "describe_engine", "enable_fsdp2_on_cpu",
           "end_launched_process", "launch_rank", "requested_engine", "same_engine"]


class LaunchError(ValueError):
    """The launch would run something other than what it asked for (one line, before any model loads)."""


@dataclass(frozen=True)
class Engine:
    """A distributed set-up in a few words: ``kind`` is ``single``, ``DDP``, ``FSDP`` or ``DeepSpeed``.

    >>> Engine("FSDP", 2, 2, 1, "gloo", "cpu").summary()
    'FSDP2 over 2 processes on 1 node (gloo, cpu)'
    """

    kind: str
    version: int | None  # FSDP's version, DeepSpeed's ZeRO stage
    num_processes: int
    num_nodes: int
    backend: str | None
    device: str

    def summary(self) -> str:
        """``FSDP2 over 2 processes on 1 node (gloo, cpu)``, ``DeepSpeed ZeRO-3 over ...``, ``one process (cpu)``."""
        if self.kind == "single":
            return f"one process ({self.device})"
        name = {"FSDP": f"FSDP{self.version}", "DeepSpeed": f"DeepSpeed ZeRO-{self.version}"}.get(self.kind, self.kind)
        plural = "es" if self.num_processes != 1 else ""
        nodes = f"{self.num_nodes} node{'s' if self.num_nodes != 1 else ''}"
        return f"{name} over {self.num_processes} process{plural} on {nodes} ({self.backend}, {self.device})"

    def to_dict(self) -> dict[str, Any]:
        """The run record's ``engine``: these fields and the summary."""
        return {**asdict(self), "summary": self.summary()}


def _flag(env: Mapping[str, str], key: str) -> bool:
    return env.get(key, "false").strip().lower() in ("1", "true", "yes")


def _count(env: Mapping[str, str], key: str, default: int = 1) -> int:
    try:
        return int(env.get(key, default))
    except ValueError:
        return default


@dataclass(frozen=True)
class Request:
    """What the launch asked for (module docstring, 1)."""

    kind: str  # "FSDP", "DeepSpeed" or "" (plain data parallel or one process)
    version: int | None
    num_processes: int  # torchrun's WORLD_SIZE (1 when not launched by torchrun)
    local_processes: int
    slurm_tasks: int  # SLURM_STEP_NUM_TASKS inside an srun step, else 1
    launched: bool  # started by torchrun (LOCAL_RANK set): torch.distributed runs, even for one process


def requested_engine(env: Mapping[str, str] | None = None) -> Request:
    """What the launcher's environment asks for.

    >>> requested_engine({"ACCELERATE_USE_FSDP": "true", "FSDP_VERSION": "2", "WORLD_SIZE": "2"})
    Request(kind='FSDP', version=2, num_processes=2, local_processes=1, slurm_tasks=1, launched=False)
    """
    env = os.environ if env is None else env
    if _flag(env, "ACCELERATE_USE_FSDP"):
        kind, version = "FSDP", _count(env, "FSDP_VERSION", 1)
    elif _flag(env, "ACCELERATE_USE_DEEPSPEED"):
        kind, version = "DeepSpeed", _count(env, "ACCELERATE_DEEPSPEED_ZERO_STAGE", 0) or None
    else:
        kind, version = "", None
    return Request(kind, version, _count(env, "WORLD_SIZE"), _count(env, "LOCAL_WORLD_SIZE"),
                   _count(env, "SLURM_STEP_NUM_TASKS"), "LOCAL_RANK" in env)


def launch_rank(env: Mapping[str, str] | None = None) -> int:
    """This process's rank in its job as the launcher set it (``RANK``; 0 when launched alone), known before
    torch.distributed starts.

    >>> launch_rank({"RANK": "1", "WORLD_SIZE": "2"}), launch_rank({})
    (1, 0)
    """
    return _count(os.environ if env is None else env, "RANK", 0)


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def check_launch(use_cpu: bool | None, env: Mapping[str, str] | None = None, *,
                 has_gpu: bool | None = None) -> Engine:
    """Refuse a launch whose processes would not form the job it asked for (module docstring, 2); returns the
    engine that will run. Reads only the environment and ``torch.cuda``: nothing is loaded or started.
    ``use_cpu=None`` (the recipe not parsed yet) leaves out what depends on it.

    >>> env = {"ACCELERATE_USE_FSDP": "true", "FSDP_VERSION": "2", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
    >>> check_launch(True, env).summary()
    'FSDP2 over 2 processes on 1 node (gloo, cpu)'
    >>> check_launch(True, {"ACCELERATE_USE_DEEPSPEED": "true", "WORLD_SIZE": "2"}, has_gpu=False)
    Traceback (most recent call last):
    ...
    countdown_rl.runs.engine.LaunchError: DeepSpeed cannot run on the CPU: accelerate would train with DDP instead; use accelerate_configs/fsdp.yaml (FSDP2) or ddp.yaml on the CPU, DeepSpeed on GPUs
    """
    request = requested_engine(env)
    on_cpu = bool(use_cpu) or not (_has_gpu() if has_gpu is None else has_gpu)
    if request.num_processes > 1 and use_cpu is False and on_cpu:
        raise LaunchError(
            f"{request.num_processes} processes were launched (WORLD_SIZE={request.num_processes}) on a machine "
            "without a GPU, but use_cpu is false: each would train alone as process 0 of 1 in the same "
            "output_dir; pass --use_cpu true (or set use_cpu: true in the recipe)")
    if request.slurm_tasks > request.num_processes:
        raise LaunchError(
            f"this is one of {request.slurm_tasks} SLURM tasks (SLURM_STEP_NUM_TASKS) but forms a job of "
            f"{request.num_processes} process(es): the tasks would train separately in one output_dir; start one "
            "torchrun per node under srun (slurm/train_multinode.sbatch), or a single task")
    if on_cpu and request.kind == "DeepSpeed":
        raise LaunchError("DeepSpeed cannot run on the CPU: accelerate would train with DDP instead; use "
                          "accelerate_configs/fsdp.yaml (FSDP2) or ddp.yaml on the CPU, DeepSpeed on GPUs")
    if on_cpu and request.kind == "FSDP" and request.version != 2:
        raise LaunchError(f"FSDP{request.version} on the CPU is not supported (accelerate would train with DDP "
                          "instead): set fsdp_version: 2 in the accelerate config, as accelerate_configs/fsdp.yaml "
                          "does")
    processes = request.num_processes
    kind = request.kind or ("DDP" if request.launched else "single")
    nodes = max(1, processes // max(1, request.local_processes))
    backend = None if kind == "single" else ("gloo" if on_cpu else "nccl")
    return Engine(kind, request.version if kind in ("FSDP", "DeepSpeed") else None, processes, nodes, backend,
                  "cpu" if on_cpu else "cuda")


def same_engine(planned: Engine, actual: Engine) -> bool:
    """Whether what runs is what was planned (kind, version, processes; backend and device are reported only).

    >>> same_engine(Engine("FSDP", 2, 2, 1, "gloo", "cpu"), Engine("DDP", None, 2, 1, "gloo", "cpu"))
    False
    """
    return (planned.kind, planned.version, planned.num_processes) == (actual.kind, actual.version,
                                                                     actual.num_processes)


def enable_fsdp2_on_cpu(accelerator, use_cpu: bool, env: Mapping[str, str] | None = None) -> bool:
    """Right after the Trainer built its Accelerator: when the launch asked for FSDP2 on the CPU,
    mark accelerate's (shared) state FSDP with the launch's own plugin (module docstring, 3), before anything is
    prepared. Returns whether it did.

    >>> enable_fsdp2_on_cpu(None, True, {})  # nothing asked for FSDP
    False
    """
    request = requested_engine(env)
    if not (use_cpu and request.kind == "FSDP" and request.version == 2):
        return False
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin

    state = accelerator.state
    if state.distributed_type == DistributedType.FSDP:
        return True
    if state.distributed_type != DistributedType.MULTI_CPU:
        raise LaunchError(f"FSDP2 on the CPU: expected accelerate's multi-CPU state, got {state.distributed_type}")
    plugin = FullyShardedDataParallelPlugin()  # reads the launch's FSDP_* environment, as accelerate would
    if state.mixed_precision != "no":
        plugin.set_mixed_precision(state.mixed_precision)
    # Both shared states: every later AcceleratorState() copies the partial state's distributed_type over its own.
    state.distributed_type = PartialState().distributed_type = DistributedType.FSDP
    state.fsdp_plugin = plugin
    return True


def describe_engine(accelerator, env: Mapping[str, str] | None = None) -> Engine:
    """What actually runs, read from the Accelerator (module docstring, 4)."""
    from accelerate.utils import DistributedType

    env = os.environ if env is None else env
    state = accelerator.state
    kind = {DistributedType.FSDP: "FSDP", DistributedType.DEEPSPEED: "DeepSpeed",
            DistributedType.NO: "single"}.get(state.distributed_type, "DDP")
    version = None
    if kind == "FSDP":
        version = state.fsdp_plugin.fsdp_version
    elif kind == "DeepSpeed":
        version = state.deepspeed_plugin.zero_stage
    processes = accelerator.num_processes
    local = max(1, _count(env, "LOCAL_WORLD_SIZE", processes))
    return Engine(kind, version, processes, max(1, processes // local), getattr(state, "backend", None),
                  accelerator.device.type)


def end_launched_process(code: int) -> None:
    """With a process group (a multi-process launch): wait for every rank, run the exit handlers, flush, and end this
    process with ``code`` without Python's teardown. Without one, return.

    Python's teardown frees the gloo process group whenever its garbage reaches it, in each rank at its own moment, so
    one rank's teardown closes connections the other's is still using: a rank then died of SIGABRT in gloo's own
    thread with no Python frame left (an FSDP2 launch's rank 1 in CI, torch 2.13), and freeing DDP's reducer there
    deadlocked a rank once. ``os._exit`` frees nothing; the exit handlers it would skip (logging's flush, a merged
    LoRA model's removal, a reporter's finish) run first, so all that Python's exit writes is written.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    dist.barrier()  # every rank has written its part of the run
    atexit._run_exitfuncs()  # CPython's own exit handlers, run as sys.exit would run them
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
