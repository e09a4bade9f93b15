"""`--hf ORG/REPO[:QUANT]`: llama.cpp's file choice, downloads into a hub cache in a
temporary folder from a hub on loopback, and the offline cases (HF_HUB_OFFLINE, and a
hub that cannot be reached), never the network."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from backend.config.hf_fetch import (
    HfFetchError,
    HfRef,
    cached_files,
    choose_gguf,
    fetch_hf_model,
    parse_hf_ref,
)
from tests.hub_server import COMMIT, fake_hub
from tui.cli.main import main

REPO = "org/Tiny-GGUF"
FILES = {
    "tiny-Q8_0.gguf": b"GGUF-q8" * 100,
    "tiny-Q4_K_M.gguf": b"GGUF-q4km" * 50_000,
    "tiny-Q4_K_S.gguf": b"GGUF-q4ks" * 10,
    "mmproj-tiny-f16.gguf": b"GGUF-proj",
    "README.md": b"# tiny",
}


def closed_port() -> str:
    """An address on loopback nothing listens on: a hub that cannot be reached."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def hub_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache of the test's own, online (HF_HUB_OFFLINE unset)."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # huggingface_hub reads the variable once, at its import: a test of this worker
    # that first imported it with HF_HUB_OFFLINE=1 would leave the hub offline.
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    return cache


def test_a_reference_is_org_repo_and_an_optional_quantization() -> None:
    assert parse_hf_ref("bartowski/SmolLM2-135M-Instruct-GGUF") == HfRef(
        "bartowski/SmolLM2-135M-Instruct-GGUF", None
    )
    assert parse_hf_ref(" org/Repo.v2:q8_0 ") == HfRef("org/Repo.v2", "q8_0")
    assert str(HfRef("org/r", "Q8_0")) == "org/r:Q8_0"
    for bad in ("no-slash", "a/b/c", "org/repo:", "/repo", "org/re po"):
        with pytest.raises(HfFetchError, match="ORG/REPO"):
            parse_hf_ref(bad)


def test_the_file_is_chosen_as_llama_cpp_chooses_it() -> None:
    names = list(FILES)
    assert choose_gguf(names, None) == ("tiny-Q4_K_M.gguf",)  # the default, Q4_K_M
    assert choose_gguf(names, "q8_0") == ("tiny-Q8_0.gguf",)  # case-insensitive
    assert choose_gguf(names, "Q4_K_S") == ("tiny-Q4_K_S.gguf",)
    assert choose_gguf(names, "Q4_K") == ()  # a quantization is a whole name
    assert choose_gguf(names, "Q5_K_M") == ()
    # no Q4_K_M: the first GGUF by name, never the projector
    assert choose_gguf(["b-Q8_0.gguf", "a-F16.gguf", "a-mmproj.gguf"], None) == ("a-F16.gguf",)
    assert choose_gguf(["README.md"], None) == ()


def test_a_split_model_brings_every_part_first_part_first() -> None:
    names = [
        "Q4_K_M/big-Q4_K_M-00002-of-00003.gguf",
        "Q4_K_M/big-Q4_K_M-00001-of-00003.gguf",
        "Q4_K_M/big-Q4_K_M-00003-of-00003.gguf",
        "big-Q8_0.gguf",
    ]
    assert choose_gguf(names, None) == (
        "Q4_K_M/big-Q4_K_M-00001-of-00003.gguf",
        "Q4_K_M/big-Q4_K_M-00002-of-00003.gguf",
        "Q4_K_M/big-Q4_K_M-00003-of-00003.gguf",
    )


def test_it_downloads_into_the_hub_cache_with_a_progress_bar(
    hub_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_hub({REPO: FILES}) as (endpoint, requests):
        model = fetch_hf_model(HfRef(REPO), endpoint=endpoint)
    assert model.files == ("tiny-Q4_K_M.gguf",)
    assert model.note == ""
    assert model.path == hub_env / f"models--org--Tiny-GGUF/snapshots/{COMMIT}/tiny-Q4_K_M.gguf"
    assert model.path.read_bytes() == FILES["tiny-Q4_K_M.gguf"]
    # only the chosen file was downloaded
    assert [r for r in requests if r.startswith("GET /org")] == [
        f"GET /org/Tiny-GGUF/resolve/{COMMIT}/tiny-Q4_K_M.gguf"
    ]
    bar = capsys.readouterr().err
    assert "tiny-Q4_K_M.gguf" in bar
    assert "100%" in bar


def test_a_quantization_the_repository_lacks_lists_what_it_holds(hub_env: Path) -> None:
    with (
        fake_hub({REPO: FILES}) as (endpoint, _),
        pytest.raises(HfFetchError, match=r"no GGUF of quantization Q6_K .*tiny-Q8_0\.gguf"),
    ):
        fetch_hf_model(HfRef(REPO, "Q6_K"), endpoint=endpoint)


def test_a_repository_the_hub_does_not_have_is_an_error(hub_env: Path) -> None:
    with (
        fake_hub({REPO: FILES}) as (endpoint, _),
        pytest.raises(HfFetchError, match="--hf org/Missing"),
    ):
        fetch_hf_model(HfRef("org/Missing"), endpoint=endpoint)


def test_offline_it_opens_the_cached_copy(hub_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_hub({REPO: FILES}) as (endpoint, _):
        fetch_hf_model(HfRef(REPO), endpoint=endpoint, progress=False)
        fetch_hf_model(HfRef(REPO, "Q8_0"), endpoint=endpoint, progress=False)
    snapshot = hub_env / f"models--org--Tiny-GGUF/snapshots/{COMMIT}"
    assert cached_files(REPO, hub_env) == (snapshot, [*sorted(p.name for p in snapshot.iterdir())])

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = fetch_hf_model(HfRef(REPO))
    assert model.path == snapshot / "tiny-Q4_K_M.gguf"
    assert model.note == "HF_HUB_OFFLINE is set: opening the cached copy"
    assert fetch_hf_model(HfRef(REPO, "q8_0")).path == snapshot / "tiny-Q8_0.gguf"
    with pytest.raises(HfFetchError, match=r"HF_HUB_OFFLINE is set.* no Q4_K_S GGUF.* not cached"):
        fetch_hf_model(HfRef(REPO, "Q4_K_S"))

    # no network: the same cached copy, saying why
    monkeypatch.delenv("HF_HUB_OFFLINE")
    model = fetch_hf_model(HfRef(REPO), endpoint=closed_port())
    assert model.path == snapshot / "tiny-Q4_K_M.gguf"
    assert model.note.startswith("the hub cannot be reached: ")
    assert model.note.endswith(": opening the cached copy")


def test_with_no_network_and_nothing_cached_it_says_it_is_not_cached(hub_env: Path) -> None:
    with pytest.raises(HfFetchError) as caught:
        fetch_hf_model(HfRef("org/Other-GGUF", "Q8_0"), endpoint=closed_port())
    message = str(caught.value)
    assert message.startswith("--hf org/Other-GGUF:Q8_0: the hub cannot be reached: ")
    assert f"the Hugging Face cache ({hub_env}) holds no Q8_0 GGUF of org/Other-GGUF" in message
    assert "it is not cached" in message


def test_the_command_line_reports_an_uncached_model_offline(
    hub_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["generate", "hi", "--hf", "org/Nothing-GGUF"]) == 2
    err = capsys.readouterr().err
    assert "samplescope: --hf org/Nothing-GGUF: HF_HUB_OFFLINE is set" in err
    assert "it is not cached" in err
    assert main(["--hf", "org/Nothing-GGUF:Q8_0", "--no-save"]) == 2
    assert "holds no Q8_0 GGUF of org/Nothing-GGUF" in capsys.readouterr().err
    assert main(["generate", "hi", "--hf", "org/x", "--model", "a.gguf"]) == 2
    assert "give --model or --hf, not both" in capsys.readouterr().err


def test_explore_takes_hf_with_a_prompt_and_refuses_it_with_a_saved_chat(
    hub_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["explore", "--prompt", "hi", "--hf", "org/Nothing-GGUF:Q8_0"]) == 2
    err = capsys.readouterr().err
    assert "samplescope: --hf org/Nothing-GGUF:Q8_0: HF_HUB_OFFLINE is set" in err
    assert main(["explore", "1", "--at", "2", "--hf", "org/Nothing-GGUF"]) == 2
    assert capsys.readouterr().err == (
        "samplescope: explore CHAT_ID opens the saved reply's model (or --model PATH): not --hf\n"
    )


def test_serve_fetches_hf_once_and_hands_each_tab_the_file(hub_env: Path) -> None:
    from tui.cli.commands.serve import checked_app_args

    with fake_hub({REPO: FILES}) as (endpoint, requests), pytest.MonkeyPatch.context() as env:
        env.setenv("HF_ENDPOINT", endpoint)
        args = checked_app_args(["--", "--no-save", "--hf", f"{REPO}:Q8_0", "-t", "0.5"])
    path = hub_env / f"models--org--Tiny-GGUF/snapshots/{COMMIT}/tiny-Q8_0.gguf"
    assert args == ["--no-save", "-t", "0.5", "--model", str(path)]
    assert sum(r.startswith("GET /org") for r in requests) == 1


def test_the_declared_huggingface_hub_takes_the_progress_bar_hf_fetch_hands_it() -> None:
    import inspect
    import tomllib

    from huggingface_hub import hf_hub_download

    assert "tqdm_class" in inspect.signature(hf_hub_download).parameters
    pyproject = Path(__file__).parents[2] / "pyproject.toml"
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    # 1.0.1's hf_hub_download has no tqdm_class, 1.1.0's has (their wheels on PyPI).
    assert "huggingface_hub>=1.1" in dependencies
