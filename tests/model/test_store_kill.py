"""Killing a real generating process mid-reply keeps the chat and the partial reply."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from backend.store.store import ChatStore

WORKER = Path(__file__).with_name("store_kill_worker.py")
MIN_TOKENS = 20
GIVE_UP_S = 180.0  # a safety net so a broken worker cannot hang the suite


def stored_tokens(db_path: Path) -> int:
    """Tokens of unfinished replies, read through a separate connection."""
    if not db_path.exists():
        return 0
    conn = sqlite3.connect(db_path, timeout=5)
    try:
        row = conn.execute(
            "SELECT count(*) FROM reply_tokens t JOIN replies r ON t.reply_id = r.id "
            "WHERE r.finish_reason IS NULL"
        ).fetchone()
        return int(row[0])
    except sqlite3.OperationalError:  # tables not created yet
        return 0
    finally:
        conn.close()


def test_sigkill_mid_reply_keeps_the_partial_reply(
    tmp_path: Path, default_model_path: Path, llama_backend: object
) -> None:
    db_path = tmp_path / "chats.sqlite3"
    process = subprocess.Popen(
        [
            sys.executable,
            str(WORKER),
            str(db_path),
            str(default_model_path),
            str(tmp_path / "llama.log"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = 0
    try:
        deadline = time.monotonic() + GIVE_UP_S
        while time.monotonic() < deadline and process.poll() is None:
            seen = stored_tokens(db_path)
            if seen >= MIN_TOKENS:
                os.kill(process.pid, signal.SIGKILL)
                break
            time.sleep(0.01)
    finally:
        if process.poll() is None and seen < MIN_TOKENS:
            process.kill()
        stdout, stderr = process.communicate(timeout=30)
    assert seen >= MIN_TOKENS, f"worker stored {seen} tokens; stderr:\n{stderr}"
    assert process.returncode == -signal.SIGKILL
    assert "finished" not in stdout
    chat_id = int(stdout.split()[0])

    with ChatStore(db_path) as store:
        (summary,) = store.list_chats()
        assert summary.id == chat_id and summary.reply_count == 1
        chat = store.load_chat(chat_id)
        assert [m.role for m in chat.messages] == ["user", "assistant"]
        reply = chat.replies[0]
        assert reply.interrupted
        assert len(reply.token_ids) >= seen
        # The stored text is the decoding of the stored tokens (no token lost between
        # the token table and the text).
        runtime = llama_backend.runtime  # type: ignore[attr-defined]
        decoded = b"".join(runtime.token_bytes(t) for t in reply.token_ids).decode(
            "utf-8", "replace"
        )
        assert reply.text and decoded.startswith(reply.text)
        assert len(decoded) - len(reply.text) <= 1  # at most a split character pending
        # The killed database is fully usable: the chat can be continued.
        store.add_message(chat_id, "user", "Go on.")
        assert len(store.load_chat(chat_id).messages) == 3
