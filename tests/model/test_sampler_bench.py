"""The sampler benchmark on the real model: it runs, and both sides sample alike."""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import llama_cpp
import numpy as np

from backend.bench.sampler import MODES, capture_real_logits, format_rows, run_sampler_bench
from sampling import Sampler, SamplerSettings


def test_bench_rows_cover_every_mode_on_real_and_flat_logits(default_model_path: Path) -> None:
    rows = run_sampler_bench(default_model_path, steps=3, repeats=1)
    assert [(row.mode, row.logits_kind) for row in rows] == [
        (mode.name, kind) for kind in ("real", "flat") for mode in MODES
    ]
    newer = {"typical-p 0.9", "top-n-sigma 1", "xtc 1.0/0.1", "dry 0.8", "mirostat 1"}
    assert newer | {"mirostat 2", "dynatemp 0.8+-0.5", "logit bias"} <= {m.name for m in MODES}
    lacking = {"top-a 0.2", "tfs 0.95", "epsilon 3e-4", "eta 2e-3", "smoothing 0.5", "min_tokens"}
    assert {f"{name} vs top-p" for name in lacking} | {"adaptive-p 0.5"} <= {m.name for m in MODES}
    for row in rows:
        # Three steps asked, three sampled by each side; the ratio is of the two times.
        assert row.steps == 3 and 0 <= row.agreed <= 3
        assert math.isfinite(row.ratio) and math.isclose(row.ratio, row.ours_us / row.native_us)
    # On the same logits both sides take the same argmax, real and flat alike.
    assert [row.agreed for row in rows if row.mode == "argmax"] == [3, 3]
    header, *lines = format_rows(rows).splitlines()
    assert header.split()[-1] == "ours/native" and len(lines) == len(rows)
    for row, line in zip(rows, lines, strict=True):
        assert line.startswith(row.mode)
        ours, native, ratio, *over = line[len(row.mode) :].split()[1:]
        assert (float(ours), float(native)) == (round(row.ours_us, 1), round(row.native_us, 1))
        assert ratio == f"{row.ratio:.2f}x" and bool(over) == (row.ratio > 1.0)


def test_our_greedy_agrees_with_llama_cpp_native_and_lists_the_top_tokens(
    default_model_path: Path,
) -> None:
    llm = llama_cpp.Llama(str(default_model_path), n_ctx=256, n_threads=2, verbose=False)
    try:
        captured = capture_real_logits(llm, 12)
        vocab = llm.n_vocab()
        pointer = ctypes.cast(
            llama_cpp.llama_get_logits_ith(llm.ctx, -1), ctypes.POINTER(ctypes.c_float)
        )
        view = np.ctypeslib.as_array(pointer, shape=(vocab,))
        greedy = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        llama_cpp.llama_sampler_chain_add(greedy, llama_cpp.llama_sampler_init_greedy())
        ours = Sampler(SamplerSettings(temperature=0.0), vocab_size=vocab)
        for logits in captured:
            view[:] = logits
            native_token = llama_cpp.llama_sampler_sample(greedy, llm.ctx, -1)
            step = ours.sample(view)
            assert step.token_id == native_token
            # The record lists the highest logits, in order (ties: lower id first).
            expected_top = np.argsort(-logits, kind="stable")[:20]
            assert [c.token_id for c in step.candidates] == expected_top.tolist()
        llama_cpp.llama_sampler_free(greedy)
    finally:
        llm.close()
