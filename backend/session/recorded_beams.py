"""A beam search saved as a turn's branches: the best beam is the reply, the others
branch off it where they part from it (the turn follows the best one).

The reply is saved as the search runs (`BeamRecorder.step`, the search's `on_step`):
after each step it holds the best live beam's tokens, committed, so a process killed
mid-search keeps the prompt and the best hypothesis so far, less at most the step in
flight (an unfinished reply, read as interrupted). When the best beam parts from the
one before, the reply's tokens after the parting point are taken back (a draft, not a
reply of the user's). At the end the reply becomes the best kept beam and the other
kept beams are stored as its branches.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.chat.compare import common_prefix
from backend.chat.events import FinishedEvent, GenerationStats, TokenEvent
from backend.chat.protocol import ChatMessage
from backend.llama.utf8 import Utf8Stream
from backend.session.beam_result import Beam, BeamSearch, beam_decoding, token_texts
from backend.session.model import Model
from backend.store.recorder import ChatRecorder
from sampling.settings.record import SamplerSettings


class BeamRecorder:
    """Saves one beam search into a `ChatRecorder` as it runs (see the module doc).

    Args:
        recorder: Where to save it.
        model: The model searched with (its tokens' bytes and pieces).
    """

    def __init__(self, recorder: ChatRecorder, model: Model) -> None:
        self.recorder = recorder
        self.model = model
        self._open = False
        self._settings = SamplerSettings()
        self._width = 1
        self._tokens: list[int] = []
        """The reply's tokens as stored."""
        self._pending: list[bytes] = []
        """After each stored token, the bytes of a character it left unfinished."""

    def begin(
        self,
        messages: Sequence[ChatMessage],
        settings: SamplerSettings,
        max_tokens: int,
        mode: str,
        width: int,
        length_penalty: float,
    ) -> bool:
        """Store the turns not stored yet and open the reply (before the search)."""
        self._settings, self._width = settings, width
        self._open = self.recorder.begin_reply(
            messages, settings, max_tokens, mode, decoding=beam_decoding(width, length_penalty, 1)
        )
        return self._open

    def step(self, number: int, live: Sequence[Beam]) -> None:
        """After a search step: the reply follows the best live beam (the search's
        `on_step`; the live beams come best first), committed now."""
        if self._open and live:
            self._follow(live[0])
            self.recorder.commit()

    def finish(self, search: BeamSearch) -> list[int | None]:
        """The reply becomes the best kept beam, finished; each other kept beam is
        stored as its branch from the first token where they part.

        Returns:
            Each kept beam's stored reply id, best first (None where the store failed:
            `recorder.error` says why).
        """
        recorder, model = self.recorder, self.model
        if not self._open:
            return [None] * len(search.beams)
        best = search.beams[0]
        best_texts = token_texts(model, best.token_ids)
        self._follow(best)
        recorder.record(
            FinishedEvent(best.finish_reason, search.stats, "".join(best_texts), best.token_ids)
        )
        self._open = False
        best_id = recorder.reply_id
        ids: list[int | None] = [best_id]
        width, penalty = self._width, search.length_penalty
        for rank, beam in enumerate(search.beams[1:], start=2):
            at = common_prefix(best.token_ids, beam.token_ids)
            text = "".join(best_texts[:at])
            decoding = beam_decoding(width, penalty, rank)
            if not recorder.begin_branch(
                best_id, at, self._settings, text=text, follow=False, decoding=decoding
            ):
                ids.append(None)
                continue
            texts = token_texts(model, beam.token_ids)
            _record(recorder, model, beam, texts, at, GenerationStats(decode_tokens=len(texts)))
            ids.append(recorder.reply_id)
        return ids

    def _follow(self, beam: Beam) -> None:
        """Make the stored tokens the beam's: take back those after the parting point,
        then append the beam's from there."""
        tokens, model = beam.token_ids, self.model
        at = common_prefix(self._tokens, tokens)
        if at < len(self._tokens):
            if not self.recorder.revise(at):
                return
            del self._tokens[at:], self._pending[at:]
        stream = Utf8Stream()
        stream.feed(self._pending[at - 1] if at else b"")
        for index in range(at, len(tokens)):
            token = tokens[index]
            text = "" if model.is_eog(token) else stream.feed(model.token_bytes(token))
            step = beam.steps[index]
            if not self.recorder.record(TokenEvent(index, step, text, model.shown_piece(token))):
                return
            self._tokens.append(token)
            self._pending.append(stream.pending)


def save_beams(
    recorder: ChatRecorder,
    model: Model,
    messages: Sequence[ChatMessage],
    settings: SamplerSettings,
    max_tokens: int,
    mode: str,
    search: BeamSearch,
) -> list[int | None]:
    """Store a finished search at once (`BeamRecorder` saves one as it runs).

    Returns:
        As `BeamRecorder.finish`.
    """
    saver = BeamRecorder(recorder, model)
    if not saver.begin(
        messages, settings, max_tokens, mode, len(search.beams), search.length_penalty
    ):
        return [None] * len(search.beams)
    return saver.finish(search)


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
