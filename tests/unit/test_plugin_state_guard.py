"""A plugin's `state` and `from_settings` are its code too: a raising `state` (read
when the reply can be taken back) ends the reply with one line naming the plugin, a
raising `from_settings` switches the plugin off with a notice naming it; neither is a
traceback or an unnamed error."""

from __future__ import annotations

from pathlib import Path

from backend.chat.events import FinishedEvent, NoticeEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.phrase_bans import PhraseBans
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.helpers import write_plugin
from tests.registries import with_plugin

QUESTION = [ChatMessage("user", "hi")]


def _reply(path: Path, name: str, bans: PhraseBans | None = None) -> list[object]:
    settings = SamplerSettings(with_plugin(path), samplers=(name, "temperature"), seed=2)
    return list(FakeBackend().generate(QUESTION, LiveSettings(settings), max_tokens=3, bans=bans))


def test_a_raising_state_ends_the_reply_in_one_line_naming_the_plugin(tmp_path: Path) -> None:
    path = write_plugin(tmp_path, "stateful", "        pass")
    raising = "    @property\n    def state(self):\n        raise RuntimeError('no state')\n\n"
    path.write_text(path.read_text().replace("    @classmethod", raising + "    @classmethod", 1))
    # Phrase bans keep each step's state (the reply can go back): the state is read.
    events = _reply(path, "stateful", PhraseBans(("never said",)))
    end = events[-1]
    assert isinstance(end, FinishedEvent) and end.reason == "error"
    assert end.error == (
        "sampler plugin stateful switched off for this reply: RuntimeError: no state"
    )


def test_a_raising_from_settings_switches_the_plugin_off_with_a_notice(tmp_path: Path) -> None:
    path = write_plugin(tmp_path, "unbuilt", "        pass")
    text = path.read_text().replace("        return cls()", "        raise ValueError('bad')", 1)
    path.write_text(text)
    events = _reply(path, "unbuilt")
    notices = [e.message for e in events if isinstance(e, NoticeEvent)]
    assert notices == ["sampler plugin unbuilt switched off for this reply: ValueError: bad"]
    end = events[-1]
    assert isinstance(end, FinishedEvent) and end.reason == "max_tokens"
    assert len([e for e in events if isinstance(e, TokenEvent)]) == 3
