"""The generation runner: one worker, one inbox, events handed to the current consumer."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.app import App

from backend.chat.compare import ColumnEvent
from backend.chat.events import FinishedEvent, GenerationEvent, TokenEvent
from backend.chat.protocol import ChatBackend, ChatMessage, LiveSettings
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.helpers import wait_until
from tui.runner import GenerationRunner, Job

pytestmark = pytest.mark.anyio

HELLO = [ChatMessage("user", "hello there")]


class Recorder:
    """A consumer that keeps what it is handed."""

    def __init__(self) -> None:
        self.events: list[tuple[int, GenerationEvent]] = []
        self.ended: list[str | None] = []
        self.paints = 0

    def generation_event(self, column: int, event: GenerationEvent) -> None:
        self.events.append((column, event))

    def generation_ended(self, error: str | None) -> None:
        self.ended.append(error)

    def paint(self) -> None:
        self.paints += 1

    def tokens(self) -> list[TokenEvent]:
        return [event for _, event in self.events if isinstance(event, TokenEvent)]


def reply(max_tokens: int, column: int = 0) -> Job:
    """A job: one reply to HELLO, its events tagged with `column`."""

    def job(backend: ChatBackend, cancel: threading.Event) -> Iterator[ColumnEvent]:
        live = LiveSettings(SamplerSettings(seed=1))
        for event in backend.generate(HELLO, live, max_tokens=max_tokens, cancel=cancel):
            yield ColumnEvent(column, event)

    return job


async def test_events_reach_the_consumer_in_order_then_the_end() -> None:
    app: App[None] = App()
    async with app.run_test() as pilot:
        runner = GenerationRunner(app, FakeBackend())
        consumer = Recorder()
        runner.start(reply(8, column=2), consumer)
        await wait_until(pilot, lambda: bool(consumer.ended))
        assert consumer.ended == [None] and not runner.running and runner.idle
        assert {column for column, _ in consumer.events} == {2}
        assert [t.index for t in consumer.tokens()] == list(range(8))
        assert isinstance(consumer.events[-1][1], FinishedEvent)
        await wait_until(pilot, lambda: consumer.paints > 0)


async def test_a_stopped_job_hands_nothing_more_and_the_next_waits_for_the_model() -> None:
    app: App[None] = App()
    async with app.run_test() as pilot:
        backend = FakeBackend(pause_after_tokens=3)
        runner = GenerationRunner(app, backend)
        first, second = Recorder(), Recorder()
        runner.start(reply(50), first)
        await wait_until(pilot, backend.paused.is_set)
        assert gc.get_freeze_count() > 0  # what existed at the start is out of collections
        runner.cancel()
        backend.pause_after_tokens = None
        runner.start(reply(5), second)
        await wait_until(pilot, lambda: bool(second.ended))
        await runner.wait_idle()
        await pilot.pause()
        assert not first.ended and len(first.tokens()) <= 3
        assert [t.index for t in second.tokens()] == list(range(5))
        assert gc.get_freeze_count() == 0  # given back once no worker is left


async def test_a_released_consumer_is_told_nothing_and_an_error_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path))
    app: App[None] = App()
    async with app.run_test() as pilot:
        runner = GenerationRunner(app, FakeBackend(token_delay=0.01))
        gone = Recorder()
        runner.start(reply(400), gone)
        await wait_until(pilot, lambda: bool(gone.tokens()))
        runner.release(gone)
        seen = len(gone.events)
        await runner.wait_idle()
        await pilot.pause(0.1)
        assert len(gone.events) == seen and not gone.ended and not runner.running

        def broken(backend: ChatBackend, cancel: threading.Event) -> Iterator[ColumnEvent]:
            raise RuntimeError("no luck")
            yield  # a generator

        failed = Recorder()
        runner.start(broken, failed)
        await wait_until(pilot, lambda: bool(failed.ended))
        log = tmp_path / "errors.log"
        line = f"unexpected error: RuntimeError: no luck (the traceback is in {log})"
        assert failed.ended == [line]
        assert 'raise RuntimeError("no luck")' in log.read_text(encoding="utf-8")
        assert [n.message for n in app._notifications] == [line]


async def test_without_a_model_nothing_starts() -> None:
    app: App[None] = App()
    async with app.run_test():
        with pytest.raises(RuntimeError, match="no model"):
            GenerationRunner(app).start(reply(1), Recorder())


async def test_an_idle_runner_stops_ticking_until_the_next_job() -> None:
    app: App[None] = App()
    async with app.run_test() as pilot:
        runner = GenerationRunner(app, FakeBackend(token_delay=0.01))
        consumer = Recorder()
        runner.start(reply(30), consumer)
        await wait_until(pilot, lambda: consumer.paints >= 2)  # it ticks while it works
        await wait_until(pilot, lambda: bool(consumer.ended))
        await pilot.pause(0.3)
        paints = consumer.paints
        await pilot.pause(0.5)
        assert consumer.paints == paints  # idle: no tick in 0.5 s
        runner.start(reply(30), consumer)
        await wait_until(pilot, lambda: len(consumer.ended) == 2)
        assert consumer.paints > paints
        assert [t.index for t in consumer.tokens()] == [*range(30), *range(30)]
