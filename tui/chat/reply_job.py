"""What the generation worker runs for one chat reply (worker thread only).

The reply is saved from the worker thread as it is generated, so that the store
never lags behind the model (a store error never raises: it stops the recording,
not the reply, and is shown once).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from backend.chat.compare import ColumnEvent
from backend.chat.completion import Mode, as_document
from backend.chat.events import FinishedEvent, GenerationEvent, GenerationStats, NoticeEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.error_log import logged_line
from backend.session.backend import SessionBackend
from backend.session.loop_watch import LoopGuard
from backend.session.phrase_bans import PhraseBans
from backend.session.run import Steer
from backend.store.recorded import StoreErrorNotices, recorded
from backend.store.recorder import ChatRecorder
from sampling.errors import SamplescopeError

REPLY_COLUMN = 0
"""The column a chat reply's events are tagged with (the runner's jobs are columns)."""


@dataclass(frozen=True)
class ReplyJob:
    """One reply to `messages`, recorded as it comes (a `runner.Job`).

    Attributes:
        messages: The conversation, ending with the user's turn.
        live: The sliders' settings, read before every token.
        max_tokens: The longest reply.
        recorder: Saves the reply, or None.
        notices: Remembers which store error was shown.
        reset: Forget the backend's cache first (a new chat, another saved chat).
        mode: "chat", or "completion": the conversation is one document, continued
            without the chat template.
        steer: For a branch of the last reply: its tokens before the fork, and the
            token forced there (None: drawn again).
        fork: Record the reply as a branch: (the stored id of the branch it forks
            from, or None when that was not saved; the index of its first own token).
        bans: Phrases the reply may not hold (it backtracks; see
            `backend.session.phrase_bans`).
        loops: What a repetition loop in the reply does (`backend.session.loop_watch`).
    """

    messages: Sequence[ChatMessage]
    live: LiveSettings
    max_tokens: int
    recorder: ChatRecorder | None = None
    notices: StoreErrorNotices = field(default_factory=StoreErrorNotices)
    reset: bool = False
    mode: Mode = "chat"
    steer: Steer | None = None
    fork: tuple[int | None, int] | None = None
    bans: PhraseBans = field(default_factory=PhraseBans)
    loops: LoopGuard = field(default_factory=LoopGuard)

    def __call__(self, backend: SessionBackend, cancel: threading.Event) -> Iterator[ColumnEvent]:
        """Generate the reply (worker thread); every event, tagged as column 0."""
        for event in self._events(backend, cancel):
            yield ColumnEvent(REPLY_COLUMN, event)

    def _events(
        self, backend: SessionBackend, cancel: threading.Event
    ) -> Iterator[GenerationEvent]:
        recorder = self.recorder
        try:
            if self.reset:
                backend.reset()
            if recorder is not None:
                if self.fork is None:
                    recorder.begin_reply(
                        self.messages, self.live.current, self.max_tokens, self.mode
                    )
                else:
                    recorder.begin_branch(*self.fork, self.live.current)
                yield from self._store_notice(recorder)
            completion = self.mode == "completion"
            events = backend.generate(
                as_document(self.messages) if completion else self.messages,
                self.live,
                max_tokens=self.max_tokens,
                cancel=cancel,
                raw=completion,
                steer=self.steer,
                bans=self.bans or None,
                loops=self.loops or None,
            )
            yield from recorded(events, recorder, self.notices)
        except SamplescopeError as error:  # the contract says errors come as events; be safe
            failed = FinishedEvent("error", GenerationStats(), "", (), error=str(error))
            if recorder is not None:
                recorder.record(failed)
            yield failed
        except Exception as error:  # a bug: logged, told in one line, the chat goes on
            line = logged_line(error)
            yield NoticeEvent(line)
            failed = FinishedEvent("error", GenerationStats(), "", (), error=line)
            if recorder is not None:
                recorder.record(failed)
            yield failed

    def _store_notice(self, recorder: ChatRecorder) -> Iterator[NoticeEvent]:
        notice = self.notices.notice(recorder)
        if notice is not None:
            yield notice
