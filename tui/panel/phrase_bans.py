"""The sampling panel's phrase bans: the banned phrases and how they are matched."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message

from backend.session.phrase_bans import PhraseBanError, PhraseBans
from sampling.settings.text import format_texts, parse_texts
from tui.panel.text_setting import TextSetting
from tui.panel.toggle import Toggle

BANS_FIELD = "banned_phrases"
BAN_FIELDS = (BANS_FIELD, "ban_ignore_case", "ban_regex")
"""The controls' fields (not sampler settings: the sampling panel leaves them alone)."""
_ON_OFF = ((False, "off"), (True, "on"))


def bans_text(bans: PhraseBans) -> str:
    """The phrases as the input shows them ("" when none)."""
    return format_texts(bans.phrases) if bans.phrases else ""


class PhraseBanControls(Vertical):
    """The banned phrases (a JSON list, or texts separated by ','), ignore case, regex.

    A change is read and checked here: a valid one posts `Changed` with the bans now
    asked for; an invalid one is refused with a notice and the input shows the bans
    in force again.

    Args:
        bans: The bans shown at the start.
    """

    DEFAULT_CSS = """
    PhraseBanControls { height: auto; }
    """

    class Changed(Message):
        """The user asked for other phrase bans (already checked).

        Attributes:
            bans: The bans asked for.
        """

        def __init__(self, bans: PhraseBans) -> None:
            super().__init__()
            self.bans = bans

    def __init__(self, bans: PhraseBans) -> None:
        super().__init__(id="phrase-bans")
        self.bans = bans

    def compose(self) -> ComposeResult:
        yield TextSetting(
            BANS_FIELD,
            "ban",
            bans_text(self.bans),
            placeholder='["as an AI", "delve"] or as an AI,delve',
        )
        yield Toggle("ban_ignore_case", "ignore case", _ON_OFF, self.bans.ignore_case)
        yield Toggle("ban_regex", "regex", _ON_OFF, self.bans.regex)

    def show(self, bans: PhraseBans) -> None:
        """Show the bans in force."""
        self.bans = bans
        self.query_one(TextSetting).set_value(bans_text(bans))
        for toggle in self.query(Toggle):
            toggle.set_value(bans.ignore_case if toggle.field == "ban_ignore_case" else bans.regex)

    def _ask(self, phrases: tuple[str, ...], ignore_case: bool, regex: bool) -> None:
        try:
            bans = PhraseBans(phrases, ignore_case=ignore_case, regex=regex, tries=self.bans.tries)
        except PhraseBanError as error:
            self.notify(str(error), severity="error")
            self.show(self.bans)
            return
        self.post_message(self.Changed(bans))

    @on(TextSetting.Changed)
    def _on_text(self, event: TextSetting.Changed) -> None:
        event.stop()
        try:
            phrases = parse_texts(event.value) if event.value.strip() else ()
        except ValueError as error:
            self.notify(f"banned phrases: {error}", severity="error")
            self.show(self.bans)
            return
        self._ask(phrases, self.bans.ignore_case, self.bans.regex)

    @on(Toggle.Changed)
    def _on_toggle(self, event: Toggle.Changed) -> None:
        event.stop()
        on = bool(event.value)
        if event.toggle.field == "ban_ignore_case":
            self._ask(self.bans.phrases, on, self.bans.regex)
        else:
            self._ask(self.bans.phrases, self.bans.ignore_case, on)
