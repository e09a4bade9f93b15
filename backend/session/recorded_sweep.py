"""A sweep's samples saved as chats: each sample one chat (its prompt and its reply,
with every token's record), so any of them opens in the app as a saved chat does;
the finished sweep kept with them (`keep_sweep`), so the saved chats list it as one
entry that opens on its frontier (`kept_sweep`); deleted with them and with the result
file `sweep` wrote for `--view` when that file is samplescope's own
(`delete_kept_sweep`)."""

from __future__ import annotations

import json
from pathlib import Path

from backend.session.sweep import SweepPlan, SweepSample
from backend.session.sweep_result import SweepFileError, SweepResult
from backend.store.recorded import recorded
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatStore, StoreError

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


def sweep_title(result: SweepResult) -> str:
    """ "sweep · 3 settings × 4 samples · Write a…": the sweep's line in the saved chats."""
    plan = result.plan
    shape = plan.shape.removeprefix("1 prompt × ")  # the prompt follows
    title = f"sweep · {shape} · {' '.join(plan.prompts[0].split())}"
    return title if len(title) <= TITLE_LENGTH else title[: TITLE_LENGTH - 1] + "…"


def keep_sweep(store: ChatStore, result: SweepResult) -> int | None:
    """Keep a finished sweep with its saved samples (None: none was saved).

    Raises:
        StoreError: The database cannot be written.
    """
    chat_ids = [r.chat_id for r in result.samples if r.chat_id is not None]
    if not chat_ids:
        return None
    text = json.dumps(result.to_json(), ensure_ascii=False)
    return store.keep_sweep(sweep_title(result), str(result.model), text, chat_ids)


def kept_sweep(store: ChatStore, sweep_id: int) -> SweepResult:
    """A kept sweep's result, as `keep_sweep` stored it.

    Raises:
        StoreError: There is no such sweep.
        SweepFileError: Its stored result cannot be read.
    """
    try:
        values = json.loads(store.sweep_result(sweep_id))
    except ValueError:
        raise SweepFileError(f"sweep {sweep_id}'s stored result is damaged") from None
    if not isinstance(values, dict):
        raise SweepFileError(f"sweep {sweep_id}'s stored result is not a sweep result")
    return SweepResult.from_json(values, store.registry)


def result_file(store_path: Path, result: SweepResult) -> Path | None:
    """Where `sweep` writes a saved sweep's result for `--view`: beside the chat
    database, `sweeps/sweep-chats-FIRST-LAST.json` after its first and last sample's
    chat (None: no sample was saved)."""
    saved = [sample.chat_id for sample in result.samples if sample.chat_id is not None]
    if not saved:
        return None
    return store_path.parent / "sweeps" / f"sweep-chats-{min(saved)}-{max(saved)}.json"


def delete_kept_sweep(store: ChatStore, sweep_id: int, data_folder: Path) -> Path | None:
    """Delete a kept sweep with its samples' chats, and the result file `sweep` wrote for
    it (`result_file`) when that file is samplescope's own: inside `data_folder`
    (samplescope's data folder; never a file elsewhere), not a link, and holding this
    very result. Returns the file deleted (None: none was).

    Raises:
        StoreError: There is no such sweep, or the database cannot be written.
    """
    text = store.sweep_result(sweep_id)
    try:
        path = result_file(store.path, kept_sweep(store, sweep_id))
    except SweepFileError:
        path = None  # a damaged result names no file
    store.delete_sweep(sweep_id)
    if path is None or not _own_result_file(path, text, data_folder):
        return None
    try:
        path.unlink()
    except OSError:
        return None
    return path


def _own_result_file(path: Path, stored: str, data_folder: Path) -> bool:
    """Whether `path` is a result file samplescope wrote for the stored result."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        if not path.resolve().is_relative_to(data_folder.resolve()):
            return False
        return bool(json.loads(path.read_text(encoding="utf-8")) == json.loads(stored))
    except (OSError, ValueError):
        return False
