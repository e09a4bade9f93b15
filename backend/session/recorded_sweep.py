"""A sweep's samples saved as chats: each sample one chat (its prompt and its reply,
with every token's record), so any of them opens in the app as a saved chat does."""

from __future__ import annotations

from backend.session.sweep import SweepPlan, SweepSample
from backend.store.recorded import recorded
from backend.store.recorder import ChatRecorder
from backend.store.store import StoreError

#: A saved sample's chat title is cut to this many characters.
TITLE_LENGTH = 80


def sample_title(plan: SweepPlan, sample: SweepSample) -> str:
    """ "sweep · t=0.7 min_p=0.1 · seed 43 · Write a…": what the saved chats list shows."""
    key = sample.key
    prompt = " ".join(plan.prompts[key.prompt].split())
    label = plan.settings[key.setting].label
    title = f"sweep · {label} · seed {sample.settings.seed} · {prompt}"
    return title if len(title) <= TITLE_LENGTH else title[: TITLE_LENGTH - 1] + "…"


def save_sample(recorder: ChatRecorder, plan: SweepPlan, sample: SweepSample) -> int | None:
    """Store a finished sample as a new chat; returns its id (None when the store
    failed: `recorder.error` says why).

    The reply records how it was decoded (its lockstep siblings, when it had any), as
    the loop reported it, so it replays the way it was generated.
    """
    key = sample.key
    recorder.new_chat()
    if not recorder.begin_reply(
        plan.messages(key.prompt),
        sample.settings,
        plan.max_tokens,
        plan.mode,
        decoding=sample.finished.decoding,
    ):
        return None
    for _ in recorded(sample.events, recorder):
        pass
    chat_id = recorder.chat_id
    if chat_id is None or recorder.error is not None:
        return None
    try:
        recorder.store.rename_chat(chat_id, sample_title(plan, sample))
    except StoreError as error:
        recorder.error = str(error)
        return None
    return chat_id
