"""Where a sampler unit runs, and when it joins an order that lacks it.

Each unit declares its placement (`Placement`) and its on-rule (`is_on`). From both,
one builder derives the order a settings record stores (`placed_order`) and the
units the chain runs from that very order (`arrange`): an order runs as it stands,
and one that cannot is refused with a message naming the conflict.

The placements, in the order a chain runs them:

- "first": outside the order, before every unit (the logit bias).
- the order's units that rewrite the logits (penalties, DRY: an order names them first).
- "ban": outside the order, after those rewrites (min_tokens).
- "constraint": outside the order, after the ban, before every unit that reads the
  order (the grammar).
- "order": where the order names it (a name left out does not run). A unit llama.cpp's
  chain lacks joins an order that lacks it once switched on, before the first of
  `joins_before` the order holds (the cutoffs before min-p, as text-generation-webui
  runs them), else at its end.
- "after": where the order names it; switched on and not named, right after `anchor`
  (smoothing after the temperature), else at the end.
- "last": where the order names it, which must be its end while the unit is on (it
  reshapes the distribution the token is drawn from: adaptive-p); switched on and not
  named, at the end.
- "replaces": outside the order; switched on, it runs instead of the order's units
  (mirostat, after its own plain temperature, as llama.cpp's common sampler).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from sampling.errors import SettingsError

PlacementKind = Literal["first", "ban", "constraint", "order", "after", "last", "replaces"]

OUTSIDE_KINDS: tuple[PlacementKind, ...] = ("first", "ban", "constraint", "replaces")
"""The placements of units an order never names."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a unit runs (see the module doc).

    Attributes:
        kind: The placement.
        joins_before: For "order": when switched on, the unit joins an order that lacks
            it before the first of these names the order holds (else at its end); ()
            for a unit that runs only where an order names it.
        joins: Whether a unit switched on joins an order that lacks its name.
        anchor: For "after": the unit it joins right after.
    """

    kind: PlacementKind
    joins_before: tuple[str, ...] = ()
    joins: bool = False
    anchor: str = ""

    @property
    def in_order(self) -> bool:
        """Whether an order may name the unit."""
        return self.kind not in OUTSIDE_KINDS


FIRST = Placement("first")
BAN = Placement("ban")
CONSTRAINT = Placement("constraint")
IN_ORDER = Placement("order")
LAST = Placement("last", joins=True)
REPLACES_ORDER = Placement("replaces")


def joining_before(*names: str) -> Placement:
    """A place in the order; switched on and not named, before the first of `names`."""
    return Placement("order", joins_before=names, joins=True)


def right_after(anchor: str) -> Placement:
    """A place in the order; switched on and not named, right after `anchor`."""
    return Placement("after", joins=True, anchor=anchor)


def joined(
    samplers: Sequence[str], switched_on: Iterable[tuple[str, Placement]]
) -> tuple[str, ...]:
    """`samplers` with each unit switched on that joins and is not named put where its
    placement says (in the order `switched_on` lists them)."""
    order = list(samplers)
    for name, placement in switched_on:
        if not placement.joins or name in order:
            continue
        if placement.kind == "after":
            at = order.index(placement.anchor) + 1 if placement.anchor in order else len(order)
        elif placement.kind == "order":
            before = next((n for n in placement.joins_before if n in order), None)
            at = order.index(before) if before is not None else len(order)
        else:
            at = len(order)
        order.insert(at, name)
    return tuple(order)


def conflict(order: Sequence[str], on: Mapping[str, Placement]) -> str | None:
    """Why `order` cannot run as it stands with the units switched on (`on`: name →
    placement), or None: a unit placed last that is on must end the order."""
    for name, placement in on.items():
        if placement.kind == "last" and name in order and order[-1] != name:
            after = order[order.index(name) + 1]
            return (
                f"{name} last while it is on (it reshapes the distribution the token is"
                f" drawn from), not before {after}"
            )
    return None


def placed_order(
    samplers: Sequence[str],
    placements: Mapping[str, Placement],
    is_on: Callable[[str], bool],
) -> tuple[str, ...]:
    """The order a settings record stores and its chain runs: `samplers` with each unit
    switched on that joins put where its placement says.

    Args:
        samplers: The order as given.
        placements: Every unit's placement by name, in the registry's order (units
            joining at one place join in this order).
        is_on: Whether the settings switch the unit of a name on (its on-rule).

    Raises:
        SettingsError: The order cannot run as it stands (see `conflict`).
    """
    on = {
        name: placement
        for name, placement in placements.items()
        if (placement.joins or placement.kind == "last") and is_on(name)
    }
    order = joined(samplers, on.items())
    problem = conflict(order, on)
    if problem is not None:
        raise SettingsError("samplers", tuple(samplers), problem)
    return order


class Placed(Protocol):
    """A unit as the builder places it."""

    @property
    def name(self) -> str:
        """Its name."""
        ...

    @property
    def kind(self) -> str:
        """ "logits" or "candidates"."""
        ...

    @property
    def placement(self) -> Placement:
        """Where it runs."""
        ...


PlacedUnit = TypeVar("PlacedUnit", bound=Placed)


def arranged(
    order: Sequence[str], held: Mapping[str, PlacedUnit], greedy: bool
) -> list[PlacedUnit]:
    """The units a chain runs, in turn, from the units switched on (`held`) and the
    order: the order's units exactly as it names them, the others where their
    placement says (see the module doc). At temperature 0 (`greedy`) only the units
    before the order's readers run: the argmax is all that counts.

    Raises:
        SettingsError: A unit placed last is on and does not end the order.
    """
    by_kind: dict[str, list[PlacedUnit]] = {kind: [] for kind in OUTSIDE_KINDS}
    for unit in held.values():
        if unit.placement.kind in by_kind:
            by_kind[unit.placement.kind].append(unit)
    named = [held[name] for name in order if name in held]
    on = {unit.name: unit.placement for unit in named}
    problem = conflict([unit.name for unit in named], on)
    if problem is not None:
        raise SettingsError("samplers", tuple(order), problem)
    rewrites = [unit for unit in named if unit.kind == "logits"]
    readers = [unit for unit in named if unit.kind != "logits"]
    before = [*by_kind["ban"], *by_kind["constraint"]]
    if by_kind["replaces"]:  # it runs instead of the order's units
        return [*by_kind["first"], *before, *([] if greedy else by_kind["replaces"])]
    return [*by_kind["first"], *rewrites, *before, *([] if greedy else readers)]


def temperature_moved_last(
    order: Sequence[str], placements: Mapping[str, Placement]
) -> tuple[str, ...]:
    """`order` with "temperature" moved to its end (`temperature_last`), together with
    the units named right after it that are placed right after it (smoothing), ahead
    of a unit placed last that ends the order."""
    if "temperature" not in order:
        return tuple(order)
    names = list(order)
    at = names.index("temperature")
    end = at + 1
    while end < len(names) and _placed_after_temperature(placements.get(names[end])):
        end += 1
    block = names[at:end]
    rest = names[:at] + names[end:]
    tail = len(rest)
    while tail > 0 and _placed_last(placements.get(rest[tail - 1])):
        tail -= 1
    return (*rest[:tail], *block, *rest[tail:])


def _placed_after_temperature(placement: Placement | None) -> bool:
    return placement is not None and placement.kind == "after" and placement.anchor == "temperature"


def _placed_last(placement: Placement | None) -> bool:
    return placement is not None and placement.kind == "last"


CUTOFF = joining_before("min_p", "xtc", "temperature")
"""The cutoffs llama.cpp's chain lacks: switched on, they join before min-p (else XTC,
else the temperature), where text-generation-webui runs them."""
