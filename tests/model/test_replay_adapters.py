"""A reply made with control vectors or a contrast model records them, so `replay` loads
them again and is token-identical; a contrast model whose file is gone is one line,
and the stored reply stays as it was (the real default model; its Q4_0 copy as the
contrast model; the golden control vector of tests/model/test_control_vector.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from backend.store.store import ChatStore
from tui.cli.main import main

VECTOR = Path(__file__).parent.parent / "fixtures" / "control_vector" / "happy.gguf"
PROMPT = "Write one sentence about the sea."
SEEDED = ["--temperature", "1.0", "--seed", "21", "--max-tokens", "12", "--threads", "1"]


def saved(argv: list[str], db: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["generate", PROMPT, *SEEDED, *argv, "--json", "--save", "--db", str(db)]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def replayed(db: Path, chat_id: object, *extra: str) -> int:
    return main(["replay", "--db", str(db), str(chat_id), "--threads", "1", *extra])


def test_a_guided_reply_with_a_control_vector_replays_token_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "chats.db"
    vector = ["--control-vector", f"{VECTOR}:4", "--control-vector-layers", "10,25"]
    guided = ["--guidance-scale", "2", "--negative-prompt", "Write about a desert."]
    out = saved([*vector, *guided], db, capsys)
    plain = saved(guided, db, capsys)
    assert out["token_ids"] != plain["token_ids"]  # the vector shapes the reply
    reply = ChatStore(db).load_chat(int(str(out["chat_id"]))).replies[-1]
    assert reply.control_vectors is not None and reply.contrast_model is None
    recorded = json.loads(reply.control_vectors)
    assert recorded == {
        "vectors": [{"path": str(VECTOR.resolve()), "scale": 4.0}],
        "layers": [10, 25],
    }
    assert replayed(db, out["chat_id"]) == 0
    assert "token-identical" in capsys.readouterr().out
    assert replayed(db, plain["chat_id"]) == 0  # and one without stays without
    assert "token-identical" in capsys.readouterr().out


def test_a_contrast_reply_replays_and_a_missing_small_model_is_one_line(
    tmp_path: Path, q4_0_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "chats.db"
    small = tmp_path / "small.gguf"
    shutil.copyfile(q4_0_model_path, small)
    out = saved(["--contrast-model", str(small), "--contrast-beta", "0.5"], db, capsys)
    chat_id = out["chat_id"]
    store = ChatStore(db)
    reply = store.load_chat(int(str(chat_id))).replies[-1]
    assert reply.contrast_model is not None and reply.contrast_model.path == str(small.resolve())
    assert reply.contrast_model.sha256 == store.model_ref(q4_0_model_path).sha256
    assert replayed(db, chat_id) == 0
    assert "token-identical" in capsys.readouterr().out

    small.unlink()
    assert replayed(db, chat_id) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and str(small) in err[0] and "--contrast-model PATH" in err[0]
    assert "Traceback" not in captured.err and not captured.out
    again = ChatStore(db).load_chat(int(str(chat_id))).replies[-1]
    assert again.token_ids == reply.token_ids and again.contrast_model == reply.contrast_model
    # Another copy of it, named: token-identical again.
    assert replayed(db, chat_id, "--contrast-model", str(q4_0_model_path)) == 0
    assert "token-identical" in capsys.readouterr().out
