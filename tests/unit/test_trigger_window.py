"""A lazy grammar's triggers searched only where a new match can be
(`backend.llama.triggers`): the same trigger, to the byte, as matching the whole
reply at every token, as llama.cpp does; a pattern with an unbounded repeat differs
only past the documented window."""

from __future__ import annotations

import re
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from backend.llama.triggers import UNBOUNDED_WINDOW, TriggerWatch, match_reach

_ATOMS = st.sampled_from(
    ["a", "b", "ab", "\\n", ".", "[ab]", "[^a]", "\\s", "\\b", "^", "$", "(?<=a)", "(?<!b)"]
)


def _combine(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})"),
        inner.map(lambda p: f"({p})"),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "*?", "+?", "{1,3}", "{2}"])).map(
            lambda p: f"(?:{p[0]}){p[1]}"
        ),
        inner.map(lambda p: f"(?={p})"),
        inner.map(lambda p: f"(?!{p})"),
    )


PATTERNS = st.recursive(_ATOMS, _combine, max_leaves=6).filter(
    lambda p: _compiles(p) and not re.fullmatch(p, "")
)
"""Patterns over a small alphabet, bounded and unbounded, with lookarounds and anchors
(never one that matches the empty text: llama.cpp would trigger at once)."""


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _pieces(text: str, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b].encode() for a, b in pairwise(points)]


@given(
    patterns=st.lists(PATTERNS, min_size=1, max_size=3),
    text=st.text(alphabet="ab \n", min_size=1, max_size=80),
    cuts=st.lists(st.integers(0, 80), max_size=40),
)
def test_the_window_finds_what_the_whole_reply_finds(
    patterns: list[str], text: str, cuts: list[int]
) -> None:
    watch = TriggerWatch(None, tuple(patterns))
    so_far = b""
    for piece in _pieces(text, cuts):
        checked, so_far = len(so_far), so_far + piece
        windowed = watch.matched(so_far, checked)
        assert windowed == watch.matched(so_far)  # the full scan, as llama.cpp's
        if windowed is not None:
            break


def test_a_bounded_pattern_names_how_far_a_match_looks() -> None:
    assert match_reach(b"<tool_call>") == 11
    assert match_reach(b"x{1,3}") == 3
    assert match_reach(b"ab(?=cd)") == 4  # the lookahead's bytes count
    assert match_reach(b"(ab)\\1$") == 5  # the anchor peeks at one
    assert match_reach(b'\\{\\s*"name"') is None  # \s* is unbounded
    assert match_reach(b"\\p{L}") is None  # Python's parser cannot tell


def test_an_unbounded_pattern_is_searched_within_the_window_only() -> None:
    # The documented difference from llama.cpp: a match starting more than the
    # window before the text already checked is not seen.
    watch = TriggerWatch(None, ("a.*b",))
    checked = b"a" + b"x" * (UNBOUNDED_WINDOW + 10)
    assert watch.matched(checked + b"b") is not None  # the whole reply: triggered
    assert watch.matched(checked + b"b", len(checked)) is None
    near = b"x" * 10 + b"a" + b"x" * (UNBOUNDED_WINDOW - 100)
    assert watch.matched(near + b"b", len(near)) == watch.matched(near + b"b")
