"""The new samplers in the real generation loop of the default model.

min_tokens bans the model's end-of-generation tokens (`llama_vocab_is_eog`) until
the reply has N tokens; adaptive-p's moving average follows the tokens the loop
takes; each cut carries its sampler's name in the record.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings

SHORT = [ChatMessage("user", "Reply with the single word: yes.")]


@pytest.fixture
def backend(llama_backend: LlamaBackend) -> Iterator[LlamaBackend]:
    llama_backend.reset()
    yield llama_backend
    llama_backend.reset()


def reply(
    backend: LlamaBackend, settings: SamplerSettings, max_tokens: int
) -> tuple[list[TokenEvent], FinishedEvent]:
    events = list(backend.generate(SHORT, LiveSettings(settings), max_tokens=max_tokens))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    return [e for e in events if isinstance(e, TokenEvent)], finished


def test_the_runtime_knows_its_end_of_generation_tokens(backend: LlamaBackend) -> None:
    runtime = backend.runtime
    ends = runtime.eog_ids
    assert ends and all(runtime.is_eog(token) for token in ends)
    assert runtime.tokenize("<|im_end|>", special=True)[0] in ends


def test_min_tokens_holds_the_end_off_and_names_the_ban(backend: LlamaBackend) -> None:
    greedy = SamplerSettings(temperature=0.0)
    _, plain = reply(backend, greedy, 60)
    assert plain.reason == "eos"  # greedy, the model ends its reply by itself
    count = len(plain.token_ids) + 5
    backend.reset()
    tokens, held = reply(backend, greedy.with_changes(min_tokens=count), count + 40)
    ends = set(backend.runtime.eog_ids)
    assert not ends & set(held.token_ids[:count])
    assert len(held.token_ids) > count
    assert held.token_ids[: len(plain.token_ids) - 1] == plain.token_ids[:-1]
    # Where the plain reply ended, the end token tops the record, before the ban.
    step = tokens[len(plain.token_ids) - 1].step
    top = step.candidates[0]
    assert top.token_id == plain.token_ids[-1] and top.prob_before > 0.05
    assert (top.removed_by, top.prob_after, top.kept) == ("min_tokens", 0.0, False)
    assert step.token_id not in ends and step.cut_by == "greedy"


def test_adaptive_p_and_the_cutoffs_run_in_the_loop(backend: LlamaBackend) -> None:
    settings = SamplerSettings(
        temperature=0.9, min_p=0.05, top_a=0.2, adaptive_target=0.4, adaptive_decay=0.8, seed=3
    )
    assert settings.order[-1] == "adaptive_p" and "top_a" in settings.order
    tokens, finished = reply(backend, settings, 12)
    targets = [t.step.figure("adaptive_p", "target") for t in tokens]
    assert targets[0] == pytest.approx(0.4)
    assert all(target is not None for target in targets) and len(set(targets)) > 1
    assert finished.token_ids == tuple(t.step.token_id for t in tokens)
