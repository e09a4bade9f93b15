"""The reasoning budget unit: llama.cpp's `common/reasoning-budget.cpp` state for state.

A toy vocabulary spells every text one character a token ("<think>" is seven tokens),
so the tags are matched across token boundaries as SmolLM2 needs.
"""

from __future__ import annotations

import numpy as np
import pytest

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import LogitsError, SettingsError
from sampling.sampler import Sampler
from sampling.samplers.reasoning_budget import (
    BudgetRules,
    ReasoningBudget,
    ReasoningBudgetParams,
    status_of,
)
from sampling.samplers.reasoning_machine import (
    BudgetMachine,
    Phase,
    TokenMatcher,
    utf8_is_complete,
)
from sampling.settings.record import SamplerSettings

ALPHABET = "<>/thinkabcxyzqo.!\n é"


class CharVocabulary:
    """One token per character; "é" spelled in two tokens of one byte each."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = [c.encode() for c in ALPHABET if c != "é"]
        self.pieces += [b"\xc3", b"\xa9"]

    @property
    def n_vocab(self) -> int:
        return len(self.pieces)

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        del special
        return self.pieces[token]

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        del special
        return [self.pieces.index(bytes([b])) for b in text.encode()]


VOCABULARY = CharVocabulary()


def ids(text: str) -> list[int]:
    return VOCABULARY.tokenize(text, special=True)


def text_of(tokens: list[int]) -> str:
    return b"".join(VOCABULARY.token_bytes(t) for t in tokens).decode()


def generate(
    prompt: str, settings: SamplerSettings, wanted: str, max_tokens: int = 60
) -> tuple[str, list[bool]]:
    """Greedy steps whose logits favour `wanted`'s next character (then "x"): the reply
    and which steps the budget forced."""
    sampler = Sampler(settings, vocab_size=VOCABULARY.n_vocab, vocabulary=VOCABULARY)
    history = ids(prompt)
    reply: list[int] = []
    forced: list[bool] = []
    wanted_ids = ids(wanted)
    for position in range(max_tokens):
        logits = np.zeros(VOCABULARY.n_vocab, dtype=np.float32)
        favourite = wanted_ids[position] if position < len(wanted_ids) else ids("x")[0]
        logits[favourite] = 5.0
        step = sampler.sample(logits, history + reply)
        reply.append(step.token_id)
        forced.append(step.forced)
        if position >= len(wanted_ids) + 12:
            break
    return text_of(reply), forced


def settings(budget: int, message: str = "", **more: object) -> SamplerSettings:
    return SamplerSettings(
        temperature=0.0, reasoning_budget=budget, reasoning_budget_message=message, **more
    )


def test_the_budget_forces_the_message_and_the_end_tag_after_n_tokens() -> None:
    reply, forced = generate("q<think>", settings(3, " ok."), "abcabcabc</think>xyz")
    assert reply.startswith("abc ok.</think>")
    assert forced[:15] == [False] * 3 + [True] * 12 and not forced[15]


def test_budget_zero_forces_at_once_and_minus_one_is_no_budget() -> None:
    assert generate("q<think>", settings(0), "abc</think>z")[0].startswith("</think>")
    assert generate("q<think>", settings(-1), "abc</think>z")[0].startswith("abc</think>z")
    assert "reasoning_budget" not in [u.name for u in Sampler(settings(-1)).chain.units]


def test_a_natural_end_before_the_budget_forces_nothing() -> None:
    reply, forced = generate("q<think>", settings(20, "!"), "ab</think>abcabcabcabcabcabc")
    assert reply.startswith("ab</think>abcabcabcabcabcabc") and not any(forced)


def test_nothing_counts_before_the_start_tag_and_a_new_start_tag_rearms() -> None:
    reply, _ = generate("q", settings(2), "abcabc<think>abcabc</think>")
    assert reply.startswith("abcabc<think>ab</think>")
    again, _ = generate("q<think>", settings(1), "a</think>b<think>cab")
    assert again.startswith("a</think>b<think>c</think>x")


def test_at_the_budget_it_waits_for_a_whole_utf8_character() -> None:
    reply, forced = generate("q<think>", settings(2), "aéé")
    # "a" and the first byte of "é" spend the budget; as in llama.cpp, each token's own
    # text must end on a whole character, which a lone continuation byte does not.
    assert reply.startswith("aééx</think>")
    assert forced[:7] == [False] * 6 + [True]


def test_the_prompt_that_opens_the_thinking_starts_it_counting() -> None:
    # "\n" after the start tag in the prompt spends one token, as llama.cpp's prefill.
    assert generate("q<think>\n", settings(2), "abcabc")[0].startswith("a</think>")
    assert generate("q<think>a</think>", settings(20), "abcabc")[0].startswith("abcabc")


def test_the_matcher_finds_the_longest_tag_ending_here_and_starts_afresh() -> None:
    matcher = TokenMatcher.of([[1, 2], [2], [1, 2], []])
    assert matcher.sequences == ((1, 2), (2,))
    recent, match = matcher.advance((), 1)
    assert (recent, match) == ((1,), -1)
    assert matcher.advance(recent, 2) == ((), 0)
    assert matcher.advance((), 2) == ((), 1)


def test_utf8_completeness_is_llama_cpps() -> None:
    assert utf8_is_complete(b"") and utf8_is_complete(b"abc") and utf8_is_complete("é".encode())
    assert not utf8_is_complete(b"\xc3") and not utf8_is_complete(b"\xe2\x82")
    assert utf8_is_complete("€".encode()) and not utf8_is_complete(b"\xa9")


def test_state_and_restore_rewind_the_budget() -> None:
    sampler = Sampler(settings(4, "!"), vocab_size=VOCABULARY.n_vocab, vocabulary=VOCABULARY)
    history = ids("q<think>")
    logits = np.zeros(VOCABULARY.n_vocab, dtype=np.float32)
    logits[ids("a")[0]] = 5.0
    taken: list[int] = []
    for _ in range(2):
        taken.append(sampler.sample(logits, history + taken).token_id)
    snapshot = sampler.state()
    run: list[int] = []
    for _ in range(6):
        run.append(sampler.sample(logits, history + taken + run).token_id)
    sampler.restore(snapshot)
    rerun: list[int] = []
    for _ in range(6):
        rerun.append(sampler.sample(logits, history + taken + rerun).token_id)
    assert rerun == run and text_of(run).startswith("aa!</")


def test_the_status_says_what_is_left_and_what_is_forced() -> None:
    params = ReasoningBudgetParams(reasoning_budget=3, reasoning_budget_message="!")
    unit = ReasoningBudget(params)
    rules = BudgetRules.of(params, VOCABULARY)
    unit.rules = rules
    assert unit.status == "budget 3 · not thinking"
    unit.machine = BudgetMachine(Phase.COUNTING, remaining=2)
    assert unit.status == "budget 3 · 2 left"
    unit.machine = BudgetMachine(Phase.FORCING, force_pos=1)
    assert unit.status == f"forcing </think> 2/{len(rules.forced)}"


def test_a_samplers_state_tells_the_budget_by_name() -> None:
    sampler = Sampler(settings(3, "!"), vocab_size=VOCABULARY.n_vocab, vocabulary=VOCABULARY)
    assert status_of(sampler.state().units) == "budget 3 · not thinking"
    logits = np.zeros(VOCABULARY.n_vocab, dtype=np.float32)
    logits[ids("a")[0]] = 5.0
    history = ids("q<think>")
    for _ in range(4):
        history.append(sampler.sample(logits, history).token_id)
    # "a", "a", "a" spent the budget: the fourth step forced "!", the first of nine.
    assert history[-1] == ids("!")[0]
    assert status_of(sampler.state().units) == "forcing </think> 1/9"
    assert status_of(Sampler(settings(-1)).state().units) is None


def test_bad_budgets_and_tags_are_refused_in_one_line() -> None:
    with pytest.raises(SettingsError):
        SamplerSettings(reasoning_budget=-2)
    with pytest.raises(SettingsError, match="START,END"):
        Sampler(settings(3, thinking_tags=("<think>",)))
    assert BUILT_IN_REGISTRY.find_setting("reasoning-budget") is not None


def test_a_forced_token_an_earlier_unit_banned_is_a_one_line_error() -> None:
    banned = settings(0, logit_bias=((ids("<")[0], float("-inf")),))
    sampler = Sampler(banned, vocab_size=VOCABULARY.n_vocab, vocabulary=VOCABULARY)
    with pytest.raises(LogitsError, match="which an earlier unit banned"):
        sampler.sample(np.zeros(VOCABULARY.n_vocab, dtype=np.float32), ids("q<think>"))


def test_a_state_restored_onto_another_history_is_taken_again_from_it() -> None:
    sampler = Sampler(settings(2, "!"), vocab_size=VOCABULARY.n_vocab, vocabulary=VOCABULARY)
    logits = np.zeros(VOCABULARY.n_vocab, dtype=np.float32)
    logits[ids("a")[0]] = 5.0
    sampler.sample(logits, ids("q<think>"))  # counting: one token spent at the next
    snapshot = sampler.state()
    sampler.restore(snapshot)
    # The same length, but the thinking was never opened: nothing counts, nothing forced.
    assert not sampler.sample(logits, ids("q<thinx>a")).forced
    sampler.restore(snapshot)
    assert sampler.sample(logits, ids("q<think>a")).token_id == ids("a")[0]
    assert sampler.sample(logits, ids("q<think>aa")).forced
