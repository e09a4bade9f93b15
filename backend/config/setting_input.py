"""Reading a setting typed as text, in the app or in `--set` on the command line: the
chain's order, DRY's breakers, logit bias, a grammar or a JSON schema (its line breaks
typed as ⏎, or "@path" to load a file).

A logit bias may name a token by its text ("hello=-inf"): the model's tokenizer turns
the text into its one token, as `generate --logit-bias` does (a text of several
tokens is refused). Ids ("42=+2") need no tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from backend.config.paths import user_file
from backend.config.user_files import UserFileError, read_user_text
from backend.errors import FileAccessError
from sampling.errors import SettingsError
from sampling.settings.registry import Registry
from sampling.settings.spec import SettingSpec, SettingValue
from sampling.settings.text import BiasPairs, bias_entries, bias_pairs

TextEncoder = Callable[[str], list[int]]

LINE_MARK = "⏎"
"""How a one-line input shows a line break of a text setting (a grammar, a schema)."""


def read_setting_text(spec: SettingSpec, text: str, encode: TextEncoder | None) -> SettingValue:
    """The value a typed text means for `spec` (not validated against its range yet).

    Args:
        spec: The setting.
        text: What the user typed.
        encode: The model's tokenizer (text → ids), or None when it is not loaded.

    Raises:
        SettingsError: The text cannot be read; the message names the setting and says why.
    """
    if spec.kind == "bias":
        return _bias(spec, text, encode)
    if spec.kind == "text":
        return _text(spec, text)
    return spec.parse(text)


def _text(spec: SettingSpec, text: str) -> SettingValue:
    """A grammar or schema typed on one line (⏎ breaks it), or "@path" to read a file."""
    stripped = text.strip()
    if stripped.startswith("@"):
        try:
            path = user_file(Path(stripped[1:].strip()))
        except FileAccessError as error:
            raise SettingsError(spec.name, text, f"a file it may open ({error})") from None
        try:
            read = read_user_text(path)
        except UserFileError as error:
            raise SettingsError(spec.name, text, f"a readable UTF-8 file ({error})") from None
        return spec.parse(read)
    return spec.parse(text.replace(LINE_MARK, "\n"))


def _bias(spec: SettingSpec, text: str, encode: TextEncoder | None) -> BiasPairs:
    try:
        entries = bias_entries(text)
    except ValueError as error:
        raise SettingsError(spec.name, text, f"token=bias pairs: {error}") from None
    pairs: list[tuple[int, float]] = []
    for key, bias in entries:
        if isinstance(key, str):
            if encode is None:
                raise SettingsError(
                    spec.name, text, f"token ids: {key!r} is text and the model is not loaded"
                )
            tokens = encode(key)
            if len(tokens) != 1:
                raise SettingsError(
                    spec.name, text, f"one token per entry: {key!r} is {len(tokens)} tokens"
                )
            key = tokens[0]
        pairs.append((key, bias))
    try:
        return bias_pairs(pairs)
    except ValueError as error:
        raise SettingsError(spec.name, text, str(error)) from None


def typed_value(
    field: str, value: object, encode: TextEncoder | None, registry: Registry
) -> object:
    """`value` read as `field`'s value (a setting of `registry`) when it is the text
    typed for a several-valued setting (see `read_setting_text`); any other value as
    it is.

    Raises:
        SettingsError: The text cannot be read.
    """
    spec = registry.settings_by_name.get(field)
    if spec is None or spec.is_scalar or not isinstance(value, str):
        return value
    return read_setting_text(spec, value, encode)
