"""`samplescope dist`: seed 000's experiment, exact next to observed."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from sampling import Sampler, SamplerSettings, modes
from sampling.experiments import draw_counts
from tui.cli.commands.dist import SEED000_LOGITS
from tui.cli.main import main

# Seed 000's table (candle, 200000 draws each): observed frequencies.
SEED000_ROWS = {
    "All t=1": [0.4209, 0.2540, 0.1539, 0.0936, 0.0566, 0.0211],
    "All t=0.5": [0.6353, 0.2341, 0.0856, 0.0319, 0.0117, 0.0015],
    "TopK k=2": [0.6228, 0.3772, 0, 0, 0, 0],
    "TopP p=0.7": [0.5066, 0.3076, 0.1859, 0, 0, 0],
    "TopP p=0.8": [0.5066, 0.3076, 0.1859, 0, 0, 0],
    "TopKThenTopP k=3 p=0.6": [0.6228, 0.3772, 0, 0, 0, 0],
    "TopKThenTopP k=3 p=0.75": [0.5066, 0.3076, 0.1859, 0, 0, 0],
    "TopKThenTopP k=3 p=0.9": [0.5066, 0.3076, 0.1859, 0, 0, 0],
}


def test_table_reproduces_seed_000(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dist", "--table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    printed = {
        line[:24].strip(): [float(v) for v in re.findall(r'"([0-9.]+)"', line)] for line in lines
    }
    for label, expected in SEED000_ROWS.items():
        assert printed[label] == pytest.approx(expected, abs=0.005), label


@pytest.mark.parametrize(
    "settings",
    [
        SamplerSettings(temperature=0.7, seed=3),
        SamplerSettings(temperature=1.0, top_k=3, top_p=0.8, seed=4),
        SamplerSettings(temperature=1.2, draw="gumbel", seed=5),
        modes.runc(temperature=0.9, top_k=4, seed=42),
    ],
)
def test_vectorised_counts_are_the_samplers_own_draws(settings: SamplerSettings) -> None:
    logits = np.array(SEED000_LOGITS)
    sampler = Sampler(settings)
    one_by_one = np.bincount(
        [sampler.sample(logits).token_id for _ in range(400)], minlength=logits.size
    )
    assert np.array_equal(draw_counts(logits, settings, 400), one_by_one)


def test_single_run_prints_exact_and_observed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dist", "-t", "0.5", "--draws", "50000", "-s", "7"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[3:]]
    # softmax(2 * logits) by hand, independent of the sampler: e^4, e^3, e^2, e, 1, e^-2.
    weights = [math.exp(2 * logit) for logit in SEED000_LOGITS]
    exact = [weight / math.fsum(weights) for weight in weights]
    assert [round(p, 4) for p in exact] == [0.6354, 0.2338, 0.086, 0.0316, 0.0116, 0.0016]
    assert [float(row[2]) for row in rows] == pytest.approx(exact, abs=5e-5)
    assert [float(row[3]) for row in rows] == pytest.approx(exact, abs=0.01)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["dist", "--logits", "1,x"], "--logits must be comma-separated numbers"),
        (["dist", "-p", "0"], "invalid top_p=0.0"),
        (["dist", "-t", "-1"], "invalid temperature=-1.0"),
        (["dist", "--draws", "0"], "--draws must be a positive number"),
        (["dist", "--logits", "nan,1"], "NaN"),
    ],
)
def test_bad_input_is_a_clear_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err
