"""Pack a sampling step's record (`sampling.records.Step`) into one compact row.

The packing is derived from the dataclasses' fields, so a field added to `Step` or
to `CandidateTable` is stored without a change here:

- `Step`'s scalar fields (everything but `table` and `settings`; the settings are
  stored once per change in `settings_changes`) go into a JSON list (`scalars`);
  a value JSON cannot hold as it is (e.g. a numpy number) is stored as a float, an
  int or a string, in that order of preference.
- `CandidateTable`'s numeric and boolean columns go into one BLOB (`arrays`): the
  columns back to back, floats as float32, integers as int32, booleans as one byte.
  Columns of another kind (strings, objects) go into the JSON list as lists.

- `Step.reports` (what each unit reported, by unit name) go into their own JSON
  column (`reports`), NULL when no unit reported (a list of tokens with a number each,
  guidance's top tokens, as a list of [token, number] pairs, read back as a tuple of
  pairs); they are encoded here, when the step is stored, never while it is sampled.

The layout (field names and how each is packed) is stored once per reply
(`replies.step_layout`), so the rows carry values only: with the default 20
candidates a row is ~90 bytes of JSON plus 4 × 20 × 4 = 320 bytes of columns.
A field missing from an older row is filled with its dataclass default, else None.
Rows stored before units reported (schema 7 and earlier) kept four unit figures as
fields of their own (`LEGACY_FIGURES`): they are read back as those units' reports.
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from sampling.records import CandidateTable, Step
from sampling.sections import Section
from sampling.settings.record import SamplerSettings
from sampling.thinking_settings import thinking_record

#: Step fields that are not stored in the row: the table is packed as columns, the
#: settings once per change, and the tail plot's deeper ranks (2 KB a token, recorded
#: only while that plot is shown) are a view of the moment, read back as None.
NOT_IN_ROW = frozenset({"table", "settings", "tail", "reports", "given"})

LEGACY_FIGURES: dict[str, tuple[str, str]] = {
    "mirostat_mu": ("mirostat", "mu"),
    "adapted_target": ("adaptive_p", "target"),
    "grammar_removed": ("grammar", "removed"),
    "forced": ("grammar", "forced"),
}
"""The fields a step's row held before units reported (schema 7 and earlier), each
with the unit and figure it is now: (unit name, figure name). A None is no report;
"forced" is kept only beside the grammar's "removed"."""


@dataclass(frozen=True, slots=True)
class StepLayout:
    """How one reply's step rows are packed.

    Attributes:
        scalars: The JSON list's entries: Step field names, then "table.<name>" for
            table columns stored as JSON.
        arrays: (table field name, numpy dtype string) of the BLOB's columns, in order.
    """

    scalars: tuple[str, ...]
    arrays: tuple[tuple[str, str], ...]

    def to_json(self) -> str:
        """The layout as stored in `replies.step_layout`."""
        return json.dumps({"scalars": list(self.scalars), "arrays": [list(a) for a in self.arrays]})

    @classmethod
    def from_json(cls, text: str) -> StepLayout:
        """Read a stored layout.

        Raises:
            ValueError: The text is not a layout.
        """
        values = json.loads(text)
        return cls(
            tuple(str(name) for name in values["scalars"]),
            tuple((str(name), str(dtype)) for name, dtype in values["arrays"]),
        )


def _packed_dtype(array: npt.NDArray[Any]) -> str | None:
    """The dtype a column is stored as, or None when it goes into the JSON list."""
    kind = array.dtype.kind
    if kind == "f":
        return "<f4"
    if kind in "iu":
        return "<i4" if kind == "i" else "<u4"
    if kind == "b":
        return "|b1"
    return None


def layout_of(step: Step) -> StepLayout:
    """The layout of rows packed from steps shaped like `step`."""
    scalars = [f.name for f in fields(Step) if f.name not in NOT_IN_ROW]
    arrays: list[tuple[str, str]] = []
    for f in fields(CandidateTable):
        dtype = _packed_dtype(np.asarray(getattr(step.table, f.name)))
        if dtype is None:
            scalars.append(f"table.{f.name}")
        else:
            arrays.append((f.name, dtype))
    return StepLayout(tuple(scalars), tuple(arrays))


def _plain(value: object) -> object:
    """A JSON-ready form of one scalar value."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, list | tuple | np.ndarray):
        return [_plain(v) for v in value]
    return str(value)


def pack_step(step: Step, layout: StepLayout) -> tuple[str, bytes]:
    """One row's scalars and arrays: (scalars JSON, arrays BLOB)."""
    values: list[object] = []
    for name in layout.scalars:
        if name.startswith("table."):
            values.append(_plain(list(np.asarray(getattr(step.table, name[6:])).tolist())))
        else:
            values.append(_plain(getattr(step, name)))
    blob = b"".join(
        np.ascontiguousarray(np.asarray(getattr(step.table, name)), dtype=dtype).tobytes()
        for name, dtype in layout.arrays
    )
    return json.dumps(values, separators=(",", ":")), blob


def pack_reports(step: Step) -> str | None:
    """One row's `reports` column: the units' reports as JSON, None when none."""
    return json.dumps(step.reports, separators=(",", ":")) if step.reports else None


def _default(field_default: object, factory: object) -> object:
    if field_default is not MISSING:
        return field_default
    if factory is not MISSING and callable(factory):
        return factory()
    return None


def _scalar(value: object) -> object:
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return value


def _figure(value: object) -> object:
    """A reported figure as the unit reported it: a list of [token, number] pairs back
    to a tuple of pairs (`sampling.samplers.base.TokenFigures`), a non-finite float's
    text back to the float."""
    if isinstance(value, list):
        return tuple((int(token), float(number)) for token, number in value)
    return _scalar(value)


def _reports(text: str | None, named: dict[str, object]) -> dict[str, dict[str, object]]:
    """A row's reports: its `reports` column, or an older row's fields that held them
    (`LEGACY_FIGURES`).

    Raises:
        ValueError: The column is not a JSON object of objects.
    """
    if text is not None:
        reports = json.loads(text)
        if not isinstance(reports, dict) or not all(isinstance(r, dict) for r in reports.values()):
            raise ValueError("a step's reports are not a JSON object of objects")
        return {
            str(unit): {str(k): _figure(v) for k, v in r.items()} for unit, r in reports.items()
        }
    found: dict[str, dict[str, object]] = {}
    for field_name, (unit, figure) in LEGACY_FIGURES.items():
        value = named.get(field_name)
        if value is not None and (figure != "forced" or unit in found):
            found.setdefault(unit, {})[figure] = _scalar(value)
    return found


def unpack_step(
    scalars: str,
    blob: bytes,
    layout: StepLayout,
    settings: SamplerSettings,
    reports: str | None = None,
) -> Step:
    """A Step from a row (the inverse of `pack_step`, floats at float32 precision).

    Raises:
        ValueError: The row does not match the layout.
    """
    values = json.loads(scalars)
    if len(values) != len(layout.scalars):
        raise ValueError(f"a step row has {len(values)} values, its layout {len(layout.scalars)}")
    named = dict(zip(layout.scalars, values, strict=True))
    width = sum(np.dtype(dtype).itemsize for _, dtype in layout.arrays)
    rows = len(blob) // width if width else 0
    if rows * width != len(blob):
        raise ValueError(f"a step row's columns take {len(blob)} bytes, not a multiple of {width}")
    table: dict[str, object] = {}
    offset = 0
    for name, dtype in layout.arrays:
        size = np.dtype(dtype).itemsize * rows
        column = np.frombuffer(blob, dtype=dtype, count=rows, offset=offset)
        offset += size
        kind = column.dtype.kind
        table[name] = column.astype(
            np.float64 if kind == "f" else np.intp if kind in "iu" else bool
        )
    for name, value in named.items():
        if name.startswith("table."):
            table[name[6:]] = np.asarray(value)
    table_args: dict[str, Any] = {
        f.name: table[f.name] if f.name in table else _default(f.default, f.default_factory)
        for f in fields(CandidateTable)
    }
    step_args: dict[str, Any] = {}
    for f in fields(Step):
        if f.name == "table":
            step_args["table"] = CandidateTable(**table_args)
        elif f.name == "settings":
            step_args["settings"] = settings
        elif f.name == "given":
            step_args["given"] = None
        elif f.name == "reports":
            step_args["reports"] = _reports(reports, named)
        elif f.name in named:
            step_args[f.name] = _scalar(named[f.name])
        else:
            step_args[f.name] = _default(f.default, f.default_factory)
    step_args["section"] = Section(step_args["section"])
    if step_args["thinking_open"]:  # sampled with the thinking's record drawn from these
        thinking = thinking_record(settings)
        if thinking is not None:
            step_args["settings"], step_args["given"] = thinking, settings
    return Step(**step_args)
