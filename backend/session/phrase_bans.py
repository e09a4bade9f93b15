"""Phrase bans that backtrack: a banned phrase in the reply sends the loop back.

After each sampled token the reply's text is searched for a banned phrase. When one
is found, the loop rewinds (`Generation.rewind`: the model's memory and the
sampler's state, random stream included) to the token where the phrase began, bans
that token at that index, and samples again there: the same uniform falls on the
distribution without it. The discarded tokens come out as a `RewindEvent` (the
rejected attempt, which the store keeps as a ghost branch), and the reply's figures
count them (`GenerationStats.discarded_tokens`).

A phrase that begins inside a token bans that whole token. The ban is a -inf logit
bias at that index (`backend.session.run.with_banned`), so the step's record shows
it and a replay of the stored reply samples the same tokens without searching again.
When `tries` tokens have been banned at one index (at most `MAX_TRIES`), or the reply
has been taken back `MAX_REWINDS` times in all, the reply stops there (finish reason
"banned"), its text never holding a banned phrase.

Searching is on the text so far: a regular expression's `$` or `\\b` sees the
reply's end as an end, and a phrase is found as soon as its last character is out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING

from backend.chat.events import NoticeEvent, RewindEvent, TokenEvent
from backend.user_regex import (
    MAX_PATTERN,
    PatternError,
    RegexTimeout,
    UserRegex,
    escape,
    match_reach,
)
from sampling.errors import SamplescopeError

if TYPE_CHECKING:
    from regex import Match

    from backend.session.loop import Event, Generation

#: How many tokens may be banned at one index before the reply stops there.
DEFAULT_TRIES = 32
#: The most tokens `tries` may allow to be banned at one index.
MAX_TRIES = 100
#: The most rewinds a reply may take in all (each keeps a ghost): then it stops there.
MAX_REWINDS = 1000


class PhraseBanError(SamplescopeError):
    """A banned phrase is not usable (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class PhraseBans:
    """The phrases a reply may not contain, and how they are matched.

    Attributes:
        phrases: The banned phrases (plain text, or regular expressions with `regex`).
        ignore_case: Match regardless of case.
        regex: Each phrase is a Python regular expression.
        tries: How many tokens may be banned at one index before the reply stops
            there (finish reason "banned").

    Raises:
        PhraseBanError: A phrase is empty, or a regular expression is invalid or
            matches the empty text.
    """

    phrases: tuple[str, ...] = ()
    ignore_case: bool = False
    regex: bool = False
    tries: int = DEFAULT_TRIES
    _patterns: tuple[UserRegex[str], ...] = field(default=(), init=False, repr=False, compare=False)
    """Each phrase compiled once (plain phrases escaped), each search time-limited."""
    _reaches: tuple[int | None, ...] = field(default=(), init=False, repr=False, compare=False)
    """How many characters a match of each phrase may examine (None: unbounded)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "phrases", tuple(self.phrases))
        if not 1 <= self.tries <= MAX_TRIES:
            raise PhraseBanError(f"invalid tries={self.tries}: expected 1 to {MAX_TRIES}")
        patterns = []
        for phrase in self.phrases:
            if not phrase:
                raise PhraseBanError("a banned phrase is empty")
            if len(phrase if self.regex else escape(phrase)) > MAX_PATTERN:
                raise PhraseBanError(
                    f"banned phrase {phrase[:40]!r}… is longer than {MAX_PATTERN:,} characters"
                    " (as a pattern)"
                )
            if not self.regex:
                patterns.append(
                    UserRegex(
                        escape(phrase),
                        "banned phrase",
                        shown=phrase,
                        ignore_case=self.ignore_case,
                    )
                )
                continue
            try:
                compiled = UserRegex(phrase, "banned phrase", ignore_case=self.ignore_case)
                empty = compiled.fullmatch("")
            except PatternError as error:
                raise PhraseBanError(
                    f"banned phrase {phrase!r} is not a regular expression: {error}"
                ) from None
            except RegexTimeout as error:
                raise PhraseBanError(str(error)) from None
            if empty:
                raise PhraseBanError(
                    f"banned phrase {phrase!r} matches the empty text: it bans everything"
                )
            patterns.append(compiled)
        object.__setattr__(self, "_patterns", tuple(patterns))
        reaches = (match_reach(p) if self.regex else len(p) for p in self.phrases)
        object.__setattr__(self, "_reaches", tuple(reaches))

    def __bool__(self) -> bool:
        return bool(self.phrases)

    def find(self, text: str, after: int = 0) -> Match[str] | None:
        """The banned phrase in `text` that starts first among those ending past
        character `after` (matches may overlap: "aa" is found in "aaa" past 2).

        Raises:
            RegexTimeout: A search took longer than its time limit (`backend.user_regex`).
        """
        found: Match[str] | None = None
        for pattern, reach in zip(self._patterns, self._reaches, strict=True):
            # A match ending past `after` starts at most its reach before it (a plain
            # phrase's length): the text before that is not searched again each token.
            position = 0 if reach is None else max(0, after - reach + 1)
            # Past the end no search starts: the engine would start it at the end again
            # (a zero-width match there, `\b`, would be found for ever).
            while position <= len(text) and (match := pattern.search(text, position)):
                if match.end() > after:
                    if found is None or match.start() < found.start():
                        found = match
                    break
                position = match.start() + 1
        return found


def token_at(texts: list[str], char: int) -> int:
    """The index of the token whose text holds character `char` of their joined text."""
    for index, end in enumerate(accumulate(len(text) for text in texts)):
        if end > char:
            return index
    return len(texts)


def backtracking(generation: Generation, bans: PhraseBans) -> Iterator[Event]:
    """`generation`'s events with the phrase bans enforced (it must be rewindable).

    Each token is passed on, then checked; a banned phrase brings a rewind and its
    `RewindEvent` (a `NoticeEvent` and the finish too when the index has run out of
    tries). Given and forced tokens are never rewound: a phrase wholly inside them is
    left alone.
    """
    forced = generation.steer.force is not None
    rewinds: dict[int, int] = {}  # each number's rewinds so far
    joined: dict[int, tuple[int, str]] = {}  # each number's texts so far: (count, text)
    given_chars: dict[int, int] = {}  # each number's given tokens' text length
    for number, event in generation:
        yield number, event
        if not isinstance(event, TokenEvent):
            continue
        sequence = generation.sequences[number]
        count, text_before = joined.get(number, (-1, ""))
        if count != len(sequence.texts) - 1:  # first token, or after a rewind
            text_before = "".join(sequence.texts[:-1])
        whole = text_before + sequence.texts[-1]
        joined[number] = (len(sequence.texts), whole)
        fixed = sequence.given + forced  # the first index a rewind may go back to
        if sequence.index <= fixed:
            continue
        # A phrase ending in the text checked before would have been found then (or
        # lies in the given tokens, left alone): only one ending in the new text counts.
        if number not in given_chars:
            given_chars[number] = sum(len(text) for text in sequence.texts[:fixed])
        try:
            match = bans.find(whole, max(given_chars[number], len(text_before)))
        except RegexTimeout as timeout:  # the reply ends there, in one line
            generation.end(number, "error", str(timeout))
            continue
        if match is None:
            continue
        at = max(fixed, token_at(sequence.texts, match.start()))
        discarded = tuple(sequence.token_ids[at:])
        text = "".join(sequence.texts[at:])
        generation.rewind(number, sequence.index - at)
        banned = sequence.ban(at, discarded[0])
        yield number, RewindEvent(at, discarded, text, match.group(), tuple(sorted(banned)))
        rewinds[number] = rewinds.get(number, 0) + 1
        if rewinds[number] >= MAX_REWINDS:
            yield (
                number,
                NoticeEvent(
                    f"phrase bans took the reply back {rewinds[number]} times: it stops at"
                    f" token {at}"
                ),
            )
            generation.end(number, "banned")
        elif len(banned) >= bans.tries:
            yield (
                number,
                NoticeEvent(
                    f"phrase bans rejected {len(banned)} tokens at token {at}: "
                    "the reply stops there"
                ),
            )
            generation.end(number, "banned")
