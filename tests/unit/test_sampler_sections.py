"""The sampler's sections: learnt from the history, restored with its state, and the
thinking's own settings chosen by the section open before each step."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sampling.errors import SettingsError
from sampling.sampler import Sampler
from sampling.sections import Section
from sampling.settings.record import SamplerSettings
from sampling.thinking_settings import thinking_changes, thinking_record, with_thinking_change
from tests.unit.test_reasoning_budget import VOCABULARY, ids, text_of

T, A = Section.THINKING, Section.ANSWER
TAGS = ("<think>", "</think>")


def run(
    settings: SamplerSettings,
    prompt: str,
    wanted: str,
    *,
    model_tags: tuple[str, ...] = (),
    seed_logits: bool = False,
) -> tuple[str, list[Section], list[float]]:
    """Steps whose logits favour `wanted`'s next character: the reply, each step's
    section and the temperature it was sampled at."""
    sampler = Sampler(
        settings, vocab_size=VOCABULARY.n_vocab, vocabulary=VOCABULARY, thinking_tags=model_tags
    )
    history = ids(prompt)
    reply: list[int] = []
    kinds: list[Section] = []
    temperatures: list[float] = []
    for position, favourite in enumerate(ids(wanted)):
        logits = np.zeros(VOCABULARY.n_vocab, dtype=np.float32)
        logits[favourite] = 30.0 if not seed_logits else 2.0 + position % 3
        step = sampler.sample(logits, history + reply)
        reply.append(favourite)  # the wanted token is taken, whatever was drawn
        kinds.append(step.section)
        temperatures.append(step.settings.value("temperature"))  # type: ignore[arg-type]
    return text_of(reply), kinds, temperatures


def test_no_tags_no_sections() -> None:
    _, kinds, _ = run(SamplerSettings(temperature=0.0), "q", "a<think>b</think>c")
    assert set(kinds) == {A}


def test_the_model_tags_give_the_sections_across_tokens() -> None:
    _, kinds, _ = run(SamplerSettings(temperature=0.0), "q", "a<think>b</think>c", model_tags=TAGS)
    assert "".join("T" if k is T else "A" for k in kinds) == "AAAAAAATTTTTTTTTTA"


def test_settings_tags_win_over_the_model_and_a_prompt_opens_the_thinking() -> None:
    settings = SamplerSettings(temperature=0.0, thinking_tags=("!", "."))
    _, kinds, _ = run(settings, "q!", "ab.c", model_tags=TAGS)
    assert kinds == [T, T, T, A]


def test_tags_that_never_close_keep_the_reply_thinking() -> None:
    _, kinds, _ = run(SamplerSettings(temperature=0.0), "q<think>", "abcabc", model_tags=TAGS)
    assert set(kinds) == {T}


def test_a_start_tag_in_the_answer_opens_a_new_thinking() -> None:
    settings = SamplerSettings(temperature=0.0, thinking_tags=("!", "."))
    _, kinds, _ = run(settings, "q", "!a.b!c.x")
    assert kinds == [T, T, T, A, T, T, T, A]


def test_the_thinking_is_sampled_with_its_own_settings_from_after_the_start_tag() -> None:
    settings = SamplerSettings(temperature=0.7, thinking_tags=("!", "."), think_set=("t=0.3",))
    _, kinds, temperatures = run(settings, "q", "a!bc.x")
    # "!" opens: sampled as the answer; "b", "c", "." as the thinking; "x" as the answer.
    assert kinds == [A, T, T, T, T, A]
    assert temperatures == [0.7, 0.7, 0.3, 0.3, 0.3, 0.7]


def test_a_step_records_the_record_used_and_the_settings_given() -> None:
    settings = SamplerSettings(temperature=0.7, thinking_tags=("!", "."), think_set=("t=0.3",))
    sampler = Sampler(settings, vocabulary=VOCABULARY)
    logits = np.zeros(VOCABULARY.n_vocab, dtype=np.float32)
    step = sampler.sample(logits, ids("q!"))
    assert step.thinking_open and step.settings == thinking_record(settings)
    assert step.settings_given is settings and step.settings.value("think_set") == ()


def test_rewinding_restores_the_sections_exactly() -> None:
    settings = SamplerSettings(temperature=1.0, seed=3, thinking_tags=TAGS, think_set=("t=0.2",))
    sampler = Sampler(settings, vocabulary=VOCABULARY)
    rng = np.random.default_rng(0)
    logits = [rng.normal(size=VOCABULARY.n_vocab).astype(np.float32) for _ in range(30)]
    history = ids("q<thi")
    states, steps = [], []
    for row in logits:
        states.append(sampler.state())
        step = sampler.sample(row, history)
        steps.append(step)
        history = [*history, step.token_id]
    prompt = ids("q<thi")
    for back in (29, 17, 5, 0):
        sampler.restore(states[back])
        again = sampler.sample(logits[back], [*prompt, *(s.token_id for s in steps[:back])])
        assert again.token_id == steps[back].token_id
        assert again.section is steps[back].section
        assert again.settings == steps[back].settings


def test_another_history_is_taken_again_from_the_start() -> None:
    sampler = Sampler(SamplerSettings(temperature=0.0, thinking_tags=TAGS), vocabulary=VOCABULARY)
    logits = np.zeros(VOCABULARY.n_vocab, dtype=np.float32)
    assert sampler.sample(logits, ids("q<think>ab")).section is T
    assert sampler.sample(logits, ids("q ab")).section is A
    assert sampler.sample(logits, ids("q<think>a</think>")).section is A


def test_think_set_is_read_as_set_reads_it_and_refuses_shared_settings() -> None:
    settings = SamplerSettings(think_set=("t=0.6", "top_k=20", "min-p=0"))
    assert thinking_changes(settings) == {"temperature": 0.6, "top_k": 20, "min_p": 0.0}
    for bad in (("seed=3",), ("grammar=x",), ("nonsense=1",), ("t",), ("t=hot",)):
        with pytest.raises(SettingsError, match="think_set"):
            thinking_record(SamplerSettings(think_set=bad))
    with pytest.raises(SettingsError, match=r"think_set.*temperature"):
        thinking_record(SamplerSettings(think_set=("t=-1",)))


def test_a_thinking_change_replaces_its_key() -> None:
    settings = with_thinking_change(
        SamplerSettings(think_set=("t=0.6", "k=20")), "temperature", 0.9
    )
    assert thinking_changes(settings) == {"top_k": 20, "temperature": 0.9}


def test_the_grammar_waits_while_the_thinking_is_open_then_holds_the_answer() -> None:
    from tests.grammar_fakes import Words

    words = Words(5, [frozenset({3}), frozenset({4})])  # tokens spell "w0" … "w4"
    settings = SamplerSettings(temperature=0.0, grammar='root ::= "x"', thinking_tags=("w1", "w2"))
    sampler = Sampler(settings, vocabulary=words)  # type: ignore[arg-type]
    history = [1]  # the prompt opens the thinking
    taken, removed = [], []
    for favourite in (0, 0, 2, 0, 0):
        logits = np.zeros(5, dtype=np.float32)
        logits[favourite] = 9.0
        step = sampler.sample(logits, history)
        history.append(step.token_id)
        taken.append(step.token_id)
        removed.append(step.figure("grammar", "removed"))
    # Free while thinking (the end tag's step too); the answer follows the grammar.
    assert taken == [0, 0, 2, 3, 4]
    assert removed[:3] == [0.0, 0.0, 0.0] and all(r > 0.5 for r in removed[3:])  # type: ignore[operator]


def test_a_thinking_step_is_stored_and_read_back_with_its_section_and_record() -> None:
    from backend.store.steps import StepLayout, layout_of, pack_step, unpack_step

    settings = SamplerSettings(temperature=0.7, thinking_tags=("!", "."), think_set=("t=0.3",))
    sampler = Sampler(settings, vocabulary=VOCABULARY)
    logits = np.zeros(VOCABULARY.n_vocab, dtype=np.float32)
    step = sampler.sample(logits, ids("q!"))
    layout = layout_of(step)
    scalars, blob = pack_step(step, layout)
    # The store keeps the settings given (once per change); the row says which ran.
    back = unpack_step(scalars, blob, layout, step.settings_given)
    assert back.section is Section.THINKING and back.thinking_open
    assert back.settings == step.settings and back.settings_given == settings
    # A row stored before sections: the answer, sampled with the settings given.
    old = StepLayout(
        tuple(n for n in layout.scalars if n not in ("section", "thinking_open")), layout.arrays
    )
    values = [
        v for n, v in zip(layout.scalars, json.loads(scalars), strict=True) if n in old.scalars
    ]
    before = unpack_step(json.dumps(values), blob, old, settings)
    assert before.section is Section.ANSWER and before.settings == settings


class ChannelVocabulary:
    """gpt-oss's channel markers as special tokens: their text only with `special`."""

    pieces = (b"<|channel|>", b"analysis", b"final", b"<|message|>", b"hm", b"ok")

    n_vocab = len(pieces)

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        piece = self.pieces[token]
        return piece if special or not piece.startswith(b"<|") else b""

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        return []


def test_special_tokens_are_read_by_their_text() -> None:
    from backend.chat.thinking_format import THINKING_FORMATS

    (oss,) = [known for known in THINKING_FORMATS if known.name == "gpt-oss channels"]
    vocabulary = ChannelVocabulary()
    sampler = Sampler(
        SamplerSettings(temperature=0.0), vocabulary=vocabulary, thinking_tags=oss.tags
    )
    reply = [0, 1, 3, 4, 4, 0, 2, 3, 5]  # analysis: "hm hm", then final: "ok"
    kinds = []
    for position, token in enumerate(reply):
        logits = np.zeros(vocabulary.n_vocab, dtype=np.float32)
        logits[token] = 9.0
        kinds.append(sampler.sample(logits, reply[:position]).section)
    assert kinds == [A, A, T, T, T, T, T, T, A]


def test_the_grammars_line_says_it_waits_for_the_thinking() -> None:
    from sampling.samplers.grammar import Grammar
    from tests.grammar_fakes import Words

    words = Words(5, [frozenset({3})])
    settings = SamplerSettings(temperature=0.0, grammar='root ::= "x"', thinking_tags=("w1", "w2"))
    step = Sampler(settings, vocabulary=words).sample(np.zeros(5, dtype=np.float32), [1])  # type: ignore[arg-type]
    line = Grammar.describe(step.reports["grammar"], step.settings)
    assert line.endswith("waiting for the thinking to close")
