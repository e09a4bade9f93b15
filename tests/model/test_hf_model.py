"""`--hf` end to end: a tiny llama served by a hub on loopback is downloaded into a
temporary hub cache, loaded by llama.cpp and generates; then, offline, the cached copy
loads (never the network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hub_server import COMMIT, fake_hub
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.cli.main import main


def test_generate_downloads_the_model_and_then_opens_it_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(1000))
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    args = ["generate", "hello", "--raw", "--max-tokens", "3", "--temperature", "0", "--json"]
    args += ["--threads", "1", "--ctx", "256", "--hf", "org/Tiny-GGUF:q8_0"]
    files = {"tiny-Q8_0.gguf": model.read_bytes(), "tiny-Q4_K_M.gguf": b"not this one"}
    with fake_hub({"org/Tiny-GGUF": files}) as (endpoint, _):
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        assert main(args) == 0
    online = capsys.readouterr()
    cached = cache / f"models--org--Tiny-GGUF/snapshots/{COMMIT}/tiny-Q8_0.gguf"
    assert cached.read_bytes() == model.read_bytes()
    assert "100%" in online.err
    reply = json.loads(online.out)
    assert reply["model"] == str(cached)
    assert len(reply["token_ids"]) == 3

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(args) == 0
    offline = capsys.readouterr()
    assert "HF_HUB_OFFLINE is set: opening the cached copy" in offline.err
    assert json.loads(offline.out)["token_ids"] == reply["token_ids"]
