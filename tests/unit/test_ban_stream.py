"""generate --ban streams what a rewind can no longer take back (on the fake model)."""

from __future__ import annotations

import pytest

from backend.chat.events import FinishedEvent, RewindEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.phrase_bans import PhraseBans
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FakeBackend
from tui.cli.commands.generate.held_back_text import HeldBackText

QUESTION = [ChatMessage("user", "tell me about the cat")]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    "bans",
    [
        PhraseBans((" the", " cat")),
        PhraseBans((" some saw", " all some", "e")),
        PhraseBans((r" \w+ \w+ \w+s\b",), regex=True),
    ],
    ids=["words", "longer", "regex"],
)
def test_streamed_text_is_never_taken_back_and_adds_up_to_the_reply(
    seed: int, bans: PhraseBans
) -> None:
    settings = DEFAULT_CHAT_SETTINGS.with_changes(seed=seed)
    events = FakeBackend(min_reply_tokens=40).generate(
        QUESTION, LiveSettings(settings), max_tokens=40, bans=bans
    )
    held = HeldBackText(bans)
    shown = ""
    texts: list[str] = []
    for event in events:
        if isinstance(event, TokenEvent):
            del texts[event.index :]
            texts.append(event.text)
            shown += held.token(event)
            assert "".join(texts).startswith(shown)
        elif isinstance(event, RewindEvent):
            held.rewind(event)
            kept = "".join(texts[: event.index])
            assert len(shown) <= len(kept)  # nothing shown was taken back
            del texts[event.index :]
        elif isinstance(event, FinishedEvent):
            assert shown + held.rest(event.text) == event.text
            if not bans.regex:
                assert len(shown) > len(event.text) // 2  # it did stream
