"""`samplescope history`, `export` and `config` on a store and config made by the test."""

from __future__ import annotations

import json
import time
import tomllib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from backend.chat.events import GenerationStats
from backend.config.paths import CONFIG_DIR_ENV, DATA_DIR_ENV, default_store_path
from backend.store.store import ChatStore, ModelRef
from sampling.settings.record import SamplerSettings
from tests.helpers import DateClock
from tui.cli.main import main

MODEL = ModelRef(path="/models/tiny.gguf", size=99, sha256="cd" * 32)
S0 = SamplerSettings(temperature=0.8, top_k=40, seed=42)
S1 = S0.with_changes(temperature=0.2)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield tmp_path
    monkeypatch.undo()
    time.tzset()


def fill(store: ChatStore) -> tuple[int, int]:
    first = store.new_chat("Cats", MODEL)
    store.add_message(first, "system", "Be brief.")
    store.add_message(first, "user", "Tell me about cats")
    writer = store.begin_reply(first, MODEL, S0, max_tokens=16)
    for index, (token, settings, text) in enumerate([(5, S0, "Cats"), (6, S1, " purr")]):
        writer.append_token(index, token, settings, text)
    writer.finish(
        "max_tokens",
        GenerationStats(prompt_tokens=12, decode_tokens=2, decode_tps=50.0),
        "Cats purr",
    )
    second = store.new_chat("Dogs | and <b>tags</b>")
    store.add_message(second, "user", "woof")
    return first, second


@pytest.fixture
def filled(env: Path) -> tuple[int, int]:
    hourly = DateClock(datetime(2026, 3, 4, 10, 0, tzinfo=UTC), timedelta(hours=1))
    with ChatStore(default_store_path(), clock=hourly) as store:
        return fill(store)


def test_history_lists_chats_newest_first(
    filled: tuple[int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = filled
    assert main(["history"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "UPDATED", "REPLIES", "MODEL", "TITLE"]
    assert lines[1].split()[:5] == [str(second), "2026-03-04", "17:00", "0", "-"]
    assert lines[1].endswith("Dogs | and <b>tags</b>")
    assert lines[2].split() == [str(first), "2026-03-04", "15:00", "1", "tiny.gguf", "Cats"]


def test_history_search(filled: tuple[int, int], capsys: pytest.CaptureFixture[str]) -> None:
    first, _ = filled
    assert main(["history", "--search", "PURR"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1].split()[0] == str(first)
    assert main(["history", "--search", "giraffe"]) == 0
    assert "no saved chats matching 'giraffe'" in capsys.readouterr().out


def test_history_on_an_empty_store(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history"]) == 0
    assert "no saved chats in" in capsys.readouterr().out


def test_export_json_has_everything(
    filled: tuple[int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = filled
    assert main(["export", str(first), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["title"] == "Cats" and data["model"]["sha256"] == MODEL.sha256
    assert [m["role"] for m in data["messages"]] == ["system", "user", "assistant"]
    reply = data["messages"][2]["reply"]
    assert data["messages"][2]["content"] == "Cats purr"
    assert reply["token_ids"] == [5, 6]
    assert reply["seed"] == 42 and reply["finish_reason"] == "max_tokens"
    assert [c["from_index"] for c in reply["settings_changes"]] == [0, 1]
    assert reply["settings_changes"][1]["settings"]["temperature"] == 0.2
    assert reply["stats"]["decode_tokens"] == 2
    assert data["created"] == "2026-03-04T11:00:00+00:00"


def test_export_markdown_to_a_file(filled: tuple[int, int], tmp_path: Path) -> None:
    first, _ = filled
    out = tmp_path / "cats.md"
    assert main(["export", str(first), "--format", "md", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Cats\n")
    assert "## User\n\nTell me about cats\n" in text
    assert "## Assistant\n\nCats purr\n" in text
    assert "seed 42" in text and "tiny.gguf" in text and "max_tokens" in text
    assert "> from token 1: temperature=0.2" in text


def test_export_unknown_chat_is_a_clear_error(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "77"]) == 2
    assert "no chat 77" in capsys.readouterr().err


def test_export_unwritable_output_is_a_clear_error(
    filled: tuple[int, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(filled[0]), "-o", str(tmp_path / "no" / "dir" / "x.md")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_config_path_and_show(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--path"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == env / "config" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('theme = "nord"\n[settings]\ntop_k = 7\n', encoding="utf-8")
    assert main(["config", "--show"]) == 0
    shown = tomllib.loads(capsys.readouterr().out)
    assert shown["theme"] == "nord" and shown["settings"]["top_k"] == 7
    assert shown["settings"]["temperature"] == 0.8  # the built-in default


def test_config_show_on_a_broken_file_names_the_line(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = env / "config" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("[settings]\ntop_k = 7\ntop_p = 3\n", encoding="utf-8")
    assert main(["config"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "line 3" in err and "top_p" in err


def test_config_init_writes_a_valid_template_once(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "--init"]) == 0
    path = Path(capsys.readouterr().out.strip())
    template = tomllib.loads(path.read_text(encoding="utf-8"))
    assert template == {"settings": {}, "keys": {}, "bans": {}}
    assert main(["config", "--init"]) == 1
    assert "already exists" in capsys.readouterr().err


def test_history_lists_a_kept_sweep_as_one_line_with_its_samples(
    filled: tuple[int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = filled
    with ChatStore(default_store_path()) as store:
        samples = [
            store.new_chat(f"sweep · t=0.7 · seed {seed} · Name a colour.", MODEL)
            for seed in (42, 43)
        ]
        store.keep_sweep(
            "sweep · 1 setting × 2 samples · Name a colour.", MODEL.path, "{}", samples
        )
        own = store.new_chat("After the sweep")
    assert main(["history"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 4  # the header, a chat, the sweep, two chats
    ids = [line.split()[0] for line in lines[1:]]
    assert ids == [str(own), f"{samples[0]}-{samples[1]}", str(second), str(first)]
    row = lines[2]
    assert "2 samples" in row and "tiny.gguf" in row
    assert row.endswith("sweep · 1 setting × 2 samples · Name a colour.")
    assert "seed 42" not in "\n".join(lines)  # not a line per sample
    # A search that finds one sample finds its sweep, with that sample.
    assert main(["history", "--search", "seed 43"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == [str(samples[1])]
    assert "1 sample " in lines[1]
