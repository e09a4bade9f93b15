"""A reply's score against llama-cpp-python decoding the same reply token by token.

A reply's figures come from its decode (the prompt prefilled in batches, then one
token at a time), so the reference decodes the same way: its last row after each
token, log-softmaxed, is the raw log-probability of the next one.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from backend.chat.completion import as_document
from backend.chat.events import TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from sampling.analysis.reply_score import reply_score
from sampling.settings.record import SamplerSettings
from tui.cli.main import main


def test_raw_logprob_equals_a_token_by_token_decode(
    llama_backend: LlamaBackend, reference: object
) -> None:
    # Hot and unfiltered: tokens come from deep in the distribution.
    settings = SamplerSettings(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0, seed=11)
    llama_backend.reset()
    messages = as_document([ChatMessage("user", "The old lighthouse keeper said")])
    steps = [
        event.step
        for event in llama_backend.generate(
            messages, LiveSettings(settings), max_tokens=16, raw=True
        )
        if isinstance(event, TokenEvent)
    ]
    reply = [step.token_id for step in steps]
    cache = list(llama_backend.session.memory.tokens())
    prompt = cache[: len(cache) - (len(reply) - 1)]
    assert cache[len(prompt) :] == reply[:-1]
    reference.reset()  # type: ignore[attr-defined]
    reference.eval(prompt)  # type: ignore[attr-defined]
    expected = []
    for token in reply:
        row = np.asarray(reference.scores[reference.n_tokens - 1], dtype=np.float64)  # type: ignore[attr-defined]
        expected.append(row[token] - row.max() - math.log(np.exp(row - row.max()).sum()))
        reference.eval([token])  # type: ignore[attr-defined]
    ours = [math.log(p) for p in (step.prob_unfiltered for step in steps) if p is not None]
    assert len(ours) == len(reply)
    assert max(abs(a - b) for a, b in zip(ours, expected, strict=True)) < 1e-4
    score = reply_score(steps)
    assert score is not None and score.logprob_raw is not None and score.perplexity is not None
    assert score.logprob_raw == pytest.approx(sum(expected), abs=len(reply) * 1e-4)
    assert score.perplexity == pytest.approx(math.exp(-sum(expected) / len(reply)), rel=1e-3)
    assert score.logprob_sampled == pytest.approx(sum(math.log(s.prob) for s in steps))


def test_generate_json_has_the_score(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["generate", "Say hello.", "-s", "5", "--max-tokens", "8", "--json"]
    assert main([*argv, "--threads", "1", "--ctx", "1024"]) == 0
    result = json.loads(capsys.readouterr().out)
    score = result["score"]
    assert {"logprob_raw", "logprob_sampled", "perplexity", "mean_entropy"} <= set(score)
    assert score["n_tokens"] == len(result["token_ids"])
    # The default chain cuts the tail: the drawn tokens are likelier after the cuts.
    assert score["logprob_sampled"] >= score["logprob_raw"]
    assert score["perplexity"] == pytest.approx(math.exp(-score["logprob_raw"] / score["n_tokens"]))
    assert score["mean_entropy"] > 0
