"""The section tracker: tags found as text across token boundaries."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.chat.thinking_format import THINKING_FORMATS, thinking_format_of
from sampling.errors import SettingsError
from sampling.sections import Section, SectionSpan, SectionState, SectionTracker, spans_of

THINK = SectionTracker.of("<think>", ["</think>"])
T, A = Section.THINKING, Section.ANSWER


def test_tags_split_over_tokens_are_found() -> None:
    pieces = [b"<", b"think", b">", b"hm", b"</", b"think", b">\n", b"Yes"]
    assert THINK.sections(SectionState(), pieces) == [A, A, T, T, T, T, T, A]


def test_one_token_holding_a_whole_block_is_thinking() -> None:
    assert THINK.sections(SectionState(), [b"a<think>b</think>c", b"d"]) == [T, A]


def test_prompt_that_opens_the_thinking_starts_the_reply_in_it() -> None:
    state = THINK.feed(SectionState(), [b"<|im_start|>assistant\n", b"<think>\n"])
    assert state.thinking
    assert THINK.sections(state, [b"so", b"</think>", b"ok"]) == [T, T, A]


def test_a_new_start_tag_opens_the_thinking_again() -> None:
    pieces = [b"<think>", b"x", b"</think>", b"y", b"<think>", b"z"]
    assert THINK.sections(SectionState(), pieces) == [T, T, T, A, T, T]


def test_an_end_tag_outside_the_thinking_is_answer_text() -> None:
    assert THINK.sections(SectionState(), [b"</think>", b"a"]) == [A, A]


def test_the_earliest_of_several_end_tags_closes_it() -> None:
    tracker = SectionTracker.of("[THINK]", ["[/THINK]", "[END]"])
    state = tracker.advance(SectionState(), b"[THINK]a[END]b[/THINK]")
    assert not state.thinking


def test_tail_keeps_only_what_may_begin_a_tag() -> None:
    state = THINK.advance(SectionState(), b"x" * 1000 + b"</thi")
    assert len(state.tail) <= len(b"</think>") - 1


def test_multibyte_tags_are_matched_as_bytes() -> None:
    tracker = SectionTracker.of("«思»", ["«/思»"])
    encoded = "«思»想«/思»答".encode()
    pieces = [encoded[i : i + 1] for i in range(len(encoded))]
    kinds = tracker.sections(SectionState(), pieces)
    assert kinds[-1] is A and T in kinds


@pytest.mark.parametrize(("start", "ends"), [("", ["</t>"]), ("<t>", []), ("<t>", [""])])
def test_empty_tags_are_refused(start: str, ends: list[str]) -> None:
    with pytest.raises(SettingsError, match="thinking_tags"):
        SectionTracker.of(start, ends)


def test_spans_are_runs_of_one_section() -> None:
    assert spans_of([T, T, A, A, A, T]) == (
        SectionSpan(T, 0, 1),
        SectionSpan(A, 2, 4),
        SectionSpan(T, 5, 5),
    )
    assert spans_of([]) == ()
    assert SectionSpan(A, 2, 4).length == 3


@given(
    st.lists(st.sampled_from(["<think>", "</think>", "a", "<", "/", "think", ">", "é"])),
    st.data(),
)
def test_any_split_into_tokens_ends_in_the_same_state(
    words: list[str], data: st.DataObject
) -> None:
    """The state after some text does not depend on how the tokens cut it."""
    text = "".join(words).encode()
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)))))
    bounds = [0, *cuts, len(text)]
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    whole = THINK.advance(SectionState(), text)
    split = THINK.feed(SectionState(), pieces)
    assert split.thinking == whole.thinking
    opened = text.rfind(b"<think>")
    closed = text.rfind(b"</think>")
    assert whole.thinking == (opened >= 0 and opened > closed)


def test_known_template_formats() -> None:
    assert thinking_format_of(None) is None
    assert thinking_format_of("{{ messages }}") is None
    think = thinking_format_of("{{ '<think>\\n' }}")
    assert think is not None and think.tags == ("<think>", "</think>")
    oss = thinking_format_of("<|start|>assistant<|channel|>final<|message|>")
    assert oss is not None and oss.start == "<|channel|>analysis<|message|>"
    seed = thinking_format_of("<seed:think>")
    assert seed is not None and seed.ends == ("</seed:think>",)
    assert next(known.name for known in THINKING_FORMATS) == "gpt-oss channels"
