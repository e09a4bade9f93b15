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

import importlib
import math
import re
from typing import TYPE_CHECKING, Any, AnyStr, Generic

from sampling.errors import SamplescopeError

if TYPE_CHECKING:
    import regex

sre_parse: Any = importlib.import_module("re._parser")
sre: Any = importlib.import_module("re._constants")
"""Python's own regex parser (no stubs): what a pattern's parts are."""

SECONDS = 1.0
"""The CPU time one search may take before the reply stops with `RegexTimeout`."""


class PatternError(SamplescopeError):
    """A pattern is no regular expression (its message says why, as `regex` says it)."""


MAX_PATTERN = 1000
"""The longest pattern taken, in characters (or bytes). The regex package's first
search of a long pattern in a long text builds its tables in time that grows with
the cube of the length, outside the time limit's reach (3 s for a 3,000-character
phrase in as long a reply, minutes for 10,000); 1,000 takes a tenth of a second."""


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
            or with too large a repeat for the engine, or longer than `MAX_PATTERN`.
    """

    def __init__(
        self, pattern: AnyStr, role: str, *, shown: str | None = None, ignore_case: bool = False
    ) -> None:
        if len(pattern) > MAX_PATTERN:
            raise PatternError(f"it is longer than {MAX_PATTERN:,} characters")
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


def match_reach(pattern: str | bytes) -> int | None:
    """How many characters (bytes, for a bytes pattern) from its start a match of
    `pattern` may examine (what it consumes, lookaheads and lookbehinds counted as
    consumed), or None when that is unbounded (or Python's parser cannot tell): a match
    ending past position p starts past p - reach, so a search may start there."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    reach = _extent(parsed, {})
    return None if math.isinf(reach) else int(reach)


def _extent(items: Any, groups: dict[int, float]) -> float:
    """The most bytes a sequence of parsed items may examine (math.inf: unbounded)."""
    total = 0.0
    for op, value in items:
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN, sre.AT):
            total += 1  # an anchor peeks at the next byte: counted as one
        elif op is sre.SUBPATTERN:
            group, _, _, body = value
            width = _extent(body, groups)
            if group is not None:
                groups[group] = width
            total += width
        elif op is sre.BRANCH:
            total += max(_extent(branch, groups) for branch in value[1])
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            _, most, body = value
            width = _extent(body, groups)
            if width:
                total += math.inf if most == sre.MAXREPEAT else most * width
        elif op is sre.ATOMIC_GROUP:
            total += _extent(value, groups)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            total += _extent(value[1], groups)
        elif op is sre.GROUPREF:
            total += groups.get(value, math.inf)
        elif op is sre.GROUPREF_EXISTS:
            _, yes, no = value
            total += max(_extent(yes, groups), _extent(no, groups) if no else 0.0)
        else:
            return math.inf
    return total
