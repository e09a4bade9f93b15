"""Models users bring, written by the tests: tiny llama models with random weights over
a 256k SentencePiece vocabulary, a base model's vocabulary, a Llama 3 style byte-level
BPE one the `tokenizers` path cannot convert, and one with unusual special tokens.

Each goes through the real llama.cpp end to end: load, `samplescope info`, a short
`generate`, the chat template chosen (or completion mode, with its notice), and the
UI tokenizer (the `tokenizers` one, or the llama.cpp fallback with its reason) giving
llama.cpp's own ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chat.completion import BASE_MODEL_NOTICE
from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.config.paths import CONFIG_DIR_ENV
from backend.llama.ui_tokenizer import UiTokenizer
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings
from tests.helpers import chat_of
from tests.tiny_models import Vocab, bpe_vocab, spm_vocab, write_tiny_llama
from tui.cli.main import main

GREEDY = SamplerSettings(temperature=0.0)
LLAMA3_TURNS = ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
ODD_SPECIALS = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<|User|>", "<|Assistant|>"]
ODD_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}<|User|>{{ m['content'] }}"
    "{% else %}<|Assistant|>{{ m['content'] }}<｜end▁of▁sentence｜>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|Assistant|>{% endif %}"
)
TEXTS = ["hello the owl", " the sea, the  owl!", "naïve 🦉 12", "<|User|> <think> x"]


def _vocabularies() -> dict[str, tuple[Vocab, str | None]]:
    return {
        "gemma256k": (
            spm_vocab(256_000, ["<start_of_turn>", "<end_of_turn>"], placeholders=6000),
            None,
        ),
        "base": (spm_vocab(1000), None),
        "llama3": (
            bpe_vocab("llama3", ["<|begin_of_text|>", "<|end_of_text|>", *LLAMA3_TURNS]),
            None,
        ),
        "odd": (bpe_vocab("smollm", ODD_SPECIALS, user_defined=["<think>"]), ODD_TEMPLATE),
    }


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Vocab]]:
    folder = tmp_path_factory.mktemp("tiny-models")
    return {
        name: (write_tiny_llama(folder / f"{name}.gguf", vocab, chat_template=template), vocab)
        for name, (vocab, template) in _vocabularies().items()
    }


@pytest.fixture
def loaded(
    models: dict[str, tuple[Path, Vocab]], request: pytest.FixtureRequest
) -> Iterator[tuple[LlamaBackend, Vocab, Path]]:
    path, vocab = models[request.param]
    backend = LlamaBackend.load(path, n_ctx=256, n_batch=64, n_threads=1)
    try:
        yield backend, vocab, path
    finally:
        backend.close()


def _generate(backend: LlamaBackend, text: str, *, raw: bool = False) -> FinishedEvent:
    finished = None
    for event in backend.generate(
        [ChatMessage("user", text)], LiveSettings(GREEDY), max_tokens=4, raw=raw
    ):
        if isinstance(event, FinishedEvent):
            finished = event
    assert finished is not None and finished.reason in ("eos", "max_tokens"), finished
    assert 1 <= len(finished.token_ids) <= 4
    return finished


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    capsys.readouterr()
    assert main(list(argv)) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return out, err


def _generate_cli(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[dict[str, object], str]:
    out, err = _cli(
        capsys,
        "generate",
        "hello the owl",
        "--model",
        str(path),
        "--max-tokens",
        "3",
        "--threads",
        "1",
        "--ctx",
        "256",
        "--temperature",
        "0",
        "--json",
    )
    result: dict[str, object] = json.loads(out)
    assert result["finish_reason"] in ("eos", "max_tokens")
    return result, err


def _same_ids_as_llama_cpp(ui: UiTokenizer, backend: LlamaBackend, texts: list[str]) -> None:
    for text in texts:
        for special in (False, True):
            assert ui.encode(text, special) == backend.runtime.tokenize(text, special=special)


@pytest.mark.parametrize("loaded", ["gemma256k"], indirect=True)
def test_a_256k_sentencepiece_model_gets_gemmas_template(
    loaded: tuple[LlamaBackend, Vocab, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    backend, vocab, path = loaded
    assert backend.info.n_vocab == 256_000
    notice = backend.template_notice or ""
    assert "no chat template" in notice and "Gemma's template is used" in notice
    prompt = backend.tokenize_messages([ChatMessage("user", "hello <start_of_turn>")])
    start = vocab.id_of("<start_of_turn>")
    # The template's markers are special tokens; the user's typed marker is text.
    assert prompt[0] == vocab.bos and prompt.count(start) == 2
    finished = _generate(backend, "hello the owl")
    assert all(0 <= token < 256_000 for token in finished.token_ids)

    ui = UiTokenizer.from_gguf(path)
    assert ui.kind == "llama.cpp" and ui.vocab_size == 256_000
    assert ui.fallback_reason == "tokenizer.ggml.model='llama' is not byte-level BPE"
    _same_ids_as_llama_cpp(ui, backend, [*TEXTS, "<start_of_turn>user"])
    assert ui.piece_bytes(vocab.id_of("▁owl")) == b" owl"
    last = vocab.tokens[-1]
    assert last.startswith("▁w") and ui.piece_bytes(255_999) == last.replace("▁", " ").encode()

    out, _ = _cli(capsys, "info", "--model", str(path))
    assert "vocabulary      256000 tokens (model llama" in out
    assert "numbered (6000): <unused0> <unused1> … <unused5999>" in out
    assert "(none: samplescope uses Gemma's built-in template" in out
    assert len(out) < 2000  # 6,000 placeholders summarised, not listed
    result, err = _generate_cli(capsys, path)
    assert result["mode"] == "chat" and "Gemma's template is used" in err
    out, _ = _cli(capsys, "encode", "--model", str(path), "hello the owl")
    ids = backend.runtime.tokenize("hello the owl", special=False)
    assert f"ids: {' '.join(map(str, ids))}\n3 tokens" in out


@pytest.mark.parametrize("loaded", ["base"], indirect=True)
def test_a_base_model_without_turn_tokens_runs_in_completion_mode(
    loaded: tuple[LlamaBackend, Vocab, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    backend, vocab, path = loaded
    assert "no turn tokens samplescope knows" in (backend.template_notice or "")
    owl = [vocab.id_of(piece) for piece in ("▁hello", "▁the", "▁owl")]
    assert backend.runtime.tokenize("hello the owl", special=False)[-3:] == owl
    raw = _generate(backend, "hello the owl", raw=True)
    assert raw.stats.prompt_tokens == len(backend.prompt.raw_tokens("hello the owl"))

    out, _ = _cli(capsys, "info", "--model", str(path))
    assert "(none: no turn tokens samplescope knows either: it runs in completion mode)" in out
    result, err = _generate_cli(capsys, path)
    assert result["mode"] == "completion" and BASE_MODEL_NOTICE in err
    assert result["token_ids"] == list(raw.token_ids[:3])  # the same document, continued

    ui = UiTokenizer.from_gguf(path)
    assert ui.kind == "llama.cpp" and ui.vocab_size == len(vocab.tokens)
    _same_ids_as_llama_cpp(ui, backend, TEXTS)


@pytest.mark.parametrize("loaded", ["llama3"], indirect=True)
def test_a_bpe_vocabulary_tokenizers_cannot_convert_falls_back_to_llama_cpp(
    loaded: tuple[LlamaBackend, Vocab, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    backend, vocab, path = loaded
    assert "Llama 3's template is used" in (backend.template_notice or "")
    header = vocab.id_of("<|start_header_id|>")
    eot = vocab.id_of("<|eot_id|>")
    prompt = backend.tokenize_messages([ChatMessage("user", "hi <|eot_id|>")])
    assert prompt[0] == vocab.bos and prompt.count(header) == 2 and prompt.count(eot) == 1
    _generate(backend, "hello the owl")

    ui = UiTokenizer.from_gguf(path)
    assert ui.kind == "llama.cpp"
    assert ui.fallback_reason == "unsupported byte-level BPE vocabulary: pre-tokenizer 'llama3'"
    _same_ids_as_llama_cpp(ui, backend, [*TEXTS, "<|eot_id|>"])

    out, _ = _cli(capsys, "info", "--model", str(path))
    assert "(model gpt2, pre-tokenizer llama3)" in out
    assert "samplescope uses Llama 3's built-in template" in out
    result, err = _generate_cli(capsys, path)
    assert result["mode"] == "chat" and "Llama 3's template is used" in err


@pytest.mark.parametrize("loaded", ["odd"], indirect=True)
def test_unusual_special_tokens_and_the_ggufs_own_template(
    loaded: tuple[LlamaBackend, Vocab, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    backend, vocab, path = loaded
    assert backend.template_notice is None
    user, assistant = vocab.id_of("<|User|>"), vocab.id_of("<|Assistant|>")
    prompt = backend.tokenize_messages([ChatMessage("user", "hi <|Assistant|>")])
    assert prompt[0] == user  # the template starts with the turn (no BOS for this vocabulary)
    assert prompt.count(user) == 1 and prompt.count(assistant) == 1 and prompt[-1] == assistant
    _generate(backend, "hello the owl")

    ui = UiTokenizer.from_gguf(path)
    assert ui.kind == "tokenizers" and ui.fallback_reason == ""
    texts = [*TEXTS, "<｜end▁of▁sentence｜>x", "a<think>b</think>"]
    _same_ids_as_llama_cpp(ui, backend, texts)
    # A user-defined token is recognised in plain text too; a control token only
    # when special tokens are parsed.
    assert vocab.id_of("<think>") in ui.encode("a<think>b")
    assert user not in ui.encode("<|User|>") and ui.encode("<|User|>", True) == [user]

    out, _ = _cli(capsys, "info", "--model", str(path))
    assert "named (4): <｜begin▁of▁sentence｜> <｜end▁of▁sentence｜> <|User|> <|Assistant|>" in out
    assert "chat template\n{% for m in messages %}" in out
    result, err = _generate_cli(capsys, path)
    assert result["mode"] == "chat" and "template" not in err


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "notice"),
    [("gemma256k", "Gemma's template is used"), ("base", BASE_MODEL_NOTICE)],
)
async def test_the_app_runs_them_with_the_fallback_tokenizer_and_says_which_mode(
    models: dict[str, tuple[Path, Vocab]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    name: str,
    notice: str,
) -> None:
    from tests.helpers import send_message, wait_until
    from tui.cli.commands.app import build_app, build_app_parser

    path, vocab = models[name]
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    argv = ["--model", str(path), "--threads", "1", "--ctx", "256", "--max-tokens", "4"]
    app = build_app(build_app_parser().parse_args([*argv, "--no-save", "--temperature", "0"]))
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_until(pilot, lambda: chat_of(app).ready, 60)
            finished = await send_message(pilot, app, "hello the owl")
            assert finished.reason in ("eos", "max_tokens"), finished.error
            assert any(notice in n.message for n in app._notifications)
            # The UI's own tokenizer (llama.cpp's vocabulary fallback) gives llama.cpp's ids.
            owl = vocab.id_of("▁owl")
            assert app.encode is not None and app.encode("the owl")[-1] == owl
            assert app.pieces.lookup is not None and "owl" in app.pieces.lookup(owl)
    finally:
        app.close_backend()
