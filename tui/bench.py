"""Throughput of a reply generated inside the app vs the bare backend loop.

`run_tui_bench(model_path)` generates the same reply (prompt, settings, seed, token
budget) alternately with `backend.generate` consumed bare and inside the headless
app (panels visible, tokens tinted, the chat saved to a temporary database as the
app saves by default), and reports decode tokens/s of each and their ratio (target
>= 0.95). Two rows: a short reply, and a long one (`LONG_TOKENS`, its
end-of-generation tokens banned so that it runs the whole length) where any cost that
grows with the reply shows. Run: `samplescope bench --only tui` (a fresh process).

Each row is one app session, as a person chats: every app reply is a new chat's
first. The session's first reply pays one-off costs (the what-if keeper's first
buffers, Textual's first renders): it is paired with a bare reply and shown apart,
not in the row's median.

This machine's speed drifts by ±10% within a minute, so the ratio is the median of
each round's ratio (a bare reply and an app reply back to back, in alternating
order), not a ratio of two medians taken apart.
"""

from __future__ import annotations

import asyncio
import gc
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backend.chat.events import FinishedEvent, GenerationEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.config.model_path import resolve_model_path
from backend.session.llama_backend import LlamaBackend
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings

if TYPE_CHECKING:
    from tui.app import SamplescopeApp

PROMPT = "Write a long story about a lighthouse keeper and a storm."
SHORT_TOKENS = 128
LONG_TOKENS = 1500
SETTLE_SECONDS = 0.5
# Paired rounds a row: a round's ratio varies by ~±10% here (one standard deviation),
# so 21 rounds put a row's median within ~2.5% of its true value, 9 within ~4%.
SHORT_ROUNDS = 21
LONG_ROUNDS = 9


def _consume(backend: LlamaBackend, settings: SamplerSettings, max_tokens: int) -> FinishedEvent:
    backend.reset()
    last = None
    for event in backend.generate(
        [ChatMessage("user", PROMPT)], LiveSettings(settings), max_tokens=max_tokens
    ):
        last = event
    assert isinstance(last, FinishedEvent)
    return last


class AppSession:
    """One headless app for a row's rounds: each app reply is a new chat's first, and
    its chat is saved to a temporary database, as the app saves by default.

    A bare reply runs in between with the app open and idle, on the thread the app's
    replies run on (llama.cpp's OpenMP keeps a thread team per calling thread, and a
    team left idle slows decoding from any other thread). It is waited for on the
    app's own loop, which it blocks, so the UI does nothing meanwhile, as without it.
    """

    def __init__(self, backend: LlamaBackend, settings: SamplerSettings, max_tokens: int) -> None:
        self.backend = backend
        self.settings = settings
        self.max_tokens = max_tokens
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decode")
        self.app: SamplescopeApp | None = None
        """The app while `run` runs."""

    def bare(self, max_tokens: int | None = None) -> FinishedEvent:
        """The reply consumed bare on the decode thread, the UI blocked meanwhile."""
        tokens = self.max_tokens if max_tokens is None else max_tokens
        # The app's objects are left out of garbage collection meanwhile, as a bare
        # process does not have them (the app freezes them for its own replies too).
        gc.freeze()
        try:
            return self.executor.submit(_consume, self.backend, self.settings, tokens).result()
        finally:
            gc.unfreeze()

    async def run(self, rounds: Callable[[AppSession], Awaitable[None]]) -> None:
        """Open the app, settle it, and run `rounds` (which calls `reply` and `bare`)."""
        from tui.app import SamplescopeApp

        # The app's thread workers run on the loop's default executor: one thread.
        asyncio.get_running_loop().set_default_executor(self.executor)
        with tempfile.TemporaryDirectory() as folder, ChatStore(Path(folder) / "c.db") as store:
            app = SamplescopeApp(
                self.backend,
                settings=self.settings,
                max_tokens=self.max_tokens,
                cursor_blink=False,
                store=store,
            )
            async with app.run_test(size=(120, 36)) as pilot:
                while not app.chat.ready:
                    await pilot.pause(0.02)
                app.chat_screen.action_toggle_colour()  # the most drawing: tints, bars, status
                self.app = app
                await rounds(self)

    async def reply(self) -> tuple[FinishedEvent, float, int | None]:
        """A new chat, the prompt sent, and its reply waited for.

        Returns:
            The reply's end, the UI thread's CPU seconds from the submit to the end,
            and the redraws its draw budget allowed (None: the app drew without one).
        """
        from textual.widgets import Input

        app = self.app
        if app is None:
            raise RuntimeError("AppSession.reply runs inside AppSession.run")
        app.chat_screen.action_new_chat()  # the backend's cache is reset before the reply
        prompt = app.query_one("#prompt", Input)
        prompt.value = PROMPT
        # The app has settled before the message is sent, as after a person typed it.
        await asyncio.sleep(SETTLE_SECONDS)
        replies = len(app.conversation.finished)
        started = time.thread_time()
        # Submit without Pilot.press: that waits for idle, polling every widget
        # while the reply streams, which would load the UI thread.
        await prompt.action_submit()
        while (
            len(app.conversation.finished) == replies
        ):  # a plain sleep: Pilot.pause would add work
            await asyncio.sleep(0.2)
        ui_seconds = time.thread_time() - started
        budget = app.chat.schedule.budget
        return (
            app.conversation.finished[-1],
            ui_seconds,
            budget.drawn if budget is not None else None,
        )


class DecodeThreadClock:
    """Wraps `backend.generate` to time the thread consuming each reply's decode.

    From the first token to the end: wall time, and that thread's CPU time. Their
    difference a token is the time the decode's thread was off the CPU (waiting for
    the GIL, or for a core the UI took). It is only part of the app's cost: when the
    UI takes the core of one of llama.cpp's other threads, this thread spins at the
    next barrier, on the CPU.
    """

    def __init__(self, backend: LlamaBackend) -> None:
        self.off_cpu_ms: list[float] = []
        """Per reply, in order: milliseconds a token off the CPU."""
        generate = backend.generate

        def timed(*args: Any, **kwargs: Any) -> Iterator[GenerationEvent]:
            started: tuple[float, float] | None = None
            count = 0
            for event in generate(*args, **kwargs):
                if isinstance(event, TokenEvent):
                    if started is None:
                        started = (time.perf_counter(), time.thread_time())
                    count += 1
                elif isinstance(event, FinishedEvent) and started is not None and count > 1:
                    wall = time.perf_counter() - started[0]
                    cpu = time.thread_time() - started[1]
                    self.off_cpu_ms.append(1000 * (wall - cpu) / (count - 1))
                yield event

        backend.generate = timed  # type: ignore[method-assign]
        self._taken = 0

    def last(self) -> float:
        """The reply just run's figure (each is taken once).

        Raises:
            AssertionError: That reply was not timed (under 2 tokens, or no end).
        """
        if len(self.off_cpu_ms) <= self._taken:
            raise AssertionError("the reply just run was not timed: under 2 tokens or no end")
        self._taken = len(self.off_cpu_ms)
        return self.off_cpu_ms[-1]


def without_end(backend: LlamaBackend, settings: SamplerSettings) -> SamplerSettings:
    """`settings` with every end-of-generation token banned: a reply of full length."""
    runtime = backend.runtime
    banned = tuple((token, -math.inf) for token in range(runtime.n_vocab) if runtime.is_eog(token))
    return settings.with_changes(logit_bias=banned)


def run_tui_bench(
    model_path: str | Path | None = None,
    *,
    max_tokens: int = SHORT_TOKENS,
    rounds: int = 3,
    n_threads: int | None = None,
    full_length: bool = False,
) -> dict[str, Any]:
    """Decode tokens/s bare and in the app, alternating `rounds` times.

    Args:
        full_length: Ban the end-of-generation tokens, so the reply is `max_tokens` long.

    Returns:
        A dict with the per-round figures, their medians, `ratio` (the median of the
        rounds' in-app over bare tokens/s) and the decode thread's time off the CPU.
    """
    path = resolve_model_path(model_path)
    backend = LlamaBackend.load(path, n_threads=n_threads)
    settings = DEFAULT_CHAT_SETTINGS
    if full_length:
        settings = without_end(backend, settings)
    clock = DecodeThreadClock(backend)
    bare_off_cpu: list[float] = []
    app_off_cpu: list[float] = []
    bare: list[float] = []
    app: list[float] = []
    ui_ms_per_token: list[float] = []
    redraws_per_second: list[float] = []
    tokens: list[int] = []
    first_reply_ratio = 0.0

    async def paired_rounds(session: AppSession) -> None:
        nonlocal first_reply_ratio
        session.bare(8)  # warm up
        clock.last()  # (its figure is not counted)
        # The session's first reply pays one-off costs (the what-if keeper's first
        # buffers, Textual's first renders): shown apart, not in the median.
        opening = session.bare().stats.decode_tps
        clock.last()
        first_reply, _, _ = await session.reply()
        clock.last()
        first_reply_ratio = first_reply.stats.decode_tps / opening if opening else 0.0
        for round_ in range(rounds):
            for side in ("app", "bare") if round_ % 2 else ("bare", "app"):
                # The app first every other round: the machine's drift favours neither.
                if side == "bare":
                    first = session.bare()
                    bare_off_cpu.append(clock.last())
                else:
                    second, ui_seconds, drawn = await session.reply()
                    app_off_cpu.append(clock.last())
            bare.append(first.stats.decode_tps)
            app.append(second.stats.decode_tps)
            ui_ms_per_token.append(1000 * ui_seconds / max(1, second.stats.decode_tokens))
            if drawn is not None and second.stats.decode_tps:
                seconds = second.stats.decode_tokens / second.stats.decode_tps
                redraws_per_second.append(drawn / seconds if seconds else 0.0)
            tokens.append(first.stats.decode_tokens)
            if second.token_ids != first.token_ids:
                raise AssertionError("the app generated a different reply than the bare loop")

    try:
        asyncio.run(AppSession(backend, settings, max_tokens).run(paired_rounds))
    finally:
        backend.close()
    ratios = [a / b for a, b in zip(app, bare, strict=True) if b]
    bare_median = statistics.median(bare)
    return {
        "model": path.name,
        "threads": backend.info.n_threads,
        "tokens": tokens,
        "bare_tps": bare,
        "app_tps": app,
        "bare_median_tps": bare_median,
        "app_median_tps": statistics.median(app),
        "ratio": statistics.median(ratios) if ratios else 0.0,
        "first_reply_ratio": first_reply_ratio,
        "ratio_mean": statistics.mean(ratios) if ratios else 0.0,
        "ratio_error": (
            statistics.stdev(ratios) / math.sqrt(len(ratios)) if len(ratios) > 1 else 0.0
        ),
        "ui_ms_per_token": statistics.median(ui_ms_per_token),
        "bare_off_cpu_ms": statistics.median(bare_off_cpu),
        "app_off_cpu_ms": statistics.median(app_off_cpu),
        "bare_ms_per_token": 1000 / bare_median if bare_median else 0.0,
        "redraws_per_second": (
            statistics.median(redraws_per_second) if redraws_per_second else None
        ),
    }


def format_tui_bench(result: dict[str, Any]) -> str:
    """The result as the lines `samplescope bench` prints."""
    rounds = ", ".join(
        f"{bare:.1f}/{app:.1f}"
        for bare, app in zip(result["bare_tps"], result["app_tps"], strict=True)
    )
    redraws = result["redraws_per_second"]
    drawing = (
        f"; a draw budget allowed {redraws:.1f} redraws a second"
        if redraws is not None
        else "; no draw budget (a core to spare)"
    )
    return "\n".join(
        [
            f"decode tok/s, bare generate vs in the app (panels visible, chat saved), "
            f"{result['threads']} threads, {result['tokens'][0]} tokens, rounds bare/app: {rounds}",
            f"median: bare {result['bare_median_tps']:.1f}, app {result['app_median_tps']:.1f}; "
            f"ratio (median of the rounds' ratios) {result['ratio']:.3f} (target >= 0.95; "
            f"their mean {result['ratio_mean']:.3f} ± {result['ratio_error']:.3f} standard error); "
            f"the app's UI thread used {result['ui_ms_per_token']:.2f} ms of CPU a token"
            f"{drawing}",
            f"the decode's thread off the CPU, ms a token (of {result['bare_ms_per_token']:.1f}): "
            f"bare {result['bare_off_cpu_ms']:.2f}, app {result['app_off_cpu_ms']:.2f}; "
            f"the session's first reply (one round, not in the median): "
            f"{result['first_reply_ratio']:.3f}",
        ]
    )


if __name__ == "__main__":
    model = sys.argv[1] if len(sys.argv) > 1 else None
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else None
    rows = (
        ("short reply", SHORT_TOKENS, SHORT_ROUNDS, False),
        ("long reply", LONG_TOKENS, LONG_ROUNDS, True),
    )
    for label, tokens, rounds, full_length in rows:
        started = time.perf_counter()
        print(f"### {label}", flush=True)
        result = run_tui_bench(
            model, max_tokens=tokens, rounds=rounds, n_threads=threads, full_length=full_length
        )
        print(format_tui_bench(result))
        print(f"({time.perf_counter() - started:.0f} s)", flush=True)
