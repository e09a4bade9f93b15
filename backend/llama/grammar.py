"""llama.cpp's grammar sampler as a `sampling.constraint.TokenConstraint`.

A grammar is parsed once per vocabulary and text (`GrammarTemplates`); each sampler
gets its own clone (`llama_sampler_clone`, about 1 µs), whose parse stacks move on
with each token the reply takes. Which tokens are legal is read the way llama.cpp's
own chain would: the grammar sampler applied to a `llama_token_data_array` of the
tokens asked about, a token is legal when its logit did not become -inf.

A JSON schema is converted to GBNF by llama-cpp-python's `json_schema_to_gbnf` (the
port of llama.cpp's `json_schema_to_grammar`, with its rule for a string's character
made llama.cpp's again: no raw control characters). llama.cpp reports a GBNF parse error
on stderr (not through its log callback), so stderr is caught for the moment of the
parse, and its message (with the line and column where parsing stopped) becomes the
`GrammarError`'s.

A snapshot is a clone of the sampler (`GrammarSnapshot`); restoring clones it again,
so one snapshot can be restored any number of times. llama.cpp aborts the process
when a grammar is handed a token it forbids, so `accept` asks first.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp.llama_grammar import json_schema_to_gbnf

from backend.llama.log import recent_problems
from sampling.constraint import BoolArray, GrammarSpec
from sampling.errors import GrammarDeadEnd, GrammarError
from sampling.ordering import IdArray

TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
"""`llama_token_data` as a numpy record (id, logit, p)."""

_stderr_lock = threading.Lock()

_LOOSE_CHAR = 'char ::= [^"\\\\] |'
_JSON_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'
"""The converter's rule for a character of a JSON string, and llama.cpp's."""


def gbnf_of(spec: GrammarSpec) -> str:
    """The GBNF text of a grammar spec (a JSON schema converted).

    Raises:
        GrammarError: The schema is not JSON or cannot be converted.
    """
    if not spec.json_schema:
        return spec.gbnf
    try:
        gbnf = str(json_schema_to_gbnf(spec.json_schema))
    except json.JSONDecodeError as error:
        raise GrammarError(
            f"invalid JSON schema: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:
        text = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise GrammarError(f"cannot convert the JSON schema to a grammar: {text}") from None
    # JSON strings hold no raw control characters: llama.cpp's own converter says so,
    # llama-cpp-python's port lets them through.
    return gbnf.replace(_LOOSE_CHAR, _JSON_CHAR)


@contextlib.contextmanager
def _caught_stderr() -> Iterator[list[str]]:
    """Send file descriptor 2 to a temporary file for the block; the list it yields
    holds what was written there once the block ends."""
    caught: list[str] = []
    with _stderr_lock, tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield caught
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            caught.append(sink.read().decode("utf-8", "replace"))


def parse_message(stderr: str, gbnf: str) -> str | None:
    """llama.cpp's parse error on one line, its position as line and column, or None.

    llama.cpp writes "parse: error parsing grammar: expecting name at <the rest of
    the text>"; the rest is found in the grammar to tell where parsing stopped.
    """
    marker = "error parsing grammar: "
    start = stderr.find(marker)
    if start < 0:
        return None
    body = stderr[start + len(marker) :]
    source = body.rfind("\n\n")  # llama.cpp prints the grammar after the message
    what = body[:source] if source >= 0 else body
    head, separator, rest = what.partition(" at ")
    if separator and rest and gbnf.endswith(rest):
        offset = len(gbnf) - len(rest)
        line = gbnf.count("\n", 0, offset) + 1
        column = offset - (gbnf.rfind("\n", 0, offset) + 1) + 1
        excerpt = rest.splitlines()[0][:24] if rest.strip() else "the end"
        return f"{head} at line {line} column {column} ({excerpt!r})"
    return " ".join(what.split())


def searched(pattern: str) -> str:
    """A trigger as llama.cpp matches it: the whole reply so far must match, and the
    grammar takes the text from the first group on; so the trigger is searched for
    anywhere, and the grammar starts where it matched."""
    return f"[\\s\\S]*?({pattern})[\\s\\S]*"


class GrammarTemplates:
    """Grammars parsed for one vocabulary, by spec; each constraint is a clone.

    Args:
        vocab: The `llama_vocab *` the grammars match tokens of.
        n_vocab: Its size.
    """

    def __init__(self, vocab: Any, n_vocab: int) -> None:
        self._vocab = vocab
        self.n_vocab = n_vocab
        self._parsed: dict[GrammarSpec, Any] = {}

    def constraint(self, spec: GrammarSpec) -> LlamaGrammarConstraint:
        """A constraint in the grammar's start state.

        Raises:
            GrammarError: The grammar or schema cannot be parsed (llama.cpp's message).
        """
        template = self._parsed.get(spec)
        if template is None:
            template = self._parsed[spec] = self._parse(spec)
        return LlamaGrammarConstraint(llama_cpp.llama_sampler_clone(template), self.n_vocab)

    def _parse(self, spec: GrammarSpec) -> Any:
        gbnf = gbnf_of(spec)
        grammar, root = gbnf.encode("utf-8"), b"root"
        with _caught_stderr() as stderr:
            if spec.triggers:
                patterns = [searched(pattern).encode("utf-8") for pattern in spec.triggers]
                array = (ctypes.c_char_p * len(patterns))(*patterns)
                sampler = llama_cpp.llama_sampler_init_grammar_lazy_patterns(
                    self._vocab, grammar, root, array, len(patterns), None, 0
                )
            else:
                sampler = llama_cpp.llama_sampler_init_grammar(self._vocab, grammar, root)
        if not sampler:
            message = parse_message("".join(stderr), gbnf)
            if message is None:
                logged = recent_problems(1)
                message = logged[-1] if logged else "llama.cpp could not parse it"
            kind = "JSON schema's grammar" if spec.json_schema else "grammar"
            raise GrammarError(f"invalid {kind}: {message}")
        return sampler

    def close(self) -> None:
        """Free every parsed grammar (constraints cloned from them live on)."""
        for sampler in self._parsed.values():
            llama_cpp.llama_sampler_free(sampler)
        self._parsed.clear()


class GrammarSnapshot:
    """A frozen copy of a grammar's state: a clone of its sampler, freed with it."""

    __slots__ = ("_sampler",)

    def __init__(self, sampler: Any) -> None:
        self._sampler = sampler

    @property
    def sampler(self) -> Any:
        """The cloned sampler (never handed tokens)."""
        return self._sampler

    def __del__(self) -> None:
        if self._sampler:
            llama_cpp.llama_sampler_free(self._sampler)
            self._sampler = None


class LlamaGrammarConstraint:
    """One grammar's matcher in its own state: llama.cpp's grammar sampler.

    Args:
        sampler: A `llama_sampler *` of llama.cpp's grammar (owned: freed with it).
        n_vocab: The vocabulary's size.
    """

    def __init__(self, sampler: Any, n_vocab: int) -> None:
        self._sampler = sampler
        self.n_vocab = n_vocab
        self._every = np.zeros(n_vocab, dtype=TOKEN_DATA)
        self._every["id"] = np.arange(n_vocab, dtype=np.int32)

    def _apply(self, data: np.ndarray) -> BoolArray:
        """Apply the grammar to token data whose logits are all 0: which stay finite."""
        array = llama_cpp.llama_token_data_array(
            data=data.ctypes.data_as(llama_cpp.llama_token_data_p),
            size=data.shape[0],
            selected=-1,
            sorted=False,
        )
        llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(array))
        result: BoolArray = data["logit"] == 0.0
        return result

    def allowed(self, ids: IdArray | None) -> BoolArray:
        """Whether each token (of `ids`, or of the vocabulary when None) may come next."""
        if ids is None:
            data = self._every
            data["logit"] = 0.0
        else:
            data = np.zeros(ids.shape[0], dtype=TOKEN_DATA)
            data["id"] = ids
        return self._apply(data)

    def accept(self, token: int) -> None:
        """Move on past `token`.

        Raises:
            GrammarDeadEnd: The grammar does not allow it (llama.cpp would abort).
        """
        if not self.allowed(np.array([token], dtype=np.intp))[0]:
            raise GrammarDeadEnd(f"the reply's token {token} breaks the grammar")
        llama_cpp.llama_sampler_accept(self._sampler, token)

    def reset(self) -> None:
        """Back to the grammar's start."""
        llama_cpp.llama_sampler_reset(self._sampler)

    def snapshot(self) -> GrammarSnapshot:
        """A clone of the sampler in its state now."""
        return GrammarSnapshot(llama_cpp.llama_sampler_clone(self._sampler))

    def restore(self, snapshot: object) -> None:
        """Take the state of a snapshot (of this grammar).

        Raises:
            TypeError: `snapshot` is not a `GrammarSnapshot`.
        """
        if not isinstance(snapshot, GrammarSnapshot):
            raise TypeError(f"not a grammar snapshot: {type(snapshot).__name__}")
        clone = llama_cpp.llama_sampler_clone(snapshot.sampler)
        llama_cpp.llama_sampler_free(self._sampler)
        self._sampler = clone

    def __del__(self) -> None:
        sampler = getattr(self, "_sampler", None)
        if sampler:
            llama_cpp.llama_sampler_free(sampler)
            self._sampler = None
