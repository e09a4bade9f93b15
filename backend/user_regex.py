"""A regular expression the user wrote, run with a time limit and stoppable by Ctrl-C.

Trigger patterns and banned phrases are the user's text, matched against the reply at
every token. One that backtracks without end (`(a|aa)+$` on forty a's) would hold the
reply, and the app, for ever: Python's `re` neither gives up nor lets the interpreter
see Ctrl-C while it matches. They run on the `regex` package instead: its version 0
reads Python's `re` syntax (every pattern `re` takes, with the same matches), gives up
after a budget of CPU time (`SECONDS`, the process's: a loaded machine takes longer
by the clock), checks for signals while it matches (Ctrl-C is a KeyboardInterrupt at
once) and lets other threads run meanwhile (the app's screen stays live).

`regex` is imported when a pattern is first compiled, not with this module: a reply
without banned phrases or grammar triggers never needs it (2 MB of peak memory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, AnyStr, Generic

from sampling.errors import SamplescopeError

if TYPE_CHECKING:
    import regex

SECONDS = 1.0
"""The CPU time one search may take before the reply stops with `RegexTimeout`."""


class PatternError(SamplescopeError):
    """A pattern is no regular expression (its message says why, as `regex` says it)."""


class RegexTimeout(SamplescopeError):
    """A user's regular expression took longer than its time limit on the reply."""


class UserRegex(Generic[AnyStr]):
    """A user's pattern, compiled once, each search limited to `SECONDS`.

    Args:
        pattern: The pattern as the user gave it (bytes to match bytes).
        role: What the user gave it as ("trigger pattern", "banned phrase"), for the
            timeout's message.
        shown: The pattern as the user typed it, for the message (default: `pattern`).
        ignore_case: Match regardless of case.

    Raises:
        PatternError: `pattern` is not a regular expression, or one too deeply nested
            or with too large a repeat for the engine.
    """

    def __init__(
        self, pattern: AnyStr, role: str, *, shown: str | None = None, ignore_case: bool = False
    ) -> None:
        import regex  # here, not with the module: see its docstring

        flags = regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0)
        try:
            self.compiled: regex.Pattern[AnyStr] = regex.compile(pattern, flags)
        except regex.error as error:
            raise PatternError(str(error)) from None
        except RecursionError:  # the parser recurses once a group: 100,000 nested groups
            raise PatternError("it nests its groups too deeply") from None
        except OverflowError:  # a repeat past the engine's limit: a{1,99999999999}
            raise PatternError("a repetition count is too large") from None
        if shown is None:
            shown = pattern.decode("utf-8", "replace") if isinstance(pattern, bytes) else pattern
        self.shown = shown
        self.role = role

    @property
    def groups(self) -> int:
        """How many capturing groups the pattern has."""
        return self.compiled.groups

    def search(self, text: AnyStr, pos: int = 0) -> regex.Match[AnyStr] | None:
        """The first match in `text` from `pos` on (what comes before `pos` is seen by
        a lookbehind, `^` and `\\b`, as with `re`).

        Raises:
            RegexTimeout: It took longer than `SECONDS`.
        """
        try:
            return self.compiled.search(text, pos, timeout=SECONDS, concurrent=True)
        except TimeoutError:
            raise self._timeout() from None

    def fullmatch(self, text: AnyStr, pos: int = 0) -> regex.Match[AnyStr] | None:
        """The match of all of `text` from `pos` on.

        Raises:
            RegexTimeout: It took longer than `SECONDS`.
        """
        try:
            return self.compiled.fullmatch(text, pos, timeout=SECONDS, concurrent=True)
        except TimeoutError:
            raise self._timeout() from None

    def _timeout(self) -> RegexTimeout:
        return RegexTimeout(
            f"the {self.role} {self.shown!r} took over {SECONDS:g} s of CPU to match the"
            " reply (a pattern that backtracks without end?): the reply stops here"
        )


def escape(text: str) -> str:
    """`text` as a pattern that matches it literally (as `regex` escapes it)."""
    import regex  # here, not with the module: see its docstring

    return regex.escape(text)
