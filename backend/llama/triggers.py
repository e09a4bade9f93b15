"""A lazy grammar's trigger patterns, followed in Python a token at a time.

llama.cpp's lazy grammar appends each token's piece to a buffer and matches the whole
buffer against every trigger (`std::regex_match` of `[\\s\\S]*?(PATTERN)[\\s\\S]*`) at
every token: a step cost that grows with the reply (5.7 ms at token 100, 119 ms at
700, on the development machine). samplescope hands llama.cpp the grammar without
its triggers and follows them here instead, with the same match (the first pattern
that matches, the grammar taking the text from its first non-empty group on), but
searched only where a new match can be:

- A pattern whose match is bounded (no unbounded repeat: `<tool_call>`, `x{1,3}`,
  lookarounds included) examines at most `reach` bytes from where it starts
  (`match_reach`). A match starting more than `reach` + 2 bytes before the end of the
  text already checked would have matched then, so only the rest is searched
  (`fullmatch` from `pos`: a lookbehind, `^` and `\\b` still see the text before
  it). The result is the full scan's, to the byte.
- A pattern with an unbounded repeat (`\\{\\s*"name"`, `a.*b`) is searched from
  `UNBOUNDED_WINDOW` bytes before the end of the text already checked. It differs
  from llama.cpp's full match in one case only: a match that would start earlier
  than that is not seen (the grammar is not triggered by it).

The patterns run on `backend.user_regex`: a search that backtracks without end stops
the reply after a time limit, in one line naming the pattern.
"""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp
import numpy as np

from backend.user_regex import UserRegex, match_reach
from sampling.errors import GrammarDeadEnd

UNBOUNDED_WINDOW = 4096
"""How far back (bytes) a pattern with an unbounded repeat is searched for: a match
that starts earlier in the text checked before the new token is not seen."""

_PEEK = 2
"""Bytes past a match an anchor may look at (`$` looks at a final newline's end)."""

TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
"""`llama_token_data` as a numpy record (id, logit, p)."""


def searched(pattern: str) -> str:
    """A trigger as llama.cpp matches it: the whole reply so far must match, and the
    grammar takes the text from the first group on; so the trigger is searched for
    anywhere, and the grammar starts where it matched."""
    return f"[\\s\\S]*?({pattern})[\\s\\S]*"


class TriggerWatch:
    """A lazy grammar's triggers followed in Python, as llama.cpp follows them.

    When a trigger matches, the grammar takes the text from the match on; the watch
    feeds that text, token by token, to a strict copy of the grammar, checking each
    token first (llama.cpp aborts the process when its grammar is handed a token it
    refuses).

    Args:
        vocab: The vocabulary.
        patterns: The trigger patterns as the user gave them.

    Raises:
        PatternError: A pattern is not a regular expression.
    """

    def __init__(self, vocab: Any, patterns: tuple[str, ...]) -> None:
        self.vocab = vocab
        self.patterns = tuple(
            UserRegex(searched(p).encode("utf-8"), "trigger pattern", shown=p) for p in patterns
        )
        self.reaches = tuple(match_reach(p.encode("utf-8")) for p in patterns)
        self._buffer = ctypes.create_string_buffer(256)

    def piece(self, token: int) -> bytes:
        """A token's text as llama.cpp's grammar reads it (special tokens by name)."""
        n = llama_cpp.llama_token_to_piece(self.vocab, token, self._buffer, 256, 0, True)
        if n < 0:
            big = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self.vocab, token, big, -n, 0, True)
            return bytes(big.raw[:n])
        return bytes(self._buffer.raw[:n])

    def matched(self, text: bytes, checked: int = 0) -> bytes | None:
        """The text llama.cpp's grammar takes when `text` triggers it, else None.

        Args:
            text: The reply's text so far.
            checked: How many bytes of `text` were matched before without a trigger
                (0: the whole text is searched, as llama.cpp does).

        Raises:
            RegexTimeout: A pattern took longer than its time limit (`backend.user_regex`).
        """
        for pattern, reach in zip(self.patterns, self.reaches, strict=True):
            back = UNBOUNDED_WINDOW if reach is None else reach + _PEEK
            match = pattern.fullmatch(text, max(0, checked - back))
            if match is not None:
                starts = [match.start(g) for g in range(1, pattern.groups + 1) if match.group(g)]
                return text[starts[0] if starts else 0 :]
        return None

    def feed(self, sampler: Any, text: bytes) -> None:
        """Hand `text`, token by token, to `sampler` (a strict grammar in its start
        state), as llama.cpp hands its lazy grammar the triggered text.

        Raises:
            GrammarDeadEnd: The grammar does not start with `text` (`sampler` is left
                part way: pass a copy).
        """
        capacity = len(text) + 8
        tokens = (llama_cpp.llama_token * capacity)()
        count = llama_cpp.llama_tokenize(
            self.vocab, text, len(text), tokens, capacity, False, False
        )
        one = np.zeros(1, dtype=TOKEN_DATA)
        for token in tokens[: max(count, 0)]:
            one["id"], one["logit"] = token, 0.0
            array = llama_cpp.llama_token_data_array(
                data=one.ctypes.data_as(llama_cpp.llama_token_data_p),
                size=1,
                selected=-1,
                sorted=False,
            )
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
            if not np.isfinite(one["logit"][0]):
                shown = text.decode("utf-8", "replace")
                raise GrammarDeadEnd(
                    f"the trigger matched {shown!r}, which the grammar does not start with"
                )
            llama_cpp.llama_sampler_accept(sampler, token)
