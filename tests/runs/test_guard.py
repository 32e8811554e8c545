"""The output directory's guard (``countdown_rl.runs.guard``): one job per folder, by an exclusive lock. A second
job is refused while the first lives, a dead owner never blocks; two ``countdown-rl train`` released by one barrier:
exactly one runs, the other is refused in one line. The guard against reusing another run's folder:
tests/training/test_reliability.py (section 4).
"""

from __future__ import annotations

import json
import multiprocessing
import signal
import subprocess
import sys

import pytest

from countdown_rl.runs.guard import LOCK_FILE, OutputDirError, claim_output_dir, release_output_dir
from tests.helpers.env import ROOT, offline_env

SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
ERROR = "countdown-rl train: error: "
HOLDER = """
import sys, time
from countdown_rl.runs.guard import claim_output_dir, confirm_claim
from tests.helpers.env import offline_env
claim_output_dir(sys.argv[1]); confirm_claim(sys.argv[1])
print("held", flush=True)
time.sleep(120)
"""


def test_a_live_owner_refuses_a_second_job_and_a_dead_one_does_not(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], env=offline_env(), stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputDirError) as caught:
            claim_output_dir(out)
        message = str(caught.value)
        assert f"output_dir {out}: in use by another job" in message and f"pid {holder.pid}" in message
        holder.send_signal(signal.SIGKILL)  # a crash: no clean-up ran, the kernel released the lock
        holder.wait(timeout=30)
        claim_output_dir(out)
        release_output_dir(out)
    finally:
        holder.kill()
    assert (out / LOCK_FILE).is_file()  # the claim's file stays with the folder it was left in


def test_a_refused_claim_leaves_a_new_folder_as_it_found_it(tmp_path):
    out = tmp_path / "new"
    claim_output_dir(out)
    release_output_dir(out, refused=True)
    assert not out.exists()


def test_a_folder_deleted_while_claimed_is_released_without_error(tmp_path):
    """A claim whose folder went (deleted by hand; a test's temporary folder) closes its lock and raises nothing:
    ``release_all_output_dirs`` at the end of a later command in the same process once failed on it."""
    import os
    import shutil

    from countdown_rl.runs.guard import release_all_output_dirs

    def lock_descriptors() -> list[str]:  # this process's open descriptors on a lock file under tmp_path
        found = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # closed meanwhile (listdir's own descriptor, another thread's file)
                continue
            if target.startswith(str(tmp_path)) and LOCK_FILE in target:
                found.append(target)
        return found

    out = tmp_path / "gone"
    claim_output_dir(out)
    # The lock's own descriptor, not a count of all: other threads of the process (a worker's earlier tests) open
    # and close files meanwhile, which once moved the count.
    assert len(lock_descriptors()) == 1
    shutil.rmtree(out)
    release_all_output_dirs()
    assert lock_descriptors() == []  # the lock's descriptor closed
    claim_output_dir(out)  # claimable again: the claim was dropped
    release_output_dir(out)
    assert not out.exists()  # and tidied as any claim that wrote nothing


def _train_at_the_barrier(barrier, argv, queue):
    """One `countdown-rl train` in this process, started when both processes reach the barrier."""
    import contextlib
    import io

    from countdown_rl.commands.train import main

    err = io.StringIO()
    barrier.wait(timeout=60)
    with contextlib.redirect_stderr(err):
        code = main(argv)
    queue.put((code, [line for line in err.getvalue().splitlines() if line.startswith(ERROR)]))


@pytest.mark.slow  # two trainings started together (one of them refused before loading)
def test_two_jobs_started_at_the_same_instant_on_one_output_dir(tiny_model_dir, puzzles, tmp_path):
    out = tmp_path / "run"
    argv = ["--config", str(SMOKE), "--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(puzzles),
            "--output_dir", str(out), "--max_steps", "2", "--final_eval_size", "2"]
    context = multiprocessing.get_context("spawn")
    barrier, queue = context.Barrier(2), context.Queue()
    jobs = [context.Process(target=_train_at_the_barrier, args=(barrier, argv, queue)) for _ in range(2)]
    for job in jobs:
        job.start()
    results = sorted(queue.get(timeout=300) for _ in jobs)
    for job in jobs:
        job.join(timeout=60)
    (ran, ran_errors), (refused, refused_errors) = results
    assert ran == 0 and not ran_errors
    # The loser is refused in one line naming the folder: by the lock while the winner lives ("in use by another
    # job"), or, if the scheduler held it back until the winner had finished (seen under CI load), by the finished
    # run it then finds there. Either way one job ran and the other loaded nothing.
    assert refused == 2 and len(refused_errors) == 1 and f"output_dir {out}" in refused_errors[0]
    assert "in use by another job" in refused_errors[0] or "holds a run" in refused_errors[0]
    info = json.loads((out / "run_info.json").read_text())
    assert info["status"]["state"] == "finished" and info["status"]["step"] == 2
    assert (out / "model.safetensors").is_file() and (out / "eval" / "eval.json").is_file()
