"""Min tokens: ban the end-of-generation tokens until a reply has N tokens.

As llama-cpp-python's `MinTokensLogitsProcessor` (llama_cpp/llama.py: the EOS
token's score set to -inf while fewer than `min_tokens` tokens were generated) and
tabbyAPI's `min_tokens` (the stop tokens banned until then), over every
end-of-generation token of the model (`llama_vocab_is_eog`), not just EOS. It runs
outside the order, after the units that rewrite the logits (a -inf stays -inf
through any penalty, so where it runs does not change the distribution). The record
reads the logits from before the ban: a banned token keeps its row, with its
probability before and 0 after, cut by "min_tokens". 0 is off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

import numpy as np

from sampling.candidates import Candidates
from sampling.errors import LogitsError
from sampling.logits import FloatArray
from sampling.samplers.base import UnitBase
from sampling.samplers.unit import UnitKind, UnitState
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import BAN, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.samplers.unit import StepContext
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class MinTokensParams:
    """MinTokens's parameters, one field per setting.

    Attributes:
        min_tokens: Ban the end-of-generation tokens until the reply has this many
            tokens; 0 is off.
    """

    min_tokens: int = setting(
        SettingSpec(
            "min_tokens",
            "int",
            rank=360,
            default=0,
            off=0,
            group="min_tokens",
            label="min tokens",
            help="ban the end-of-generation tokens until the reply has this many; 0 is off",
            minimum=0,
            slider=SliderRange(0, 512, hard_min=0, hard_max=1_000_000, fine=1, coarse=16),
        )
    )


def end_of_generation_ban(
    logits: FloatArray, end_of_generation: Sequence[int], generated: int, min_tokens: int
) -> FloatArray:
    """The logits with every end-of-generation token at -inf while `generated < min_tokens`.

    Args:
        logits: The logits (never modified).
        end_of_generation: The model's end-of-generation token ids.
        generated: How many tokens the reply has so far.
        min_tokens: How many it must have before it may end.

    Returns:
        A banned copy, or `logits` itself when nothing is banned.
    """
    ids = [token for token in end_of_generation if 0 <= token < logits.shape[0]]
    if generated >= min_tokens or not ids:
        return logits
    banned = logits.copy()
    banned[np.asarray(ids, dtype=np.intp)] = -np.inf
    return banned


@runtime_checkable
class EndOfGeneration(Protocol):
    """A vocabulary that knows its end-of-generation tokens (the runtime does)."""

    @property
    def eog_ids(self) -> tuple[int, ...]:
        """Every end-of-generation token id."""
        ...


@dataclass(slots=True)
class MinTokens(UnitBase):
    """Ban the end-of-generation tokens while the reply is shorter than `count`.

    Its state is how many tokens the reply has. Each step counts one when it begins
    (`begin`, which the sampler calls once a step, before any unit applies and
    whether or not the temperature is 0; it draws nothing), so a step run again
    (a plugin switched off) is not counted twice; a what-if or a branch of step n
    starts it at n (`Sampler.resume`, through the step's context).

    Attributes:
        count: The reply's minimum length in tokens (> 0).
        end_of_generation: The tokens it bans; the vocabulary's `eog_ids` when empty.
    """

    name: ClassVar[str] = "min_tokens"
    kind: ClassVar[UnitKind] = "logits"
    placement: ClassVar[Placement] = BAN
    params: ClassVar[type[MinTokensParams]] = MinTokensParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(MinTokensParams)
    group_titles: ClassVar[Mapping[str, str]] = {"min_tokens": "min tokens: no early end"}
    label: ClassVar[str] = "min-tok"
    row_label: ClassVar[str] = "mintok"
    draws: ClassVar[bool] = True  # for `begin`: it takes no draw
    count: int
    end_of_generation: tuple[int, ...] = ()
    generated: int = field(default=0, compare=False)
    step: int | None = field(default=None, compare=False)
    """The reply's length at the step begun (None: no step begun, as for
    `probabilities`, which reads `generated`)."""

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> MinTokens | None:
        """Built when min_tokens is on (> 0)."""
        return cls(settings.of(MinTokensParams).min_tokens) if cls.is_on(settings) else None

    def begin(self, step: StepContext) -> None:
        """A step begins: it counts one more token of the reply (nothing is drawn),
        from the length the step gives when it continues the reply elsewhere."""
        if step.end_of_generation:
            self.end_of_generation = step.end_of_generation
        if step.resumed_at is not None:
            self.generated = step.resumed_at
        self.step = self.generated
        self.generated += 1

    def apply(self, candidates: Candidates) -> None:
        """Replace the logits by a copy with the end-of-generation tokens banned.

        Raises:
            LogitsError: The ban leaves no token to sample.
        """
        ends = self.end_of_generation
        vocabulary = candidates.vocabulary
        if not ends and isinstance(vocabulary, EndOfGeneration):
            ends = self.end_of_generation = vocabulary.eog_ids
        generated = self.generated if self.step is None else self.step
        logits = candidates.logits
        banned = end_of_generation_ban(logits, ends, generated, self.count)
        if banned is logits:
            return
        if candidates.before is None:  # the record shows the banned tokens before the ban
            candidates.before = (logits, candidates.maximum)
        if candidates.argmax in ends:
            argmax = int(np.argmax(banned))
            maximum = float(banned[argmax])
            if maximum == -np.inf:
                raise LogitsError("min_tokens bans every token that is left: nothing to sample")
            candidates.argmax = argmax
            candidates.maximum = maximum
        candidates.logits = banned
        candidates.bans.append((self.name, ends))
        candidates.cut_by = self.name

    def accept(self, token: int, prob: float) -> None:
        """Nothing to learn from the token (each step counts once, in `apply`)."""
        del token, prob

    def reset(self) -> None:
        """A new reply: no tokens yet."""
        self.generated = 0
        self.step = None

    @property
    def state(self) -> int:
        """How many tokens the reply has."""
        return self.generated

    def restore(self, state: UnitState) -> None:
        """Take the reply's length from a state of min_tokens; start afresh otherwise."""
        self.generated = state if isinstance(state, int) else 0
        self.step = None
