"""Loops of a reply that thinks: each section watched apart, a loop never spanning the end
of the thinking, each loop saying its section."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampling.analysis.loops import Loop, LoopRule, LoopWatch, find_loop, first_loop
from sampling.analysis.section_loops import SectionLoopWatch, first_loops
from sampling.sections import Section, spans_of

T, A = Section.THINKING, Section.ANSWER
RULE = LoopRule(1, 8, 4)


def reference(tokens: list[int], sections: list[Section], rule: LoopRule) -> Loop | None:
    """The verdict after `tokens`: `find_loop` over the last section's run alone."""
    spans = spans_of(sections)
    if not spans:
        return None
    last = spans[-1]
    found = find_loop(tokens[last.first :], rule.min_period, rule.max_period, rule.min_count)
    return (
        None if found is None else replace(found, start=found.start + last.first, section=last.kind)
    )


@st.composite
def thinking_replies(draw: st.DrawFn) -> tuple[list[int], list[Section], LoopRule]:
    """Repetitive tokens over a small alphabet, cut into a few runs of sections."""
    pattern = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    noise = draw(st.lists(st.integers(0, 3), max_size=6))
    tokens = noise + pattern * draw(st.integers(0, 10))
    tokens = tokens + draw(st.lists(st.integers(0, 3), max_size=4))
    cuts = sorted(draw(st.lists(st.integers(0, len(tokens)), max_size=3)))
    sections: list[Section] = []
    kind = draw(st.sampled_from([T, A]))
    for index in range(len(tokens)):
        if index in cuts:
            kind = A if kind is T else T
        sections.append(kind)
    min_period = draw(st.integers(1, 3))
    rule = LoopRule(min_period, draw(st.integers(min_period, 6)), draw(st.integers(2, 4)))
    return tokens, sections, rule


def test_a_run_repeated_across_the_end_of_the_thinking_is_two_runs() -> None:
    tokens = [1, 2] * 6  # 3 copies in the thinking, 3 in the answer
    sections = [T] * 6 + [A] * 6
    assert find_loop(tokens, 1, 8, 4) == Loop(2, 0, 6)
    watch = SectionLoopWatch(RULE)
    assert [watch.push(t, s) for t, s in zip(tokens, sections, strict=True)] == [None] * 12
    assert watch.last is None and first_loops(tokens, sections, RULE) == {}
    # Four copies on each side: one loop in each, the answer's counted from its start.
    tokens, sections = [1, 2] * 8, [T] * 8 + [A] * 8
    assert first_loops(tokens, sections, RULE) == {
        T: Loop(2, 0, 4, T),
        A: Loop(2, 8, 4, A),
    }


def test_a_loop_in_the_thinking_stays_the_latest_until_the_answer_loops() -> None:
    tokens = [5] * 4 + [1, 2, 3] + [6] * 3 + [6]
    sections = [T] * 4 + [A] * 7
    watch = SectionLoopWatch(RULE)
    found, latest = [], []
    for token, section in zip(tokens, sections, strict=True):
        found.append(watch.push(token, section))
        latest.append(watch.last)
    assert found[3] == Loop(1, 0, 4, T)
    assert found[4:10] == [None] * 6 and latest[4:10] == [Loop(1, 0, 4, T)] * 6
    assert found[10] == Loop(1, 7, 4, A) == watch.loop == watch.last
    assert watch.length == len(tokens)


def test_a_reply_that_does_not_think_loops_as_before() -> None:
    tokens = [0, 1] + [4, 5] * 10
    assert first_loops(tokens, [A] * len(tokens), LoopRule(min_count=3)) == {
        A: first_loop(tokens, LoopRule(min_count=3))
    }


def test_the_sections_must_match_the_tokens() -> None:
    with pytest.raises(ValueError, match="3 tokens but 2 sections"):
        SectionLoopWatch().restart([1, 2, 3], [A, A])
    with pytest.raises(ValueError):
        first_loops([1, 2], [A])


@given(thinking_replies())
def test_the_watch_agrees_with_each_run_alone(
    case: tuple[list[int], list[Section], LoopRule],
) -> None:
    tokens, sections, rule = case
    watch = SectionLoopWatch(rule)
    for n in range(1, len(tokens) + 1):
        expected = reference(tokens[:n], sections[:n], rule)
        assert watch.push(tokens[n - 1], sections[n - 1]) == expected == watch.loop
        # A loop never spans a change of section.
        if expected is not None:
            assert len(set(sections[expected.start : n])) == 1


@given(thinking_replies(), st.data())
def test_a_restarted_watch_goes_on_as_one_that_saw_every_token(
    case: tuple[list[int], list[Section], LoopRule], data: st.DataObject
) -> None:
    tokens, sections, rule = case
    cut = data.draw(st.integers(0, len(tokens)))
    watch = SectionLoopWatch(rule)
    watch.restart([7] * 5, [T] * 5)  # whatever it saw before the rewind is gone
    assert watch.restart(tokens[:cut], sections[:cut]) == reference(
        tokens[:cut], sections[:cut], rule
    )
    assert watch.length == cut
    for n in range(cut, len(tokens)):
        assert watch.push(tokens[n], sections[n]) == reference(
            tokens[: n + 1], sections[: n + 1], rule
        )


@given(st.lists(st.integers(0, 2), max_size=40))
def test_all_answer_is_the_plain_watch(tokens: list[int]) -> None:
    plain, sectioned = LoopWatch(RULE), SectionLoopWatch(RULE)
    for token in tokens:
        assert sectioned.push(token, A) == plain.push(token)
        assert sectioned.last == plain.last


def test_a_loop_in_the_thinking_as_json() -> None:
    thinking = Loop(3, 10, 4, T)
    assert thinking.to_dict() == {"period": 3, "start": 10, "count": 4, "section": "thinking"}
    assert Loop.from_dict(thinking.to_dict()) == thinking
    # An answer's loop is written as loops were before sections, and read back so.
    assert Loop(3, 10, 4).to_dict() == {"period": 3, "start": 10, "count": 4}
    assert Loop.from_dict({"period": 3, "start": 10, "count": 4}).section is A
    with pytest.raises(ValueError, match="not a loop record"):
        Loop.from_dict({"period": 3, "start": 10, "count": 4, "section": "musing"})
    assert thinking.section_note == " in the thinking" and Loop(3, 10, 4).section_note == ""
