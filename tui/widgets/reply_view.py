"""One assistant reply in the transcript, token by token."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.style import Style
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from backend.events import TokenEvent
from backend.pieces import visible_piece
from sampling.settings import SamplerSettings
from tui.display import display_text

# Background tints for "colour by probability", from unlikely to likely.
_PROB_STYLES = (
    (0.1, "on #6b1d1d"),
    (0.3, "on #6b431d"),
    (0.6, "on #5a5a1d"),
    (0.85, "on #2f5a1d"),
    (2.0, "on #1d5a35"),
)


def prob_style(prob: float) -> str:
    """The background tint for a token chosen with probability `prob`."""
    for bound, style in _PROB_STYLES:
        if prob < bound:
            return style
    return _PROB_STYLES[-1][1]


@dataclass(eq=False)
class Reply:
    """The state of one assistant reply (owned by the app's handlers).

    Attributes:
        tokens: The sampled tokens so far.
        seed: The seed it was generated with.
        settings: The settings in force when it started.
        finished: Why it ended, or "" while it runs.
        error: The error text if it ended in an error.
    """

    seed: int
    settings: SamplerSettings
    tokens: list[TokenEvent] = field(default_factory=list)
    finished: str = ""
    error: str = ""

    @property
    def text(self) -> str:
        """The reply's text so far."""
        return "".join(token.text for token in self.tokens)


class ReplyView(Widget):
    """Draws a `Reply`: its tokens, optionally tinted by probability, one selectable."""

    class TokenClicked(Message):
        """A token of this reply was clicked."""

        def __init__(self, view: ReplyView, index: int) -> None:
            super().__init__()
            self.view = view
            self.index = index

    def __init__(self, reply: Reply, number: int) -> None:
        super().__init__(classes="reply")
        self.reply = reply
        self.number = number
        self.colour = False
        self.selected: int | None = None
        self._text = Text()
        self._built = 0
        self._built_for: tuple[bool, int | None] = (False, None)

    def set_view(self, *, colour: bool, selected: int | None) -> None:
        """Change the tinting or the selected token."""
        if (colour, selected) != (self.colour, self.selected):
            self.colour = colour
            self.selected = selected
            self.sync()

    def sync(self) -> None:
        """Bring the drawing up to date with the reply (cheap when nothing changed)."""
        key = (self.colour, self.selected)
        if key != self._built_for:
            self._text = Text()
            self._built = 0
            self._built_for = key
        tokens = self.reply.tokens
        if self._built == len(tokens) and self._built:
            return
        for index in range(self._built, len(tokens)):
            token = tokens[index]
            style = Style(meta={"token": index})
            if self.colour:
                style = Style.parse(prob_style(token.step.prob)) + style
            if index == self.selected:
                style = Style(reverse=True, bold=True) + style
            shown = display_text(token.text)
            if index == self.selected and not shown.strip():
                # A whitespace-only (or empty) token still shows where it is.
                shown = visible_piece(token.text) or "∅"
            # Leading whitespace goes unstyled: Textual's wrapping shifts styled
            # spans that start with a space (seen in textual 8.2.8).
            body = shown.lstrip(" ")
            self._text.append(shown[: len(shown) - len(body)])
            self._text.append(body, style=style)
        self._built = len(tokens)
        self.refresh(layout=True)

    def render(self) -> Text:
        text = self._text.copy()
        if not text and not self.reply.finished:
            return Text("…", style="grey50")
        if self.reply.finished in ("cancelled", "error", "max_tokens"):
            label = {"cancelled": "stopped", "error": "error", "max_tokens": "max tokens"}
            text.append("  ")  # unstyled: textual drops a styled span's leading spaces
            text.append(f"[{label[self.reply.finished]}]", style="italic grey50")
        if self.reply.error:
            text.append("\n" + display_text(self.reply.error), style="bold red")
        return text

    def on_click(self, event: events.Click) -> None:
        index = event.style.meta.get("token")
        if isinstance(index, int):
            event.stop()
            self.post_message(self.TokenClicked(self, index))
