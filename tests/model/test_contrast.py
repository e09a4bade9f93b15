"""Contrast with a smaller model on the real model: exact, and refused when unfit.

The large model (SmolLM2's Q4_1) and the small one (its Q4_0 copy: same vocabulary,
other weights) decode the same text in step, each sequence in its own KV stream. The
reference takes each step's two distributions from separate single-sequence runs of
each model alone (the prompt prefilled, the reply's tokens forced one at a time, as
`SessionBackend.step_input` rebuilds a step) and scores them in numpy:
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
from backend.session.backend import SessionBackend
from backend.session.llama_backend import LlamaBackend
from backend.session.run import Steer
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


def forced_steps(
    backend: SessionBackend, tokens: tuple[int, ...]
) -> list[tuple[np.ndarray, tuple[int, ...]]]:
    """The logits and history at each step of a reply to QUESTION by `backend` alone
    (no contrast model beside it) made of `tokens`, forced one a step (each decoded
    alone, as `step_input` rebuilds a step), and of the step after them unless the
    reply ends there."""
    seen: dict[int, tuple[np.ndarray, tuple[int, ...]]] = {}
    live = LiveSettings(GREEDY)
    live.step_sink = lambda i, logits, history: seen.setdefault(
        i, (np.array(logits), tuple(history))
    )
    small, backend.contrast = backend.contrast, None
    try:
        backend.reset()
        first, *then = tokens
        steer = Steer(force=first, then=tuple(then))
        for _ in backend.generate(QUESTION, live, max_tokens=MAX_TOKENS, steer=steer):
            pass
    finally:
        backend.contrast = small
    return [seen[i] for i in range(min(len(seen), len(tokens) + 1))]


def reference(
    backend: LlamaBackend, settings: SamplerSettings, tokens: tuple[int, ...]
) -> tuple[int, ...]:
    """The reply whose every step scores the two models' logits of separate
    single-sequence runs: (1 + beta) * big - beta * small over the large model's
    plausible tokens, drawn from by a sampler with the other settings (the same random
    stream).

    Both models decode the contrasted reply's `tokens`: the reference follows them
    while it draws the same token, and ends at the first it draws otherwise or past
    their end (after it, its own reply would need other logits), so it equals `tokens`
    exactly when each of its steps does."""
    small = backend.contrast
    assert small is not None
    beta, alpha = settings.value("contrast_beta"), settings.value("contrast_alpha")
    assert isinstance(beta, float) and isinstance(alpha, float)
    plain = settings.with_changes(contrast_beta=0.0)
    sampler = Sampler(plain, vocab_size=backend.info.n_vocab, vocabulary=backend.model)
    bigs = forced_steps(backend, tokens)
    smalls = forced_steps(small, tokens)
    drawn: list[int] = []
    for (big, history), (small_logits, _) in zip(bigs, smalls, strict=True):
        big_logits = big.astype(np.float64)
        scores = (1 + beta) * big_logits - beta * small_logits.astype(np.float64)
        scores[big_logits < big_logits.max() + np.log(alpha)] = -np.inf
        token = sampler.sample(scores, history).token_id
        drawn.append(token)
        at = len(drawn) - 1
        if at >= len(tokens) or token != tokens[at] or backend.model.is_eog(token):
            break
    return tuple(drawn)


@pytest.mark.parametrize("base", [GREEDY, SEEDED], ids=["greedy", "seeded"])
@pytest.mark.parametrize(("beta", "alpha"), [(0.5, 0.1), (1.0, 0.05)])
def test_a_contrasted_reply_equals_the_reference(
    pair: LlamaBackend, base: SamplerSettings, beta: float, alpha: float
) -> None:
    settings = base.with_changes(contrast_beta=beta, contrast_alpha=alpha)
    tokens = reply(pair, settings)
    assert tokens == reference(pair, settings, tokens)


def test_the_reference_rejects_another_reply(pair: LlamaBackend) -> None:
    """The reference is no echo of the reply it is given: a token changed midway, or
    the reply cut short, and it draws its own."""
    settings = GREEDY.with_changes(contrast_beta=0.5, contrast_alpha=0.1)
    tokens = reply(pair, settings)
    at = len(tokens) // 2
    changed = (*tokens[:at], (tokens[at] + 1) % pair.info.n_vocab, *tokens[at + 1 :])
    assert not pair.model.is_eog(changed[at])
    assert reference(pair, settings, changed) == tokens[: at + 1]
    assert reference(pair, settings, tokens[:at]) == tokens[: at + 1]


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
