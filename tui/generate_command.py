"""The `samplescope generate` line that gives a reply again: a compare column's, a
sweep setting's, a what-if's from a reply's first token.

Every setting that differs from what `generate` starts from (llama.cpp's defaults
and the model's own settings, the temperature last) or from the user's config file
is given as a flag, the seed always, so that the line reproduces the reply here and
on a machine without the config; so are the model's control vectors and the contrast
model decoding beside it, which shape every token. The chain's order is one of the flags when it is
not the default one: a preset that runs the temperature first says so.

A what-if from a later token keeps the reply's tokens before it, which `generate`
cannot be given: its line is `samplescope branch` (`branch_command`), which keeps
them from the saved chat and starts from the step's own settings, so each setting
unlike the step's is a flag.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from backend.chat.completion import Mode
from backend.chat.protocol import ChatMessage
from backend.config.config import load_config_or_default, settings_with_config
from backend.config.model_path import default_model_path
from backend.config.setting_sources import NO_SOURCES, fill_from_model
from backend.errors import ModelFileError
from backend.llama.model_sampling import NO_MODEL_SAMPLING, ModelSampling, read_model_sampling
from sampling.built_in import DEFAULT_CHAT_SETTINGS, chat_defaults
from sampling.errors import SamplescopeError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import registry_of
from sampling.settings.spec import SettingSpec

PROGRAM = "samplescope"


class NotOneCommandError(SamplescopeError):
    """The conversation cannot be given to `generate` (which takes one message)."""


def settings_flags(
    settings: SamplerSettings,
    own: ModelSampling = NO_MODEL_SAMPLING,
    base: SamplerSettings | None = None,
) -> list[str]:
    """The flags that make a command's settings `settings`, one word per item: each
    setting unlike those it starts from, and the seed.

    Args:
        settings: The settings wanted.
        own: The model's own settings, which fill what `generate`'s flags leave unset
            (so a setting at llama.cpp's default where the model has its own is given).
        base: What the command starts from (None: `generate`'s, llama.cpp's defaults
            or the config's, each filled by the model's own, so each setting unlike
            either is a flag).
    """
    registry = registry_of(settings)
    if base is None:
        config, _problem = load_config_or_default(registry=registry)
        defaults = chat_defaults(registry)
        bare, _ = fill_from_model(defaults, NO_SOURCES, own)
        configured, _ = fill_from_model(
            settings_with_config(defaults, config),
            NO_SOURCES.given(config.settings_overrides, "config"),
            own,
        )
        starts = [bare, configured]
    else:
        starts = [base]
    words: list[str] = []
    for spec in registry.settings:
        value = settings.value(spec.name)
        if spec.name != "seed" and all(value == start.value(spec.name) for start in starts):
            continue
        words += _flag_words(spec, value)
    return words


def _flag_words(spec: SettingSpec, value: object) -> list[str]:
    """One setting's flag and value as `generate` reads them."""
    if spec.kind == "bool":
        return [spec.flag if value else "--no-" + spec.flag.removeprefix("--")]
    if spec.kind == "text":
        return [spec.flag, str(value)]
    if spec.is_number or spec.kind == "choice":
        return [spec.flag, str(value)]  # a float's str reads back as the same float
    return [spec.flag, spec.format(value)]  # type: ignore[arg-type]


def generate_command(
    messages: Sequence[ChatMessage],
    settings: SamplerSettings,
    *,
    max_tokens: int,
    mode: Mode = "chat",
    model: str | Path | None = None,
    contrast_model: str | Path | None = None,
    control_vectors: Sequence[tuple[str, float]] = (),
    control_layers: tuple[int, int] | None = None,
) -> str:
    """The shell line that generates this reply again.

    Args:
        messages: The conversation the reply answers: an optional system prompt and
            one user message.
        settings: The reply's settings, its seed included.
        max_tokens: The most tokens it may have.
        mode: The chat's mode ("completion" continues the text as a document).
        model: The model's file (None or the bundled default: no `--model`).
        contrast_model: The contrast model decoding beside it (None or "": none).
        control_vectors: The control vectors the model applies, each file with its
            scale (the `control_strength` setting multiplies them, a flag of its own).
        control_layers: The first and last layer they steer (None: every layer).

    Raises:
        NotOneCommandError: The conversation holds more than one user message, or a
            reply before: `generate` takes one message (and a system prompt).
    """
    system = [m.content for m in messages if m.role == "system"]
    users = [m.content for m in messages if m.role == "user"]
    if len(users) != 1 or len(system) > 1 or len(users) + len(system) != len(messages):
        raise NotOneCommandError(
            "`generate` takes one message and a system prompt: this chat has"
            f" {len(messages)} messages, so no command line gives its reply"
        )
    words = [PROGRAM, "generate", users[0]]
    if system:
        words += ["--system", system[0]]
    if mode == "completion":
        words += ["--mode", "completion"]
    words += ["--max-tokens", str(max_tokens)]
    if model is not None and not _is_default_model(Path(model)):
        words += ["--model", str(model)]
    if contrast_model:
        words += ["--contrast-model", str(contrast_model)]
    words += control_vector_flags(control_vectors, control_layers)
    words += settings_flags(settings, _own_settings(model))
    return shlex.join(words)


def control_vector_flags(
    vectors: Sequence[tuple[str, float]], layers: tuple[int, int] | None
) -> list[str]:
    """`--control-vector FILE:SCALE` for each vector and `--control-vector-layers A,B`
    (none for no vector), one word per item. The scale's str reads back as the same
    float, and the last colon splits it from the file (a path may hold colons)."""
    if not vectors:
        return []
    words: list[str] = []
    for path, scale in vectors:
        words += ["--control-vector", f"{path}:{scale}"]
    if layers is not None:
        words += ["--control-vector-layers", f"{layers[0]},{layers[1]}"]
    return words


def _own_settings(model: str | Path | None) -> ModelSampling:
    """The model's own settings (none for the bundled default, which has none)."""
    if model is None:
        return NO_MODEL_SAMPLING
    return read_model_sampling(model, DEFAULT_CHAT_SETTINGS)


def branch_command(
    chat_id: int,
    reply: int,
    branch: int,
    at: int,
    token: int,
    settings: SamplerSettings,
    own: SamplerSettings,
    *,
    max_tokens: int,
) -> str:
    """The shell line that makes again the branch a what-if's `b` makes: the saved
    reply's tokens before `at` kept, `token` taken there, the rest drawn under
    `settings`.

    Args:
        chat_id: The saved chat.
        reply: Which of its generated replies, from 1.
        branch: The reply's branch, as stored (its id).
        at: The token's position, from 1.
        token: The token taken there (the one the what-if draws).
        settings: The what-if's settings, its seed included.
        own: The step's own settings, which `branch` starts from.
        max_tokens: The most tokens the branch may have, its kept tokens counted.

    The reply's model is the one it names (a what-if runs only on the model that
    made the reply).
    """
    words = [PROGRAM, "branch", str(chat_id), "--reply", str(reply), "--branch", str(branch)]
    words += ["--at", str(at), "--token", str(token), "--max-tokens", str(max_tokens)]
    words += settings_flags(settings, base=own)
    return shlex.join(words)


def _is_default_model(path: Path) -> bool:
    try:
        return path.resolve() == default_model_path().resolve()
    except (ModelFileError, OSError):
        return False
