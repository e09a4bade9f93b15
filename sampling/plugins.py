"""A user's own sampler units, registered next to the built-in ones.

A plugin unit has the interface of every unit (`sampling.samplers.unit`) and is the
same kind of thing as a built-in one: it joins the names an order may hold, it
declares its parameter record (`params`, fields made by `setting`, or only `specs`,
from which the record is made), its settings join the registry's (so they get
flags, panel controls and compare keys) with their values held in its record in the
settings (`SamplerSettings.of`), and its cuts carry its name and labels like a
built-in's. `joined` checks one unit and returns a registry with it, and with where
it came from (the file and its sha256); the front door hands the registry it ends
with to what it runs (`sampling.settings.registry`). Nothing here holds plugins: a
registry does.

What a plugin file imports: `Candidates`, `IN_ORDER` (its placement: a place in the
order), `SettingSpec`, `SliderRange`, `setting` and `Stateless` from here.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from sampling.built_in import BUILT_IN_UNITS
from sampling.candidates import Candidates
from sampling.errors import SamplescopeError
from sampling.samplers.base import Report, UnitBase
from sampling.samplers.unit import SamplerUnit, Stateless, UnitState
from sampling.settings.params import record_of_specs, setting, specs_of
from sampling.settings.placement import IN_ORDER
from sampling.settings.registry import PluginOrigin, Registry, registry_of
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.samplers.unit import StepContext
    from sampling.settings.record import SamplerSettings

__all__ = ["IN_ORDER", "Candidates", "PluginError", "PluginOrigin", "SettingSpec", "SliderRange"]
__all__ += ["setting"]
__all__ += ["PluginFailure", "PluginGuard", "Stateless"]
__all__ += ["files_problem", "files_used", "joined"]

_BUILTIN_NAMES = frozenset(unit.name for unit in BUILT_IN_UNITS)
_RESERVED_NAMES = frozenset(("none", "greedy", ""))
_INTERFACE = ("is_on", "from_settings", "begin", "apply", "accept", "reset", "state", "restore")


class PluginError(SamplescopeError, ValueError):
    """A sampler plugin cannot be used; the message names it and what is wrong."""


_MADE_RECORDS: dict[tuple[str, tuple[SettingSpec, ...]], type[Any]] = {}
"""The records made for plugins that declare only their specs: one per name and specs,
so that a file loaded again makes the same record."""


def joined(registry: Registry, unit: type[SamplerUnit], path: str, sha256: str) -> Registry:
    """`registry` with a plugin unit added (the same file again changes nothing).

    Raises:
        PluginError: The unit lacks part of the interface, its name or a setting's
            name is taken, or a declaration is malformed.
    """
    problem = _problem(unit, registry)
    if problem is not None:
        raise PluginError(f"sampler plugin {path}: {problem}")
    known = registry.origins.get(unit.name)
    if known is not None:
        if known.sha256 == sha256:
            return registry
        raise PluginError(
            f"sampler plugin {path}: a sampler named {unit.name!r} came already from {known.path}"
        )
    if getattr(unit, "params", None) is None:  # declared by its specs alone
        made = _MADE_RECORDS.setdefault(
            (unit.name, unit.specs), record_of_specs(unit.name, unit.specs)
        )
        setattr(unit, "params", made)  # noqa: B010
    setattr(unit, "specs", specs_of(unit.params))  # noqa: B010
    return registry.with_plugin(unit, PluginOrigin(unit.name, path, sha256))


def _problem(unit: type[SamplerUnit], registry: Registry) -> str | None:
    """What is wrong with a unit's declaration, or None."""
    name = getattr(unit, "name", None)
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        return f"its name must be a Python identifier, not {name!r}"
    built_in = {*_BUILTIN_NAMES, *(unit.name for unit in registry.built_in)}
    if name in built_in or name in _RESERVED_NAMES:
        return f"{name!r} is the name of a built-in sampler"
    missing = [part for part in _INTERFACE if not hasattr(unit, part)]
    if missing:
        return f"{name} lacks {', '.join(missing)} (derive it from Stateless for the defaults)"
    if getattr(unit, "kind", None) not in ("logits", "candidates"):
        return f"{name}'s kind must be 'logits' or 'candidates'"
    placement = getattr(unit, "placement", None)
    if placement is None and getattr(unit, "in_order", None) is True:
        placement = IN_ORDER  # how plugins said it before placements
    if placement != IN_ORDER:
        return f"{name} must set placement = IN_ORDER (a plugin runs where the order puts it)"
    for attribute in ("label", "row_label"):
        if not isinstance(getattr(unit, attribute, None), str):
            return f"{name}'s {attribute} must be a text"
    titles = getattr(unit, "group_titles", None)
    if not isinstance(titles, Mapping):
        return f"{name}'s group_titles must map each of its groups to a title"
    params = getattr(unit, "params", None)
    specs: tuple[SettingSpec, ...]
    if params is not None:
        try:
            specs = specs_of(params)
        except TypeError as error:
            return f"{name}'s params: {error}"
    else:
        declared = getattr(unit, "specs", None)
        if not isinstance(declared, tuple) or not all(isinstance(s, SettingSpec) for s in declared):
            return (
                f"{name} must declare params (a frozen dataclass of setting(SettingSpec(...))"
                " fields) or specs (a tuple of SettingSpec)"
            )
        specs = declared
    for spec in specs:
        owner = _owner_of(spec.name, registry)
        if owner is not None and owner != name:
            return f"setting {spec.name!r} belongs to {owner} already"
        if spec.kind == "order":
            return f"setting {spec.name!r}: a plugin cannot declare an order"
        if not spec.accepts(spec.default):
            return f"setting {spec.name!r}: its default {spec.default!r} is not valid"
        if spec.group not in titles and spec.group not in registry.group_titles:
            return f"setting {spec.name!r}: group {spec.group!r} has no title in group_titles"
    return None


def _owner_of(setting: str, registry: Registry) -> str | None:
    """The unit (or "the sampler") that declares a setting, or None."""
    for unit in (*BUILT_IN_UNITS, *registry.units):
        if any(spec.name == setting for spec in unit.specs):
            return unit.name
    known = registry.settings_by_name
    return "the sampler" if setting in known else None


class PluginFailure(SamplescopeError):
    """A plugin unit failed on a step: it raised, left NaN, or removed every token.

    Attributes:
        name: The unit's name.
        problem: What went wrong.
    """

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"sampler plugin {name} switched off for this reply: {problem}")
        self.name = name
        self.problem = problem


class PluginGuard:
    """A plugin unit inside the chain, watched: whatever goes wrong in it becomes a
    `PluginFailure` naming it, so the sampler can switch it off and go on.

    After it applies, the kept set must hold a token, the logits no NaN, the
    temperature a positive number, and the kept tokens some probability mass.
    """

    __slots__ = ("draws", "keeps_state", "kind", "name", "placement", "reports", "unit")

    def __init__(self, unit: SamplerUnit) -> None:
        self.unit = unit
        self.name = unit.name
        self.kind = unit.kind
        self.placement = IN_ORDER
        self.draws = unit.draws
        # A plugin that says nothing of its state keeps one unless it is `Stateless`.
        self.keeps_state = bool(getattr(unit, "keeps_state", not isinstance(unit, Stateless)))
        report = getattr(type(unit), "report", None)
        self.reports = callable(report) and report is not UnitBase.report

    @classmethod
    def build(cls, unit: type[SamplerUnit], settings: SamplerSettings) -> PluginGuard | None:
        """The plugin built from the settings, watched (None when they turn it off).

        Raises:
            PluginFailure: Its `from_settings` raised.
        """
        try:
            built = unit.from_settings(settings)
        except Exception as error:  # a plugin's error of any kind is reported, named
            raise PluginFailure(unit.name, f"{type(error).__name__}: {error}") from error
        return None if built is None else cls(built)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PluginGuard) and other.unit == self.unit

    def __hash__(self) -> int:
        return hash((PluginGuard, self.name))

    def begin(self, step: StepContext) -> None:
        """The plugin's `begin`, watched."""
        self._watch(lambda: self.unit.begin(step))

    def apply(self, candidates: Candidates) -> None:
        """The plugin's `apply`, watched, then the candidates checked. The logits it
        was handed (the caller's: the step's raw record) are put back if it wrote into
        them, and it is switched off."""
        logits = candidates.logits
        before = logits.copy()
        try:
            self._watch(lambda: self.unit.apply(candidates))
        finally:
            written = not np.array_equal(logits, before, equal_nan=True)
            if written:
                logits[...] = before
        if written:
            raise PluginFailure(
                self.name, "it wrote into the logits it was given (replace_logits hands on a copy)"
            )
        problem = _unlike(candidates, before) or _broken(candidates)
        if problem is not None:
            raise PluginFailure(self.name, problem)

    def accept(self, token: int, prob: float) -> None:
        """The plugin's `accept`, watched."""
        self._watch(lambda: self.unit.accept(token, prob))

    def report(self) -> Report | None:
        """The plugin's `report`, watched: a mapping of names to figures (numbers,
        yes/no, texts), or None."""
        try:
            report = self.unit.report()
        except Exception as error:  # a plugin's error of any kind is reported, named
            raise PluginFailure(self.name, f"{type(error).__name__}: {error}") from error
        if report is None:
            return None
        if not isinstance(report, Mapping):
            raise PluginFailure(self.name, "its report must map names to numbers, yes/no or texts")
        # numpy's numbers are taken as Python's (what the step's record stores).
        figures = {
            key: value.item() if isinstance(value, np.generic) else value
            for key, value in report.items()
        }
        if not all(
            isinstance(key, str) and (value is None or isinstance(value, int | float | str))
            for key, value in figures.items()
        ):
            raise PluginFailure(self.name, "its report must map names to numbers, yes/no or texts")
        return figures

    def reset(self) -> None:
        """The plugin's `reset`, watched."""
        self._watch(self.unit.reset)

    @property
    def state(self) -> UnitState:
        """The plugin's state, watched."""
        try:
            return self.unit.state
        except Exception as error:  # a plugin's error of any kind is reported, named
            raise PluginFailure(self.name, f"{type(error).__name__}: {error}") from error

    def restore(self, state: UnitState) -> None:
        """The plugin's `restore`, watched."""
        self._watch(lambda: self.unit.restore(state))

    def _watch(self, call: Callable[[], object]) -> None:
        try:
            call()
        except PluginFailure:
            raise
        except Exception as error:  # a plugin's error of any kind switches it off
            raise PluginFailure(self.name, f"{type(error).__name__}: {error}") from error


def _unlike(candidates: Candidates, before: np.ndarray) -> str | None:
    """What a plugin made of the candidates that no unit may: logits of another shape,
    a kept id outside the vocabulary, a logit of +inf (`before`: the logits it got)."""
    logits, ids = candidates.logits, candidates.ids
    if not isinstance(logits, np.ndarray) or logits.shape != before.shape:
        shape = getattr(logits, "shape", type(logits).__name__)
        return f"it changed the logits' shape from {before.shape} to {shape}"
    if ids is not None:
        if not isinstance(ids, np.ndarray) or ids.ndim != 1 or ids.dtype.kind not in "iu":
            return "its kept set is not a list of token ids"
        low, high = (int(ids.min()), int(ids.max())) if ids.size else (0, 0)
        if low < 0 or high >= before.shape[0]:
            bad = low if low < 0 else high
            return f"it kept token id {bad}, outside the vocabulary (0 to {before.shape[0] - 1})"
    if np.isposinf(logits).any() and not np.isposinf(before).any():
        return "it set a logit to +inf"
    return None


def _broken(candidates: Candidates) -> str | None:
    """What a plugin left broken in the candidates, or None."""
    if candidates.size == 0:
        return "it removed every token"
    if math.isnan(float(np.max(candidates.logits))):
        return "it left NaN in the logits"
    temperature = candidates.temperature
    if not (math.isfinite(temperature) and temperature > 0.0):
        return f"it set the temperature to {temperature}"
    mass = float(candidates.weights().sum())
    if mass != mass:
        return "it left NaN in the probabilities"
    if mass <= 0.0:
        return "it left the kept tokens no probability"
    return None


def files_used(settings: SamplerSettings) -> dict[str, str]:
    """Each plugin the settings' order runs, with its file's SHA-256 (what a stored
    reply keeps, so that replay can tell the file it ran)."""
    origins = registry_of(settings).origins
    return {name: origins[name].sha256 for name in settings.samplers if name in origins}


def files_problem(used: Mapping[str, str], registry: Registry) -> str | None:
    """Why a reply that ran the plugins `used` (name → SHA-256) cannot run again with
    `registry`, or None when each is loaded from the very same file content."""
    for name, sha256 in used.items():
        origin = registry.origins.get(name)
        if origin is None:
            return (
                f"it ran the sampler plugin {name!r} (file SHA-256 {sha256[:12]}…), which is"
                " not loaded: put its file in the config folder's samplers/ or give"
                " --sampler-file PATH"
            )
        if origin.sha256 != sha256:
            return (
                f"it ran the sampler plugin {name!r}, which is loaded, but from a file whose"
                f" content changed: it ran SHA-256 {sha256[:12]}…, {origin.path} holds"
                f" SHA-256 {origin.sha256[:12]}… (put back the file it ran)"
            )
    return None
