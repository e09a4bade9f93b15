"""A beam search saved as a turn's branches: the best beam is the reply, the others
branch off it where they part from it (the turn follows the best one)."""

from __future__ import annotations

from collections.abc import Sequence

from backend.chat.compare import common_prefix
from backend.chat.events import FinishedEvent, GenerationStats, TokenEvent
from backend.chat.protocol import ChatMessage
from backend.session.beams import Beam, BeamSearch, beam_decoding, token_texts
from backend.session.model import Model
from backend.store.recorder import ChatRecorder
from sampling.settings import SamplerSettings


def save_beams(
    recorder: ChatRecorder,
    model: Model,
    messages: Sequence[ChatMessage],
    settings: SamplerSettings,
    max_tokens: int,
    mode: str,
    search: BeamSearch,
) -> list[int | None]:
    """Store the kept beams: the best as the reply to `messages`, each other one as a
    branch of it from the first token where they part.

    Returns:
        Each kept beam's stored reply id, best first (None where the store failed:
        `recorder.error` says why).
    """
    best = search.beams[0]
    best_texts = token_texts(model, best.token_ids)
    ids: list[int | None] = []
    width, penalty = len(search.beams), search.length_penalty
    if not recorder.begin_reply(
        messages, settings, max_tokens, mode, decoding=beam_decoding(width, penalty, 1)
    ):
        return [None] * len(search.beams)
    _record(recorder, model, best, best_texts, 0, search.stats)
    best_id = recorder.reply_id
    ids.append(best_id)
    for rank, beam in enumerate(search.beams[1:], start=2):
        at = common_prefix(best.token_ids, beam.token_ids)
        text = "".join(best_texts[:at])
        decoding = beam_decoding(width, penalty, rank)
        if not recorder.begin_branch(
            best_id, at, settings, text=text, follow=False, decoding=decoding
        ):
            ids.append(None)
            continue
        texts = token_texts(model, beam.token_ids)
        _record(recorder, model, beam, texts, at, GenerationStats(decode_tokens=len(texts)))
        ids.append(recorder.reply_id)
    return ids


def _record(
    recorder: ChatRecorder,
    model: Model,
    beam: Beam,
    texts: list[str],
    start: int,
    stats: GenerationStats,
) -> None:
    """Record a beam's tokens from `start` on and its finish."""
    for index in range(start, len(beam.token_ids)):
        step = beam.steps[index]
        piece = model.shown_piece(step.token_id)
        recorder.record(TokenEvent(index, step, texts[index], piece))
    recorder.record(FinishedEvent(beam.finish_reason, stats, "".join(texts), beam.token_ids))
