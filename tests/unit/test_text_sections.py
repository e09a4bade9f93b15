"""A scored text taken apart by section: each token's section from the tags, the sums of
a figure by section, and `kld`'s figures by section (golden values)."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.score.kld import KldPlan, KldResult
from backend.score.kld_sections import SectionDivergence, divergence_by_section
from backend.score.text_sections import opens_in_thinking, text_sections
from sampling.analysis.divergence import DivergenceTotals, PositionDivergence
from sampling.analysis.section_sums import SectionSum, section_sums
from sampling.sections import Section, SectionTracker
from tui.cli.options.thinking_tags import thinking_tags

T, A = Section.THINKING, Section.ANSWER
THINK = SectionTracker.of("<think>", ["</think>"])


def test_each_token_s_section_from_the_text() -> None:
    pieces = [b"Hi", b"<", b"think", b">", b"hm", b"</", b"think", b">", b"Yes"]
    text = b"".join(pieces).decode()
    assert text_sections(THINK, text, pieces) == (A, A, A, T, T, T, T, T, A)
    # No tracker, or no thinking in the text: no sections.
    assert text_sections(None, text, pieces) == ()
    assert text_sections(THINK, "Yes", [b"Yes"]) == ()


def test_a_text_whose_first_tag_is_an_end_tag_begins_in_the_thinking() -> None:
    pieces = [b"hm", b"</think>", b"Yes"]
    assert opens_in_thinking(THINK, "hm</think>Yes")
    assert text_sections(THINK, "hm</think>Yes", pieces) == (T, T, A)
    assert not opens_in_thinking(THINK, "<think>hm</think>Yes")
    assert not opens_in_thinking(THINK, "no tags at all")


def test_section_sums_golden() -> None:
    thinking, answer = section_sums([T, T, A, A, T], [-1.0, -2.0, None, -0.5, -3.0])
    assert thinking == SectionSum(T, 3, -6.0) and thinking.mean == -2.0
    assert answer == SectionSum(A, 1, -0.5) and answer.mean == -0.5
    assert section_sums([A], [None])[1].mean is None
    with pytest.raises(ValueError):
        section_sums([A, A], [1.0])


@given(st.lists(st.tuples(st.booleans(), st.one_of(st.none(), st.floats(-50, 0))), max_size=40))
def test_the_sections_add_up_to_the_whole(rows: list[tuple[bool, float | None]]) -> None:
    kinds = [T if thinking else A for thinking, _ in rows]
    values = [value for _, value in rows]
    parts = section_sums(kinds, values)
    known = [v for v in values if v is not None]
    assert sum(part.count for part in parts) == len(known)
    assert math.fsum(part.total for part in parts) == pytest.approx(math.fsum(known))


def kld_result(kld: list[float], top_test: list[int], top_base: list[int]) -> KldResult:
    """A run of 6 tokens (BOS first) whose positions 1..5 were scored."""
    n = len(kld)
    f32 = np.zeros(n, np.float32)
    divergence = PositionDivergence(
        f32, f32, np.array(kld), np.array(kld), f32, np.array(top_test), np.array(top_base)
    )
    plan = KldPlan((0, 11, 12, 13, 14, 15), 6, 1, 0, 0, True)
    positions = np.arange(1, n + 1, dtype=np.int64)
    tokens = np.asarray(plan.tokens, np.int64)[positions]
    return KldResult(plan, positions, tokens, divergence, DivergenceTotals())


def test_kld_by_section_golden() -> None:
    # BOS, then tokens 1-3 in the thinking, 4-5 in the answer.
    sections = [A, T, T, T, A, A]
    result = kld_result([0.1, 0.2, 0.6, 0.05, 0.15], [1, 2, 3, 4, 5], [1, 9, 3, 4, 9])
    thinking, answer = divergence_by_section(result, sections)
    assert thinking.kind is T and thinking.n_scored == 3
    assert thinking.mean_kld == pytest.approx(0.3)
    assert thinking.same_top == pytest.approx(2 / 3)
    assert answer.kind is A and answer.n_scored == 2
    assert answer.mean_kld == pytest.approx(0.1) and answer.same_top == pytest.approx(0.5)
    assert divergence_by_section(result, []) == ()
    # Nothing of the thinking scored: its figures are None.
    only_answer = divergence_by_section(result, [T, A, A, A, A, A])
    assert only_answer[0] == SectionDivergence(T, 0, None, None)


def test_the_thinking_tags_flag() -> None:
    assert thinking_tags("<think>,</think>") == ("<think>", "</think>")
    assert thinking_tags('["[THINK]", "[/THINK]", "</s>"]') == ("[THINK]", "[/THINK]", "</s>")
    with pytest.raises(argparse.ArgumentTypeError, match="a start tag and at least one end tag"):
        thinking_tags("<think>")
    with pytest.raises(argparse.ArgumentTypeError, match="START,END"):
        thinking_tags('["<think>", 3]')
