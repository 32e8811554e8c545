"""Signals (``countdown_rl.runs.preemption``), in this process: the handlers, the flag and where a run stops; and
under ``accelerate launch``, the time its launcher leaves a signalled run to save.

Real signals to a real training process, and the bit-exact resume after them: tests/training/test_reliability.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

from transformers import TrainerControl, TrainerState

from countdown_rl.runs.preemption import SIGNALS, Preemption, PreemptionCallback
from tests.helpers.env import crash_report, hang_guard, offline_env, write_cpu_accelerate_config


def one_process_trainer(steps_per_generation: int = 2, num_iterations: int = 1) -> SimpleNamespace:
    """What the callback reads of a trainer: its accelerator's process count and the generation cycle's length."""
    return SimpleNamespace(accelerator=SimpleNamespace(num_processes=1),
                           args=SimpleNamespace(steps_per_generation=steps_per_generation),
                           num_iterations=num_iterations)


def test_the_handlers_are_ours_while_inside_and_the_previous_ones_after():
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}
    with Preemption() as preemption:
        assert all(signal.getsignal(sig) == preemption._handle for sig in SIGNALS)
    assert {sig: signal.getsignal(sig) for sig in SIGNALS} == before


def test_the_first_signal_asks_to_stop_and_later_ones_are_ignored_in_one_line(capsys):
    with Preemption(prog="countdown-rl train") as preemption:
        assert not preemption.requested
        os.kill(os.getpid(), signal.SIGUSR1)
        preemption.saving = True
        os.kill(os.getpid(), signal.SIGTERM)
    assert preemption.requested and preemption.signal_name == "SIGUSR1"
    first, second = capsys.readouterr().err.splitlines()
    assert first == ("countdown-rl train: received SIGUSR1: finishing the current step, then saving a checkpoint and "
                     "stopping")
    assert second.startswith("countdown-rl train: received SIGTERM: already stopping; the checkpoint is being written")


def test_a_run_stops_only_at_the_end_of_a_generation_cycle():
    micro_step = [1]
    preemption = Preemption()
    callback = PreemptionCallback(preemption, one_process_trainer(steps_per_generation=2, num_iterations=2),
                                  micro_step=lambda: micro_step[0])
    state, control = TrainerState(max_steps=8), TrainerControl()
    preemption.received.append("SIGTERM")
    for step, micro in ((1, 1), (2, 2), (3, 3)):  # a cycle is 2 x 2 = 4 micro-steps: no stop inside it
        state.global_step, micro_step[0] = step, micro
        callback.on_step_end(None, state, control)
        assert not control.should_training_stop and callback.stopped_at is None
    state.global_step, micro_step[0] = 4, 4
    callback.on_step_end(None, state, control)
    assert control.should_save and control.should_training_stop and callback.stopped_at == 4
    assert preemption.saving
    callback.on_save(None, state, control)
    assert not preemption.saving  # the stop's own checkpoint is written


def test_a_signal_during_a_scheduled_save_stops_after_that_checkpoint():
    preemption = Preemption()
    callback = PreemptionCallback(preemption, one_process_trainer(steps_per_generation=1), micro_step=lambda: 6)
    state, control = TrainerState(global_step=6, max_steps=8), TrainerControl()
    callback.on_save(None, state, control)
    assert not control.should_training_stop  # no signal yet
    preemption.received.append("SIGINT")
    callback.on_save(None, state, control)
    assert control.should_training_stop and callback.stopped_at == 6 and not control.should_save


def test_a_signal_at_the_last_step_stops_nothing():
    """At ``max_steps`` the Trainer ends training itself: a stop asked for there would record a run that trained
    every step as interrupted (and its resume would train a step past the end). Real runs: test_reliability.py."""
    preemption = Preemption()
    callback = PreemptionCallback(preemption, one_process_trainer(steps_per_generation=1), micro_step=lambda: 4)
    state, control = TrainerState(global_step=4, max_steps=4), TrainerControl()
    preemption.received.append("SIGTERM")
    callback.on_step_end(None, state, control)  # the signal came during the last step
    callback.on_save(None, state, control)  # or during its save
    assert callback.stopped_at is None and not preemption.saving
    assert not control.should_save and not control.should_training_stop  # the Trainer's own end, untouched
    state.global_step = 3  # a step earlier, the same signal stops the run there
    callback.on_step_end(None, state, control)
    assert callback.stopped_at == 3 and control.should_save and control.should_training_stop


# A run whose step and checkpoint take SAVE_SECONDS after the signal (a real model's save takes longer still)
SLOW_SAVE = """
import sys, time
from countdown_rl.runs.preemption import Preemption
with Preemption("probe") as preemption:
    print("probe: training", file=sys.stderr, flush=True)
    while not preemption.requested:
        time.sleep(0.05)
    preemption.saving = True
    time.sleep(float(sys.argv[1]))  # the step in flight, then the checkpoint
print("probe: checkpoint saved", file=sys.stderr, flush=True)
sys.exit(75)
"""
SAVE_SECONDS = 8


def test_under_accelerate_launch_a_signalled_run_has_the_time_to_save_its_checkpoint(tmp_path):
    # SLURM signals every process of the job step: the launcher and the run alike. The run's contract (module
    # docstring) is one more step and a checkpoint however long they take; accelerate 1.16's launcher breaks it (on
    # SIGTERM it signals its child again and SIGKILLs it 5 s later), hence pyproject's accelerate<1.16.
    script = tmp_path / "slow_save.py"
    script.write_text(SLOW_SAVE)
    config = write_cpu_accelerate_config(tmp_path / "cpu.yaml")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config), "--quiet", str(script),
         str(SAVE_SECONDS)], env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    lines = []
    try:
        for line in launcher.stdout:  # until the run trains (its handlers are in place)
            lines.append(line)
            if line.startswith("probe: training"):
                break
        signalled = time.monotonic()
        os.killpg(launcher.pid, signal.SIGTERM)  # the launcher and the run, as scancel --signal=TERM does
        lines += launcher.stdout.readlines()  # to the end of the output: the run's, not only the launcher's
        launcher.wait(timeout=hang_guard(30))
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
    output = "".join(lines)
    assert "probe: checkpoint saved" in output, crash_report(output)
    assert "probe: received SIGTERM: finishing the current step" in output, crash_report(output)
    assert time.monotonic() - signalled >= SAVE_SECONDS
