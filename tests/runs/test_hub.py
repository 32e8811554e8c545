"""The Hub around a run (``countdown_rl.runs.hub``), cut at its client boundary (``huggingface_hub.HfApi.create_repo``
/ ``upload_folder`` and the client's ``constants``: no request leaves this machine): settings checked before loading;
a failed final push keeps the run and says how to push it later; ``countdown-rl push RUN_DIR`` uploads a finished run
without its checkpoints.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from countdown_rl.commands.train import main
from tests.helpers.train_runs import SMOKE, one_error, status


@pytest.fixture
def hub_online(monkeypatch, tmp_path):
    """The Hub client believes it is online and has a token; its two write calls record instead of sending."""
    from huggingface_hub import HfApi, constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    calls = SimpleNamespace(repos=[], uploads=[], fail_upload=None)

    def create_repo(self, repo_id, **kwargs):
        calls.repos.append(repo_id)
        return SimpleNamespace(repo_id=repo_id)

    def upload_folder(self, *, repo_id, folder_path, ignore_patterns=None, **kwargs):
        if calls.fail_upload:
            raise calls.fail_upload
        from huggingface_hub.utils import filter_repo_objects

        folder = Path(folder_path)
        files = filter_repo_objects([p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()],
                                    ignore_patterns=ignore_patterns)
        calls.uploads.append((repo_id, folder, sorted(files)))
        return SimpleNamespace(commit_url=f"https://huggingface.co/{repo_id}/commit/0")

    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    return calls


def test_hub_settings_are_checked_before_loading(tmp_path, capsys, no_loading, monkeypatch):
    from huggingface_hub import constants

    base = ["--config", str(SMOKE), "--output_dir", str(tmp_path / "out")]
    assert main(base + ["--push_to_hub", "true", "--hub_model_id", "me/countdown"]) == 2  # HF_HUB_OFFLINE=1 here
    assert "hub_model_id me/countdown: the Hub is offline" in one_error(capsys)
    # a hub_model_id without push_to_hub is only named: offline is fine (a later check, the dataset, fails here)
    assert main(base + ["--hub_model_id", "me/countdown", "--dataset_name", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl" in one_error(capsys)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    assert main(base + ["--push_to_hub", "true", "--hub_model_id", "me/countdown"]) == 2
    assert "no Hub token" in one_error(capsys)
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    for bad in ("me/count/down", "me/bad name", "me/x--y"):
        assert main(base + ["--push_to_hub", "true", "--hub_model_id", bad]) == 2
        assert f"hub_model_id: {bad!r} is not a valid Hub repository id" in one_error(capsys)
    assert not (tmp_path / "out").exists()


def test_a_failed_final_push_keeps_the_run_and_says_how_to_push_later(tiny_model_dir, puzzles, tmp_path, capsys,
                                                                      hub_online):
    from countdown_rl.tasks.countdown.rewards import REWARD_FUNCS

    hub_online.fail_upload = ConnectionError("the Hub is unreachable")
    out = tmp_path / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(REWARD_FUNCS, "toy_dense", lambda completions, **kw: [len(set(str(c))) for c in completions])
        code = main(["--config", str(SMOKE), "--model_name_or_path", str(tiny_model_dir), "--dataset_name",
                     str(puzzles), "--output_dir", str(out), "--final_eval_size", "4", "--reward_funcs", "toy_dense",
                     "--max_steps", "2", "--push_to_hub", "true", "--hub_model_id", "me/countdown-tiny",
                     "--hub_strategy", "end"])
    assert code == 1
    message = one_error(capsys)
    assert "push to me/countdown-tiny failed (ConnectionError: the Hub is unreachable)" in message
    assert f"countdown-rl push {out} --hub_model_id me/countdown-tiny" in message
    for name in ("model.safetensors", "README.md", "eval/eval.json", "checkpoint-2", "tokenizer.json"):
        assert (out / name).exists(), name
    assert status(out)["state"] == "finished" and "push to me/countdown-tiny failed" in status(out)["message"]

    # later: countdown-rl push, from the command dispatcher
    from countdown_rl.cli import main as cli_main

    hub_online.fail_upload = None
    assert cli_main(["push", str(out), "--hub-model-id", "me/countdown-tiny"]) == 0
    assert hub_online.repos[-1] == "me/countdown-tiny"
    repo_id, folder, files = hub_online.uploads[-1]
    assert repo_id == "me/countdown-tiny" and folder == out
    assert {"model.safetensors", "README.md", "eval/eval.json", "run_info.json", "tokenizer.json"} <= set(files)
    assert not [f for f in files if f.startswith(("checkpoint-", ".staging", "merged/"))]


def test_push_command_errors_are_one_line(tmp_path, capsys):
    from countdown_rl.commands.push import main as push_main

    assert push_main([str(tmp_path / "nothing"), "--hub-model-id", "me/x"]) == 2
    assert "no such run directory" in capsys.readouterr().err
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run_info.json").write_text("{}")
    (tmp_path / "run" / "model.safetensors").write_bytes(b"")
    assert push_main([str(tmp_path / "run"), "--hub-model-id", "me/x"]) == 2  # HF_HUB_OFFLINE=1 here
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "offline" in err
