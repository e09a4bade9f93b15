"""The user's regular expressions (triggers, banned phrases) on `backend.user_regex`:
Python's `re` syntax and matches, a time limit that ends the reply in one line naming
the pattern, instead of a search that never ends."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend import user_regex
from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.llama.triggers import TriggerWatch
from backend.session.phrase_bans import PhraseBanError, PhraseBans
from backend.user_regex import MAX_PATTERN, PatternError, RegexTimeout, UserRegex
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.unit.test_trigger_window import PATTERNS

CATASTROPHIC = "(?:.|..)+[0-9]"
SHORTER_LIMIT = 0.2
"""Seconds of CPU a search may take where a test needs a stop but not the full second."""
"""Backtracks without end on a text without digits (each start tries every way of
cutting the rest into ones and twos): the `regex` package too."""

SYNTAX = [
    r"(?P<word>\w+) (?P=word)",
    r"(?i)caf[ée]",
    r"(?s)a.b",
    r"(?m)^b$",
    r"(?x) a  b  # spaced",
    r"\d+\.\d*",
    r"\bcat\B",
    r"\Acat",
    r"dog\Z",
    r"a*?b",
    r"a{2,}",
    r"a++b",
    r"(?>a+)b",
    r"(a)?(?(1)b|c)",
    r"(?<=x)y",
    r"(?<!x)y",
    r"x(?=y)",
    r"x(?!y)",
    r"[^\W\d_]+",
    r"[a-c\-]+",
    r"\x41\u00e9\N{BULLET}",
    r"\t|\n|\\",
    r"(?:ab|cd)+",
    r"(?i:A)b",
    r"\s+$",
]
"""Python's `re` syntax, a feature a pattern."""

TEXTS = [
    "cat cat dog",
    "Café cafe CAFÉ",
    "a\nb a-b",
    "12.5 and 3. then x",
    "catty cat\tdog\\",
    "aaab ab b",
    "xy zy xyz",
    "Aé• ABAB cdab",
    "trailing   ",
]


@pytest.mark.parametrize("pattern", SYNTAX)
def test_python_regex_syntax_is_read_and_matches_as_re_does(pattern: str) -> None:
    ours = UserRegex(pattern, "banned phrase")
    theirs = re.compile(pattern)
    for text in TEXTS:
        for pos in range(len(text) + 1):
            mine, python = ours.search(text, pos), theirs.search(text, pos)
            assert (mine and (mine.span(), mine.groups())) == (
                python and (python.span(), python.groups())
            ), (pattern, text, pos)


@given(pattern=PATTERNS, text=st.text(alphabet="ab \nB", max_size=40), ignore_case=st.booleans())
def test_random_patterns_match_as_re_does(pattern: str, text: str, ignore_case: bool) -> None:
    ours = UserRegex(pattern, "banned phrase", ignore_case=ignore_case)
    theirs = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    for pos in range(len(text) + 1):
        mine, python = ours.search(text, pos), theirs.search(text, pos)
        assert (mine and (mine.span(), mine.groups())) == (
            python and (python.span(), python.groups())
        )


def test_a_search_that_never_ends_stops_in_one_line_naming_the_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # re takes minutes on (a+)+$ against 40 a's and a b: the regex package sees at
    # once that it cannot match.
    assert UserRegex("(a+)+$", "banned phrase").search("a" * 40 + "b") is None
    with pytest.raises(RegexTimeout) as caught:
        UserRegex(CATASTROPHIC, "banned phrase").search("the cat sat on the mat " * 3)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"the banned phrase {CATASTROPHIC!r} took over 1 s of CPU")
    monkeypatch.setattr(user_regex, "SECONDS", SHORTER_LIMIT)  # the same stop, sooner
    watch = TriggerWatch(None, (CATASTROPHIC,))
    with pytest.raises(RegexTimeout, match=r"^the trigger pattern '\(\?:\.\|\.\.\)\+\[0-9\]'"):
        watch.matched(b"the cat sat on the mat " * 3)


def test_a_banned_regex_that_never_ends_ends_the_reply_with_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(user_regex, "SECONDS", SHORTER_LIMIT)
    backend = FakeBackend(min_reply_tokens=60)
    bans = PhraseBans((CATASTROPHIC,), regex=True)
    events = list(
        backend.generate(
            [ChatMessage("user", "tell me about the cat")],
            LiveSettings(SamplerSettings(temperature=0.0)),
            max_tokens=60,
            bans=bans,
        )
    )
    end = events[-1]
    assert isinstance(end, FinishedEvent)
    assert end.reason == "error"
    assert end.error is not None and end.error.startswith(f"the banned phrase {CATASTROPHIC!r}")
    assert 0 < len(end.token_ids) < 60  # the reply so far is kept


def test_a_pattern_python_cannot_read_is_one_line() -> None:
    with pytest.raises(PhraseBanError, match=r"^banned phrase '\(ab' is not a regular expression"):
        PhraseBans(("(ab",), regex=True)


def test_a_pattern_longer_than_the_limit_is_refused_before_it_is_compiled() -> None:
    # The regex package's first search of a 3,000-character literal in as long a text
    # took 3 s outside the time limit's reach; the limit keeps that search short.
    with pytest.raises(PatternError, match="longer than 1,000 characters"):
        UserRegex("a" * (MAX_PATTERN + 1), "banned phrase")
    longest = UserRegex("a" * MAX_PATTERN, "banned phrase")
    assert longest.search("a" * MAX_PATTERN) is not None
