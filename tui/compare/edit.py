"""The compare view's edit form: the seed, and each column's source.

A column is a preset (from `assets/presets.toml`), or the current sliders with one
field changed (field + value), or left as it is; columns 3 and 4 can be switched
off. The form dismisses with a `CompareRequest`, or None when cancelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from sampling.errors import SamplescopeError
from sampling.samplers.temperature import TemperatureParams
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import registry_of
from tui.compare.columns import (
    MAX_COLUMNS,
    MIN_COLUMNS,
    CompareColumn,
    check_column_count,
    coerce_value,
    compare_fields,
    format_value,
    varied_columns,
)

OFF = "off"
VARY = "vary"
KEEP = "keep"
PRESET_PREFIX = "preset:"


@dataclass(frozen=True, slots=True)
class CompareRequest:
    """What the edit form asks for: a seed and 2 to 4 columns."""

    seed: int
    columns: tuple[CompareColumn, ...]


def changed_fields(base: SamplerSettings, settings: SamplerSettings) -> list[str]:
    """The fields a column may vary (not the seed) where `settings` differs from `base`."""
    return [
        spec.name
        for spec in registry_of(base).settings
        if spec.per_column and getattr(base, spec.name) != getattr(settings, spec.name)
    ]


def same_settings(a: SamplerSettings, b: SamplerSettings) -> bool:
    """Whether two settings are equal apart from the seed."""
    return a.with_changes(seed=0) == b.with_changes(seed=0)


def initial_source(
    column: CompareColumn, base: SamplerSettings, presets: dict[str, SamplerSettings]
) -> tuple[str, str]:
    """The form's starting choice for a column: (source, field to vary)."""
    preset = presets.get(column.label)
    if preset is not None and same_settings(preset, column.settings):
        return PRESET_PREFIX + column.label, "temperature"
    changed = changed_fields(base, column.settings)
    if len(changed) == 1 and changed[0] in compare_fields(registry_of(base)).editable:
        return VARY, changed[0]
    return KEEP, "temperature"  # the sliders themselves, or several fields changed


class CompareEditScreen(ModalScreen[CompareRequest | None]):
    """Edit the seed and the columns, then run the comparison again.

    Args:
        seed: The current seed.
        columns: The current columns.
        base: The current sliders ("one field changed" starts from them).
        presets: The presets to offer, by name.
    """

    DEFAULT_CSS = """
    CompareEditScreen {
        align: center middle;
    }
    CompareEditScreen #edit-dialog {
        width: 110;
        height: auto;
        max-height: 100%;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    CompareEditScreen .edit-row {
        height: auto;
    }
    CompareEditScreen .edit-row Label {
        width: 10;
        padding: 1 1 0 0;
    }
    CompareEditScreen .edit-source {
        width: 44;
    }
    CompareEditScreen .edit-field {
        width: 26;
    }
    CompareEditScreen .edit-value {
        width: 1fr;
    }
    CompareEditScreen #edit-seed {
        width: 30;
    }
    CompareEditScreen #edit-error {
        color: $error;
        height: auto;
    }
    CompareEditScreen #edit-buttons {
        height: auto;
        align-horizontal: right;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "run", "Run"),
    ]

    def __init__(
        self,
        seed: int,
        columns: Sequence[CompareColumn],
        base: SamplerSettings,
        presets: dict[str, SamplerSettings],
    ) -> None:
        super().__init__()
        self._seed = seed
        self._columns = list(columns)
        self._base = base
        self._presets = presets

    def _source_options(self, index: int) -> list[tuple[str, str]]:
        options: list[tuple[str, str]] = []
        if index >= MIN_COLUMNS:
            options.append(("(off)", OFF))
        options.extend((f"preset: {name}", PRESET_PREFIX + name) for name in self._presets)
        options.append(("current sliders, one field changed", VARY))
        if index < len(self._columns):
            column = self._columns[index]
            options.append((f"as is: {column.label}", KEEP))
        return options

    def compose(self) -> ComposeResult:
        registry = registry_of(self._base)
        with Vertical(id="edit-dialog"):
            yield Static(
                "Edit the comparison (one seed for every column) · ctrl+s runs · esc cancels",
                markup=False,
            )
            with Horizontal(classes="edit-row"):
                yield Label("Seed")
                yield Input(str(self._seed), id="edit-seed", restrict=r"[0-9]*")
            for i in range(MAX_COLUMNS):
                if i < len(self._columns):
                    column = self._columns[i]
                    source, field = initial_source(column, self._base, self._presets)
                    value = getattr(column.settings, field)
                else:
                    source, field, value = (
                        OFF,
                        "temperature",
                        self._base.of(TemperatureParams).temperature,
                    )
                with Horizontal(classes="edit-row"):
                    yield Label(f"Column {i + 1}")
                    yield Select(
                        self._source_options(i),
                        value=source,
                        allow_blank=False,
                        id=f"edit-source-{i}",
                        classes="edit-source",
                    )
                    yield Select(
                        [(name, name) for name in compare_fields(registry).editable],
                        value=field,
                        allow_blank=False,
                        id=f"edit-field-{i}",
                        classes="edit-field",
                    )
                    yield Input(
                        format_value(value, field, registry),
                        id=f"edit-value-{i}",
                        classes="edit-value",
                    )
            yield Static("", id="edit-error", markup=False)
            with Horizontal(id="edit-buttons"):
                yield Button("Run", variant="primary", id="edit-run")
                yield Button("Cancel", id="edit-cancel")

    def on_mount(self) -> None:
        for i in range(MAX_COLUMNS):
            self._sync_row(i)
        self.query_one("#edit-seed", Input).focus()

    def _sync_row(self, index: int) -> None:
        """Field and value are editable only for a "one field changed" column."""
        source = self.query_one(f"#edit-source-{index}", Select).value
        vary = source == VARY
        self.query_one(f"#edit-field-{index}", Select).disabled = not vary
        self.query_one(f"#edit-value-{index}", Input).disabled = not vary

    @on(Select.Changed, ".edit-source")
    def _on_source_changed(self, event: Select.Changed) -> None:
        self._sync_row(_row_of(event.select.id))

    @on(Select.Changed, ".edit-field")
    def _on_field_changed(self, event: Select.Changed) -> None:
        index = _row_of(event.select.id)
        if isinstance(event.value, str):
            value = getattr(self._base, event.value)
            self.query_one(f"#edit-value-{index}", Input).value = format_value(
                value, event.value, registry_of(self._base)
            )

    @on(Button.Pressed, "#edit-run")
    def action_run(self) -> None:
        """Validate the form and dismiss with the request (or show what is wrong)."""
        try:
            request = self.build_request()
        except SamplescopeError as exc:
            self.query_one("#edit-error", Static).update(str(exc))
            return
        self.dismiss(request)

    @on(Button.Pressed, "#edit-cancel")
    def action_cancel(self) -> None:
        """Close the form without changing anything."""
        self.dismiss(None)

    def build_request(self) -> CompareRequest:
        """The request the form describes.

        Raises:
            SettingsError: The seed or a value is not valid, or too few columns.
        """
        typed_seed = (
            registry_of(self._base)
            .settings_by_name["seed"]
            .parse(self.query_one("#edit-seed", Input).value)
        )
        seed = SamplerSettings().with_changes(seed=typed_seed).seed  # validates the range
        columns: list[CompareColumn] = []
        for i in range(MAX_COLUMNS):
            source = self.query_one(f"#edit-source-{i}", Select).value
            if source == OFF:
                continue
            if source == KEEP:
                columns.append(self._columns[i])
            elif isinstance(source, str) and source.startswith(PRESET_PREFIX):
                name = source[len(PRESET_PREFIX) :]
                columns.append(CompareColumn(name, self._presets[name]))
            else:
                field = self.query_one(f"#edit-field-{i}", Select).value
                assert isinstance(field, str)
                text = self.query_one(f"#edit-value-{i}", Input).value
                value = coerce_value(field, text, registry_of(self._base))
                columns.extend(varied_columns(self._base, field, [value]))
        check_column_count(len(columns))
        return CompareRequest(seed, tuple(columns))


def _row_of(widget_id: str | None) -> int:
    return int((widget_id or "0").rsplit("-", 1)[-1])
