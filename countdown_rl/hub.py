"""The Hugging Face Hub around a run: checks before anything loads, and ``countdown-rl push RUN_DIR`` afterwards.

1. :func:`check_hub_settings`: a ``hub_model_id`` must be a well-formed repository id (``name`` or
   ``owner/name``, ``huggingface_hub``'s own validation); with ``push_to_hub`` the Hub must also be reachable in
   principle (``HF_HUB_OFFLINE`` unset, as ``huggingface_hub`` sees it) and a token present (``hub_token`` or
   ``huggingface_hub.get_token()``: ``HF_TOKEN`` or ``hf auth login``). One line if not; nothing is sent.
2. A push that fails at the end of a finished run (``countdown-rl train``) keeps everything on disk and says so in
   one line, with the command below.
3. ``countdown-rl push RUN_DIR --hub-model-id owner/name``: uploads a finished run directory (model or adapter,
   tokenizer, ``README.md`` card, ``eval/``, ``zero_shot/``, ``run_info.json``, ``trainer_state.json``), not its
   checkpoints, merged copy or staging folder. The card is written first if the run has none.
4. :func:`check_model_source` (train and eval, before loading): a model path that exists must be a folder; a Hub
   id while offline must already be in the Hub cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from countdown_rl.one_line import OneLineArgumentParser
from countdown_rl.runs import RUN_INFO

PROG = "countdown-rl push"
# Left out of a pushed run directory: resumable state and local copies (the Trainer's own push leaves them out too).
IGNORE = ["checkpoint-*", "checkpoint-*/**", ".staging/**", "merged/**", "_*", "runs/**", "completions/**"]
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors")


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` as the Hub client read it at import."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def check_hub_settings(*, push_to_hub: bool, hub_model_id: str | None, output_dir: str | None = None,
                       token: str | None = None, key_style: str = "recipe") -> str | None:
    """Raise ValueError (one line) if a push could not work; returns the repository id that would be used."""
    if not push_to_hub and not hub_model_id:
        return None
    from huggingface_hub import get_token
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    key = "hub_model_id" if key_style == "recipe" else "--hub-model-id"
    # Without hub_model_id the Trainer names the repository after output_dir's last part.
    repo_id = hub_model_id or Path(output_dir or "").name
    try:
        validate_repo_id(repo_id)
        if repo_id.count("/") > 1:
            raise HFValidationError("more than one '/'")
    except HFValidationError as err:
        raise ValueError(f"{key}: {repo_id!r} is not a valid Hub repository id ('name' or 'owner/name'; "
                         f"{' '.join(str(err).split())[:120]})") from None
    if not push_to_hub:  # a hub_model_id alone is only named, not used: the id must be well formed, nothing more
        return repo_id
    if hub_offline():
        raise ValueError(f"{key} {repo_id}: the Hub is offline (HF_HUB_OFFLINE=1): unset it to push, or leave "
                         "push_to_hub off and push later with countdown-rl push")
    if not (token or get_token()):
        raise ValueError(f"{key} {repo_id}: no Hub token (set HF_TOKEN or run `hf auth login`)")
    return repo_id


def check_model_source(model: str, key: str) -> None:
    """A model to load: an existing folder, or a Hub id that can be fetched (online, or already in the cache)."""
    from countdown_rl.commands.evaluate import is_local_path

    path = Path(model).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"{key} {model}: not a folder (a model folder or a Hub id like 'owner/name')")
        return
    if is_local_path(model):
        raise ValueError(f"{key} {model}: no such folder (and it is not a Hub id like 'owner/name')")
    if hub_offline():
        from huggingface_hub import try_to_load_from_cache

        if not any(isinstance(try_to_load_from_cache(model, name), str)
                   for name in ("config.json", "adapter_config.json")):
            raise ValueError(f"{key} {model}: not a local folder, not in the Hub cache, and the Hub is offline "
                             "(HF_HUB_OFFLINE=1)")


def failed_push_message(run_dir: str | Path, repo_id: str | None, err: BaseException) -> str:
    """The one line after a failed push at the end of a run."""
    reason = " ".join(f"{type(err).__name__}: {err}".split())[:300]
    return (f"push to {repo_id or 'the Hub'} failed ({reason}); everything is kept on disk in {run_dir}; push it "
            f"later with: countdown-rl push {run_dir} --hub-model-id {repo_id or 'OWNER/NAME'}")


def check_run_dir(run_dir: Path) -> None:
    """A finished run directory: weights (or an adapter) and run_info.json."""
    if not run_dir.exists():
        raise ValueError(f"{run_dir}: no such run directory")
    if not run_dir.is_dir():
        raise ValueError(f"{run_dir}: not a folder")
    if not (run_dir / RUN_INFO).is_file():
        raise ValueError(f"{run_dir}: no run_info.json (not a countdown-rl run directory)")
    if not any((run_dir / name).is_file() for name in WEIGHTS):
        raise ValueError(f"{run_dir}: no model or adapter weights (has the run finished? {', '.join(WEIGHTS)})")


def push_run(run_dir: str | Path, repo_id: str, *, private: bool | None = None, token: str | None = None,
             message: str = "countdown-rl push") -> str:
    """Create the repository if needed and upload the run directory (module docstring, 3); returns the commit url."""
    from huggingface_hub import HfApi

    from countdown_rl.model_card import write_model_card

    run_dir = Path(run_dir)
    if not (run_dir / "README.md").is_file():
        write_model_card(run_dir)
    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
    commit = api.upload_folder(repo_id=repo_id, folder_path=str(run_dir), commit_message=message,
                               ignore_patterns=IGNORE, repo_type="model")
    return str(getattr(commit, "commit_url", commit))


def build_parser() -> argparse.ArgumentParser:
    p = OneLineArgumentParser(prog=PROG, description="Push a finished run directory (model or adapter, card, "
                                "eval files) to the Hugging Face Hub; checkpoints stay local.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a finished countdown-rl train output_dir")
    p.add_argument("--hub-model-id", "--hub_model_id", dest="hub_model_id", required=True,
                   help="repository id, owner/name")
    p.add_argument("--private", action=argparse.BooleanOptionalAction, default=None,
                   help="create the repository private (default: the Hub's default)")
    p.add_argument("--token", default=None, help="Hub token (default: HF_TOKEN or the saved login)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``countdown-rl push``; returns the exit code."""
    args = build_parser().parse_args(argv)
    run_dir = Path(args.run_dir)
    try:
        check_run_dir(run_dir)
        repo_id = check_hub_settings(push_to_hub=True, hub_model_id=args.hub_model_id, token=args.token,
                                     key_style="cli")
    except ValueError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    try:
        url = push_run(run_dir, repo_id, private=args.private, token=args.token)
    except Exception as err:  # noqa: BLE001  (network, auth, permissions: one line, the files stay)
        print(f"{PROG}: error: {failed_push_message(run_dir, repo_id, err)}", file=sys.stderr)
        return 1
    print(f"pushed {run_dir} to https://huggingface.co/{repo_id} ({url})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
