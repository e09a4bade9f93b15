"""llama-perplexity's compressed log-probabilities: one row of uint16 per position.

`llama-perplexity --kl-divergence-base FILE` stores each scored position's
log-probabilities in `2 * ((n_vocab + 1) // 2) + 4` uint16: the first four hold two
float32, the step `scale` and the floor `min_log_prob`; then one uint16 per token,
`q`, with log p = scale * q + min_log_prob (a padding uint16 of 0 after an odd
vocabulary). Only the 16 nats under the top are kept: the floor is the row's top
log-probability minus 16 (or the row's lowest, when that is higher), and every
token at or under it decodes to the floor. The arithmetic here is llama.cpp's own
(`log_softmax` in tools/perplexity/perplexity.cpp), in float32 with the exponentials
summed in float64, so a row encodes to the same bytes up to float rounding.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sampling.errors import LogitsError

#: How far under the top log-probability a row keeps (nats).
CLIP_NATS = 16.0

#: uint16 holding the row's two float32 (scale, floor) before the tokens.
HEADER_SLOTS = 4

#: Rows encoded at once (bounds scratch memory to a few rows of the vocabulary).
ROWS_AT_ONCE = 16


def row_width(n_vocab: int) -> int:
    """uint16 per stored row: the header, the tokens, and a pad to an even count."""
    return 2 * ((n_vocab + 1) // 2) + HEADER_SLOTS


def encode_rows(logits: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    """Compress (n, vocabulary) logits into (n, `row_width`) uint16 rows.

    Raises:
        LogitsError: The logits are not 2-D or a row has no finite maximum.
    """
    if logits.ndim != 2:
        raise LogitsError(f"logits to encode must be 2-D (rows × vocabulary), got {logits.ndim}-D")
    n, n_vocab = logits.shape
    rows = np.zeros((n, row_width(n_vocab)), dtype=np.uint16)
    for begin in range(0, n, ROWS_AT_ONCE):
        _encode_block(
            np.asarray(logits[begin : begin + ROWS_AT_ONCE], dtype=np.float32),
            rows[begin : begin + ROWS_AT_ONCE],
            begin,
        )
    return rows


def _encode_block(block: npt.NDArray[np.float32], rows: npt.NDArray[np.uint16], first: int) -> None:
    n_vocab = block.shape[1]
    top = block.max(axis=1)
    if not np.all(np.isfinite(top)):
        bad = first + int(np.flatnonzero(~np.isfinite(top))[0])
        raise LogitsError(f"the logits of row {bad} have no finite maximum")
    floor = np.maximum(block.min(axis=1), top - np.float32(CLIP_NATS))
    log_sum_exp = log_sum_exp_rows(block, top)
    scale = (top - floor) / np.float32(65535.0)
    header = rows[:, :HEADER_SLOTS].view(np.float32)
    header[:, 0] = scale
    header[:, 1] = (floor - top) - log_sum_exp
    with np.errstate(divide="ignore"):
        inv_scale = np.where(scale > 0, np.float32(1.0) / scale, np.float32(0.0))
    offset = block - floor[:, None]
    steps = np.rint(offset * inv_scale[:, None]).astype(np.int32)
    steps[offset <= 0] = 0  # at or under the floor (and every token of a flat row)
    # llama.cpp stores the int in a uint16: a value past 65535 wraps as it does.
    rows[:, HEADER_SLOTS : HEADER_SLOTS + n_vocab] = steps.astype(np.uint16)


def decode_rows(rows: npt.NDArray[np.uint16], n_vocab: int) -> npt.NDArray[np.float32]:
    """The (n, vocabulary) float32 log-probabilities stored rows hold.

    Raises:
        LogitsError: The rows are not `row_width(n_vocab)` wide.
    """
    if rows.ndim != 2 or rows.shape[1] != row_width(n_vocab):
        raise LogitsError(
            f"stored log-probability rows must be {row_width(n_vocab)} wide for a vocabulary"
            f" of {n_vocab}, got shape {rows.shape}"
        )
    scale, floor = row_headers(rows)
    steps = rows[:, HEADER_SLOTS : HEADER_SLOTS + n_vocab].astype(np.float32)
    decoded: npt.NDArray[np.float32] = scale[:, None] * steps + floor[:, None]
    return decoded


def row_headers(
    rows: npt.NDArray[np.uint16],
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Each stored row's (scale, floor): log p = scale * q + floor."""
    header = np.ascontiguousarray(rows[:, :HEADER_SLOTS]).view(np.float32)
    return header[:, 0].copy(), header[:, 1].copy()


def log_sum_exp_rows(
    block: npt.NDArray[np.float32], top: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """log Σ exp(logit − top) per row, as llama.cpp takes it: float32 exponentials
    summed in float64, the log rounded to float32.

    numpy's float32 `exp` and its pairwise sum are not glibc's `expf` and a running
    sum: about one stored row in 200 gets a floor one float32 ulp away from
    llama-perplexity's (exact float64 exponentials summed in order match it to the
    byte, at ten times the cost).
    """
    total = np.exp(block - top[:, None]).sum(axis=1, dtype=np.float64)
    result: npt.NDArray[np.float32] = np.log(total).astype(np.float32)
    return result
