"""The UI-side tokenizer gives llama.cpp's ids for the default model."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from types import MappingProxyType
from typing import Any

import llama_cpp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.llama.gguf import read_gguf
from backend.llama.ui_tokenizer import UiTokenizer, _LlamaVocabEncoder

FAMILY = "👨\u200d👩\u200d👧\u200d👦"
CORPUS = [
    "",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "It's a dog's life; they'll say we've I'd you're.",
    "DON'T SHOUT: IT'S RUDE",
    "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    'for (int i = 0; i < 10; ++i) { printf("%d\\n", i); }',
    "    indented    by    four\n\n\n\ttabbed\t\tline\n",
    "trailing spaces   ",
    "   ",
    " ",
    "\n",
    "\n\n\n\n",
    "\t",
    "\r\n\r\nwindows",
    "a  b   c    d",
    f"family {FAMILY} emoji",
    FAMILY,
    "🙂🙃😀 thumbs 👍🏽 flag 🇫🇷 rainbow 🏳️\u200d🌈",
    "中文字符和日本語のテキスト、한국어 텍스트。",
    "混合 mixed テキスト with 数字 123 and emoji 🎉",
    "12345 3.14159 1,000,000 2024-11-29 0x1F",
    "naïve café résumé Ωmega straße",
    "x² + y³ = ½ Ⅻ ٣",
    "<|im_end|> not a turn",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>",
    "a\u00a0b\u200bc\ufeffd",
    "\x00\x01\x1f control",
    "https://example.com/path?q=1&r=two#frag",
    "    return {'key': [1, 2, 3]}  # comment",
    "Ünïcödé ÀÉÎÕÜ ąčęėįšųūž",
    "مرحبا بالعالم",
    "Привет, мир!",
    "🧑‍💻👩🏾‍🔬",
]


@pytest.fixture(scope="module")
def ui_tokenizer(default_model_path: Path) -> UiTokenizer:
    return UiTokenizer.from_gguf(default_model_path)


@pytest.fixture(scope="module")
def reference(default_model_path: Path) -> Any:
    return llama_cpp.Llama(str(default_model_path), vocab_only=True, verbose=False)


def llama_ids(reference: Any, text: str, special: bool = False) -> list[int]:
    ids: list[int] = reference.tokenize(text.encode(), add_bos=False, special=special)
    return ids


def test_default_model_uses_tokenizers(ui_tokenizer: UiTokenizer) -> None:
    assert ui_tokenizer.kind == "tokenizers"
    assert ui_tokenizer.fallback_reason == ""
    assert ui_tokenizer.vocab_size == 49152


@pytest.mark.parametrize("text", CORPUS)
def test_ids_equal_llama_cpp(ui_tokenizer: UiTokenizer, reference: Any, text: str) -> None:
    assert ui_tokenizer.encode(text) == llama_ids(reference, text)
    assert ui_tokenizer.encode(text, special=True) == llama_ids(reference, text, special=True)
    assert ui_tokenizer.count(text) == len(llama_ids(reference, text))


@pytest.mark.parametrize("text", CORPUS)
def test_round_trip(ui_tokenizer: UiTokenizer, text: str) -> None:
    # Control bytes missing from this vocabulary vanish, as in llama.cpp.
    if "\x00" in text:
        return
    assert ui_tokenizer.decode(ui_tokenizer.encode(text)) == text


def test_special_text_is_not_special_by_default(ui_tokenizer: UiTokenizer, reference: Any) -> None:
    im_end = llama_ids(reference, "<|im_end|>", special=True)
    assert len(im_end) == 1
    plain = ui_tokenizer.encode("hi<|im_end|>")
    assert im_end[0] not in plain and len(plain) > 2
    assert ui_tokenizer.encode("hi<|im_end|>", special=True)[-1] == im_end[0]


def test_pieces(ui_tokenizer: UiTokenizer, reference: Any) -> None:
    ids = ui_tokenizer.encode(" hello 中 🙂")
    assert b"".join(ui_tokenizer.piece_bytes(i) for i in ids) == " hello 中 🙂".encode()
    llama_vocab = _LlamaVocabEncoder(Path(reference.model_path))
    for token_id in [*ids, *range(0, 49152, 37)]:
        ours = ui_tokenizer.piece_bytes(token_id)
        assert ours == llama_vocab.piece_bytes(token_id)
        if len(ours) <= 32:  # llama-cpp-python's detokenize has a 32-byte buffer
            assert ours == reference.detokenize([token_id], special=True)
    assert ui_tokenizer.piece(ui_tokenizer.encode(" hello")[0]) == " hello"
    assert ui_tokenizer.piece(2) == "<|im_end|>"
    with pytest.raises(IndexError):
        ui_tokenizer.piece(49152)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(
        st.characters(blacklist_categories=("Cs",)),
        max_size=40,
    )
)
def test_hypothesis_ids_equal_llama_cpp(
    ui_tokenizer: UiTokenizer, reference: Any, text: str
) -> None:
    assert ui_tokenizer.encode(text) == llama_ids(reference, text)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([" ", "  ", "\n", "\t", "a", "ab", "1", "'s", "中", "🙂", FAMILY,
                                 "<|im_end|>", ".", "()", "\r\n"]), max_size=20))  # fmt: skip
def test_hypothesis_whitespace_mixes(
    ui_tokenizer: UiTokenizer, reference: Any, parts: list[str]
) -> None:
    text = "".join(parts)
    assert ui_tokenizer.encode(text) == llama_ids(reference, text)
    assert ui_tokenizer.encode(text, special=True) == llama_ids(reference, text, special=True)


def test_usable_from_several_threads(ui_tokenizer: UiTokenizer) -> None:
    expected = {text: ui_tokenizer.encode(text) for text in CORPUS}
    failures: list[str] = []

    def work() -> None:
        for _ in range(20):
            for text, ids in expected.items():
                if ui_tokenizer.encode(text) != ids:
                    failures.append(text)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_fallback_for_unknown_pre_tokenizer(default_model_path: Path, reference: Any) -> None:
    gguf = read_gguf(default_model_path)
    metadata = dict(gguf.metadata)
    metadata["tokenizer.ggml.pre"] = "something-new"
    odd = dataclasses.replace(gguf, metadata=MappingProxyType(metadata))
    fallback = UiTokenizer.from_gguf(odd)
    assert fallback.kind == "llama.cpp"
    assert "something-new" in fallback.fallback_reason
    assert fallback.vocab_size == 49152
    for text in CORPUS:
        assert fallback.encode(text) == llama_ids(reference, text)
        assert fallback.encode(text, special=True) == llama_ids(reference, text, special=True)
    ids = fallback.encode(f"héllo {FAMILY}")
    assert fallback.decode(ids) == f"héllo {FAMILY}"
    assert fallback.piece(2) == "<|im_end|>"


def test_fallback_for_spm_vocabulary(default_model_path: Path) -> None:
    gguf = read_gguf(default_model_path)
    metadata = dict(gguf.metadata)
    metadata["tokenizer.ggml.model"] = "llama"
    fallback = UiTokenizer.from_gguf(dataclasses.replace(gguf, metadata=MappingProxyType(metadata)))
    assert fallback.kind == "llama.cpp" and "'llama'" in fallback.fallback_reason


def test_fallback_encoder_long_text(default_model_path: Path, ui_tokenizer: UiTokenizer) -> None:
    encoder = _LlamaVocabEncoder(default_model_path)
    text = "word " * 5000 + "中" * 300
    assert encoder.encode(text, False) == ui_tokenizer.encode(text)
