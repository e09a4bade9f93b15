"""The chain: sampler units in order, built once whenever the settings change.

The order is data: a tuple of unit names (llama.cpp's `--samplers` names) looked up
in the registry's `samplers`, the settings' `samplers` as `SamplerSettings.order`
places the temperature in it (see there). `build_chain` also takes any other order.
Which units run, and where, is what each declares (`sampling.settings.placement`): the
order's units run exactly as it names them, and the units outside it (the logit
bias, a ban, a grammar, mirostat) where their placement says. The chain names no
unit: what a step needs beyond the candidates reaches the units through `begin`
(`StepContext`), and a unit placed last may reshape the distribution the chain ends
with (`Reshaping`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sampling.errors import SettingsError
from sampling.kept import Kept, greedy_kept
from sampling.plugins import PluginFailure, PluginGuard
from sampling.samplers.base import Report, UnitBase
from sampling.samplers.unit import Reshaping, RunningUnit, Stateless, StepContext, UnitState
from sampling.settings.placement import arranged
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of

if TYPE_CHECKING:
    from sampling.candidates import Candidates

__all__ = ["Chain", "build_chain", "checked_order"]


@dataclass(frozen=True, slots=True)
class Chain:
    """The units one sampler runs every step, in order, and every unit it holds.

    Attributes:
        order: The names the chain was built from (units the settings turn off
            included).
        units: The units that run, in order.
        greedy: Temperature 0: only the "logits" units run, and the argmax is kept.
        held: Every unit the settings turn on, by name, whether or not it runs: a
            unit keeps its state (and draws its coin) while the order leaves it out
            or the temperature is 0.
        drawing: The held units that hear each step's context (`begin`).
        accepting: The running units that keep state, which hear each token drawn.
        reshaping: The unit placed last that ends the chain and reshapes the
            distribution it ends with (adaptive-p), or None.
        reporting: The running units that report figures of their step (`reports`).
    """

    order: tuple[str, ...]
    units: tuple[RunningUnit, ...]
    greedy: bool
    held: Mapping[str, RunningUnit] = field(default_factory=dict)
    drawing: tuple[RunningUnit, ...] = ()
    accepting: tuple[RunningUnit, ...] = ()
    reshaping: Reshaping | None = None
    reporting: tuple[RunningUnit, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the units that run."""
        return tuple(unit.name for unit in self.units)

    @property
    def keeping_state(self) -> tuple[str, ...]:
        """The held units whose state follows from the draws they heard
        (`SamplerUnit.keeps_state`), by name: what the tokens so far do not give back."""
        return tuple(name for name, unit in self.held.items() if unit.keeps_state)

    def reports(self) -> dict[str, Report]:
        """What each running unit reports of the step just run, by its name (after
        `run`, before `accept`).

        Raises:
            PluginFailure: A plugin's report failed.
        """
        found: dict[str, Report] = {}
        for unit in self.reporting:
            report = unit.report()
            if report is not None:
                found[unit.name] = report
        return found

    def state_of(self, name: str) -> UnitState:
        """The state of the held unit `name` (None when it is not held or keeps none)."""
        unit = self.held.get(name)
        return None if unit is None else unit.state

    def begin(self, step: StepContext, every: bool = False) -> None:
        """Hand the step's context to the units that hear it each step (before `run`),
        or to every held unit (`every`: a step resuming a reply elsewhere)."""
        for unit in self.held.values() if every else self.drawing:
            unit.begin(step)

    def run(self, candidates: Candidates) -> Kept:
        """Apply every unit to one step's candidates; return the distribution they end with."""
        for unit in self.units:
            unit.apply(candidates)
        if self.greedy:
            # The first kept token: the argmax, or the most probable one a grammar allows.
            best = int(candidates.head(1)[0])
            return greedy_kept(best, tuple(candidates.bans), tuple(candidates.cuts))
        kept = candidates.distribution()
        if self.reshaping is None:
            return kept
        return self.reshaping.reshape(kept, candidates)

    def accept(self, token: int, prob: float) -> None:
        """Tell the units that ran which token was drawn, with its probability.

        Raises:
            PluginFailure: A plugin failed (every other unit heard the token).
        """
        failed: PluginFailure | None = None
        for unit in self.accepting:
            try:
                unit.accept(token, prob)
            except PluginFailure as failure:
                failed = failed or failure
        if failed is not None:
            raise failed

    def reset(self) -> None:
        """Start every unit's state afresh."""
        for unit in self.held.values():
            unit.reset()

    def without(self, name: str) -> Chain:
        """The same chain (the very same units) with the unit `name` left out."""
        held = {key: unit for key, unit in self.held.items() if key != name}
        reshaping = self.reshaping
        if reshaping is not None and self.units and self.units[-1].name == name:
            reshaping = None
        return replace(
            self,
            units=tuple(unit for unit in self.units if unit.name != name),
            held=held,
            drawing=tuple(unit for unit in self.drawing if unit.name != name),
            accepting=tuple(unit for unit in self.accepting if unit.name != name),
            reshaping=reshaping,
            reporting=tuple(unit for unit in self.reporting if unit.name != name),
        )

    @property
    def state(self) -> tuple[tuple[str, UnitState], ...]:
        """Each held unit's state, by name (units without state left out)."""
        return tuple(
            (name, state) for name, unit in self.held.items() if (state := unit.state) is not None
        )

    def restore(self, states: Iterable[tuple[str, UnitState]]) -> None:
        """Hand each held unit the state of its name (a unit not named starts afresh)."""
        given = dict(states)
        for name, unit in self.held.items():
            unit.restore(given.get(name))


def build_chain(
    settings: SamplerSettings,
    order: Sequence[str] | None = None,
    previous: Chain | None = None,
    leave_out: Collection[str] = (),
) -> Chain:
    """The chain of units for some settings.

    Args:
        settings: Each unit's parameters; a unit they turn off is left out.
        order: Unit names in the order to run them; `settings.order` when None.
        previous: The chain these settings replace: each unit takes over the state
            of the unit of its name there (what of it still holds).
        leave_out: Units not to build (plugins switched off for the reply).

    Raises:
        SettingsError: The order names an unknown unit, names one twice, puts a
            "logits" unit (penalties) after a unit that reads the order, or does not
            end with a unit placed last that is on.
    """
    tables = registry_of(settings)
    names = checked_order(settings.order if order is None else order, tables)
    greedy = settings.greedy
    held: dict[str, RunningUnit] = {}
    for unit_type in tables.units:
        if unit_type.name in leave_out:
            continue
        if tables.is_plugin(unit_type.name):
            if unit_type.name not in names:
                continue  # a plugin is built only where the order runs it
            guard = PluginGuard.build(unit_type, settings)
            if guard is not None:
                held[unit_type.name] = guard
            continue
        built = unit_type.from_settings(settings)
        if built is not None:
            held[unit_type.name] = built
    if previous is not None:
        for name, unit in held.items():
            if (before := previous.held.get(name)) is not None:
                unit.restore(before.state)
    units = arranged(names, held, greedy)
    last = units[-1] if units else None
    reshaping = (
        last
        if last is not None and last.placement.kind == "last" and isinstance(last, Reshaping)
        else None
    )
    drawing = tuple(unit for unit in held.values() if unit.draws)
    accepting = tuple(unit for unit in units if not isinstance(unit, Stateless))
    reporting = tuple(unit for unit in units if _reports(unit))
    return Chain(names, tuple(units), greedy, held, drawing, accepting, reshaping, reporting)


def _reports(unit: RunningUnit) -> bool:
    """Whether a unit may report figures (its `report` is not `UnitBase`'s, which has
    none; a plugin's guard asks the plugin)."""
    if isinstance(unit, PluginGuard):
        return unit.reports
    return getattr(type(unit), "report", UnitBase.report) is not UnitBase.report


def checked_order(order: Sequence[str], tables: Registry) -> tuple[str, ...]:
    """`order` as a tuple, checked against the names `tables` knows.

    Raises:
        SettingsError: As for `build_chain`; the message names the offending unit.
    """
    if isinstance(order, str):
        raise SettingsError("samplers", order, "a sequence of sampler names, not one string")
    names = tuple(order)
    problem = tables.settings_by_name["samplers"].order_problem(names)
    if problem is not None:
        raise SettingsError("samplers", names, problem)
    return names
