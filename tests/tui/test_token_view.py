"""Token → visible text and token → styles: the code every token view draws with."""

from __future__ import annotations

import numpy as np

from backend.chat.events import TokenEvent
from sampling import Sampler
from sampling.settings.record import SamplerSettings
from tui.widgets.token_look import (
    CURSOR_ON_DIVERGE_STYLE,
    CURSOR_STYLE,
    DIVERGE_STYLE,
    PLAIN,
    SHARED_STYLE,
    TokenLook,
    TokenMarks,
    prob_style,
    styled_runs,
)
from tui.widgets.token_text import EMPTY_PIECE, TokenPieces, token_text

STEP = Sampler(SamplerSettings(temperature=0.0), vocab_size=4).sample(
    np.array([0.0, 3.0, 1.0, 0.5], dtype=np.float32)
)


def token(text: str, piece: str, index: int = 0) -> TokenEvent:
    return TokenEvent(index, STEP, text, piece)


def test_token_text_is_literal_and_a_marked_blank_token_shows_its_piece() -> None:
    assert token_text(token(" [bold]x", "␣[bold]x")) == " [bold]x"
    assert token_text(token("\x1b[31m", "␛[31m")) == "\u241b[31m"
    assert token_text(token(" ", "␣")) == " "
    assert token_text(token(" ", "␣"), marked=True) == "␣"
    assert token_text(token("\n", "↵"), marked=True) == "↵\n"  # still ends the line
    assert token_text(token("", "⟨0xF0⟩"), marked=True) == "⟨0xF0⟩"  # half a character
    assert token_text(token("", ""), marked=True) == EMPTY_PIECE
    assert token_text(token(" cat", "␣cat"), marked=True) == " cat"


def test_pieces_are_learnt_then_looked_up_then_ids() -> None:
    looked: list[int] = []

    def lookup(token_id: int) -> str:
        looked.append(token_id)
        if token_id == 9:
            raise KeyError(token_id)
        return f"<{token_id}>"

    pieces = TokenPieces()
    assert pieces(5) == "#5"
    pieces.lookup = lookup
    pieces.learn(TokenEvent(0, STEP, " a", "␣a"))
    assert pieces(STEP.token_id) == "␣a"
    assert pieces(5) == pieces(5) == "<5>" and looked == [5]  # looked up once
    assert pieces(9) == "#9"


def test_marks_cover_the_word_or_the_whole_token() -> None:
    assert TokenMarks().look(3, 0.5) is PLAIN
    tint = prob_style(0.05)
    assert TokenMarks(colour=True).look(0, 0.05) == TokenLook(None, tint)
    assert TokenMarks(cursor=2).look(2, 0.5) == TokenLook(None, CURSOR_STYLE)
    marks = TokenMarks(cursor=4, divergence=4)
    assert marks.marked(4) and not marks.marked(3)
    assert marks.look(3, 0.5) == TokenLook(SHARED_STYLE, SHARED_STYLE)
    on_divergence = DIVERGE_STYLE + CURSOR_ON_DIVERGE_STYLE
    assert marks.look(4, 0.5) == TokenLook(on_divergence, on_divergence)
    assert marks.look(5, 0.5) is PLAIN


def test_the_spaces_before_a_word_keep_the_views_style() -> None:
    word_only = TokenLook(None, CURSOR_STYLE)
    assert list(styled_runs(" cat", word_only)) == [(" ", None), ("cat", CURSOR_STYLE)]
    assert list(styled_runs("  ", word_only)) == [("  ", CURSOR_STYLE)]  # only spaces: all
    assert list(styled_runs("cat", word_only)) == [("cat", CURSOR_STYLE)]
    whole = TokenLook(SHARED_STYLE, SHARED_STYLE)
    assert list(styled_runs(" cat", whole)) == [(" cat", SHARED_STYLE)]


def test_every_way_a_reply_ends_but_eos_has_a_label() -> None:
    from typing import get_args

    from backend.chat.events import FinishReason
    from tui.chat.reply import FINISH_LABELS

    assert set(get_args(FinishReason)) - {"eos"} == set(FINISH_LABELS)
