"""The loop finder: vLLM's repetition rule, the loop's start and copies, the watcher."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampling import Loop, LoopRule, LoopWatch, find_loop
from sampling.analysis.loops import first_loop, loop_rate


def vllm_has_repetition(tokens: list[int], min_size: int, max_size: int, min_count: int) -> bool:
    """vLLM's `check_sequence_repetition`, written out as it reads there."""
    if min_size <= 0:
        min_size = 1
    if max_size <= 0 or min_count < 2 or min_size > max_size:
        return False
    for pattern_len in range(min_size, max_size + 1):
        if pattern_len * min_count > len(tokens):
            return False
        if all(
            tokens[-(pattern_len * m + n)] == tokens[-n]
            for n in range(1, pattern_len + 1)
            for m in range(1, min_count)
        ):
            return True
    return False


def reference_loop(tokens: list[int], rule: LoopRule) -> Loop | None:
    """The loop by the plain reading of its definition: vLLM's verdict, the smallest
    period that gives it, the tail's start found by walking back."""
    if not vllm_has_repetition(tokens, rule.min_period, rule.max_period, rule.min_count):
        return None
    for period in range(rule.min_period, rule.max_period + 1):
        if vllm_has_repetition(tokens, period, period, rule.min_count):
            start = len(tokens) - period
            while start > 0 and tokens[start - 1] == tokens[start - 1 + period]:
                start -= 1
            return Loop(period, start, (len(tokens) - start) // period)
    raise AssertionError("vLLM found a loop of no single period")


@st.composite
def looping(draw: st.DrawFn) -> tuple[list[int], LoopRule]:
    """A prefix, a pattern repeated a few times, a partial copy, maybe one token
    changed (a near miss), over a small alphabet (accidental repeats abound)."""
    alphabet = draw(st.integers(2, 6))
    token = st.integers(0, alphabet - 1)
    prefix = draw(st.lists(token, max_size=12))
    pattern = draw(st.lists(token, min_size=1, max_size=9))
    copies = draw(st.integers(0, 6))
    partial = draw(st.integers(0, len(pattern) - 1))
    tokens = prefix + pattern * copies + pattern[:partial]
    if tokens and draw(st.booleans()):
        at = draw(st.integers(0, len(tokens) - 1))
        tokens[at] = draw(token)
    min_period = draw(st.integers(1, 4))
    max_period = draw(st.integers(min_period, 12))
    return tokens, LoopRule(min_period, max_period, draw(st.integers(2, 5)))


@given(looping())
def test_find_loop_is_vllms_rule(case: tuple[list[int], LoopRule]) -> None:
    tokens, rule = case
    found = find_loop(tokens, rule.min_period, rule.max_period, rule.min_count)
    assert (found is not None) == vllm_has_repetition(
        tokens, rule.min_period, rule.max_period, rule.min_count
    )
    assert found == reference_loop(tokens, rule)


@given(looping())
def test_the_watcher_agrees_at_every_prefix(case: tuple[list[int], LoopRule]) -> None:
    tokens, rule = case
    watch = LoopWatch(rule)
    assert watch.loop is None
    for n, token in enumerate(tokens, start=1):
        expected = find_loop(tokens[:n], rule.min_period, rule.max_period, rule.min_count)
        assert watch.push(token) == expected
        assert watch.loop == expected
    assert watch.length == len(tokens)


@given(looping(), st.data())
def test_a_restarted_watcher_goes_on_as_one_that_saw_every_token(
    case: tuple[list[int], LoopRule], data: st.DataObject
) -> None:
    tokens, rule = case
    cut = data.draw(st.integers(0, len(tokens)))
    watch = LoopWatch(rule, [7] * 5)  # whatever it saw before the rewind is gone
    assert watch.restart(tokens[:cut]) == find_loop(tokens[:cut], *_args(rule))
    for n in range(cut, len(tokens)):
        assert watch.push(tokens[n]) == find_loop(tokens[: n + 1], *_args(rule))


def _args(rule: LoopRule) -> tuple[int, int, int]:
    return rule.min_period, rule.max_period, rule.min_count


def test_a_loop_s_start_count_and_end() -> None:
    tokens = [9, 8, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2]
    assert find_loop(tokens, min_count=3) == Loop(period=3, start=2, count=3)
    assert Loop(3, 2, 3).end == 11
    assert Loop(3, 2, 3).copy_of(7) == 1
    # The 8 breaks the tail: it starts after it, mid-copy (2 3 1 · 2 3 1 · 2 3).
    assert find_loop([1, 2, 3, 8, 2, 3, 1, 2, 3, 1, 2, 3], min_count=3) is None
    assert find_loop([1, 2, 3, 8, 2, 3, 1, 2, 3, 1, 2, 3], min_count=2) == Loop(3, 4, 2)


def test_the_smallest_period_wins() -> None:
    tokens = [5] * 12  # periods 1, 2, 3, 4 all repeat
    assert find_loop(tokens, min_count=3) == Loop(1, 0, 12)
    assert find_loop(tokens, min_period=2, min_count=3) == Loop(2, 0, 6)


def test_too_few_copies_is_no_loop() -> None:
    tokens = [1, 2, 3, 4] * 3
    assert find_loop(tokens, min_count=4) is None
    assert find_loop(tokens, min_count=3) == Loop(4, 0, 3)
    assert find_loop(tokens, max_period=3, min_count=3) is None


def test_first_loop_and_loop_rate() -> None:
    looping_reply = [0, 1] + [4, 5] * 10
    assert first_loop(looping_reply, LoopRule(min_count=3)) == Loop(2, 2, 3)
    assert first_loop(list(range(30))) is None
    assert loop_rate([looping_reply, list(range(30))], LoopRule(min_count=3)) == 0.5
    assert loop_rate([]) == 0.0


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ((0, 4, 3), "min_period=0"),
        ((3, 2, 3), "max_period=2"),
        ((1, 4, 1), "min_count=1"),
        ((1.5, 4, 3), "min_period=1.5"),
    ],
)
def test_a_bad_rule_is_named(values: tuple[object, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LoopRule(*values)  # type: ignore[arg-type]


def test_the_rule_s_text() -> None:
    assert LoopRule.parse("") == LoopRule()
    assert LoopRule.parse("2, 40, 3") == LoopRule(2, 40, 3)
    assert LoopRule.parse(LoopRule(1, 9, 2).text) == LoopRule(1, 9, 2)
    with pytest.raises(ValueError, match="expected MIN,MAX,COUNT"):
        LoopRule.parse("1,2")
    with pytest.raises(ValueError, match="expected MIN,MAX,COUNT"):
        LoopRule.parse("a,b,c")


def test_a_loop_as_json() -> None:
    loop = Loop(7, 40, 5)
    assert Loop.from_dict(loop.to_dict()) == loop
    with pytest.raises(ValueError, match="not a loop record"):
        Loop.from_dict({"period": 0, "start": 1, "count": 2})
    with pytest.raises(ValueError, match="not a loop record"):
        Loop.from_dict([1, 2, 3])
