"""Contrast with a smaller model on the real model: exact, and refused when unfit.

The large model (SmolLM2's Q4_1) and the small one (its Q4_0 copy: same vocabulary,
other weights) decode the same text in step, each sequence in its own KV stream. The
reference takes each step's two distributions from separate single-sequence rebuilds
(`SessionBackend.step_input` on each model) and scores them in numpy:
(1 + beta) * big - beta * small over the tokens whose large-model probability is at
least alpha times the largest.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.cli.main import main

QUESTION = [ChatMessage("user", "Write one sentence about the sea.")]
MAX_TOKENS = 16
GREEDY = SamplerSettings(temperature=0.0)
SEEDED = DEFAULT_CHAT_SETTINGS.with_changes(temperature=1.0, seed=99)


@pytest.fixture(scope="module")
def pair(default_model_path: Path, q4_0_model_path: Path) -> Iterator[LlamaBackend]:
    """SmolLM2's Q4_1 with its Q4_0 copy as the contrast model."""
    big = LlamaBackend.load(default_model_path, n_ctx=1024, n_batch=64, n_threads=1)
    small = LlamaBackend.load(q4_0_model_path, n_ctx=1024, n_batch=64, n_threads=1)
    big.add_contrast(small)
    yield big
    big.close()


def reply(backend: LlamaBackend, settings: SamplerSettings) -> tuple[int, ...]:
    backend.reset()
    events = backend.generate(QUESTION, LiveSettings(settings), max_tokens=MAX_TOKENS)
    finished = [e for e in events if isinstance(e, FinishedEvent)][-1]
    assert finished.error is None, finished.error
    return finished.token_ids


def reference(backend: LlamaBackend, settings: SamplerSettings) -> tuple[int, ...]:
    small = backend.contrast
    assert small is not None
    beta, alpha = settings.value("contrast_beta"), settings.value("contrast_alpha")
    assert isinstance(beta, float) and isinstance(alpha, float)
    plain = settings.with_changes(contrast_beta=0.0)
    sampler = Sampler(plain, vocab_size=backend.info.n_vocab, vocabulary=backend.model)
    tokens: list[int] = []
    while len(tokens) < MAX_TOKENS:
        big_step = backend.step_input(QUESTION, tokens, max_tokens=MAX_TOKENS)
        small_step = small.step_input(QUESTION, tokens, max_tokens=MAX_TOKENS)
        big_logits = big_step.logits.astype(np.float64)
        scores = (1 + beta) * big_logits - beta * small_step.logits.astype(np.float64)
        scores[big_logits < big_logits.max() + np.log(alpha)] = -np.inf
        token = sampler.sample(scores, big_step.history).token_id
        tokens.append(token)
        if backend.model.is_eog(token):
            break
    return tuple(tokens)


@pytest.mark.parametrize("base", [GREEDY, SEEDED], ids=["greedy", "seeded"])
@pytest.mark.parametrize(("beta", "alpha"), [(0.5, 0.1), (1.0, 0.05)])
def test_a_contrasted_reply_equals_the_reference(
    pair: LlamaBackend, base: SamplerSettings, beta: float, alpha: float
) -> None:
    settings = base.with_changes(contrast_beta=beta, contrast_alpha=alpha)
    tokens = reply(pair, settings)
    assert tokens == reference(pair, settings)


def test_beta_zero_is_the_large_model_alone(pair: LlamaBackend) -> None:
    with_small = reply(pair, SEEDED)
    small, pair.contrast = pair.contrast, None
    try:
        alone = reply(pair, SEEDED)
    finally:
        pair.contrast = small
    assert with_small == alone


def test_another_vocabulary_is_one_line(
    tmp_path: Path, default_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(600), seed=3)
    argv = ["generate", "hi", "--model", str(default_model_path), "--threads", "1"]
    assert main([*argv, "--contrast-model", str(tiny), "--contrast-beta", "1"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "the model and the contrast model have different vocabularies: 49152" in err[0]
    assert "against 600" in err[0]


def test_json_carries_each_steps_contrast(
    default_model_path: Path, q4_0_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    argv = ["generate", "hi", "--model", str(default_model_path), "--threads", "1", "--json"]
    argv += ["--max-tokens", "4", "--contrast-model", str(q4_0_model_path)]
    assert main([*argv, "--contrast-beta", "0.5"]) == 0
    out = json.loads(capsys.readouterr().out)
    first = out["contrast"][0]
    assert first["scale"] == 0.5 and first["cond"] and first["uncond"] and first["guided"]
    assert "guidance" not in out
