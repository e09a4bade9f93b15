"""Sections and the reasoning budget on a second kind of model: Gemma's vocabulary.

A one-block llama with random weights over a 256,000-token SentencePiece vocabulary
(`tests.tiny_models`; no Gemma weights are on this machine), whose chat template is
Gemma's with the thinking opened in the generation prompt, and no space prefix, as
Gemma's GGUFs say (with one, `<think>` alone tokenizes with a leading `▁` the
prompt's tag lacks, and llama.cpp's token matcher would never see the thinking
start). The model never closes its thinking on its own (its weights are random); a
reasoning budget forces the end tag, which the vocabulary spells in several pieces,
and the steps must then say thinking up to the forced tag's last token and answer
after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from sampling.records import Step
from sampling.sections import Section, spans_of
from sampling.settings.record import SamplerSettings
from tests.tiny_models import spm_vocab, write_tiny_llama

GEMMA_THINKING = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else 'user')"
    " + '\n' + message['content'] + '<end_of_turn>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\n<think>\n' }}{% endif %}"
)
BUDGET = 5


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaBackend]:
    folder = tmp_path_factory.mktemp("gemma-thinking")
    vocab = spm_vocab(256_000, ["<start_of_turn>", "<end_of_turn>"], placeholders=6000)
    vocab = replace(vocab, add_space_prefix=False)  # as Gemma's GGUFs say
    path: Path = write_tiny_llama(folder / "gemma256k.gguf", vocab, chat_template=GEMMA_THINKING)
    loaded = LlamaBackend.load(path, n_ctx=512, n_batch=64, n_threads=1)
    try:
        yield loaded
    finally:
        loaded.close()


def reply_steps(backend: LlamaBackend, settings: SamplerSettings) -> tuple[list[Step], str]:
    backend.reset()
    steps: list[Step] = []
    texts: list[str] = []
    finished: FinishedEvent | None = None
    question = [ChatMessage("user", "What is 17 times 23?")]
    for event in backend.generate(question, LiveSettings(settings), max_tokens=24):
        if isinstance(event, TokenEvent):
            steps.append(event.step)
            texts.append(event.text)
        elif isinstance(event, FinishedEvent):
            finished = event
    assert finished is not None and finished.error is None, finished
    return steps, "".join(texts)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_forced_end_tag_ends_the_thinking(backend: LlamaBackend, seed: int) -> None:
    settings = SamplerSettings(temperature=1.0, seed=seed, reasoning_budget=BUDGET)
    steps, text = reply_steps(backend, settings)
    spans = spans_of([step.section for step in steps])
    assert spans[0].kind is Section.THINKING
    assert "</think>" in text
    forced = [index for index, step in enumerate(steps) if step.forced]
    assert len(forced) >= 2  # the tag is several SentencePiece pieces
    # Thinking up to the last forced token (the tag's last piece), the answer after.
    assert spans[0].last == forced[-1]
    assert all(step.section is Section.ANSWER for step in steps[forced[-1] + 1 :])
    # The prompt's "\n" after <think> spends one of the budget (as llama.cpp counts it).
    assert forced[0] == BUDGET - 1


def test_without_a_budget_the_reply_stays_in_its_thinking(backend: LlamaBackend) -> None:
    steps, text = reply_steps(backend, SamplerSettings(temperature=1.0, seed=3))
    if "</think>" in text:  # random weights: only if the model never spelt the end tag
        pytest.fail("the random model spelt </think> on its own; choose another seed")
    assert all(step.section is Section.THINKING for step in steps)
