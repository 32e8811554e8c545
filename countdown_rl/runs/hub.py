"""The Hugging Face Hub around a run: checks before anything loads, and ``countdown-rl push RUN_DIR`` afterwards.

1. :func:`check_hub_settings`: a ``hub_model_id`` must be a well-formed repository id (``name`` or
   ``owner/name``, ``huggingface_hub``'s own validation); with ``push_to_hub`` the Hub must also be reachable in
   principle (``HF_HUB_OFFLINE`` unset, as ``huggingface_hub`` sees it) and a token present (``hub_token`` or
   ``huggingface_hub.get_token()``: ``HF_TOKEN`` or ``hf auth login``). One line if not; nothing is sent.
2. A push that fails at the end of a finished run (``countdown-rl train``) keeps everything on disk and says so in
   one line, with the command below.
3. :func:`push_run` (``countdown-rl push RUN_DIR --hub_model_id owner/name``): uploads a finished run directory
   (model or adapter, tokenizer, ``README.md`` card, ``eval/``, ``zero_shot/``, ``run_info.json``,
   ``trainer_state.json``), not its checkpoints, merged copy or staging folder.

Model sources (a folder or a Hub id, checked before loading) are :mod:`countdown_rl.models.source`'s.
"""

from __future__ import annotations

from pathlib import Path

from countdown_rl.runs.record import RUN_INFO

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

    key = "hub_model_id" if key_style == "recipe" else "--hub_model_id"
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


def failed_push_message(run_dir: str | Path, repo_id: str | None, err: BaseException) -> str:
    """The one line after a failed push at the end of a run."""
    reason = " ".join(f"{type(err).__name__}: {err}".split())[:300]
    return (f"push to {repo_id or 'the Hub'} failed ({reason}); everything is kept on disk in {run_dir}; push it "
            f"later with: countdown-rl push {run_dir} --hub_model_id {repo_id or 'OWNER/NAME'}")


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
    """Create the repository if needed and upload the run directory (module docstring, 3) as it is; returns the
    commit url. The caller writes the model card first (``countdown-rl push`` does, when the run has none)."""
    from huggingface_hub import HfApi

    run_dir = Path(run_dir)
    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
    commit = api.upload_folder(repo_id=repo_id, folder_path=str(run_dir), commit_message=message,
                               ignore_patterns=IGNORE, repo_type="model")
    return str(getattr(commit, "commit_url", commit))
