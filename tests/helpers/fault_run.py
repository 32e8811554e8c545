"""``countdown-rl train`` in a real process with one fault injected at a chosen phase of a chosen step.

Usage: python tests/helpers/fault_run.py FAULT -- <countdown-rl train arguments>

The run uses the dense toy reward ``toy_dense`` (a random tiny model scores 0 on Countdown, and zero gradients
would make resume tests vacuous); one generation per optimizer step, so reward call k is step k. FAULT is one of

* ``none``
* ``signal:PHASE:STEP:SIG[:REPEAT]``: send SIG (TERM, INT, USR1) to this process during PHASE of step STEP --
  ``generation`` (in the reward call), ``backward`` (a hook on the hidden states' gradient), ``save`` (while the
  checkpoint's optimizer.pt is written) -- REPEAT times (a second signal while stopping).
* ``kill-in-save:STEP``: SIGKILL while the checkpoint of step STEP writes optimizer.pt (a crash mid-save).
* ``nan-grad:STEP`` / ``nan-loss:STEP``: NaN gradients (a hook on the hidden states' gradient) or NaN hidden states (so
  the loss) in the training pass of step STEP.
* ``segv:STEP:RANK``: the process of rank RANK dies of a segmentation fault in the reward call of step STEP (as a
  native library's crash would: Python's ``faulthandler._sigsegv``).

Under a multi-process launch only rank 0 gets the signal (the others must learn it from rank 0). The hooks are on
torch (a global module forward hook, tensor hooks, ``torch.save``), never on countdown_rl's code.
"""

import atexit
import contextlib
import os
import signal
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from countdown_rl.tasks.countdown.rewards import REWARD_FUNCS, completion_text  # noqa: E402

STATE = {"step": 0, "fired": False}
FAULT = ["none"]


def fire(sig: signal.Signals, repeat: int = 1) -> None:
    STATE["fired"] = True
    if os.environ.get("RANK", "0") != "0":  # with several processes the signal reaches rank 0 only
        return
    for _ in range(repeat):
        os.kill(os.getpid(), sig)
        time.sleep(0.05)  # let the handler run between signals, as with separate deliveries


def toy_dense_reward(completions, **kwargs):
    STATE["step"] += 1
    if FAULT[0] == "segv" and STATE["step"] == int(FAULT[1]) and os.environ.get("RANK", "0") == FAULT[2]:
        import faulthandler

        faulthandler._sigsegv()
    if FAULT[0] == "signal" and FAULT[1] == "generation" and STATE["step"] == int(FAULT[2]):
        fire(signal.Signals["SIG" + FAULT[3]], int(FAULT[4]) if len(FAULT) > 4 else 1)
    texts = [completion_text(c) for c in completions]
    return [len(set(text)) / (1 + len(text)) for text in texts]


def forward_hook(module, args, output):
    """On the model's training forward passes of the chosen step (generation runs under no_grad): NaN hidden states,
    or a hook on their gradient that fires in the backward pass (NaN gradients, or the signal, once).

    Every such pass of the step, not only the first: with the prompt-once log-probs the first is the prompt pass,
    whose final hidden states feed nothing (only its cache does), so a hook there would never see a gradient."""
    # the decoder stack (Qwen3Model): TRL's fused LM head gives log-probs, not logits; the hidden states stay
    if STATE["fired"] or not torch.is_grad_enabled() or getattr(output, "last_hidden_state", None) is None:
        return None
    kind = FAULT[0]
    if STATE["step"] != int(FAULT[2] if kind == "signal" else FAULT[1]):
        return None
    if kind == "nan-loss":
        output.last_hidden_state = output.last_hidden_state * float("nan")
    elif kind == "nan-grad":
        output.last_hidden_state.register_hook(lambda grad: grad * float("nan"))
    else:  # signal:backward, from the first of the step's passes that the backward reaches
        output.last_hidden_state.register_hook(
            lambda grad: None if STATE["fired"] else fire(signal.Signals["SIG" + FAULT[3]],
                                                          int(FAULT[4]) if len(FAULT) > 4 else 1))
    return output


_torch_save = torch.save


def save_hook(obj, f, *args, **kwargs):
    if str(f).endswith("optimizer.pt") and not STATE["fired"]:
        step = int(FAULT[-1] if FAULT[0] == "kill-in-save" else FAULT[2])
        if STATE["step"] == step:
            if FAULT[0] == "kill-in-save":
                with open(f, "wb") as handle:  # half a file, then the process dies
                    handle.write(b"partial")
                os.kill(os.getpid(), signal.SIGKILL)
            fire(signal.Signals["SIG" + FAULT[3]], int(FAULT[4]) if len(FAULT) > 4 else 1)
    return _torch_save(obj, f, *args, **kwargs)


@contextlib.contextmanager
def injected(fault: str):
    """``fault`` in force for the ``with`` block: the toy reward, and the hooks it needs; all undone on leaving, so
    that a test can run ``countdown-rl train`` in its own process (the faults that send no signal and kill nothing)."""
    global FAULT
    FAULT = fault.split(":")
    STATE.update(step=0, fired=False)
    saved_reward = REWARD_FUNCS.get("toy_dense")
    REWARD_FUNCS["toy_dense"] = toy_dense_reward
    handle = None
    if FAULT[0] == "signal" and FAULT[1] == "backward" or FAULT[0] in ("nan-grad", "nan-loss"):
        handle = torch.nn.modules.module.register_module_forward_hook(forward_hook)
    if FAULT[0] == "signal" and FAULT[1] == "save" or FAULT[0] == "kill-in-save":
        torch.save = save_hook
    try:
        yield STATE
    finally:
        torch.save = _torch_save
        if handle is not None:
            handle.remove()
        if saved_reward is None:
            del REWARD_FUNCS["toy_dense"]
        else:
            REWARD_FUNCS["toy_dense"] = saved_reward


def main() -> int:
    split = sys.argv.index("--")
    torch.set_num_threads(1)
    from countdown_rl.commands.train import main as train_main

    # steps started in this process, said on the way out (a rank of a multi-process launch ends inside train_main)
    atexit.register(lambda: print(f"fault_run: {STATE['step']} steps generated", file=sys.stderr))
    with injected(sys.argv[1]):
        return train_main(sys.argv[split + 1:] + ["--reward_funcs", "toy_dense"], own_process=True)  # as the command


if __name__ == "__main__":
    sys.exit(main())
