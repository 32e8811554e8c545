"""``countdown-rl push RUN_DIR --hub_model_id owner/name``: push a finished run directory to the Hub later.

1. Check the run directory (weights and ``run_info.json``) and the Hub settings (id, online, token) before
   anything is sent: one line, exit code 2.
2. Write the model card if the run has none, then upload the run directory without its checkpoints
   (:func:`countdown_rl.runs.hub.push_run`). A failed upload is one line, exit code 1; the files stay.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from countdown_rl.commands.one_line import OneLineArgumentParser, examples, fail
from countdown_rl.runs.hub import check_hub_settings, check_run_dir, failed_push_message, push_run

PROG = "countdown-rl push"


def build_parser() -> argparse.ArgumentParser:
    p = OneLineArgumentParser(prog=PROG, description="Push a finished run directory (model or adapter, card, "
                                "eval files) to the Hugging Face Hub; checkpoints stay local.",
                                epilog=examples(
                                    "hf auth login                  once: save a Hub token",
                                    "countdown-rl push outputs/countdown/qwen3-1.7b/grpo_1024_lora "
                                    "--hub_model_id YOUR_NAME/qwen3-1.7b-countdown-lora",
                                ))
    p.add_argument("run_dir", metavar="RUN_DIR", help="a finished countdown-rl train output_dir")
    p.add_argument("--hub_model_id", required=True, help="repository id, owner/name")
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
        return fail(PROG, err)
    from countdown_rl.evaluation.model_card import write_model_card

    if not (run_dir / "README.md").is_file():
        write_model_card(run_dir)
    try:
        url = push_run(run_dir, repo_id, private=args.private, token=args.token)
    except Exception as err:  # noqa: BLE001  (network, auth, permissions: one line, the files stay)
        fail(PROG, failed_push_message(run_dir, repo_id, err))
        return 1
    print(f"pushed {run_dir} to https://huggingface.co/{repo_id} ({url})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
