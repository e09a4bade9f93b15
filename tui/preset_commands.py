"""Command palette entries for presets: import another tool's preset file, export the
live settings for another tool (as `samplescope preset import/export` do).

An import is saved among the user's presets (as `preset import` saves it) and made
the live settings; an export is copied to the clipboard and shown. Every field that
has no counterpart is listed, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from backend.chat.protocol import LiveSettings
from backend.config.paths import user_file, user_presets_path
from backend.config.preset_exports import EXPORTS, exported_text
from backend.config.preset_files import imported_settings, read_preset_file, save_user_preset
from backend.config.preset_interchange import PresetFormatError, Unmapped
from backend.config.presets import PresetError
from backend.errors import FileAccessError
from sampling.settings.record import SamplerSettings
from sampling.settings.summary import settings_summary
from tui.widgets.entry import ValueEntryScreen


@runtime_checkable
class PresetHost(Protocol):
    """An app whose live settings presets go in and out of."""

    live: LiveSettings

    def apply_settings(self, settings: SamplerSettings) -> None:
        """Make `settings` the live settings (from the next token) and show them."""
        ...

    def notify(self, message: str, **options: Any) -> None:
        """Show a message."""
        ...

    def copy_to_clipboard(self, text: str) -> None:
        """Copy text to the terminal's clipboard."""
        ...

    def push_screen(self, screen: Any, callback: Any = None) -> Any:
        """Show a screen; `callback` gets what it returns."""
        ...


def export_settings(host: PresetHost, form: str) -> str:
    """Copy the live settings in `form` to the clipboard and show them; the text."""
    text, unmapped = exported_text(host.live.current, form)
    host.copy_to_clipboard(text)
    message = f"Copied the settings as {EXPORTS[form]}:\n{text}"
    if unmapped:
        message += "\nNot in this form: " + _listed(unmapped)
    host.notify(message, title="Export", timeout=30)
    return text


def ask_preset_file(host: PresetHost) -> None:
    """Ask for a preset file's path, then import it."""
    host.push_screen(
        ValueEntryScreen(
            "the preset file to import",
            "",
            "SillyTavern (JSON), text-generation-webui (YAML), KoboldCpp (JSON) or a"
            " llama-server /completion body (JSON)",
        ),
        lambda typed: import_preset(host, typed) if typed else None,
    )


def import_preset(host: PresetHost, typed: str, presets_file: Path | None = None) -> bool:
    """Import a preset file: save it among the user's presets and apply it.

    Args:
        host: The app.
        typed: The file's path as typed (`~` expanded).
        presets_file: The user's presets file (default: the config folder's).

    Returns:
        Whether its settings were applied (a file that cannot be read is reported).
    """
    try:
        path = user_file(Path(typed.strip()))
        imported = read_preset_file(path)
        settings = imported_settings(imported)
    except (FileAccessError, PresetFormatError) as error:
        host.notify(str(error), severity="error", timeout=20)
        return False
    host.apply_settings(settings)
    name = path.stem
    target = user_presets_path() if presets_file is None else presets_file
    try:
        save_user_preset(target, name, settings)
        saved = f"saved as preset {name!r} in {target}"
    except PresetError as error:
        saved = f"not saved: {error}"
    message = f"Imported the {imported.tool} preset ({saved}): {settings_summary(settings)}"
    if imported.unmapped:
        message += "\nNo counterpart, not imported: " + _listed(imported.unmapped)
    host.notify(message, title="Import", timeout=30)
    return True


def _listed(unmapped: Sequence[Unmapped]) -> str:
    return "; ".join(entry.describe() for entry in unmapped)


def command_entries(host: PresetHost) -> list[tuple[str, Callable[[], object], str]]:
    """(title, callback, help) of every preset command."""
    entries: list[tuple[str, Callable[[], object], str]] = [
        (
            "Preset: import a file",
            partial(ask_preset_file, host),
            "SillyTavern, text-generation-webui, KoboldCpp or /completion settings:"
            " saved among your presets and applied",
        )
    ]
    for form, what in EXPORTS.items():
        entries.append(
            (
                f"Preset: export as {form}",
                partial(export_settings, host, form),
                f"Copy the live settings as {what}",
            )
        )
    return entries


class PresetCommands(Provider):
    """Command palette entries that import and export presets."""

    def _entries(self) -> list[tuple[str, Callable[[], object], str]]:
        app = self.app
        return command_entries(app) if isinstance(app, PresetHost) else []

    async def discover(self) -> Hits:
        for title, callback, help_text in self._entries():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, text=title, help=help_text)
