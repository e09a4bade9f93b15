"""Golden cases on each filter's threshold, and `cut_by` for every unit and for no cut.

The contract: min-p keeps p >= min_p * p_max (a token exactly on the bound is kept);
top-p keeps the shortest prefix whose mass reaches p, the crossing token included;
`cut_by` names the last unit that removed a token, "none" when nothing was removed
(a unit that is on but keeps everything included). The logits are logs of powers
of two, so every ratio and mass below is exact in float64.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from sampling.sampler import Sampler, probabilities
from sampling.settings.record import SamplerSettings

HALF = math.log(0.5)
QUARTER = math.log(0.25)
THIRDS = [2 / 3, 1 / 3]

# (settings, logits, exact probabilities, cut_by, n_kept)
GOLDEN: dict[str, tuple[dict[str, Any], list[float], list[float], str, int]] = {
    # min-p: token 1 sits exactly on 0.5 * p_max and is kept.
    "min_p on the bound": ({"min_p": 0.5}, [0.0, HALF, -3.0], [*THIRDS, 0.0], "min_p", 2),
    "min_p on the bound after top_k": (
        {"top_k": 3, "min_p": 0.5},
        [0.0, HALF, -3.0, -4.0],
        [*THIRDS, 0.0, 0.0],
        "min_p",
        2,
    ),
    "min_p on the bound at T=2": (
        {"temperature": 2.0, "min_p": 0.25},
        [0.0, math.log(1 / 16), -9.0],
        [0.8, 0.2, 0.0],
        "min_p",
        2,
    ),
    "min_p at T=1 with temperature last": (
        {"temperature": 2.0, "min_p": 0.25, "temperature_last": True},
        [0.0, math.log(1 / 16), -9.0],
        [1.0, 0.0, 0.0],
        "min_p",
        1,
    ),
    "min_p keeping everything": (
        {"min_p": 0.5},
        [HALF, QUARTER, QUARTER],
        [0.5, 0.25, 0.25],
        "none",
        3,
    ),
    # top-p: the first token's mass is exactly 0.5, the first two exactly 0.75.
    "top_p reached exactly by one": (
        {"top_p": 0.5},
        [HALF, QUARTER, QUARTER],
        [1.0, 0.0, 0.0],
        "top_p",
        1,
    ),
    "top_p crossing token kept": (
        {"top_p": 0.6},
        [HALF, QUARTER, QUARTER],
        [*THIRDS, 0.0],
        "top_p",
        2,
    ),
    "top_p reached exactly by two": (
        {"top_p": 0.75},
        [HALF, QUARTER, QUARTER],
        [*THIRDS, 0.0],
        "top_p",
        2,
    ),
    "top_p keeping everything": (
        {"top_p": 0.9},
        [HALF, QUARTER, QUARTER],
        [0.5, 0.25, 0.25],
        "none",
        3,
    ),
    "top_p after top_k": (
        {"top_k": 3, "top_p": 0.6},
        [HALF, QUARTER, QUARTER, -30.0],
        [*THIRDS, 0.0, 0.0],
        "top_p",
        2,
    ),
    "top_p keeping top_k's set": (
        {"top_k": 3, "top_p": 0.9},
        [HALF, QUARTER, QUARTER, -30.0],
        [0.5, 0.25, 0.25, 0.0],
        "top_k",
        3,
    ),
    "top_p before min_p": (
        {"top_p": 0.75, "min_p": 0.5},
        [HALF, QUARTER, QUARTER],
        [*THIRDS, 0.0],
        "top_p",
        2,
    ),
    # top-k: ties go to the lower id.
    "top_k of one": ({"top_k": 1}, [HALF, QUARTER, QUARTER], [1.0, 0.0, 0.0], "top_k", 1),
    "top_k through a tie": (
        {"top_k": 2},
        [HALF, QUARTER, QUARTER, -30.0],
        [*THIRDS, 0.0, 0.0],
        "top_k",
        2,
    ),
    "top_k of the whole vocabulary": (
        {"top_k": 3},
        [HALF, QUARTER, QUARTER],
        [0.5, 0.25, 0.25],
        "none",
        3,
    ),
    "min_p keeping top_k's set": (
        {"top_k": 3, "min_p": 0.5},
        [HALF, QUARTER, QUARTER, -30.0],
        [0.5, 0.25, 0.25, 0.0],
        "top_k",
        3,
    ),
    "nothing on": ({}, [HALF, QUARTER, QUARTER], [0.5, 0.25, 0.25], "none", 3),
    "greedy": ({"temperature": 0.0}, [QUARTER, HALF, QUARTER], [0.0, 1.0, 0.0], "greedy", 1),
}


@pytest.mark.parametrize(
    ("changes", "logits", "expected", "cut_by", "n_kept"), GOLDEN.values(), ids=GOLDEN
)
def test_golden_thresholds_and_cut_by(
    changes: dict[str, Any], logits: list[float], expected: list[float], cut_by: str, n_kept: int
) -> None:
    settings = SamplerSettings(**changes)
    array = np.array(logits)
    assert probabilities(array, settings).tolist() == pytest.approx(expected, rel=1e-12, abs=0)
    step = Sampler(settings, n_candidates=len(logits)).sample(array)
    assert (step.cut_by, step.n_kept) == (cut_by, n_kept)
    table = step.table
    assert table.prob_after.tolist() == pytest.approx(
        [expected[token_id] for token_id in table.token_ids], rel=1e-12, abs=0
    )
    assert [candidate.kept for candidate in step.candidates] == [
        expected[token_id] > 0 for token_id in table.token_ids
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_float32_model_row_on_the_min_p_bound_keeps_its_token(
    dtype: type[np.floating[Any]],
) -> None:
    # ln 0.5 rounds in float32, but the bound compares the same rounded values.
    logits = np.array([1.0, 1.0 + HALF, -2.0], dtype=dtype)
    ratio = float(np.exp(np.float64(logits[1]) - np.float64(logits[0])))
    step = Sampler(SamplerSettings(min_p=ratio)).sample(logits)
    assert (step.cut_by, step.n_kept) == ("min_p", 2)
