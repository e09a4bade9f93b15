"""`samplescope bench --only kld` on the default model, small (no llama-perplexity)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.bench.kld import KldBench, KldRun, bench_text, format_result, run_kld_bench


def test_bench_runs_ours_and_reports_memory(
    default_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMA_PERPLEXITY", "/nonexistent/llama-perplexity")
    monkeypatch.setenv("PATH", "/nonexistent")
    bench = run_kld_bench(default_model_path, n_threads=1, ctx=64, n_chars=1500)
    assert bench.peer is None
    (ours,) = bench.runs
    assert ours.name == "ours, both models"
    assert ours.n_scored > 0 and ours.n_scored % 31 == 0  # 31 scored a chunk of 64
    assert ours.score_s is not None and 0 < ours.score_s < ours.wall_s
    assert ours.peak_above_loaded_mb is not None and ours.peak_after_first_mb is not None
    assert ours.peak_mb > ours.peak_above_loaded_mb >= ours.peak_after_first_mb >= 0
    assert bench.chunk_logits_mb == pytest.approx(64 * 49152 * 4 / 2**20)
    printed = format_result(bench)
    assert "llama-perplexity not found: set LLAMA_PERPLEXITY=PATH" in printed
    assert "of one chunk of logits more after the first chunk" in printed


def test_ratios_are_printed_against_the_peer() -> None:
    runs = (
        KldRun("ours, both models", 100, 10.0, 8.0, 50.0, 5.0, 300.0),
        KldRun("ours, base from the file", 100, 4.0, 3.0, 20.0, 2.0, 200.0),
        KldRun("llama-perplexity, base + KLD runs", 100, 20.0, None, None, None, 250.0),
        KldRun("llama-perplexity, KLD run", 100, 8.0, None, None, None, 240.0),
    )
    printed = format_result(KldBench(runs, 96.0, 512, "/usr/bin/llama-perplexity"))
    assert "tok/s ours, both models / llama-perplexity, base + KLD runs: 2.00" in printed
    assert "tok/s ours, base from the file / llama-perplexity, KLD run: 2.00" in printed


def test_bench_text_is_prose() -> None:
    text = bench_text(5000)
    assert len(text) == 5000
    assert text.count(" ") > 500
