"""The forms the settings are exported in (`preset export --format`, the app's
Export commands): each form's name, what it is, and the settings as its text."""

from __future__ import annotations

import json
from typing import Any

from backend.config.llama_server_format import completion_body, flags_text, server_flags
from backend.config.preset_interchange import Unmapped
from backend.config.sillytavern_format import export_sillytavern
from sampling.settings.record import SamplerSettings

EXPORTS: dict[str, str] = {
    "llama-server": "llama-server / llama-cli flags",
    "completion-json": "a llama-server /completion request body",
    "sillytavern": "a SillyTavern text-completion preset",
}
"""Export forms (as `preset export --format`) and what each is."""


def exported_text(
    settings: SamplerSettings, form: str, *, seed: bool = True
) -> tuple[str, list[Unmapped]]:
    """The settings in an export form (one of `EXPORTS`), and what that form cannot
    hold (the llama-server flags without `--seed` when `seed` is False: a preset that
    sets none)."""
    unmapped: list[Unmapped]
    if form == "llama-server":
        words, unmapped = server_flags(settings, seed=seed)
        return flags_text(words), unmapped
    body: dict[str, Any]
    if form == "completion-json":
        body, unmapped = completion_body(settings)
    else:
        body, unmapped = export_sillytavern(settings)
    return json.dumps(body, indent=2, ensure_ascii=False), unmapped
