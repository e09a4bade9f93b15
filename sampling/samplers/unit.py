"""The interface every sampler unit has, and what it declares about itself.

Units come in two kinds, and a chain keeps them in this order:

- "logits" units rewrite the whole vocabulary's logits before anything reads
  their order (the penalties, DRY, the logit bias).
- "candidates" units read the order. A filter keeps a shorter subset of it and
  names itself as the cut; the temperature sets the temperature the later units
  and the final distribution read the logits at.

A unit is built from the settings (`from_settings`) whenever they change, and a
unit the settings turn off is not built at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

from sampling.setting_spec import SettingSpec

if TYPE_CHECKING:
    from sampling.engine import Candidates
    from sampling.settings import SamplerSettings

UnitKind = Literal["logits", "candidates"]


class SamplerUnit(Protocol):
    """One named step of the chain.

    Attributes:
        name: The unit's name in a chain's order (llama.cpp's `--samplers` name), and
            the name its cuts carry in the record.
        kind: "logits" (rewrites the logits before their order is read) or
            "candidates" (reads the order: filters and the temperature).
        in_order: Whether an order may name it; the logit bias (always first) and
            mirostat (which replaces the order) run outside it, as in llama.cpp.
        specs: The settings it owns, each declared once: the flag, the panel's
            control, the compare key and the config key derive from the entry.
        group_titles: The title of each panel group its settings open (a group
            two units share may be titled by both, alike).
        label: Its name on the probability panel's bars (at most 8 cells).
        row_label: Its name on a row it removed (at most 6 cells).
    """

    name: ClassVar[str]
    kind: ClassVar[UnitKind]
    in_order: ClassVar[bool]
    specs: ClassVar[tuple[SettingSpec, ...]]
    group_titles: ClassVar[Mapping[str, str]]
    label: ClassVar[str]
    row_label: ClassVar[str]

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> SamplerUnit | None:
        """The unit with its parameters from `settings`; None when they turn it off."""
        ...

    def apply(self, candidates: Candidates) -> None:
        """Change one step's candidates in place."""
        ...
