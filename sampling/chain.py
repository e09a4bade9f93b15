"""The chain: sampler units in order, built once whenever the settings change.

The order is data: a tuple of unit names (llama.cpp's `--samplers` names) looked up
in the registry's `SAMPLERS`, the settings' `samplers` as `SamplerSettings.order`
places the temperature in it (see there). `build_chain` also takes any other order.
Four units run outside the order, as in llama.cpp's common sampler: `LogitBias`
always first, `MinTokens` (a ban) after the units that rewrite the logits, `Grammar`
right after it, before every filter (llama.cpp checks the grammar after drawing and
draws again on a rejection; applied first, the distribution is exact under the
constraint), and `Mirostat`, which (when on) replaces the whole order after the logit bias by a
plain temperature and itself. `AdaptiveP` draws the token, so wherever an order
names it, it runs last and reshapes the distribution the chain ends with; smoothing
runs right after the temperature when both run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sampling.engine import Kept, greedy_kept
from sampling.errors import SettingsError
from sampling.plugins import PluginFailure, PluginGuard, is_plugin
from sampling.registry import SAMPLERS, UNITS_BY_NAME
from sampling.samplers.adaptive_p import AdaptiveP
from sampling.samplers.grammar import Grammar
from sampling.samplers.logit_bias import LogitBias
from sampling.samplers.min_tokens import MinTokens
from sampling.samplers.mirostat import Mirostat
from sampling.samplers.temperature import Temperature
from sampling.samplers.unit import RunningUnit, Stateless, UnitState
from sampling.settings import SETTINGS_BY_NAME, SamplerSettings

if TYPE_CHECKING:
    from sampling.candidates import Candidates
    from sampling.rng import UniformSource

__all__ = ["SAMPLERS", "Chain", "build_chain", "checked_order", "order_of"]
__all__ += ["DEFAULT_ORDER", "FILTER_ORDER", "TEMPERATURE_LAST_ORDER"]

FILTER_ORDER: tuple[str, ...] = ("top_k", "top_p", "min_p")
"""The filters, in the order both of today's chains run them."""

DEFAULT_ORDER: tuple[str, ...] = ("penalties", "temperature", *FILTER_ORDER)
"""Temperature first (candle, Hugging Face)."""

TEMPERATURE_LAST_ORDER: tuple[str, ...] = ("penalties", *FILTER_ORDER, "temperature")
"""Temperature after the filters (llama.cpp's default; `temperature_last`)."""


def order_of(settings: SamplerSettings) -> tuple[str, ...]:
    """The order of the units the settings ask for (`SamplerSettings.order`)."""
    return settings.order


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
        drawing: The held units that draw from the generator each step.
        accepting: The running units that keep state, which hear each token drawn.
    """

    order: tuple[str, ...]
    units: tuple[RunningUnit, ...]
    greedy: bool
    held: Mapping[str, RunningUnit] = field(default_factory=dict)
    drawing: tuple[RunningUnit, ...] = ()
    accepting: tuple[RunningUnit, ...] = ()

    @property
    def adaptive(self) -> AdaptiveP | None:
        """Adaptive-p when it ends the chain (it reshapes the final distribution)."""
        last = self.units[-1] if self.units else None
        return last if isinstance(last, AdaptiveP) else None

    @property
    def grammar(self) -> Grammar | None:
        """The grammar when it runs (its record: the mass removed, a forced token)."""
        held = self.held.get(Grammar.name)
        return held if isinstance(held, Grammar) and held in self.units else None

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the units that run."""
        return tuple(unit.name for unit in self.units)

    def begin(self, source: UniformSource) -> None:
        """Hand the generator to the units that draw from it (before `run`)."""
        for unit in self.drawing:
            unit.begin(source)

    def run(self, candidates: Candidates) -> Kept:
        """Apply every unit to one step's candidates; return the distribution they end with."""
        for unit in self.units:
            unit.apply(candidates)
        if self.greedy:
            # The first kept token: the argmax, or the most probable one a grammar allows.
            best = int(candidates.head(1)[0])
            return greedy_kept(best, tuple(candidates.bans), tuple(candidates.cuts))
        kept = candidates.distribution()
        adaptive = self.adaptive
        if adaptive is None:
            return kept
        return adaptive.reshape(kept, candidates.logits, candidates.workspace)

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

    def continue_reply(
        self, generated: int | None, adapted_target: float | None, ends: tuple[int, ...]
    ) -> None:
        """Hand min_tokens the reply's length and the tokens it bans, and adaptive-p a
        recorded step's target (None, or no tokens: leave as it is)."""
        ban = self.held.get(MinTokens.name)
        if isinstance(ban, MinTokens):
            if generated is not None:
                ban.generated, ban.step = generated, None
            if ends:
                ban.end_of_generation = ends
        grammar = self.held.get(Grammar.name)
        if isinstance(grammar, Grammar) and generated is not None:
            grammar.generated, grammar.step = generated, None
        adaptive = self.held.get(AdaptiveP.name)
        if adapted_target is not None and isinstance(adaptive, AdaptiveP):
            adaptive.pinned = adapted_target

    def reset(self) -> None:
        """Start every unit's state afresh."""
        for unit in self.held.values():
            unit.reset()

    def without(self, name: str) -> Chain:
        """The same chain (the very same units) with the unit `name` left out."""
        held = {key: unit for key, unit in self.held.items() if key != name}
        return replace(
            self,
            units=tuple(unit for unit in self.units if unit.name != name),
            held=held,
            drawing=tuple(unit for unit in self.drawing if unit.name != name),
            accepting=tuple(unit for unit in self.accepting if unit.name != name),
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
        order: Unit names in the order to run them; `order_of(settings)` when None.
        previous: The chain these settings replace: each unit takes over the state
            of the unit of its name there (what of it still holds).
        leave_out: Units not to build (plugins switched off for the reply).

    Raises:
        SettingsError: The order names an unknown unit, names one twice, or puts a
            "logits" unit (penalties) after a unit that reads the order.
    """
    names = checked_order(order_of(settings) if order is None else order)
    greedy = settings.greedy
    held: dict[str, RunningUnit] = {}
    for unit_type in UNITS_BY_NAME.values():
        if unit_type.name in leave_out:
            continue
        if is_plugin(unit_type.name):
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
    units: list[RunningUnit] = []
    bias = held.get(LogitBias.name)
    if bias is not None:
        units.append(bias)
    ban = held.get(MinTokens.name)
    # The grammar reads the logits the rewrites and bans leave, before every filter.
    grammar = held.get(Grammar.name)
    constrain = [grammar] if grammar is not None else []
    mirostat = held.get(Mirostat.name)
    if mirostat is not None:
        units += [ban] if ban is not None else []
        units += constrain
        if not greedy:
            units += [Temperature(settings.temperature), mirostat]
    else:
        reading: list[RunningUnit] = []
        last: list[RunningUnit] = []
        for name in names:
            found = held.get(name)
            if found is None or (greedy and found.kind != "logits"):
                continue  # at temperature 0 only the argmax counts: nothing to filter
            if isinstance(found, AdaptiveP):
                last.append(found)  # it draws: last, wherever the order names it
            else:
                (units if found.kind == "logits" else reading).append(found)
        # Smoothing reshapes what the temperature gives: it runs right after it.
        smoothing = next((u for u in reading if u.name == "smoothing"), None)
        temperature = next((u for u in reading if u.name == "temperature"), None)
        if smoothing is not None and temperature is not None:
            reading.remove(smoothing)
            reading.insert(reading.index(temperature) + 1, smoothing)
        # min_tokens bans after the rewrites of the logits, so that the record reads
        # them from before the ban (a -inf stays -inf through them anyway).
        units += [*([ban] if ban is not None else []), *constrain, *reading, *last]
    drawing = tuple(unit for unit in held.values() if unit.draws)
    accepting = tuple(unit for unit in units if not isinstance(unit, Stateless))
    return Chain(names, tuple(units), greedy, held, drawing, accepting)


def checked_order(order: Sequence[str]) -> tuple[str, ...]:
    """`order` as a tuple, checked.

    Raises:
        SettingsError: As for `build_chain`; the message names the offending unit.
    """
    if isinstance(order, str):
        raise SettingsError("samplers", order, "a sequence of sampler names, not one string")
    names = tuple(order)
    problem = SETTINGS_BY_NAME["samplers"].order_problem(names)
    if problem is not None:
        raise SettingsError("samplers", names, problem)
    return names
