"""The lazy grammar's trigger step: its cost at token 100 and at token 700 of a reply
that never triggers it, ours (`backend.llama.triggers`, searching only where a new
match can be) against llama.cpp's lazy grammar (the whole reply matched at every
token), and ours at token 700 against ours at token 100 (about 1x: the step's cost no
longer grows with the reply)."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Sequence
from typing import Any

import llama_cpp

from backend.bench.sampler import BenchRow
from backend.llama.grammar import GrammarTemplates
from backend.llama.triggers import searched
from sampling.constraint import GrammarSpec

TRIGGER = "<tool_call>"
LAZY_GBNF = 'root ::= "<tool_call>" [a-z]*'
FILLER = "The quick brown fox jumps over the lazy dog. "
"""A reply's text that never triggers the grammar."""

SPAN = 10
"""Tokens timed at each position (the ten before it)."""


def _steps_us(
    accept: Callable[[int], None], tokens: Sequence[int], positions: Sequence[int]
) -> dict[int, float]:
    """µs per token accepted over the `SPAN` tokens before each of `positions`, in one
    pass over `tokens` (the others accepted untimed)."""
    found: dict[int, float] = {}
    done = 0
    for at in sorted(positions):
        for token in tokens[done : at - SPAN]:
            accept(token)
        started = time.perf_counter()
        for token in tokens[at - SPAN : at]:
            accept(token)
        found[at] = (time.perf_counter() - started) / SPAN * 1e6
        done = at
    return found


def _filler_tokens(vocab: Any, count: int) -> list[int]:
    text = (FILLER * (count // 5 + 1)).encode()
    room = len(text) + 8
    tokens = (llama_cpp.llama_token * room)()
    made = llama_cpp.llama_tokenize(vocab, text, len(text), tokens, room, False, False)
    return list(tokens[:made])[:count]


def trigger_rows(
    vocab: Any, n_vocab: int, positions: tuple[int, int] = (100, 700)
) -> list[BenchRow]:
    """The bench's three trigger rows (see the module's docstring)."""
    tokens = _filler_tokens(vocab, max(positions))
    spec = GrammarSpec(gbnf=LAZY_GBNF, triggers=(TRIGGER,))
    templates = GrammarTemplates(vocab, n_vocab)
    try:
        ours = _steps_us(templates.constraint(spec).accept, tokens, positions)
    finally:
        templates.close()
    pattern = (ctypes.c_char_p * 1)(searched(TRIGGER).encode())
    lazy = llama_cpp.llama_sampler_init_grammar_lazy_patterns(
        vocab, LAZY_GBNF.encode(), b"root", pattern, 1, None, 0
    )
    try:
        native = _steps_us(lambda t: llama_cpp.llama_sampler_accept(lazy, t), tokens, positions)
    finally:
        llama_cpp.llama_sampler_free(lazy)
    early, late = positions
    return [
        BenchRow(f"lazy trigger @{early}", "text", ours[early], native[early], SPAN),
        BenchRow(f"lazy trigger @{late}", "text", ours[late], native[late], SPAN),
        BenchRow(f"trigger @{late}/ours@{early}", "ours", ours[late], ours[early], SPAN),
    ]
