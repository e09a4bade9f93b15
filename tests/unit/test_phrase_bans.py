"""Phrase bans that backtrack, on the fake model: rewinds, ghosts' tokens, the stop."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.chat.events import FinishedEvent, GenerationEvent, NoticeEvent, RewindEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.phrase_bans import PhraseBanError, PhraseBans, token_at
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.hypothesis_profiles import examples

QUESTION = [ChatMessage("user", "tell me about the cat")]
GREEDY = SamplerSettings(temperature=0.0)


def run(
    settings: SamplerSettings, bans: PhraseBans | None, max_tokens: int = 30
) -> list[GenerationEvent]:
    backend = FakeBackend(min_reply_tokens=max_tokens)
    return list(
        backend.generate(QUESTION, LiveSettings(settings), max_tokens=max_tokens, bans=bans)
    )


def finished(events: list[GenerationEvent]) -> FinishedEvent:
    end = events[-1]
    assert isinstance(end, FinishedEvent)
    return end


def test_token_at_finds_the_token_holding_a_character() -> None:
    texts = [" the", "", " cat", "."]
    assert [token_at(texts, c) for c in range(9)] == [0, 0, 0, 0, 2, 2, 2, 2, 3]
    assert token_at(texts, 9) == 4


def test_a_banned_phrase_from_the_greedy_reply_is_gone_and_its_attempt_kept() -> None:
    straight = finished(run(GREEDY, None))
    pieces = straight.text
    # A phrase starting inside a token: from the 2nd character of the 4th word on.
    start = pieces.index(" ", 1)
    start = pieces.index(" ", start + 1)
    phrase = pieces[start + 2 : start + 9]
    events = run(GREEDY, PhraseBans((phrase,)))
    end = finished(events)
    assert phrase not in end.text
    rewinds = [e for e in events if isinstance(e, RewindEvent)]
    assert rewinds and all(phrase in r.text or r.matched == phrase for r in rewinds)
    first = rewinds[0]
    assert first.matched == phrase
    # Up to the rewind the reply is the greedy one; there it takes another token.
    assert end.token_ids[: first.index] == straight.token_ids[: first.index]
    assert first.token_ids == straight.token_ids[first.index : first.index + len(first.token_ids)]
    assert end.token_ids[first.index] != straight.token_ids[first.index]
    assert end.stats.discarded_tokens == sum(len(r.token_ids) for r in rewinds)
    assert end.stats.decode_tokens == len(end.token_ids)


def test_the_ban_is_the_steps_logit_bias_at_that_index_only() -> None:
    straight = finished(run(GREEDY, None))
    words = straight.text.split(" ")
    phrase = " " + words[3]
    events = run(GREEDY, PhraseBans((phrase,)))
    rewind = next(e for e in events if isinstance(e, RewindEvent))
    steps = {e.index: e.step for e in events if isinstance(e, TokenEvent)}
    banned = steps[rewind.index].settings.logit_bias
    assert banned == tuple((t, -math.inf) for t in rewind.banned)
    assert steps[rewind.index + 1].settings.logit_bias == ()


@pytest.mark.parametrize("seed", range(20))
def test_seeded_replies_never_hold_the_phrase(seed: int) -> None:
    settings = DEFAULT_CHAT_SETTINGS.with_changes(seed=seed)
    bans = PhraseBans((" the", " cat"))
    events = run(settings, bans, max_tokens=40)
    end = finished(events)
    assert " the" not in end.text and " cat" not in end.text
    rewinds = [e for e in events if isinstance(e, RewindEvent)]
    for rewind in rewinds:
        assert rewind.matched in (" the", " cat")
    unbanned = finished(run(settings, None, max_tokens=40)).text
    assert bool(rewinds) == (" the" in unbanned or " cat" in unbanned)


def test_ignore_case_bans_other_cases_only_when_asked() -> None:
    straight = finished(run(GREEDY, None))
    phrase = straight.text[1:8].upper()
    plain = run(GREEDY, PhraseBans((phrase,)))
    assert not any(isinstance(e, RewindEvent) for e in plain)
    assert finished(plain).token_ids == straight.token_ids
    folded = run(GREEDY, PhraseBans((phrase,), ignore_case=True))
    assert phrase.lower() not in finished(folded).text.lower()
    assert any(isinstance(e, RewindEvent) for e in folded)


def test_a_regular_expression_bans_what_it_matches() -> None:
    events = run(
        DEFAULT_CHAT_SETTINGS.with_changes(seed=3), PhraseBans((r" [a-z]+s\b",), regex=True)
    )
    text = finished(events).text
    assert not any(word.endswith("s") and word.isalpha() for word in text.split(" "))
    assert any(isinstance(e, RewindEvent) for e in events)  # the seed writes one at first


def test_an_index_whose_tries_run_out_ends_the_reply_there() -> None:
    events = run(GREEDY, PhraseBans((r"\S",), regex=True, tries=3))
    end = finished(events)
    assert end.reason == "banned"
    assert end.text.strip() == ""
    rewinds = [e for e in events if isinstance(e, RewindEvent)]
    assert len(rewinds) == 3 and {r.index for r in rewinds} == {0}
    assert rewinds[-1].banned == tuple(sorted(r.token_ids[0] for r in rewinds))
    assert any(isinstance(e, NoticeEvent) and "3 tokens at token 0" in e.message for e in events)


@pytest.mark.parametrize(
    ("bans", "message"),
    [
        (lambda: PhraseBans(("",)), "empty"),
        (lambda: PhraseBans(("(",), regex=True), "not a regular expression"),
        (lambda: PhraseBans(("a*",), regex=True), "matches the empty text"),
        (lambda: PhraseBans(("a",), tries=0), "tries"),
    ],
)
def test_unusable_bans_are_refused(bans: object, message: str) -> None:
    with pytest.raises(PhraseBanError, match=message):
        bans()  # type: ignore[operator]


def test_overlapping_phrases_are_found() -> None:
    # A match that overlaps an earlier (allowed) one still counts.
    assert PhraseBans(("ab", "bc")).find("abc", 2) is not None
    assert PhraseBans(("aa",)).find("aaa", 2) is not None
    assert PhraseBans(("ab", "abc")).find("abc", 2) is not None
    match = PhraseBans((r"a+b",), regex=True).find("xaab", 3)
    assert match is not None and match.group() == "aab"
    assert PhraseBans(("cat",)).find("the cat sat", 8) is None


def _found_from_the_start(pattern: str, text: str, after: int) -> tuple[int, int] | None:
    """The reference: every match searched from the text's start, the first ending past
    `after` (what `PhraseBans.find` answers for one phrase)."""
    compiled = re.compile(pattern)
    position = 0
    while position <= len(text) and (match := compiled.search(text, position)):
        if match.end() > after:
            return match.span()
        position = match.start() + 1
    return None


@settings(max_examples=examples(300), deadline=None)
@given(
    pattern=st.sampled_from(
        [r"a+b", r"ab?c", r"(?<=x)ab", r"a(?=bc)", r"\bab", r"ba$", r"(a|bb){1,3}c", r"a.*c"]
    ),
    text=st.text(alphabet="abcx ", max_size=30),
    after=st.integers(min_value=0, max_value=30),
)
def test_a_regex_ban_is_searched_from_its_reach_as_from_the_start(
    pattern: str, text: str, after: int
) -> None:
    # A bounded pattern's search starts at most its reach before `after`: the same match.
    match = PhraseBans((pattern,), regex=True).find(text, after)
    assert (match.span() if match else None) == _found_from_the_start(pattern, text, after)
