"""Write tiny llama-architecture GGUF models that llama.cpp loads and runs.

Random weights (one block, 16-wide) under any vocabulary the tests need: a
SentencePiece one of any size, a byte-level BPE one with a chosen pre-tokenizer,
unusual special tokens, with or without a chat template. Written with the `gguf`
package (llama.cpp's own writer, a dev dependency); a 256k-token model is about 9 MB.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import gguf
import numpy as np

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = range(1, 7)

N_EMBD = 16
N_HEAD = 2
N_FF = 32


@dataclass(frozen=True)
class Vocab:
    """A vocabulary as GGUF stores it.

    Attributes:
        model: `tokenizer.ggml.model`: "llama" (SentencePiece) or "gpt2" (byte-level BPE).
        tokens: The token texts.
        types: Their llama.cpp token types.
        scores: SentencePiece scores (empty for BPE).
        merges: BPE merges "left right" (empty for SentencePiece).
        pre: `tokenizer.ggml.pre` ("" to leave it out).
        bos: The beginning-of-sequence token id.
        eos: The end-of-sequence token id.
        unk: The unknown token id (None for none).
        add_space_prefix: `tokenizer.ggml.add_space_prefix` (None to leave it out:
            llama.cpp then prefixes a SentencePiece text with a space; Gemma's GGUFs
            say False).
    """

    model: str
    tokens: list[str]
    types: list[int]
    scores: list[float] = field(default_factory=list)
    merges: list[str] = field(default_factory=list)
    pre: str = ""
    bos: int = 1
    eos: int = 2
    unk: int | None = 0
    add_space_prefix: bool | None = None

    def id_of(self, text: str) -> int:
        """The id of the token whose text is `text`."""
        return self.tokens.index(text)


def spm_vocab(size: int, specials: Sequence[str] = (), *, placeholders: int = 0) -> Vocab:
    """A SentencePiece vocabulary of exactly `size` tokens.

    Layout: <unk> <s> </s>, the control tokens `specials`, `placeholders` control
    tokens `<unused0>`…, the 256 byte tokens, the letters and a few words, then
    numbered word pieces up to `size`.
    """
    tokens = ["<unk>", "<s>", "</s>", *specials, *(f"<unused{i}>" for i in range(placeholders))]
    types = [UNKNOWN, CONTROL, CONTROL] + [CONTROL] * (len(tokens) - 3)
    tokens += [f"<0x{byte:02X}>" for byte in range(256)]
    types += [BYTE] * 256
    words = ["▁", *"abcdefghijklmnopqrstuvwxyz"]
    words += [f"▁{letter}" for letter in "abcdefghijklmnopqrstuvwxyz"]
    # SentencePiece joins neighbours whose join is a piece: each word's prefixes too.
    words += ["▁th", "▁the", "▁ow", "▁owl", "▁se", "▁sea", "▁he", "▁hel", "▁hell", "▁hello"]
    tokens += words
    types += [NORMAL] * len(words)
    if len(tokens) > size:
        raise ValueError(f"a vocabulary of {size} tokens cannot hold the {len(tokens)} fixed ones")
    tokens += [f"▁w{i}" for i in range(size - len(tokens))]
    types += [NORMAL] * (size - len(types))
    # Longer pieces score higher: the best join is taken first.
    scores = [
        0.0 if kind != NORMAL else -100.0 + len(token)
        for token, kind in zip(tokens, types, strict=True)
    ]
    return Vocab("llama", tokens, types, scores=scores)


def _byte_alphabet() -> list[str]:
    """GPT-2's 256 printable stand-ins for the bytes 0…255, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += list(range(ord("®"), ord("ÿ") + 1))
    codes = dict(zip(printable, printable, strict=True))
    extra = 0
    for byte in range(256):
        if byte not in codes:
            codes[byte] = 256 + extra
            extra += 1
    return [chr(codes[byte]) for byte in range(256)]


def bpe_vocab(pre: str, specials: Sequence[str], *, user_defined: Sequence[str] = ()) -> Vocab:
    """A byte-level BPE vocabulary: the 256 byte tokens, a few merges, then `specials`
    (control tokens; the first two are bos and eos) and `user_defined` tokens."""
    tokens = _byte_alphabet()
    types = [NORMAL] * 256
    merges = ["Ġ t", "h e", "Ġt he", "Ġ o", "w l", "Ġo wl", "e l", "l o", "Ġ s", "Ġs e"]
    for merge in merges:
        tokens.append(merge.replace(" ", ""))
        types.append(NORMAL)
    first = len(tokens)
    tokens += [*specials, *user_defined]
    types += [CONTROL] * len(specials) + [USER_DEFINED] * len(user_defined)
    return Vocab("gpt2", tokens, types, merges=merges, pre=pre, bos=first, eos=first + 1, unk=None)


def write_tiny_llama(
    path: Path, vocab: Vocab, *, chat_template: str | None = None, seed: int = 0
) -> Path:
    """Write a one-block llama model with random weights over `vocab` to `path`."""
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_context_length(512)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(1)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model(vocab.model)
    if vocab.pre:
        writer.add_tokenizer_pre(vocab.pre)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    if vocab.scores:
        writer.add_token_scores(vocab.scores)
    if vocab.merges:
        writer.add_token_merges(vocab.merges)
    writer.add_bos_token_id(vocab.bos)
    writer.add_eos_token_id(vocab.eos)
    if vocab.unk is not None:
        writer.add_unk_token_id(vocab.unk)
    if vocab.add_space_prefix is not None:
        writer.add_add_space_prefix(vocab.add_space_prefix)
    if chat_template is not None:
        writer.add_chat_template(chat_template)

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    # numpy shapes are ggml's dimensions reversed; the output reuses token_embd.
    n_vocab = len(vocab.tokens)
    writer.add_tensor("token_embd.weight", weights(n_vocab, N_EMBD).astype(np.float16))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        writer.add_tensor(f"blk.0.{name}.weight", weights(N_EMBD, N_EMBD))
    writer.add_tensor("blk.0.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("blk.0.ffn_gate.weight", weights(N_FF, N_EMBD))
    writer.add_tensor("blk.0.ffn_up.weight", weights(N_FF, N_EMBD))
    writer.add_tensor("blk.0.ffn_down.weight", weights(N_EMBD, N_FF))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
