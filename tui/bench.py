"""Throughput of a reply generated inside the app vs the bare backend loop.

`run_tui_bench(model_path)` generates the same reply (prompt, settings, seed, token
budget) alternately with `backend.generate` consumed bare and inside the headless
app (panels visible, 30 Hz redraws), and reports decode tokens/s of each and their
ratio (target >= 0.9). Run: `samplescope bench --only tui` (a fresh process runs it).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.config.model_path import resolve_model_path
from backend.session.llama_backend import LlamaBackend
from sampling.settings import DEFAULT_CHAT_SETTINGS, SamplerSettings

PROMPT = "Write a long story about a lighthouse keeper and a storm."


def _bare(backend: LlamaBackend, settings: SamplerSettings, max_tokens: int) -> FinishedEvent:
    """The reply consumed bare, on a fresh thread like the app's worker.

    (llama.cpp's OpenMP keeps a thread team per calling thread; once the main thread
    has decoded, its idle team slows decoding from any other thread by ~40% with 2
    threads on 2 cores. So no decode ever runs on the main thread here, and both
    sides run on a fresh thread.)
    """
    result: list[FinishedEvent] = []
    thread = threading.Thread(target=lambda: result.append(_consume(backend, settings, max_tokens)))
    thread.start()
    thread.join()
    return result[0]


def _consume(backend: LlamaBackend, settings: SamplerSettings, max_tokens: int) -> FinishedEvent:
    backend.reset()
    last = None
    for event in backend.generate(
        [ChatMessage("user", PROMPT)], LiveSettings(settings), max_tokens=max_tokens
    ):
        last = event
    assert isinstance(last, FinishedEvent)
    return last


async def _in_app(
    backend: LlamaBackend, settings: SamplerSettings, max_tokens: int
) -> FinishedEvent:
    from textual.widgets import Input

    from tui.app import SamplescopeApp

    backend.reset()
    app = SamplescopeApp(backend, settings=settings, max_tokens=max_tokens, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        while not app.ready:
            await pilot.pause(0.02)
        app.action_toggle_colour()  # the most drawing: tinted tokens, bars, status
        prompt = app.query_one("#prompt", Input)
        prompt.value = PROMPT
        # Submit without Pilot.press: that waits for idle, polling every widget
        # while the reply streams, which would load the UI thread.
        await prompt.action_submit()
        while not app.finished:  # a plain sleep: Pilot.pause would add work to the UI
            await asyncio.sleep(0.05)
        return app.finished[-1]


def run_tui_bench(
    model_path: str | Path | None = None,
    *,
    max_tokens: int = 128,
    rounds: int = 3,
    n_threads: int | None = None,
) -> dict[str, Any]:
    """Decode tokens/s bare and in the app, alternating `rounds` times.

    Returns:
        A dict with the per-round figures, their medians and `ratio` = median in-app
        tokens/s over median bare tokens/s.
    """
    path = resolve_model_path(model_path)
    backend = LlamaBackend.load(path, n_threads=n_threads)
    settings = DEFAULT_CHAT_SETTINGS
    bare: list[float] = []
    app: list[float] = []
    tokens: list[int] = []
    try:
        _bare(backend, settings, 8)  # warm up
        for _ in range(rounds):
            first = _bare(backend, settings, max_tokens)
            bare.append(first.stats.decode_tps)
            second = asyncio.run(_in_app(backend, settings, max_tokens))
            app.append(second.stats.decode_tps)
            tokens.append(first.stats.decode_tokens)
            if second.token_ids != first.token_ids:
                raise AssertionError("the app generated a different reply than the bare loop")
    finally:
        backend.close()
    bare_median = statistics.median(bare)
    app_median = statistics.median(app)
    return {
        "model": path.name,
        "threads": backend.info.n_threads,
        "tokens": tokens,
        "bare_tps": bare,
        "app_tps": app,
        "bare_median_tps": bare_median,
        "app_median_tps": app_median,
        "ratio": app_median / bare_median if bare_median else 0.0,
    }


def format_tui_bench(result: dict[str, Any]) -> str:
    """The result as the lines `samplescope bench` prints."""
    rounds = ", ".join(
        f"{bare:.1f}/{app:.1f}"
        for bare, app in zip(result["bare_tps"], result["app_tps"], strict=True)
    )
    return "\n".join(
        [
            f"decode tok/s, bare generate vs in the app (panels visible), "
            f"{result['threads']} threads, {result['tokens'][0]} tokens, rounds bare/app: {rounds}",
            f"median: bare {result['bare_median_tps']:.1f}, app {result['app_median_tps']:.1f}, "
            f"ratio {result['ratio']:.3f} (target >= 0.9)",
        ]
    )


if __name__ == "__main__":
    started = time.perf_counter()
    model = sys.argv[1] if len(sys.argv) > 1 else None
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else None
    print(format_tui_bench(run_tui_bench(model, n_threads=threads, rounds=5)))
    print(f"({time.perf_counter() - started:.0f} s)")
