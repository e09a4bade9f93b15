"""The config file's theme and key overrides, checked against what the app has."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from backend.config.config import Config

SIMPLE_KEYS = re.compile(r"^[a-z0-9_+-]+(,[a-z0-9_+-]+)*$")
"""A key override the app accepts: Textual key names, comma-separated ("ctrl+q,f10")."""


@dataclass(frozen=True, slots=True)
class AppConfig:
    """What the app applies at startup.

    Attributes:
        theme: The Textual theme to switch to, or None (keep the default).
        keymap: Binding id -> keys, for `App.set_keymap`.
        problems: One message per entry that cannot be applied (shown as notices).
    """

    theme: str | None
    keymap: dict[str, str]
    problems: tuple[str, ...]


def resolve_app_config(
    config: Config, themes: Collection[str], binding_ids: Collection[str]
) -> AppConfig:
    """Check the config's theme and [keys] against the app's themes and binding ids."""
    problems: list[str] = []
    theme = None
    if config.theme:
        if config.theme in themes:
            theme = config.theme
        else:
            problems.append(
                f"config: unknown theme {config.theme!r}; themes: {', '.join(sorted(themes))}"
            )
    keymap: dict[str, str] = {}
    for action, keys in config.keys:
        keys = keys.replace(" ", "").lower()
        if action not in binding_ids:
            known = ", ".join(sorted(binding_ids))
            problems.append(f"config [keys]: unknown action {action!r}; actions: {known}")
        elif not SIMPLE_KEYS.match(keys):
            problems.append(f'config [keys]: {action} = {keys!r} is not a key such as "ctrl+o"')
        else:
            keymap[action] = keys
    return AppConfig(theme, keymap, tuple(problems))
