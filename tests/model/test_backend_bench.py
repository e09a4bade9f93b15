"""The backend benchmark runs end to end: its speeds are reported, not asserted, but
the rows hold together (same tokens computed on both sides, the asked counts, ratios
from the reported figures)."""

from __future__ import annotations

import math
from pathlib import Path

from backend.bench.generation import format_rows, run_backend_bench


def test_backend_bench_produces_every_row(default_model_path: Path, tmp_path: Path) -> None:
    rows = run_backend_bench(
        default_model_path,
        n_threads=1,
        n_ctx=512,
        decode_tokens=6,
        prefill_tokens=64,
        repeats=1,
        measure_rss=True,
        log_path=tmp_path / "llama.log",
    )
    greedy, defaults, prefill, rss_budget, rss_reference = rows
    # Six decode steps asked, six timed; a long story does not stop sooner.
    assert greedy.metric == "decode tok/s, greedy (6 tokens, 1 threads)"
    assert defaults.metric == "decode tok/s, llama.cpp defaults (6 tokens, 1 threads)"
    # Both loops computed the same sequence: the bare loop's argmax is our greedy token.
    assert greedy.agreed == 6
    assert defaults.agreed is None and prefill.agreed is None
    assert prefill.metric == "prefill tok/s (64 tokens, batch 256, 1 threads)"
    # One measurement of our process's peak memory, set against two references.
    assert rss_budget.ours == rss_reference.ours
    model_mb = default_model_path.stat().st_size / 2**20
    assert rss_budget.reference > model_mb + 150  # the model file + the KV cache + 150 MB
    for row in rows:
        assert math.isfinite(row.ratio) and math.isclose(row.ratio, row.ours / row.reference)
        met = row.ratio >= row.target if row.higher_is_better else row.ratio <= row.target
        assert row.passed == met
    # The table prints each row's own figures.
    header, *lines = format_rows(rows).splitlines()
    assert header.split()[:2] == ["metric", "ours"] and len(lines) == len(rows)
    for row, line in zip(rows, lines, strict=True):
        assert line.startswith(row.metric)
        ours, reference, ratio, sign, target, verdict = line[len(row.metric) :].split()
        assert (float(ours), float(reference)) == (round(row.ours, 1), round(row.reference, 1))
        assert float(ratio) == round(row.ratio, 3)
        assert sign == (">=" if row.higher_is_better else "<=") and float(target) == row.target
        assert verdict == ("ok" if row.passed else "MISSED")


def test_compare_bench_runs_every_column_to_the_limit_both_ways(default_model_path: Path) -> None:
    from backend.bench.compare import COLUMNS, format_result, run_compare_bench

    result = run_compare_bench(default_model_path, n_threads=1, max_tokens=6, repeats=1)
    # The end token is banned: every column ran to the limit, so both ways did the same work.
    assert result.tokens == (6,) * len(COLUMNS)
    assert result.lockstep_s > 0 and result.in_turn_s > 0
    assert math.isclose(result.ratio, result.in_turn_s / result.lockstep_s)
    assert all(t > 0 for t in (*result.lockstep_tps, *result.in_turn_tps))
    assert result.identical  # exact lockstep: each column's tokens are its tokens in turn
    table = format_result(result)
    assert f"{result.ratio:.2f}x" in table and "| lockstep |" in table and "| in turn |" in table
    assert "every column's tokens the same both ways: yes" in table


def test_sweep_bench_runs_every_sample_to_the_limit_both_ways(default_model_path: Path) -> None:
    from backend.bench.sweep import SAMPLES, SETTINGS, format_result, run_sweep_bench

    result = run_sweep_bench(default_model_path, n_threads=1, max_tokens=5, repeats=1)
    assert (result.samples, result.tokens) == (len(SETTINGS) * SAMPLES, 5)
    assert result.lockstep_s > 0 and result.in_turn_s > 0 and result.batch > 1
    assert math.isclose(result.ratio, result.in_turn_s / result.lockstep_s)
    table = format_result(result)
    assert f"{result.ratio:.2f}x" in table and "| in turn |" in table


def test_the_repack_rows_measure_both_weights_or_say_a_batch_crashes(
    default_model_path: Path,
) -> None:
    """A tiny run of `bench --only backend`'s plain-against-repacked rows."""
    from backend.bench.repack import format_repack_rows, run_repack_bench
    from backend.llama.repack_probe import repack_survives

    rows = run_repack_bench(
        default_model_path, n_threads=1, decode_tokens=4, prefill_tokens=16, repeats=1
    )
    assert [row.metric.split(",")[0] for row in rows] == ["decode tok/s", "prefill tok/s"] * 2
    assert all(row.plain > 0 for row in rows)
    assert rows[0].repacked is not None and rows[0].repacked > 0  # one token: never a batch
    survives = repack_survives(default_model_path)
    assert (rows[1].repacked is not None) == survives
    table = format_repack_rows(rows)
    assert table.count("\n") == 5 and ("crashes a batch here" in table) == (not survives)
