"""The non-finite check (``countdown_rl.runs.non_finite``); the trainer's side (the gradients dropped, the run
stopped or the step skipped) end to end: tests/training/test_reliability.py."""

import doctest
import math

import torch

from countdown_rl.runs import non_finite
from countdown_rl.runs.non_finite import non_finite_loss, non_finite_verdict


def test_the_module_examples_hold():
    assert doctest.testmod(non_finite).failed == 0


def test_a_loss_is_bad_when_any_element_is_not_finite():
    assert non_finite_loss(torch.tensor([1.0, 2.0])) is None
    assert math.isnan(non_finite_loss(torch.tensor([1.0, float("nan")])))
    assert non_finite_loss(torch.tensor(float("-inf"))) == float("-inf")


def test_the_loss_is_named_before_the_gradient_norm():
    assert non_finite_verdict(None, None) is None  # no gradient norm computed: nothing to judge
    assert non_finite_verdict(None, torch.tensor(2.0)) is None
    assert non_finite_verdict(float("inf"), float("nan"))[0] == "loss"
    quantity, value = non_finite_verdict(None, torch.tensor(float("nan")))
    assert quantity == "grad_norm" and math.isnan(value)
