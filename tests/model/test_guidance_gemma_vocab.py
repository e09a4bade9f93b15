"""Guidance exact on a second kind of model: Gemma's 256k SentencePiece vocabulary.

No Gemma weights are on this machine (and no model hub is reachable), so the test
writes a one-block llama with random weights over a 256,000-token SentencePiece
vocabulary holding Gemma's turn tokens (`tests.tiny_models`): samplescope chooses
Gemma's template for it, and a guided reply must still equal the reference that
combines each step's two distributions from separate single-sequence runs, greedy and
seeded, with scale 1 no guidance bit for bit. What the weights say does not matter to
exactness; the vocabulary's size, its tokenizer and its template are what differ from
SmolLM2.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings
from tests.model.test_guidance import GREEDY, NEGATIVE, SEEDED, guided_reply, reference
from tests.tiny_models import spm_vocab, write_tiny_llama


@pytest.fixture(scope="module")
def gemma_vocab_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaBackend]:
    folder = tmp_path_factory.mktemp("gemma-vocab")
    vocab = spm_vocab(256_000, ["<start_of_turn>", "<end_of_turn>"], placeholders=6000)
    path: Path = write_tiny_llama(folder / "gemma256k.gguf", vocab)
    backend = LlamaBackend.load(path, n_ctx=512, n_batch=64, n_threads=1)
    try:
        yield backend
    finally:
        backend.close()


def test_the_model_gets_gemmas_template(gemma_vocab_backend: LlamaBackend) -> None:
    prompt = gemma_vocab_backend.template.render([])
    assert prompt.endswith("<start_of_turn>model\n")


@pytest.mark.parametrize("base", [GREEDY, SEEDED], ids=["greedy", "seeded"])
@pytest.mark.parametrize("scale", [1.5, 3.0])
def test_a_guided_reply_equals_the_reference(
    gemma_vocab_backend: LlamaBackend, base: SamplerSettings, scale: float
) -> None:
    settings = base.with_changes(guidance_scale=scale, negative_prompt=NEGATIVE)
    tokens, _steps = guided_reply(gemma_vocab_backend, settings)
    assert tokens == reference(gemma_vocab_backend, settings, scale, tokens)


@pytest.mark.parametrize("base", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_scale_one_is_no_guidance(gemma_vocab_backend: LlamaBackend, base: SamplerSettings) -> None:
    guided, _ = guided_reply(
        gemma_vocab_backend, base.with_changes(guidance_scale=1.0, negative_prompt=NEGATIVE)
    )
    plain, _ = guided_reply(gemma_vocab_backend, base)
    assert guided == plain
