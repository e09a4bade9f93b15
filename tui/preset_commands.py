"""Command palette entries for presets: reset the sliders, apply a preset to them,
save them as a preset, import another tool's preset file, export the live settings
for another tool (as `samplescope preset import/export` do).

An import is saved among the user's presets (as `preset import` saves it) and made
the live settings; an export is copied to the clipboard and shown. Every field that
has no counterpart is listed, never dropped silently. The sampling panel's
"settings" group offers the first three as buttons.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits

from backend.chat.protocol import LiveSettings
from backend.config.paths import user_file, user_presets_path
from backend.config.preset_exports import EXPORTS, exported_text
from backend.config.preset_files import imported_settings, read_preset_file, save_user_preset
from backend.config.preset_interchange import PresetFormatError, Unmapped
from backend.config.presets import PresetError
from backend.errors import FileAccessError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import registry_of
from sampling.settings.summary import settings_summary
from tui.palette_entries import OncePerPalette
from tui.resources import available_presets
from tui.widgets.entry import ValueEntryScreen
from tui.widgets.text_view import TextViewScreen


@runtime_checkable
class PresetHost(Protocol):
    """An app whose live settings presets go in and out of."""

    live: LiveSettings

    def apply_settings(self, settings: SamplerSettings) -> None:
        """Make `settings` the live settings (from the next token) and show them."""
        ...

    def reset_settings(self) -> None:
        """Make the settings the app started with live again."""
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


def apply_preset(host: PresetHost, name: str, settings: SamplerSettings) -> None:
    """Put a preset on the sliders; the seed stays the chat's."""
    host.apply_settings(settings.with_changes(seed=host.live.current.seed))
    host.notify(f"Preset {name!r} is on the sliders: {settings_summary(settings)}", timeout=10)


def ask_preset_name(host: PresetHost, presets_file: Path | None = None) -> None:
    """Ask for a name, then save the sliders as a preset of that name."""
    host.push_screen(
        ValueEntryScreen(
            "the new preset's name",
            "",
            "saved among your presets (compare, `generate --preset` and this palette"
            " offer it); the seed is left out",
        ),
        lambda typed: save_sliders(host, typed.strip(), presets_file) if typed else None,
    )


def save_sliders(host: PresetHost, name: str, presets_file: Path | None = None) -> bool:
    """Save the live settings (but the seed) as the user's preset `name`; whether saved."""
    target = user_presets_path() if presets_file is None else presets_file
    settings = host.live.current.with_changes(seed=SamplerSettings().seed)
    try:
        save_user_preset(target, name, settings)
    except PresetError as error:
        host.notify(str(error), severity="error", timeout=20)
        return False
    host.notify(f"Saved the sliders as preset {name!r} in {target}", timeout=10)
    return True


def export_settings(host: PresetHost, form: str) -> str:
    """Copy the live settings in `form` to the clipboard and show them whole; the text."""
    text, unmapped = exported_text(host.live.current, form)
    host.copy_to_clipboard(text)
    note = "Copied to the clipboard. Esc closes."
    if unmapped:
        note += "\nNot in this form: " + _listed(unmapped)
    # A box that scrolls, not a notice: a request body is taller than the screen.
    host.push_screen(TextViewScreen(f"The settings as {EXPORTS[form]}", text, note))
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
        imported = read_preset_file(path, registry=registry_of(host.live.current))
        settings = imported_settings(imported, registry_of(host.live.current))
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
            "Settings: reset",
            host.reset_settings,
            "Put the settings samplescope started with back on the sliders",
        ),
        (
            "Preset: save the sliders as…",
            partial(ask_preset_name, host),
            "Save the live settings among your presets, under a name you give",
        ),
    ]
    try:
        presets = available_presets(registry_of(host.live.current))
    except (PresetError, OSError) as error:
        presets = {}
        problem = str(error)
    else:
        problem = ""
    for name, settings in presets.items():
        entries.append(
            (
                f"Preset: apply {name}",
                partial(apply_preset, host, name, settings),
                f"Put it on the sliders: {settings_summary(settings)}",
            )
        )
    if problem:
        entries.append(("Preset: apply (unavailable)", lambda: None, problem))
    entries += [
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


class PresetCommands(OncePerPalette[tuple[str, Callable[[], object], str]]):
    """Command palette entries that import and export presets."""

    def make_entries(self) -> list[tuple[str, Callable[[], object], str]]:
        """The preset commands (the presets files read and each preset summarised)."""
        app = self.app
        return command_entries(app) if isinstance(app, PresetHost) else []

    async def discover(self) -> Hits:
        for title, callback, help_text in self.entries():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self.entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, text=title, help=help_text)
