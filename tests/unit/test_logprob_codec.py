"""llama-perplexity's uint16 log-probability rows (sampling.analysis.logprob_codec)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sampling.analysis.logprob_codec import (
    CLIP_NATS,
    HEADER_SLOTS,
    decode_rows,
    encode_rows,
    row_headers,
    row_width,
)
from sampling.errors import LogitsError


def log_softmax64(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    top = x.max(axis=-1, keepdims=True)
    return x - top - np.log(np.exp(x - top).sum(axis=-1, keepdims=True))


def test_row_width_is_llama_perplexitys() -> None:
    # nv = 2*((n_vocab + 1)/2) + 4 in tools/perplexity/perplexity.cpp.
    assert row_width(49152) == 49156
    assert row_width(5) == 10
    assert row_width(1) == 6


def test_golden_row() -> None:
    """A row worked by hand: top 2, floor 2 - 16 = -14 (the lowest logit, -20, is under it)."""
    logits = np.array([[2.0, 0.0, -20.0, -14.0, 1.0]], dtype=np.float32)
    rows = encode_rows(logits)
    assert rows.shape == (1, 10)
    scale, floor = row_headers(rows)
    lse = np.log(np.exp([0.0, -2.0, -22.0, -16.0, -1.0]).sum())
    assert scale[0] == np.float32(16.0) / np.float32(65535.0)
    assert floor[0] == pytest.approx(-16.0 - lse, abs=2e-6)
    # (logit - floor) / scale, rounded: 65535 for the top; 0 at or under the floor.
    expected = [65535, round(14 / 16 * 65535), 0, 0, round(15 / 16 * 65535)]
    assert rows[0, HEADER_SLOTS : HEADER_SLOTS + 5].tolist() == expected
    assert rows[0, -1] == 0  # the pad after an odd vocabulary


def test_flat_row_is_all_floor() -> None:
    rows = encode_rows(np.zeros((1, 4), dtype=np.float32))
    scale, floor = row_headers(rows)
    assert scale[0] == 0.0
    assert floor[0] == pytest.approx(-np.log(4.0), abs=1e-6)
    assert not rows[0, HEADER_SLOTS:].any()
    assert decode_rows(rows, 4) == pytest.approx(np.full((1, 4), -np.log(4.0)), abs=1e-6)


@given(
    arrays(
        np.float32,
        st.tuples(st.integers(1, 4), st.integers(2, 300)),
        elements=st.floats(-40, 40, width=32),
    )
)
def test_round_trip_within_half_a_step_above_the_floor(logits: np.ndarray) -> None:
    """Every token within 16 nats of the top decodes to its log-probability within half
    a step (plus float32 rounding); every token under it decodes to the floor."""
    rows = encode_rows(logits)
    decoded = decode_rows(rows, logits.shape[1]).astype(np.float64)
    exact = log_softmax64(logits)
    scale, floor = row_headers(rows)
    top = exact.max(axis=1, keepdims=True)
    kept = exact > top - CLIP_NATS
    tolerance = scale.astype(np.float64)[:, None] / 2 + 1e-5 * (1 + np.abs(exact))
    assert np.all(np.abs(decoded - exact)[kept] <= np.broadcast_to(tolerance, exact.shape)[kept])
    below = exact < top - CLIP_NATS - 1e-4
    assert np.all(decoded[below] == np.broadcast_to(floor[:, None], exact.shape)[below])


def test_bad_shapes_are_one_line_errors() -> None:
    with pytest.raises(LogitsError, match="2-D"):
        encode_rows(np.zeros(3, dtype=np.float32))
    with pytest.raises(LogitsError, match="no finite maximum"):
        encode_rows(np.full((1, 3), -np.inf, dtype=np.float32))
    with pytest.raises(LogitsError, match="10 wide"):
        decode_rows(np.zeros((1, 9), dtype=np.uint16), 5)
