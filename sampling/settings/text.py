"""The several-valued settings: the chain's order, logit biases and DRY's breakers.

Each has a check (`accepts_*`, `order_problem`), a reader of its text form (`parse_*`, raising
`ValueError` with a one-line reason) and a writer (`format_*`) that the reader
reads back. The text forms follow llama.cpp's flags where it has one:
`--samplers "top_k;temperature;min_p"` (also comma-separated, with its aliases such
as "top-k", "topk", "nucleus", "temp", "typ") and `--logit-bias "42=+2,17=-inf"`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

_ALIASES: dict[str, str] = {
    "nucleus": "top_p",
    "temp": "temperature",
    "typ": "typ_p",
    "tail_free": "tfs",
    "tfs_z": "tfs",
    "quadratic_sampling": "smoothing",
    "adaptive-p": "adaptive_p",
}
"""Words llama.cpp also reads as a sampler's name, besides its spellings with dashes
or without underscores."""

BiasPairs = tuple[tuple[int, float], ...]


def canonical_sampler(name: str, names: Sequence[str]) -> str | None:
    """The one of `names` a user's word means ("Top-K" → "top_k"), or None."""
    word = name.strip().lower()
    for known in names:
        if word in (known, known.replace("_", "-"), known.replace("_", "")):
            return known
    alias = _ALIASES.get(word)
    return alias if alias in names else None


def order_problem(value: object, names: Sequence[str], leading: Sequence[str]) -> str | None:
    """Why `value` is not a valid chain order, or None when it is.

    Args:
        value: The order.
        names: Every name an order may hold.
        leading: The names that must come before every other (the samplers that
            rewrite the logits before their order is read).
    """
    if not isinstance(value, tuple):
        return "a tuple of sampler names"
    reading: str | None = None
    for position, name in enumerate(value):
        if not isinstance(name, str) or name not in names:
            return f"names among {', '.join(names)}; {name!r} is not one"
        if name in value[:position]:
            return f"each sampler once; {name!r} comes twice"
        if name in leading and reading is not None:
            return f"{name!r} before every sampler that reads the order; it comes after {reading!r}"
        if name not in leading and reading is None:
            reading = name
    return None


def parse_order(text: str, names: Sequence[str], leading: Sequence[str]) -> tuple[str, ...]:
    """Read "top_k;temperature;min_p" (or comma-separated) as canonical names.

    Raises:
        ValueError: A word names no sampler, or the order is invalid.
    """
    words = [word for word in re.split(r"[;,]", text) if word.strip()]
    found: list[str] = []
    for word in words:
        name = canonical_sampler(word, names)
        if name is None:
            raise ValueError(f"{word.strip()!r} is not a sampler")
        found.append(name)
    order = tuple(found)
    problem = order_problem(order, names, leading)
    if problem is not None:
        raise ValueError(f"expected {problem}")
    return order


def format_order(value: object) -> str:
    """The order as llama.cpp writes it: "top_k;temperature;min_p"."""
    return ";".join(str(name) for name in value) if isinstance(value, tuple) else str(value)


def bias_problem(value: object) -> str | None:
    """Why `value` is not a valid logit bias, or None when it is."""
    if not isinstance(value, tuple):
        return "a tuple of (token id, bias) pairs"
    previous = -1
    for pair in value:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            return f"(token id, bias) pairs; {pair!r} is not one"
        token, bias = pair
        if isinstance(token, bool) or not isinstance(token, int) or token < 0:
            return f"token ids at least 0; {token!r} is not one"
        if token <= previous:
            return f"each token once, in increasing id order; {token!r} is out of order"
        if isinstance(bias, bool) or not isinstance(bias, float):
            return f"a float bias; {bias!r} is not one"
        if not (math.isfinite(bias) or bias == -math.inf):
            return f"a finite bias or -inf; {bias!r} is not one"
        previous = token
    return None


def accepts_bias(value: object) -> bool:
    """Whether `value` is a valid logit bias (see `bias_problem`)."""
    return bias_problem(value) is None


def bias_entries(text: str) -> list[tuple[str | int, float]]:
    """Read "42=+2,hello=-inf" as (token id or token text, bias) pairs, in order.

    A key of digits is a token id; any other key (or one in quotes, "'42'") is the
    token's text, which only the model's tokenizer can turn into an id.

    Raises:
        ValueError: A pair is not key=number.
    """
    entries: list[tuple[str | int, float]] = []
    for pair in re.split(r"[;,]", text):
        if not pair.strip():
            continue
        key, sep, number = pair.rpartition("=")
        if not sep or not key:
            raise ValueError(f"{pair.strip()!r} is not token=bias")
        try:
            bias = float(number.strip())
        except ValueError:
            raise ValueError(f"{number.strip()!r} in {pair.strip()!r} is not a number") from None
        stripped = key.strip()
        quoted = len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\""
        if quoted:
            entries.append((stripped[1:-1], bias))
        elif stripped.isdigit():
            entries.append((int(stripped), bias))
        else:
            entries.append((key, bias))
    return entries


def bias_pairs(entries: Sequence[tuple[int, float]]) -> BiasPairs:
    """Token id → bias pairs in id order, from pairs in any order.

    Raises:
        ValueError: A bias is +inf or NaN, an id is negative, or a token is given twice.
    """
    merged: dict[int, float] = {}
    for token, bias in entries:
        if token < 0:
            raise ValueError(f"token id {token} is negative")
        if not (math.isfinite(bias) or bias == -math.inf):
            raise ValueError(f"bias {bias} for token {token} is not finite or -inf")
        if token in merged:
            raise ValueError(f"token {token} is given twice")
        merged[token] = float(bias)
    return tuple(sorted(merged.items()))


BAN_WORDS = ("-inf", "-infinity")
"""A banning bias written as text, as strict JSON needs it (it has no infinity)."""


def json_bias(value: object) -> object:
    """Bias pairs as strict JSON can hold them: [id, bias] lists, a -inf bias (a ban)
    written as the string "-inf" (`normal_bias` reads it back)."""
    if not isinstance(value, tuple):
        return value
    return [[token, "-inf" if bias == -math.inf else bias] for token, bias in value]


def normal_bias(value: object) -> object:
    """A logit bias given as a {id: bias} dict or (id, bias) pairs in any order, as
    the id-ordered pairs `SamplerSettings` holds (an integer bias made a float; a ban
    written "-inf", or `false` as llama-server writes it, made -inf).

    Anything that is not such a mapping or sequence of pairs comes back as it is, for
    `bias_problem` to name.

    Raises:
        ValueError: A token id is given twice (the message names it).
    """
    if isinstance(value, dict):
        items: list[object] = list(value.items())
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return value
    pairs: list[tuple[object, object]] = []
    for item in items:
        if not (isinstance(item, list | tuple) and len(item) == 2):
            return value
        token, bias = item
        if bias is False or (isinstance(bias, str) and bias.strip().lower() in BAN_WORDS):
            bias = -math.inf  # a ban as JSON writes it: "-inf", or llama-server's false
        elif isinstance(bias, int) and not isinstance(bias, bool):
            bias = float(bias)
        pairs.append((token, bias))
    by_id: dict[int, object] = {}
    for token, bias in pairs:
        if isinstance(token, bool) or not isinstance(token, int):
            return tuple(pairs)  # not an id: `bias_problem` names it
        if token in by_id:
            raise ValueError(f"token {token} is given twice")
        by_id[token] = bias
    return tuple(sorted(by_id.items()))


def parse_bias(text: str) -> BiasPairs:
    """Read "42=+2;17=-inf" as (id, bias) pairs (ids only: text needs the model).

    Raises:
        ValueError: A pair is malformed, or names a token by its text.
    """
    ids: list[tuple[int, float]] = []
    for key, bias in bias_entries(text):
        if isinstance(key, str):
            raise ValueError(
                f"{key!r} is token text: give it to --logit-bias, which has the model's tokenizer"
            )
        ids.append((key, bias))
    return bias_pairs(ids)


def format_bias(value: object) -> str:
    """The pairs as "17=-inf;42=+2"."""
    if not isinstance(value, tuple):
        return str(value)
    return ";".join(f"{token}={_bias_text(bias)}" for token, bias in value)


def _bias_text(bias: float) -> str:
    """A bias as short as reads back exactly: "+2", "-inf", "+1000001.0"."""
    short = f"{bias:+g}"
    return short if float(short) == bias else f"{bias:+}"


def accepts_texts(value: object) -> bool:
    """Whether `value` is a tuple of non-empty strings."""
    return isinstance(value, tuple) and all(isinstance(t, str) and t for t in value)


def parse_texts(text: str, *, patterns: bool = False) -> tuple[str, ...]:
    """Read a JSON list of strings, "none" (no texts), or texts separated by ','.

    In the comma form a backslash escapes: "\\n" is a newline, "\\," a comma. For
    `patterns` (regexes) the texts are kept as written, backslashes included, and only
    a comma outside (), {} and [] and not escaped separates them: "x{1,3},foo" is two.

    Raises:
        ValueError: The JSON is malformed or holds something other than texts.
    """
    stripped = text.strip()
    if stripped.lower() == "none":
        return ()
    if patterns and not _is_text_list(stripped):  # "[a-z]+,x" is a class, not JSON
        return tuple(t for t in _split_patterns(text) if t)
    if stripped.startswith("["):
        try:
            values = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise ValueError(f"not a JSON list: {error.msg}") from None
        except RecursionError:
            raise ValueError("not a JSON list of texts: nested too deep") from None
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise ValueError("a JSON list of non-empty texts")
        return tuple(values)
    texts: list[str] = []
    current: list[str] = []
    escapes = {"n": "\n", "t": "\t", "r": "\r", ",": ",", "\\": "\\", '"': '"'}
    characters = iter(text)
    for character in characters:
        if character == "\\":
            following = next(characters, "\\")
            current.append(escapes.get(following, "\\" + following))
        elif character == ",":
            texts.append("".join(current))
            current = []
        else:
            current.append(character)
    texts.append("".join(current))
    return tuple(t for t in texts if t)


def _is_text_list(text: str) -> bool:
    """Whether `text` is a JSON list of strings."""
    if not text.startswith("["):
        return False
    try:
        values = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(values, list) and all(isinstance(value, str) for value in values)


def _split_patterns(text: str) -> list[str]:
    """The regexes in `text`, split at its top-level commas (see `parse_texts`)."""
    texts: list[str] = []
    start = depth = 0
    in_class = escaped = False
    for index, character in enumerate(text):
        if escaped:
            escaped = False
        elif character == "\\":
            escaped = True
        elif in_class:
            in_class = character != "]"
        elif character == "[":
            in_class = True
        elif character in "({":
            depth += 1
        elif character in ")}":
            depth = max(depth - 1, 0)
        elif character == "," and depth == 0:
            texts.append(text[start:index])
            start = index + 1
    texts.append(text[start:])
    return texts


def format_texts(value: object) -> str:
    """The texts as a JSON list."""
    return json.dumps(list(value) if isinstance(value, tuple) else value)
