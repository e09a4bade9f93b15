"""A tokenizer for the UI thread, independent of the generating llama context.

The UI counts and shows tokens while the model thread generates, and a llama context
is not thread-safe. So the UI gets its own tokenizer, built with the `tokenizers`
library from the GGUF's own vocabulary (byte-level BPE for ``tokenizer.ggml.model ==
"gpt2"`` with a pre-tokenizer llama.cpp also uses). For a vocabulary it cannot
convert (SentencePiece "llama" models, pre-tokenizers it does not know), it falls back
to a separate vocab-only llama.cpp model: no weights, no context, not shared.

Special tokens: with ``special=False`` (the default) text such as ``<|im_end|>`` is
tokenized as plain text, exactly as llama.cpp's ``parse_special=false`` does; control
tokens are recognized only with ``special=True``. User-defined tokens (type 4) are
always recognized, as in llama.cpp.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from backend.errors import ModelFileError
from backend.llama.gguf import GgufFile, validate_gguf

# llama.cpp token types (tokenizer.ggml.token_type).
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = range(
    1, 7
)

# tokenizer.ggml.pre values whose llama.cpp regexes are GPT-2's, with single digits
# split first ("\p{N}" then the GPT-2 pattern) ...
_PRE_DIGITS_THEN_GPT2 = frozenset(
    {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"}
)
# ... or GPT-2's pattern alone.
_PRE_GPT2 = frozenset({"gpt-2", "mpt", "olmo", "jais"})


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet: printable stand-in character -> byte."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    codes = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return {chr(code): byte for byte, code in zip(printable, codes, strict=True)}


class _Encoder(Protocol):
    """What a tokenizer implementation provides."""

    kind: str

    def encode(self, text: str, special: bool) -> list[int]: ...

    def piece_bytes(self, token_id: int) -> bytes: ...

    @property
    def vocab_size(self) -> int: ...


class _HfEncoder:
    """Byte-level BPE with the `tokenizers` library (two instances: special or not)."""

    kind = "tokenizers"

    def __init__(self, gguf: GgufFile) -> None:
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        tokens = _strings(gguf, "tokenizer.ggml.tokens")
        merges = _strings(gguf, "tokenizer.ggml.merges")
        types = gguf.metadata.get("tokenizer.ggml.token_type", ())
        token_types = list(types) if isinstance(types, tuple) else []
        if len(token_types) != len(tokens):
            token_types = [TOKEN_NORMAL] * len(tokens)
        pre = str(gguf.metadata.get("tokenizer.ggml.pre", ""))

        vocab = {token: index for index, token in enumerate(tokens)}
        # A character missing from the vocabulary must split merges around it and then
        # vanish, as in llama.cpp: map it to an extra, internal "unknown" id (one past
        # the vocabulary) that `encode` filters out.
        self._missing_id = len(tokens)
        vocab[_MISSING_TOKEN] = self._missing_id
        pairs: list[tuple[str, str]] = []
        for merge in merges:
            left, sep, right = merge.partition(" ")
            if not sep:
                raise _Unsupported(f"merge {merge!r} has no separator")
            pairs.append((left, right))
        try:
            tokenizer = Tokenizer(
                models.BPE(
                    vocab=vocab,
                    merges=pairs,
                    unk_token=_MISSING_TOKEN,
                    fuse_unk=False,
                    ignore_merges=False,
                )
            )
        except Exception as error:  # the library's own, e.g. a merge of unknown tokens
            raise _Unsupported(f"the tokenizers library refuses it: {error}") from None
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        if pre in _PRE_DIGITS_THEN_GPT2:
            tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
                [pre_tokenizers.Digits(individual_digits=True), byte_level]
            )
        elif pre in _PRE_GPT2:
            tokenizer.pre_tokenizer = byte_level
        else:
            raise _Unsupported(f"pre-tokenizer {pre!r}")
        tokenizer.decoder = decoders.ByteLevel()

        # Control and unknown tokens are matched only when special=True (llama.cpp's
        # parse_special); user-defined and unused ones always.
        special = [
            AddedToken(token, special=True, normalized=False)
            for token, kind in zip(tokens, token_types, strict=True)
            if kind in (TOKEN_CONTROL, TOKEN_UNKNOWN)
        ]
        always = [
            AddedToken(token, special=False, normalized=False)
            for token, kind in zip(tokens, token_types, strict=True)
            if kind in (TOKEN_USER_DEFINED, TOKEN_UNUSED)
        ]
        tokenizer.add_special_tokens(special)
        tokenizer.add_tokens(always)
        plain = Tokenizer.from_str(tokenizer.to_str())
        plain.encode_special_tokens = True  # special tokens' text is just text
        self._with_special: Any = tokenizer
        self._plain: Any = plain

        table = _byte_decoder()
        pieces: list[bytes] = []
        for token, kind in zip(tokens, token_types, strict=True):
            if kind == TOKEN_NORMAL:
                try:
                    pieces.append(bytes(table[char] for char in token))
                    continue
                except KeyError:
                    pass  # not in the byte-level alphabet: use its text
            pieces.append(token.encode("utf-8"))
        self._pieces = pieces

    def encode(self, text: str, special: bool) -> list[int]:
        tokenizer = self._with_special if special else self._plain
        ids: list[int] = tokenizer.encode(text, add_special_tokens=False).ids
        if self._missing_id in ids:
            ids = [token_id for token_id in ids if token_id != self._missing_id]
        return ids

    def piece_bytes(self, token_id: int) -> bytes:
        return self._pieces[token_id]

    @property
    def vocab_size(self) -> int:
        return len(self._pieces)


_MISSING_TOKEN = "\ue000<samplescope-missing>\ue000"  # private use: never a real token


class _Unsupported(Exception):
    """This vocabulary cannot be converted to a `tokenizers` tokenizer."""


def _strings(gguf: GgufFile, key: str) -> list[str]:
    value = gguf.metadata.get(key)
    if not isinstance(value, tuple) or not all(isinstance(item, str) for item in value):
        raise _Unsupported(f"{key} is missing or not a list of strings")
    return [str(item) for item in value]


class _LlamaVocabEncoder:
    """A vocab-only llama.cpp model of its own (no weights, no context)."""

    kind = "llama.cpp"

    def __init__(self, path: Path) -> None:
        import llama_cpp

        from backend.llama.log import current_log_path, install_llama_log

        if current_log_path() is None:
            install_llama_log()
        llama_cpp.llama_backend_init()
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        model = llama_cpp.llama_model_load_from_file(os.fsencode(path), params)
        if not model:
            raise ModelFileError(f"{path}: llama.cpp could not load the model's vocabulary")
        self._llama = llama_cpp
        self._model = model
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self._size = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self._lock = threading.Lock()
        self._pieces: dict[int, bytes] = {}

    def encode(self, text: str, special: bool) -> list[int]:
        llama = self._llama
        data = text.encode("utf-8")
        capacity = len(data) + 8
        with self._lock:
            while True:
                buffer = (llama.llama_token * capacity)()
                count = int(
                    llama.llama_tokenize(
                        self._vocab, data, len(data), buffer, capacity, False, special
                    )
                )
                if count >= 0:
                    return list(buffer[:count])
                capacity = -count

    def piece_bytes(self, token_id: int) -> bytes:
        cached = self._pieces.get(token_id)
        if cached is not None:
            return cached
        llama = self._llama
        size = 64
        with self._lock:
            while True:
                buffer = ctypes.create_string_buffer(size)
                count = int(
                    llama.llama_token_to_piece(self._vocab, token_id, buffer, size, 0, True)
                )
                if count >= 0:
                    piece = buffer.raw[:count]
                    break
                size = -count
        self._pieces[token_id] = piece
        return piece

    @property
    def vocab_size(self) -> int:
        return self._size

    def __del__(self) -> None:
        model = getattr(self, "_model", None)
        if model:
            self._llama.llama_model_free(model)
            self._model = None


class UiTokenizer:
    """Tokenize, count and show tokens on the UI thread.

    Build it with `UiTokenizer.from_gguf`. All methods are safe to call from any
    thread, concurrently with a generation (nothing is shared with its context).
    """

    def __init__(self, encoder: _Encoder, fallback_reason: str = "") -> None:
        self._encoder = encoder
        #: Why the llama.cpp fallback is used ("" when the `tokenizers` one is).
        self.fallback_reason = fallback_reason

    @classmethod
    def from_gguf(cls, model: GgufFile | str | os.PathLike[str]) -> UiTokenizer:
        """The tokenizer of a GGUF model.

        Args:
            model: A parsed GGUF or the path of one (validated first).

        Returns:
            A `tokenizers`-based tokenizer for byte-level BPE vocabularies with a known
            pre-tokenizer, else one backed by a vocab-only llama.cpp load.

        Raises:
            ModelFileError: The file is not a valid GGUF, or llama.cpp cannot load it.
        """
        gguf = model if isinstance(model, GgufFile) else validate_gguf(model)
        kind = gguf.metadata.get("tokenizer.ggml.model")
        reason = ""
        if kind == "gpt2":
            try:
                return cls(_HfEncoder(gguf))
            except _Unsupported as error:
                reason = f"unsupported byte-level BPE vocabulary: {error}"
        else:
            reason = f"tokenizer.ggml.model={kind!r} is not byte-level BPE"
        return cls(_LlamaVocabEncoder(gguf.path), fallback_reason=reason)

    @property
    def kind(self) -> str:
        """``"tokenizers"`` or ``"llama.cpp"`` (the vocab-only fallback)."""
        return self._encoder.kind

    @property
    def vocab_size(self) -> int:
        """The number of tokens in the vocabulary."""
        return self._encoder.vocab_size

    def encode(self, text: str, special: bool = False) -> list[int]:
        """Token ids of `text`, without a BOS token.

        Args:
            text: Any text.
            special: Recognize control tokens' text (``<|im_end|>``) as those tokens.
                False for anything a user typed.
        """
        return self._encoder.encode(text, special)

    def count(self, text: str) -> int:
        """How many tokens `text` takes (special tokens not recognized)."""
        return len(self._encoder.encode(text, False))

    def piece_bytes(self, token_id: int) -> bytes:
        """The bytes of one token (a control token's text for control tokens).

        Raises:
            IndexError: `token_id` is not in the vocabulary.
        """
        if not 0 <= token_id < self.vocab_size:
            raise IndexError(
                f"token id {token_id} is outside the vocabulary (0..{self.vocab_size - 1})"
            )
        return self._encoder.piece_bytes(token_id)

    def piece(self, token_id: int) -> str:
        """The text of one token; bytes of an incomplete UTF-8 character become U+FFFD."""
        return self.piece_bytes(token_id).decode("utf-8", errors="replace")

    def decode(self, ids: Sequence[int]) -> str:
        """The text of a token sequence (its bytes joined, then decoded as UTF-8)."""
        return b"".join(self.piece_bytes(token_id) for token_id in ids).decode(
            "utf-8", errors="replace"
        )
