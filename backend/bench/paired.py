"""Two ways of generating the same reply, timed against each other in one run.

The guidance and thinking parts each generate one reply two ways to the same length
(the end-of-generation token banned), alternating so that a disturbance hits both,
best of `repeats`, and compare the decode tokens/s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class PairedSpeeds:
    """The best decode tokens/s of each way, and the replies' length.

    Attributes:
        peer_tps: The way it is measured against (plain).
        ours_tps: The way measured.
        tokens: The replies' length in tokens.
    """

    peer_tps: float
    ours_tps: float
    tokens: int


def finished_reply(
    backend: LlamaBackend,
    messages: Sequence[ChatMessage],
    settings: SamplerSettings,
    max_tokens: int,
    *,
    raw: bool = False,
) -> FinishedEvent:
    """One reply from a fresh memory, its finish (RuntimeError if it failed)."""
    backend.reset()
    events = backend.generate(messages, LiveSettings(settings), max_tokens=max_tokens, raw=raw)
    finished = [event for event in events if isinstance(event, FinishedEvent)][-1]
    if finished.error:
        raise RuntimeError(finished.error)
    return finished


def paired_speeds(
    backend: LlamaBackend,
    messages: Sequence[ChatMessage],
    peer: SamplerSettings,
    ours: SamplerSettings,
    *,
    max_tokens: int,
    repeats: int,
    raw: bool = False,
) -> PairedSpeeds:
    """Generate the reply with `peer` and with `ours` in turn, `repeats` times each,
    after a short warm-up with `ours`; the best decode tokens/s of each."""
    eos = backend.runtime.eos
    ban = ((eos, float("-inf")),) if eos >= 0 else ()
    ways = (peer.with_changes(logit_bias=ban), ours.with_changes(logit_bias=ban))
    best = [0.0, 0.0]
    tokens = 0
    finished_reply(backend, messages, ways[1], 4, raw=raw)  # warm up
    for _ in range(repeats):
        for index, settings in enumerate(ways):
            finished = finished_reply(backend, messages, settings, max_tokens, raw=raw)
            best[index] = max(best[index], finished.stats.decode_tps)
            tokens = len(finished.token_ids)
    return PairedSpeeds(best[0], best[1], tokens)
