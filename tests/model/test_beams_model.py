"""Beam search on SmolLM2: width 1 is greedy decoding, and each beam's log-probability
is what its stored steps give."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.beams import beam_search
from backend.session.llama_backend import LlamaBackend
from backend.session.run import Steer
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.sampler import probabilities
from sampling.settings.record import SamplerSettings
from tui.cli.main import main

PROMPT = "Write a short story about a lighthouse keeper."
QUESTION = [ChatMessage("user", PROMPT)]
MAX_TOKENS = 32


@pytest.fixture
def backend(llama_backend: LlamaBackend) -> Iterator[LlamaBackend]:
    llama_backend.reset()
    yield llama_backend
    llama_backend.reset()


@pytest.mark.parametrize(
    "settings",
    [DEFAULT_CHAT_SETTINGS, SamplerSettings(temperature=1.0)],
    ids=["llama.cpp-chain", "model-probabilities"],
)
def test_width_one_is_greedy(backend: LlamaBackend, settings: SamplerSettings) -> None:
    events = backend.generate(
        QUESTION, LiveSettings(SamplerSettings(temperature=0.0)), max_tokens=MAX_TOKENS
    )
    greedy = next(e for e in events if isinstance(e, FinishedEvent))
    backend.reset()
    search = beam_search(backend, QUESTION, settings, width=1, max_tokens=MAX_TOKENS)
    assert search.beams[0].token_ids == greedy.token_ids


def test_the_best_beams_logprob_is_its_stored_steps_and_each_token_alone(
    backend: LlamaBackend, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "chats.db"
    argv = ["generate", PROMPT, "--beams", "3", "--max-tokens", str(MAX_TOKENS), "--json"]
    argv += ["--threads", "1", "--save", "--db", str(db)]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    kept = [b for b in result["beams"] if b["kept"]]
    pruned = [b for b in result["beams"] if not b["kept"]]
    assert len(kept) == 3 and pruned
    assert all(b["pruned_at"] is None for b in kept)
    assert all(b["pruned_at"] == len(b["token_ids"]) for b in pruned)
    best = kept[0]
    assert best["token_ids"] == result["token_ids"] and best["text"] == result["text"]
    with ChatStore(db) as store:
        chat = store.load_chat(result["chat_id"])
        turn = chat.messages[-1]
        branches = {b.id: b for b in turn.branches}
        assert turn.reply is not None and turn.reply.id == best["reply_id"]
        for beam in kept:
            stored = branches[beam["reply_id"]]
            steps = store.load_steps(chat, stored)
            logprob = sum(math.log(steps[i].prob) for i in range(len(stored.token_ids)))
            assert logprob == beam["logprob"]
        # Each step's candidate table (the sampler's run) holds the token at the
        # probability the search ranked it by (`probabilities`, run apart).
        reply = branches[best["reply_id"]]
        steps = store.load_steps(chat, reply)
        for index, token in enumerate(reply.token_ids):
            table = steps[index].table
            rows = [i for i, t in enumerate(table.token_ids) if t == token]
            assert rows, f"token {index} is not among its step's candidates"
            assert float(table.prob_after[rows[0]]) == pytest.approx(steps[index].prob, rel=1e-6)
        # Decoded alone, a token's logits can differ from the batch's (llama.cpp):
        # measured, not asserted. The reply's tokens forced one a step, as a rebuild
        # of each step (`step_input`) decodes them, in one pass.
        alone: dict[int, tuple[np.ndarray, tuple[int, ...]]] = {}
        live = LiveSettings(SamplerSettings(temperature=0.0))
        live.step_sink = lambda i, logits, history: alone.setdefault(
            i, (np.array(logits), tuple(history))
        )
        backend.reset()
        first, *then = reply.token_ids
        steer = Steer(force=first, then=tuple(then))
        forced = list(backend.generate(QUESTION, live, max_tokens=MAX_TOKENS, steer=steer))
        assert isinstance(forced[-1], FinishedEvent) and forced[-1].token_ids == reply.token_ids
        largest = 0.0
        for index, token in enumerate(reply.token_ids):
            logits, history = alone[index]
            probs = probabilities(
                logits,
                DEFAULT_CHAT_SETTINGS,
                history,
                vocabulary=backend.model,
                generated=index,
                end_of_generation=backend.model.eog_ids,
            )
            largest = max(largest, abs(float(probs[token]) - steps[index].prob))
    print(
        f"beams: best logprob {best['logprob']:.4f}, {len(pruned)} pruned, "
        f"{result['stats']['decode_tps']:.1f} tokens/s decoded in lockstep; "
        f"largest probability change decoded alone {largest:.4f}"
    )
