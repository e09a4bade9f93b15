"""The project's one error base class and the sampling layer's errors."""

from __future__ import annotations


class SamplescopeError(Exception):
    """Base of every error samplescope reports; its message is meant for the user."""


class SettingsError(SamplescopeError, ValueError):
    """A sampler setting is out of range; the message names the field and the value."""

    def __init__(self, field: str, value: object, expected: str) -> None:
        self.field = field
        self.value = value
        super().__init__(f"invalid {field}={value!r}: expected {expected}")


class LogitsError(SamplescopeError, ValueError):
    """The logits handed to a sampler cannot be sampled from; the message says why."""


class GrammarError(SamplescopeError, ValueError):
    """A grammar or JSON schema cannot be used; the message carries llama.cpp's parse
    message (and where in the text it stopped) when it gave one."""


class GrammarDeadEnd(LogitsError):
    """The grammar allows no token that is left to sample: the reply ends there."""
