"""The accelerate configs load with PyYAML and with accelerate's own loader, and its launcher reads them as meant.

``load_config_from_file`` builds the ``ClusterConfig`` ``accelerate launch`` uses and rejects unknown top-level
keys. The launcher checks go one step further through accelerate's (private, pinned <2) launch-argument
resolution, ``_validate_launch_command``, which is what turns the file into launcher flags: no GPU is needed.
"""

from __future__ import annotations


import pytest
import yaml
from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
from accelerate.utils import ComputeEnvironment, DistributedType

from tests.helpers.env import ROOT
CONFIG_DIR = ROOT / "accelerate_configs"
EXPECTED = {
    "single_gpu": "NO",
    "ddp": "MULTI_GPU",
    "zero2": "DEEPSPEED",
    "zero3": "DEEPSPEED",
    "fsdp": "FSDP",
    "multi_node": "MULTI_GPU",
}
FSDP1_ONLY = {"sharding_strategy", "backward_prefetch", "forward_prefetch", "use_orig_params", "sync_module_states"}


def resolve(name: str, *flags: str):
    """The launcher's view of a config: accelerate launch's parsed and config-filled arguments."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    args = launch_command_parser().parse_args(
        ["--config_file", str(CONFIG_DIR / f"{name}.yaml"), *flags, "train.py"]
    )
    args, _defaults, _mixed_precision_from_config = _validate_launch_command(args)
    return args


def test_the_config_set_is_complete():
    assert {p.stem for p in CONFIG_DIR.glob("*.yaml")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_loads_with_yaml_and_with_accelerate(name):
    path = CONFIG_DIR / f"{name}.yaml"
    raw = yaml.safe_load(path.read_text())
    # A bare NO is the YAML boolean False: the file must say "NO" as a string.
    assert raw["distributed_type"] == EXPECTED[name] and isinstance(raw["distributed_type"], str)
    config = load_config_from_file(str(path))
    assert isinstance(config, ClusterConfig)
    assert config.compute_environment == ComputeEnvironment.LOCAL_MACHINE
    assert config.distributed_type == DistributedType(EXPECTED[name])
    assert config.mixed_precision == "bf16"
    assert config.use_cpu is False


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_launcher_picks_the_intended_backend(name):
    args = resolve(name)
    backend = EXPECTED[name]
    assert args.use_deepspeed == (backend == "DEEPSPEED")
    assert args.use_fsdp == (backend == "FSDP")
    assert args.multi_gpu == (backend == "MULTI_GPU")
    assert args.mixed_precision == "bf16"
    assert args.num_processes == {"single_gpu": 1, "multi_node": 16}.get(name, 8)


def test_ddp_processes_can_be_overridden_on_the_launch_line():
    # grpo_1024_multigpu_server.yaml launches ddp.yaml with --num_processes 4 next to a vLLM GPU
    assert resolve("ddp", "--num_processes", "4").num_processes == 4


@pytest.mark.parametrize("name, stage", [("zero2", 2), ("zero3", 3)])
def test_deepspeed_zero_stage(name, stage):
    config = load_config_from_file(str(CONFIG_DIR / f"{name}.yaml"))
    ds = config.deepspeed_config
    assert ds["zero_stage"] == stage
    assert ds["offload_optimizer_device"] == "none" and ds["offload_param_device"] == "none"
    assert ds["zero3_init_flag"] is (stage == 3)
    args = resolve(name)
    assert args.zero_stage == stage and args.zero3_init_flag is (stage == 3)


def test_fsdp_is_version_2_and_accelerate_builds_the_plugin():
    from accelerate.utils import FullyShardedDataParallelPlugin, patch_environment
    from accelerate.utils.launch import prepare_multi_gpu_env

    fsdp = load_config_from_file(str(CONFIG_DIR / "fsdp.yaml")).fsdp_config
    assert fsdp["fsdp_version"] == 2
    assert fsdp["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
    assert fsdp["fsdp_state_dict_type"] in ("FULL_STATE_DICT", "SHARDED_STATE_DICT")
    assert isinstance(fsdp["fsdp_reshard_after_forward"], bool)  # FSDP2 takes a boolean, not a strategy name
    assert not {key.removeprefix("fsdp_") for key in fsdp} & FSDP1_ONLY

    # The environment the launcher hands each worker, and the plugin accelerate builds from it there.
    env = prepare_multi_gpu_env(resolve("fsdp"))
    assert env["ACCELERATE_USE_FSDP"] == "true" and env["FSDP_VERSION"] == "2"
    with patch_environment(**{k: v for k, v in env.items() if k.startswith(("FSDP_", "ACCELERATE_"))}):
        plugin = FullyShardedDataParallelPlugin()
    assert plugin.fsdp_version == 2
    assert plugin.state_dict_type.name == fsdp["fsdp_state_dict_type"]
    assert plugin.reshard_after_forward is True


def test_multi_node_takes_rank_and_address_from_the_launch_line(monkeypatch):
    import accelerate.utils.launch
    from accelerate.utils.launch import prepare_multi_gpu_env

    # What is tested is the rank and address taken from the launch line, not whether port 29500 (accelerate's
    # default, checked on rank 0) is free on this machine: a test in another worker process may hold it.
    monkeypatch.setattr(accelerate.utils.launch, "is_port_in_use", lambda port: False)

    raw = yaml.safe_load((CONFIG_DIR / "multi_node.yaml").read_text())
    config = load_config_from_file(str(CONFIG_DIR / "multi_node.yaml"))
    assert config.num_machines == 2 and config.num_processes == 16
    # left to the launch line on purpose
    assert not {"machine_rank", "main_process_ip", "main_process_port"} & set(raw)

    # What the header's launch line gives accelerate once the shell has expanded the variables.
    args = resolve("multi_node", "--machine_rank", "1", "--main_process_ip", "10.0.0.1", "--main_process_port",
                   "29555")
    prepare_multi_gpu_env(args)
    assert (args.nnodes, args.nproc_per_node, args.node_rank) == ("2", "8", 1)
    assert args.rdzv_endpoint == "10.0.0.1:29555"

    # Without the flags accelerate does not look at the environment: rank 0 everywhere, no address.
    monkeypatch.setenv("MASTER_ADDR", "10.9.9.9")
    monkeypatch.setenv("MASTER_PORT", "29999")
    monkeypatch.setenv("MACHINE_RANK", "1")
    args = resolve("multi_node")
    prepare_multi_gpu_env(args)
    assert args.node_rank == 0
    assert "10.9.9.9" not in args.rdzv_endpoint and "29999" not in args.rdzv_endpoint


def test_accelerate_does_not_expand_environment_variables_in_a_config(tmp_path, monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "10.1.2.3")
    text = (CONFIG_DIR / "multi_node.yaml").read_text() + 'main_process_ip: "$MASTER_ADDR"\n'
    path = tmp_path / "with_env.yaml"
    path.write_text(text)
    assert load_config_from_file(str(path)).main_process_ip == "$MASTER_ADDR"
