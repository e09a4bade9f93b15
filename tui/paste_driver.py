"""A bracketed paste that holds escape sequences reaches the app whole.

Textual's XTermParser (8.2.8) reads an ESC inside a bracketed paste as the start of a
key sequence: the text from there on arrives as key presses and the text before it
as a short paste, so pasting coloured terminal output into the prompt loses and
scrambles characters. `PasteSafeParser` hides each ESC between the paste markers
from that parser (as a Unicode noncharacter) and puts it back in the `Paste` event.
`paste_safe_driver` gives Textual's Linux driver that parser; other drivers (the
headless one of the tests, Windows) are left as they are.
"""

from __future__ import annotations

import types
from collections.abc import Iterable

from textual import events
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.drivers import linux_driver
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

ESC = "\x1b"
PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
HIDDEN_ESC = "\ufdd0"
"""What an ESC inside a paste travels as: a noncharacter, never sent by a terminal."""


class PasteSafeParser(XTermParser):
    """Textual's parser, with ESCs inside bracketed pastes kept as text."""

    def __init__(self, debug: bool = False) -> None:
        super().__init__(debug)
        self._pasting = False
        self._held = ""

    def feed(self, data: str) -> Iterable[Message]:
        """Parse `data` (a chunk of terminal input; "" at the end)."""
        hidden = self.hide_escapes(data)
        if data and not hidden:
            return []  # all held back: "" would tell the parser the input ended
        return [_with_escapes(token) for token in super().feed(hidden)]

    def hide_escapes(self, data: str) -> str:
        """`data` with every ESC between the paste markers replaced by `HIDDEN_ESC`.

        The state carries over chunks. A chunk that ends in what may be the start of
        a marker (at least `ESC [ 2` outside a paste, which no key sends alone) holds
        those characters back for the next chunk.
        """
        text, self._held = self._held + data, ""
        if not data:
            return text.replace(ESC, HIDDEN_ESC) if self._pasting else text
        pieces: list[str] = []
        position = 0
        while position < len(text):
            if not self._pasting:
                start = text.find(PASTE_START, position)
                if start < 0:
                    rest = text[position:]
                    held = _marker_prefix_at_end(rest, PASTE_START, shortest=3)
                    self._held = rest[len(rest) - held :]
                    pieces.append(rest[: len(rest) - held])
                    break
                after = start + len(PASTE_START)
                pieces.append(text[position:after])
                position = after
                self._pasting = True
            else:
                end = text.find(PASTE_END, position)
                if end < 0:
                    rest = text[position:]
                    held = _marker_prefix_at_end(rest, PASTE_END, shortest=1)
                    self._held = rest[len(rest) - held :]
                    pieces.append(rest[: len(rest) - held].replace(ESC, HIDDEN_ESC))
                    break
                pieces.append(text[position:end].replace(ESC, HIDDEN_ESC) + PASTE_END)
                position = end + len(PASTE_END)
                self._pasting = False
        return "".join(pieces)


def _marker_prefix_at_end(text: str, marker: str, shortest: int) -> int:
    """How many characters (at least `shortest`) at the end of `text` begin `marker`."""
    for length in range(min(len(marker) - 1, len(text)), shortest - 1, -1):
        if marker.startswith(text[-length:]):
            return length
    return 0


def _with_escapes(token: Message) -> Message:
    """A `Paste` with its hidden ESCs restored; any other token as it is."""
    if isinstance(token, events.Paste) and HIDDEN_ESC in token.text:
        return events.Paste(token.text.replace(HIDDEN_ESC, ESC))
    return token


class PasteSafeLinuxDriver(LinuxDriver):
    """Textual's Linux driver reading its input with `PasteSafeParser`."""

    # The same input loop, reading the parser class from a copy of its module's names.
    run_input_thread = types.FunctionType(
        LinuxDriver.run_input_thread.__code__,
        {**vars(linux_driver), "XTermParser": PasteSafeParser},
        "run_input_thread",
        LinuxDriver.run_input_thread.__defaults__,
        LinuxDriver.run_input_thread.__closure__,
    )


def paste_safe_driver(driver_class: type[Driver]) -> type[Driver]:
    """The driver to use in place of `driver_class` (Textual's choice)."""
    return PasteSafeLinuxDriver if driver_class is LinuxDriver else driver_class
