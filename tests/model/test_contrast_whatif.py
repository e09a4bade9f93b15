"""`samplescope whatif` and `branch` on a reply made with a contrast model load that
model again (the recorded one, or `--contrast-model PATH`), so the step recomputed
with its own settings is the stored one; without it, contrast would silently do
nothing (the real default model; its Q4_0 copy as the contrast model)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from backend.store.store import ChatStore
from tui.cli.main import main

PROMPT = "Write one sentence about the sea."
FLAGS = ["--temperature", "1.0", "--seed", "21", "--max-tokens", "8", "--threads", "1"]
AT = 4


def test_whatif_on_a_contrast_reply_recomputes_the_stored_step(
    tmp_path: Path, q4_0_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "chats.db"
    contrast = ["--contrast-model", str(q4_0_model_path), "--contrast-beta", "0.5"]
    contrast += ["--contrast-alpha", "0.01"]
    argv = ["generate", PROMPT, *FLAGS, *contrast, "--json", "--save", "--db", str(db)]
    assert main(argv) == 0
    chat_id = json.loads(capsys.readouterr().out)["chat_id"]
    store = ChatStore(db)
    chat = store.load_chat(int(chat_id))
    stored = store.load_steps(chat, chat.replies[-1])[AT - 1]

    whatif = ["whatif", str(chat_id), "--at", str(AT), "--db", str(db), "--json", "--threads", "1"]
    for extra in ([], ["--contrast-model", str(q4_0_model_path)]):
        assert main([*whatif, *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        before = np.array([c["before"] for c in out["candidates"]], dtype=np.float32)
        assert np.array_equal(before, stored.table.prob_before)  # stored as float32
        assert np.count_nonzero(before) > 1
        assert [c["token_id"] for c in out["candidates"]] == stored.table.token_ids.tolist()
        assert out["drawn"] == stored.token_id and out["reports"]["contrast"]["scale"] == 0.5
