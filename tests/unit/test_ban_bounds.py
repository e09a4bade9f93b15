"""Phrase bans are bounded: at most MAX_TRIES tokens banned at one index, and a reply
taken back MAX_REWINDS times in all stops there (each rewind keeps a ghost)."""

from __future__ import annotations

import pytest

from backend.chat.events import FinishedEvent, NoticeEvent, RewindEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session import phrase_bans
from backend.session.phrase_bans import MAX_TRIES, PhraseBanError, PhraseBans
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FakeBackend
from tui.cli.main import main


def test_tries_beyond_the_bound_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert PhraseBans(("x",), tries=MAX_TRIES).tries == MAX_TRIES
    for tries in (0, MAX_TRIES + 1, 10**9):
        with pytest.raises(PhraseBanError, match=f"expected 1 to {MAX_TRIES}"):
            PhraseBans(("x",), tries=tries)
    assert main(["generate", "hi", "--ban", "x", "--ban-tries", "1000000000"]) == 2
    assert f"expected 1 to {MAX_TRIES}" in capsys.readouterr().err


def test_a_reply_taken_back_too_often_stops_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(phrase_bans, "MAX_REWINDS", 5)
    bans = PhraseBans(("[a-z]",), regex=True, tries=MAX_TRIES)
    events = list(
        FakeBackend().generate(
            [ChatMessage("user", "hi")],
            LiveSettings(DEFAULT_CHAT_SETTINGS),
            max_tokens=40,
            bans=bans,
        )
    )
    assert sum(isinstance(e, RewindEvent) for e in events) == 5
    notices = [e.message for e in events if isinstance(e, NoticeEvent)]
    assert any("took the reply back 5 times" in n for n in notices)
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.reason == "banned"
