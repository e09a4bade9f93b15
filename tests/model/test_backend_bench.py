"""The backend benchmark runs end to end (its figures are reported, not asserted)."""

from __future__ import annotations

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
    metrics = [row.metric for row in rows]
    assert sum(m.startswith("decode tok/s") for m in metrics) == 2
    assert sum(m.startswith("prefill tok/s (64 tokens") for m in metrics) == 1
    assert sum(m.startswith("peak RSS") for m in metrics) == 2
    assert all(row.ours > 0 and row.reference > 0 for row in rows)
    # The memory budget is the model file + the KV cache + 150 MB.
    budget = next(r for r in rows if "model+KV" in r.metric).reference
    assert budget > default_model_path.stat().st_size / 2**20 + 150
    table = format_rows(rows)
    assert len(table.splitlines()) == len(rows) + 1
