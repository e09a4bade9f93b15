"""A banning -inf logit bias in the commands' JSON: strict JSON has no infinity, so it
is written as the string "-inf" (never `-Infinity`), and settings read from JSON take
it back, as they take llama-server's `false` for a banned token."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.config.paths import CONFIG_DIR_ENV, DATA_DIR_ENV, default_store_path
from backend.store.store import ChatStore, ModelRef
from sampling.settings.record import SamplerSettings
from tui.cli.main import main

MODEL = ModelRef(path="/models/tiny.gguf", size=99, sha256="cd" * 32)
BANNED = SamplerSettings(logit_bias={0: -math.inf, 7: 2.5}, seed=3)


def strict(text: str) -> object:
    """JSON as a strict parser reads it: NaN, Infinity and -Infinity are errors."""

    def refuse(constant: str) -> object:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    with ChatStore(default_store_path()) as store:
        chat_id = store.new_chat("Bans", MODEL)
        store.add_message(chat_id, "user", "hi")
        writer = store.begin_reply(chat_id, MODEL, BANNED, max_tokens=4)
        writer.append_token(0, 5, BANNED, "Hi")
        writer.finish("max_tokens", None, "Hi")
    yield chat_id


def test_export_json_writes_a_ban_as_the_string_inf(
    chat: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(chat), "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "Infinity" not in out
    data = strict(out)
    reply = data["messages"][1]["reply"]  # type: ignore[index]
    stored = reply["settings_changes"][0]["settings"]
    assert stored["logit_bias"] == [[0, "-inf"], [7, 2.5]]
    assert SamplerSettings.from_dict(stored) == BANNED


@pytest.mark.parametrize("ban", ["-inf", "-Infinity", False])
def test_settings_read_a_ban_back_from_json(ban: object) -> None:
    values = BANNED.to_json()
    values["logit_bias"] = [[0, ban], [7, 2.5]]
    assert SamplerSettings.from_dict(json.loads(json.dumps(values))) == BANNED


def test_every_other_bias_is_kept_a_number_and_nan_or_inf_is_still_refused() -> None:
    assert BANNED.to_json()["logit_bias"] == [[0, "-inf"], [7, 2.5]]
    assert SamplerSettings().to_json()["logit_bias"] == []
    for bad in ("inf", "nan", True, "banned"):
        with pytest.raises(ValueError):
            SamplerSettings.from_dict({"logit_bias": [[0, bad]]})
