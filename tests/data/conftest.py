"""Fixtures of the data layer's tests: generated Countdown rows, and a datasets cache out of the user's home."""

import pytest

from countdown_rl.tasks.countdown import puzzles
from tests.helpers.countdown_rows import N


@pytest.fixture(scope="module")
def rows():
    return puzzles.generate_countdown(N, seed=7)


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "hf-cache")  # keep datasets' parquet cache out of the user's home
