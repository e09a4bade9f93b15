"""Hostile but accepted command lines on the real default model: no traceback, no warning."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from backend.store.store import ChatStore
from tui.cli.main import main

MODEL_FLAGS = ["--threads", "1", "--ctx", "256"]


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    "penalty",
    [
        ["-t", "0", "--repeat-penalty=1e-300"],
        ["-t", "1", "--repeat-penalty=1e-40"],
        ["-t", "1", "--presence-penalty=-1e39"],
        ["-t", "1", "--frequency-penalty=-1e308"],
    ],
    ids=" ".join,
)
def test_generate_with_extreme_penalties_finishes(
    capsys: pytest.CaptureFixture[str], penalty: list[str]
) -> None:
    argv = ["generate", "hi", "--max-tokens", "6", "--json", *penalty, *MODEL_FLAGS]
    assert main(argv) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["error"] is None
    assert result["finish_reason"] in ("max_tokens", "eos")
    assert len(result["token_ids"]) >= 1
    assert all(math.isfinite(value) for value in result["stats"].values())
    assert "Warning" not in captured.err


@pytest.mark.parametrize("command", [["generate", "hi"], ["rpc-server"]], ids=" ".join)
@pytest.mark.parametrize("threads", ["10000", str((os.cpu_count() or 1) + 1), "-1"])
def test_a_thread_count_beyond_the_cores_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], command: list[str], threads: str
) -> None:
    assert main([*command, "--threads", threads]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert f"{threads}: expected 1 to {os.cpu_count() or 1}" in lines[0]


def test_generate_applies_the_config_files_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path))
    (tmp_path / "config.toml").write_text("[settings]\ntop_k = 7\nseed = 9\n", encoding="utf-8")
    argv = ["generate", "hi", "--max-tokens", "2", "--json", "-t", "0.5", *MODEL_FLAGS]
    assert main(argv) == 0
    settings = json.loads(capsys.readouterr().out)["settings"]
    assert (settings["top_k"], settings["seed"], settings["temperature"]) == (7, 9, 0.5)


def test_a_prompt_after_double_dash_naming_a_sampler_file_is_only_a_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    marker = tmp_path / "ran"
    plugin = tmp_path / "x.py"
    plugin.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n")
    prompt = f"--sampler-file={plugin}"
    argv = ["generate", "--max-tokens", "1", "--json", *MODEL_FLAGS, "--", prompt]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["finish_reason"] in ("max_tokens", "eos")
    assert not marker.exists()


def test_generate_save_keeps_a_reply_with_no_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "chats.sqlite3"
    # <|im_end|> (id 2) first: the reply ends at once, with no text.
    argv = ["generate", "hi", "--save", "--db", str(db), "--json", "-t", "0"]
    assert main([*argv, "--logit-bias", "2=+100", *MODEL_FLAGS]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["text"] == "" and result["finish_reason"] == "eos"
    with ChatStore(db) as store:
        chat = store.load_chat(result["chat_id"])
        assert [(m.role, m.content) for m in chat.messages] == [("user", "hi"), ("assistant", "")]
        (reply,) = chat.replies
        assert reply.finish_reason == "eos" and reply.token_ids == (2,)
