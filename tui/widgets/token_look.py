"""How a sampled token looks: the marks a token view puts on it, as styles.

The chat's replies and the compare columns draw tokens with the same marks: a tint
by probability or by rank (GLTR's buckets), the token cursor, and (compare) the
tokens shared with the reference column dim and the first one that differs
highlighted, and the spans that replace reference tokens or are inserted among
them tinted. `TokenMarks` says which are on; `TokenMarks.look` gives a token's
styles and `styled_runs` splits its text into the runs to draw.

Marks that point at a word (the tint, the cursor) leave the spaces before it
unstyled, so that neighbouring marked words stay apart; marks that say what the
token is (shared, divergent) cover all of it, spaces included, and then so does
every other mark on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from rich.style import Style

# Background tints for "colour by probability", from unlikely to likely.
_PROB_STYLES = (
    (0.1, Style.parse("on #6b1d1d")),
    (0.3, Style.parse("on #6b431d")),
    (0.6, Style.parse("on #5a5a1d")),
    (0.85, Style.parse("on #2f5a1d")),
    (2.0, Style.parse("on #1d5a35")),
)
# Background tints for "colour by rank", GLTR's buckets: top 10, 100, 1000, beyond.
RANK_BUCKETS = (10, 100, 1000)
_RANK_STYLES = (
    Style.parse("on #1d5a35"),
    Style.parse("on #5a5a1d"),
    Style.parse("on #6b1d1d"),
    Style.parse("on #4b1d6b"),
)
UNKNOWN_RANK_STYLE = Style.parse("on #3a3a3a")
"""A stored token below its step's table whose rank was not recorded."""
CURSOR_STYLE = Style(reverse=True, bold=True)
"""The selected token."""
SHARED_STYLE = Style(dim=True)
"""Tokens before the divergence, the same as the reference column's."""
DIVERGE_STYLE = Style(bold=True, color="#000000", bgcolor="#e5c07b")
"""The first token that differs from the reference column."""
REPLACED_STYLE = Style.parse("#e5c07b on #4a3d1d")
"""A token of a span that replaces reference tokens."""
INSERTED_STYLE = Style.parse("#98c379 on #1d3d24")
"""A token of a span inserted among the reference's tokens."""
CURSOR_ON_DIVERGE_STYLE = Style(underline=True, bold=True)
"""The selected token when it is the divergence (keeps the divergence colours)."""


def prob_style(prob: float) -> Style:
    """The background tint for a token chosen with probability `prob`."""
    for bound, style in _PROB_STYLES:
        if prob < bound:
            return style
    return _PROB_STYLES[-1][1]


def rank_bucket(rank: int) -> int:
    """GLTR's bucket of a 1-based rank: 0 top 10, 1 top 100, 2 top 1000, 3 beyond."""
    return next((n for n, bound in enumerate(RANK_BUCKETS) if rank <= bound), len(RANK_BUCKETS))


def rank_style(rank: int | None) -> Style:
    """The background tint for a token of rank `rank` (None: not known)."""
    return UNKNOWN_RANK_STYLE if rank is None else _RANK_STYLES[rank_bucket(rank)]


class TokenLook(NamedTuple):
    """A token's styles, added over the view's own: None leaves the view's style.

    Attributes:
        spaces: For the spaces its text starts with.
        word: For the rest (for all of it when it is only spaces).
    """

    spaces: Style | None
    word: Style | None


PLAIN = TokenLook(None, None)
"""A token without marks."""


@dataclass(frozen=True, slots=True)
class TokenMarks:
    """The marks a token view puts on its tokens.

    Attributes:
        colour: Tint every token by the probability it was chosen with, or by its rank.
        by_rank: With `colour`, tint by rank bucket (GLTR) instead of probability.
        cursor: The selected token's index, or None.
        divergence: The index of the first token that differs from a reference
            reply (the tokens before it are dim), or None.
        changes: Per token, how it stands against the reference reply ("same":
            dim, "replaced", "inserted"; see `tui.compare.token_diff`), or None.
    """

    colour: bool = False
    by_rank: bool = False
    cursor: int | None = None
    divergence: int | None = None
    changes: tuple[str, ...] | None = None

    def marked(self, index: int) -> bool:
        """Whether the view points at token `index` (its blank text then shows a piece)."""
        return index == self.cursor or index == self.divergence

    def look(self, index: int, prob: float, rank: int | None = None) -> TokenLook:
        """The styles of token `index`, chosen with probability `prob` at rank `rank`."""
        whole: Style | None = None
        if self.changes is not None and index < len(self.changes):
            whole = _CHANGE_STYLES.get(self.changes[index])
            if index == self.divergence:
                whole = DIVERGE_STYLE
        elif self.divergence is not None:
            if index < self.divergence:
                whole = SHARED_STYLE
            elif index == self.divergence:
                whole = DIVERGE_STYLE
        word = whole
        if self.colour:
            word = _add(word, rank_style(rank) if self.by_rank else prob_style(prob))
        if index == self.cursor:
            word = _add(word, CURSOR_ON_DIVERGE_STYLE if whole is DIVERGE_STYLE else CURSOR_STYLE)
        if whole is not None:
            return TokenLook(word, word)
        return PLAIN if word is None else TokenLook(None, word)


_CHANGE_STYLES = {"same": SHARED_STYLE, "replaced": REPLACED_STYLE, "inserted": INSERTED_STYLE}


def styled_runs(text: str, look: TokenLook) -> Iterator[tuple[str, Style | None]]:
    """A token's text (or the part of it on one line) as runs with their styles."""
    if look.spaces != look.word:
        body = text.lstrip(" ")
        if body and body != text:
            yield text[: len(text) - len(body)], look.spaces
            yield body, look.word
            return
    yield text, look.word


def _add(style: Style | None, extra: Style) -> Style:
    return extra if style is None else style + extra
