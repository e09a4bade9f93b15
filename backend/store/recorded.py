"""Generate and save in one place: a generation's events, recorded as they pass.

Every front end that saves what it generates (the chat's reply job, a compare column
made the chat's reply, `generate --save`, `branch`) opens the reply's record on a
`ChatRecorder` and runs the loop's events through `recorded`, so a reply is saved
one way wherever it was generated.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from backend.chat.events import GenerationEvent, NoticeEvent
from backend.store.recorder import ChatRecorder


class StoreErrorNotices:
    """Turns the recorder's errors into notices, each one once across replies."""

    def __init__(self) -> None:
        self._shown: str | None = None

    def notice(self, recorder: ChatRecorder) -> NoticeEvent | None:
        """A notice for the recorder's error if it was not shown yet."""
        error = recorder.error
        if error is None or error == self._shown:
            return None
        self._shown = error
        return NoticeEvent(f"This chat is not being saved: {error}")


def recorded(
    events: Iterable[GenerationEvent],
    recorder: ChatRecorder | None,
    notices: StoreErrorNotices | None = None,
) -> Iterator[GenerationEvent]:
    """`events`, each stored by `recorder` (None: nothing stored) before it passes on.

    A store error stops the recording, never the generation; with `notices` it comes
    as one NoticeEvent (once across replies), else it stays in `recorder.error`.
    """
    for event in events:
        if recorder is not None and not recorder.record(event) and notices is not None:
            notice = notices.notice(recorder)
            if notice is not None:
                yield notice
        yield event
