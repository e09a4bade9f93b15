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


def kill_once_stored(process: subprocess.Popen[str], db_path: Path) -> tuple[int, str, str]:
    """SIGKILL `process` once its database holds MIN_TOKENS tokens (or give up after
    GIVE_UP_S); the tokens seen stored, and its stdout and stderr."""
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
    return seen, stdout, stderr


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
    seen, stdout, stderr = kill_once_stored(process, db_path)
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


def test_sigkill_mid_beam_search_keeps_the_prompt_and_the_best_beam_so_far(
    tmp_path: Path, default_model_path: Path, llama_backend: object
) -> None:
    db_path = tmp_path / "chats.sqlite3"
    root = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
        "SAMPLESCOPE_DATA_DIR": str(tmp_path / "data"),
        "SAMPLESCOPE_CONFIG_DIR": str(tmp_path / "config"),
    }
    prompt = "Count from 1 to 400, separated by commas."
    command = [sys.executable, "-m", "tui.cli.main", "generate", prompt, "--beams", "2"]
    command += ["--save", "--db", str(db_path), "--max-tokens", "1900", "-t", "1"]
    command += ["--threads", "1", "--ctx", "2048", "--model", str(default_model_path)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    seen, stdout, stderr = kill_once_stored(process, db_path)
    assert seen >= MIN_TOKENS, f"the search stored {seen} tokens; stderr:\n{stderr}"
    assert process.returncode == -signal.SIGKILL and not stdout

    with ChatStore(db_path) as store:
        (summary,) = store.list_chats()
        chat = store.load_chat(summary.id)
        assert [m.role for m in chat.messages] == ["user", "assistant"]
        assert chat.messages[0].content == prompt
        (reply,) = chat.replies  # the best beam so far; the others are saved at the end
        assert reply.interrupted and reply.decoding is not None
        assert '"rank": 1' in reply.decoding
        # Every beam of a step has the step's length: the reply never shrank.
        assert len(reply.token_ids) >= seen
        runtime = llama_backend.runtime  # type: ignore[attr-defined]
        decoded = b"".join(runtime.token_bytes(t) for t in reply.token_ids).decode(
            "utf-8", "replace"
        )
        assert reply.text and decoded.startswith(reply.text)
        assert len(store.load_steps(chat, reply)) == len(reply.token_ids)
