"""The status line's phase indicator."""

from __future__ import annotations

from tui.widgets.status_line import StatusLine


def rendered(**changes: object) -> str:
    line = StatusLine()
    line.update(model="m", threads=2, ctx_total=4096, **changes)
    return line.render().plain


def test_prefill_before_the_first_chunk_shows_no_zero_total() -> None:
    text = rendered(phase="prefill", prefill_done=0, prefill_total=0)
    assert "prefill…" in text and "0/0" not in text


def test_prefill_progress_shows_done_of_total() -> None:
    assert "64/300 tokens" in rendered(phase="prefill", prefill_done=64, prefill_total=300)


def test_decode_and_idle_figures() -> None:
    assert "12.5 tok/s · 7 tokens" in rendered(phase="decode", decode_tps=12.5, decode_tokens=7)
    idle = rendered(phase="idle", last_ttft_ms=119.0, last_tps=129.9, last_reason="eos")
    assert "TTFT 119 ms" in idle and "129.9 tok/s" in idle


def test_where_the_layers_are_is_shown_only_when_not_here() -> None:
    assert " m  2 threads · 2 RPC servers · ctx 0/4096 " in rendered(placement="2 RPC servers")
    assert "RPC" not in rendered() and " m  2 threads · ctx 0/4096 " in rendered()
