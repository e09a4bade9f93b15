"""llama.cpp's grammar sampler as a `sampling.constraint.TokenConstraint`.

A grammar is parsed once per vocabulary and text (`GrammarTemplates`); each sampler
gets its own clone (`llama_sampler_clone`, about 1 µs), whose parse stacks move on
with each token the reply takes. Which tokens are legal is read the way llama.cpp's
own chain would: the grammar sampler applied to a `llama_token_data_array` of the
tokens asked about, a token is legal when its logit did not become -inf.

A JSON schema is converted to GBNF by llama-cpp-python's `json_schema_to_gbnf` (the
port of llama.cpp's `json_schema_to_grammar`, with its rule for a string's character
made llama.cpp's again: no raw control characters). llama.cpp prints a GBNF parse
error on stderr (not through its log callback; under the app, stderr is the screen)
and aborts the process on a trigger pattern std::regex refuses, so a new grammar is
parsed first in a child process (`check_in_child`, about 50 ms): its message, with
the line and column where parsing stopped, becomes the `GrammarError`'s. A lazy
grammar's triggers are checked there too (a preset stays one llama.cpp reads), but
followed by `backend.llama.triggers`: llama.cpp gets the grammar without them.

A snapshot is a clone of the sampler (`GrammarSnapshot`); restoring clones it again,
so one snapshot can be restored any number of times. llama.cpp aborts the process
when a grammar is handed a token it forbids, so `accept` asks first.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import llama_grammar

from backend.llama.log import recent_problems
from backend.llama.triggers import TOKEN_DATA, TriggerWatch, searched
from backend.user_regex import PatternError
from sampling.constraint import BoolArray, GrammarSpec
from sampling.errors import GrammarDeadEnd, GrammarError
from sampling.ordering import IdArray

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
        contradiction = schema_contradiction(json.loads(spec.json_schema))
    except json.JSONDecodeError as error:
        raise GrammarError(
            f"invalid JSON schema: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except ValueError:  # an integer past Python's 4,300 digits
        raise GrammarError("invalid JSON schema: it holds a number too long to read") from None
    except RecursionError:
        raise GrammarError("invalid JSON schema: nested too deep") from None
    if contradiction is not None:
        raise GrammarError(f"the JSON schema cannot be met: {contradiction}")
    try:
        gbnf = _schema_to_gbnf(spec.json_schema)
    except (
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        RecursionError,
        AssertionError,
        OverflowError,  # a count past the converter's integers: minItems 2**70
    ) as error:
        text = str(error).splitlines()[0] if str(error) else type(error).__name__
        if "allow-fetch" in text:  # the converter's own command line's flag
            text = "a $ref to another document (schemas are never fetched: inline it)"
        raise GrammarError(f"cannot convert the JSON schema to a grammar: {text}") from None
    # JSON strings hold no raw control characters: llama.cpp's own converter says so,
    # llama-cpp-python's port lets them through.
    return gbnf.replace(_LOOSE_CHAR, _JSON_CHAR)


_CONVERTER: Any = llama_grammar.SchemaConverter
"""llama-cpp-python's port of llama.cpp's JSON schema converter (untyped)."""


def _schema_to_gbnf(schema: str) -> str:
    """`json_schema_to_gbnf`, a literal escaped as llama.cpp's converter escapes it: the
    port leaves a backslash as it is, so a const or enum value's JSON escape
    (`\\u0000`, `\\n`) became a GBNF escape (NUL, a raw newline) that no JSON reply
    holds."""
    converter = _CONVERTER(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    escaped = converter._format_literal
    converter._format_literal = lambda literal: escaped(literal.replace("\\", "\\\\"))
    converter.visit(converter.resolve_refs(json.loads(schema), "stdin"), "")
    return str(converter.format_grammar())


_BOUNDS = (
    ("minLength", "maxLength"),
    ("minItems", "maxItems"),
    ("minProperties", "maxProperties"),
    ("minimum", "maximum"),
)
"""A schema's lower and upper bounds that must not cross."""


def schema_contradiction(schema: object, where: str = "#") -> str | None:
    """A bound a JSON schema sets above its own limit (`minLength` 5 with `maxLength`
    2: no text could match, yet the converter's grammar would accept some), or None."""
    if isinstance(schema, dict):
        for low, high in _BOUNDS:
            least, most = schema.get(low), schema.get(high)
            numbers = (int, float)
            if isinstance(least, numbers) and isinstance(most, numbers) and least > most:
                return f"{where}: {low} {least} is above {high} {most}"
        children = [(f"{where}/{key}", value) for key, value in schema.items()]
    elif isinstance(schema, list):
        children = [(f"{where}/{n}", value) for n, value in enumerate(schema)]
    else:
        return None
    for place, child in children:
        found = schema_contradiction(child, place)
        if found is not None:
            return found
    return None


_CHECK_SCRIPT = """
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
given = json.loads(sys.stdin.read())
patterns = [pattern.encode() for pattern in given["patterns"]]
init = lib.llama_sampler_init_grammar_lazy_patterns
init.restype = ctypes.c_void_p
init.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                 ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
array = (ctypes.c_char_p * max(1, len(patterns)))(*patterns)
sampler = init(None, given["gbnf"].encode(), b"root", array, len(patterns), None, 0)
sys.exit(0 if sampler else 3)
"""
"""Parses a grammar (and compiles its trigger patterns) in a child process: llama.cpp
prints a parse error on stderr, and aborts the whole process on a bad pattern."""

_checked: set[tuple[str, tuple[str, ...]]] = set()
CHECK_SECONDS = 60
"""How long llama.cpp may take to read a grammar before it is refused."""


def check_in_child(gbnf: str, patterns: tuple[str, ...]) -> str | None:
    """Why llama.cpp refuses the grammar or its trigger patterns, or None when it takes
    them (asked in a child process, so that neither its stderr nor an abort reaches
    this one; about 50 ms, once per grammar).

    Raises:
        GrammarError: The child cannot be run.
    """
    key = (gbnf, patterns)
    if key in _checked:
        return None
    library = str(llama_cpp.llama_cpp._lib._name)
    try:
        done = subprocess.run(
            [sys.executable, "-S", "-c", _CHECK_SCRIPT, library],
            input=json.dumps({"gbnf": gbnf, "patterns": list(patterns)}),
            capture_output=True,
            text=True,
            timeout=CHECK_SECONDS,
            env={**os.environ, "GGML_NO_BACKTRACE": "1"},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return (
            f"llama.cpp did not finish reading the grammar in {CHECK_SECONDS} s (a rule that"
            " can recurse on itself without reading anything, or too many alternatives?)"
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise GrammarError(f"cannot check the grammar: {type(error).__name__}") from None
    if done.returncode == 0:
        _checked.add(key)
        return None
    if "what():" in done.stderr or (done.returncode < 0 and patterns):
        # A C++ exception or an abort: std::regex refused a trigger pattern.
        what = done.stderr.partition("what():")[2].strip().splitlines()
        return f"a trigger pattern is not a regex llama.cpp reads ({what[0] if what else 'abort'})"
    if done.returncode < 0:
        return (
            f"llama.cpp's grammar parser crashed ({_signal_name(-done.returncode)}): the"
            " grammar is nested too deep for it"
        )
    said = [
        line.strip()
        for line in done.stderr.splitlines()
        if line.strip() and "failed to parse grammar" not in line
    ]
    return parse_message(done.stderr, gbnf) or (said[-1] if said else "llama.cpp refuses it")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


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
    if separator and not rest.strip():
        return f"{head} at the end"
    if separator and gbnf.endswith(rest):
        offset = len(gbnf) - len(rest)
        line = gbnf.count("\n", 0, offset) + 1
        column = offset - (gbnf.rfind("\n", 0, offset) + 1) + 1
        excerpt = rest.splitlines()[0][:24] if rest.strip() else "the end"
        return f"{head} at line {line} column {column} ({excerpt!r})"
    return " ".join(what.split())


class GrammarTemplates:
    """Grammars parsed for one vocabulary, by spec; each constraint is a clone.

    Args:
        vocab: The `llama_vocab *` the grammars match tokens of.
        n_vocab: Its size.
    """

    def __init__(self, vocab: Any, n_vocab: int) -> None:
        self._vocab = vocab
        self.n_vocab = n_vocab
        self._parsed: dict[GrammarSpec, tuple[Any, TriggerWatch | None]] = {}

    def constraint(self, spec: GrammarSpec) -> LlamaGrammarConstraint:
        """A constraint in the grammar's start state.

        Raises:
            GrammarError: The grammar or schema cannot be parsed (llama.cpp's message).
        """
        parsed = self._parsed.get(spec)
        if parsed is None:
            parsed = self._parsed[spec] = self._parse(spec)
        template, watch = parsed
        return LlamaGrammarConstraint(llama_cpp.llama_sampler_clone(template), self.n_vocab, watch)

    def _parse(self, spec: GrammarSpec) -> tuple[Any, TriggerWatch | None]:
        kind = "JSON schema's grammar" if spec.json_schema else "grammar"
        gbnf = gbnf_of(spec)
        patterns = tuple(searched(pattern) for pattern in spec.triggers)
        problem = check_in_child(gbnf, patterns)
        if problem is not None:
            raise GrammarError(f"invalid {kind}: {problem}")
        grammar, root = gbnf.encode("utf-8"), b"root"
        strict = llama_cpp.llama_sampler_init_grammar(self._vocab, grammar, root)
        if not strict:
            logged = recent_problems(1)
            raise GrammarError(f"invalid {kind}: {logged[-1] if logged else 'refused'}")
        if not patterns:
            return strict, None
        try:
            watch = TriggerWatch(self._vocab, spec.triggers)
        except PatternError as error:
            llama_cpp.llama_sampler_free(strict)
            raise GrammarError(
                f"invalid {kind}: a trigger pattern Python cannot follow ({error})"
            ) from None
        # llama.cpp gets the grammar without its triggers (it would match each whole
        # reply against them at every token): the watch follows them.
        return strict, watch

    def close(self) -> None:
        """Free every parsed grammar (constraints cloned from them live on)."""
        for sampler, _ in self._parsed.values():
            llama_cpp.llama_sampler_free(sampler)
        self._parsed.clear()


class GrammarSnapshot:
    """A frozen copy of a grammar's state: a clone of its sampler, freed with it, and
    the text a lazy grammar's triggers have seen (None once triggered, or not lazy)."""

    __slots__ = ("_sampler", "waiting")

    def __init__(self, sampler: Any, waiting: bytes | None) -> None:
        self._sampler = sampler
        self.waiting = waiting

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
        watch: A lazy grammar's triggers, followed to check what they hand the grammar.
    """

    def __init__(self, sampler: Any, n_vocab: int, watch: TriggerWatch | None = None) -> None:
        self._sampler = sampler
        self.n_vocab = n_vocab
        self._watch = watch
        self._waiting: bytes | None = None if watch is None else b""
        self._every = np.zeros(n_vocab, dtype=TOKEN_DATA)
        self._every["id"] = np.arange(n_vocab, dtype=np.int32)
        self._one = np.zeros(1, dtype=TOKEN_DATA)
        """The one token `accept` checks (made once: accept runs every token)."""

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
        """Whether each token (of `ids`, or of the vocabulary when None) may come next
        (every token while a lazy grammar waits for its trigger)."""
        if self._waiting is not None:
            return np.ones(self.n_vocab if ids is None else ids.shape[0], dtype=np.bool_)
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
        watch, waiting = self._watch, self._waiting
        if waiting is None:  # a lazy grammar waiting for its trigger allows every token
            one = self._one
            one["id"], one["logit"] = token, 0.0
            if not self._apply(one)[0]:
                raise GrammarDeadEnd(f"the reply's token {token} breaks the grammar")
        if watch is None or waiting is None:
            llama_cpp.llama_sampler_accept(self._sampler, token)
            return
        text = waiting + watch.piece(token)
        constrained = watch.matched(text, len(waiting))
        if constrained is None:
            self._waiting = text
            return
        # Triggered: the grammar (still in its start state) takes the text from the
        # match on, this token's piece included, as llama.cpp's lazy grammar does.
        started = llama_cpp.llama_sampler_clone(self._sampler)
        try:
            watch.feed(started, constrained)
        except GrammarDeadEnd:
            llama_cpp.llama_sampler_free(started)
            raise
        llama_cpp.llama_sampler_free(self._sampler)
        self._sampler, self._waiting = started, None

    def reset(self) -> None:
        """Back to the grammar's start."""
        llama_cpp.llama_sampler_reset(self._sampler)
        self._waiting = None if self._watch is None else b""

    def snapshot(self) -> GrammarSnapshot:
        """A clone of the sampler in its state now."""
        return GrammarSnapshot(llama_cpp.llama_sampler_clone(self._sampler), self._waiting)

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
        self._waiting = snapshot.waiting

    def __del__(self) -> None:
        sampler = getattr(self, "_sampler", None)
        if sampler:
            llama_cpp.llama_sampler_free(sampler)
            self._sampler = None
