"""The grammar: keep only the tokens a GBNF grammar or a JSON schema allows next.

llama.cpp's common sampler draws from the chain first and checks the drawn token
against the grammar; only when the grammar rejects it does it apply the grammar to
the whole vocabulary and draw again. samplescope applies the grammar first, before
every filter and the temperature: the distribution drawn from is then exactly the
model's distribution under the constraint, and each step's record shows what the
grammar removed (its rows are cut by "grammar").

The matcher is llama.cpp's, behind a `TokenConstraint` that the model's vocabulary
builds (`ConstraintSource`; `backend.llama.grammar`). The unit learns the reply's
tokens from the history (its last `generated` tokens, from the answer's start when
the model thinks), so a forced token, a branch's
given start or a what-if's rebuilt step move the grammar exactly as the reply did.
Its state is how many tokens the reply has, the tokens the grammar took and a
snapshot of the matcher (llama.cpp's grammar cloned), which rewind restores.

Each step records the probability mass the grammar removed (of the distribution it
was handed: after the penalties and the logit bias, at temperature 1) and whether it
left exactly one token (a forced token). When it allows no token that is left, the
reply ends (`GrammarDeadEnd`).

A thinking model's thinking is free: while it is open before a step (the step's
context says so, from the sampler's sections) the grammar removes nothing, and it
matches the answer from the token after the one that closes the thinking (a new
thinking in the answer: from after that one's end again).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.constraint import ConstraintSource, GrammarSpec, TokenConstraint
from sampling.errors import GrammarDeadEnd, GrammarError
from sampling.ordering import sort_descending
from sampling.samplers.base import Report, UnitBase, percent_text
from sampling.samplers.unit import UnitKind, UnitState
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import CONSTRAINT, Placement
from sampling.settings.spec import SettingSpec

if TYPE_CHECKING:
    from sampling.samplers.unit import StepContext
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class GrammarParams:
    """Grammar's parameters, one field per setting.

    Attributes:
        grammar: A GBNF grammar or a JSON schema every reply must follow, and a lazy
            grammar's triggers (`sampling.constraint`).
        json_schema: A GBNF grammar or a JSON schema every reply must follow, and a lazy
            grammar's triggers (`sampling.constraint`).
        grammar_triggers: A GBNF grammar or a JSON schema every reply must follow, and a
            lazy grammar's triggers (`sampling.constraint`).
    """

    grammar: str = setting(
        SettingSpec(
            "grammar",
            "text",
            rank=380,
            default="",
            off="",
            group="grammar",
            label="grammar",
            help="a GBNF grammar (llama.cpp's format) every reply follows, applied first in"
            " the chain (the exact distribution under it); empty is off",
            summary_key="grammar",
        )
    )
    json_schema: str = setting(
        SettingSpec(
            "json_schema",
            "text",
            rank=390,
            default="",
            off="",
            group="grammar",
            label="json schema",
            help="a JSON schema every reply follows (converted to a grammar, applied first);"
            " empty is off",
            short_key="json_schema",
            summary_key="json-schema",
        )
    )
    grammar_triggers: tuple[str, ...] = setting(
        SettingSpec(
            "grammar_triggers",
            "texts",
            rank=400,
            default=(),
            off=(),
            group="grammar",
            label="triggers",
            help="lazy grammar: regexes searched in the reply; the grammar applies from a match"
            " on (its text included)",
            patterns=True,
        )
    )

    @property
    def spec(self) -> GrammarSpec | None:
        """The grammar these ask for; None when they ask for none.

        A JSON schema wins over GBNF text when both are given (llama-server refuses
        both; here the schema is the more specific).
        """
        if self.json_schema.strip():
            return GrammarSpec("", self.json_schema, self.grammar_triggers)
        if self.grammar.strip():
            return GrammarSpec(self.grammar, "", self.grammar_triggers)
        return None


@dataclass(frozen=True, slots=True)
class GrammarState:
    """The grammar unit's state, frozen.

    Attributes:
        spec: The grammar it belongs to.
        generated: How many tokens the reply has.
        taken: The reply's tokens the matcher took, in order.
        snapshot: The matcher's state after them (None: take them again from the start).
    """

    spec: GrammarSpec
    generated: int
    taken: tuple[int, ...]
    snapshot: Hashable = field(compare=False)


@dataclass(slots=True, eq=False)
class Grammar(UnitBase):
    """Keep only the tokens the grammar allows next (see the module doc).

    Attributes:
        spec: The grammar.
        constraint: Its matcher, built from the vocabulary at the first step.
        generated: How many tokens the reply has (`begin` counts each step).
        taken: The reply's tokens the matcher took.
        removed: The mass the last step removed (0 to 1).
        forced: Whether the last step left exactly one token.
        in_thinking: Whether the thinking is open at this step (the grammar waits).
        answer_start: Where in the history the answer began (None: the reply's start).
    """

    name: ClassVar[str] = "grammar"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = CONSTRAINT
    params: ClassVar[type[GrammarParams]] = GrammarParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(GrammarParams)
    group_titles: ClassVar[Mapping[str, str]] = {"grammar": "grammar (runs first)"}
    label: ClassVar[str] = "grammar"
    row_label: ClassVar[str] = "gramm"
    draws: ClassVar[bool] = True  # for `begin`, which counts the reply's tokens
    spec: GrammarSpec
    constraint: TokenConstraint | None = None
    generated: int = 0
    step: int | None = None
    taken: list[int] = field(default_factory=list)
    restored: GrammarState | None = None
    removed: float = 0.0
    forced: bool = False
    in_thinking: bool = False
    answer_start: int | None = None

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On when bool(settings.json_schema.strip() or settings.grammar.strip())."""
        params = settings.of(GrammarParams)
        return bool(params.json_schema.strip() or params.grammar.strip())

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Grammar | None:
        """Built when the settings give a grammar or a JSON schema."""
        spec = settings.of(GrammarParams).spec
        return None if spec is None else cls(spec)

    def begin(self, step: StepContext) -> None:
        """A step begins: the reply has one more token after it (nothing is drawn),
        counted from the length the step gives when it continues the reply elsewhere."""
        if step.resumed_at is not None:
            self.generated = step.resumed_at
        self.step = self.generated
        self.generated += 1
        self.in_thinking = step.thinking
        self.answer_start = step.answer_start

    def apply(self, candidates: Candidates) -> None:
        """Cut the candidates to the tokens the grammar allows.

        Raises:
            GrammarError: The vocabulary cannot build the grammar, or it cannot be parsed.
            GrammarDeadEnd: No token that is left is allowed.
        """
        constraint = self._matcher(candidates)
        if self.in_thinking:  # the thinking is open: the grammar is the answer's
            self.forced, self.removed = False, 0.0
            return
        generated = self.generated if self.step is None else self.step
        history = candidates.history
        start = len(history) - generated
        if self.answer_start is not None:
            start = max(start, self.answer_start)
        reply = history[start:] if start < len(history) else ()
        self._catch_up(constraint, [int(token) for token in reply])
        ids = candidates.ids
        allowed = np.asarray(constraint.allowed(ids), dtype=bool)
        kept_logits = candidates.kept_logits()
        allowed &= kept_logits > -np.inf
        weights = candidates.weights()
        total = float(weights.sum())
        kept_mass = float(weights.sum(where=allowed))
        count = int(np.count_nonzero(allowed))
        self.forced = count == 1
        self.removed = 0.0 if total <= 0.0 else max(0.0, 1.0 - kept_mass / total)
        if count == 0:
            raise GrammarDeadEnd(
                f"the grammar ({self.spec.title}) allows none of the {allowed.shape[0]}"
                " tokens left: the reply ends here"
            )
        if count == allowed.shape[0]:
            return
        if ids is None:
            kept = sort_descending(candidates.logits, np.flatnonzero(allowed))
        else:
            kept = ids[allowed]
        candidates.cut(kept, self.name, prefix=False)

    def report(self) -> Report:
        """The mass this step removed, whether it left one token (forced it), and
        whether it waited for the thinking to close."""
        if self.in_thinking:
            return {"removed": 0.0, "forced": False, "thinking": True}
        return {"removed": self.removed, "forced": self.forced}

    @classmethod
    def describe(cls, report: Report, settings: SamplerSettings) -> str:
        """ "grammar (json schema) removed 12.5% · forced: the one token allowed"."""
        spec = settings.of(GrammarParams).spec
        name = "grammar" if spec is None else f"grammar ({spec.title})"
        removed = report.get("removed")
        if not isinstance(removed, float | int):
            return name
        kept = 1.0 - removed
        shown = f"all but {kept * 100:.2g}%" if 0.0 < kept < 0.01 else percent_text(removed)
        line = f"{name} removed {shown}"
        if report.get("thinking"):
            return f"{name}: waiting for the thinking to close"
        if removed == 0.0:
            lazy = spec is not None and spec.triggers
            line += " · waiting for its trigger" if lazy else " · every token allowed"
        if report.get("forced"):
            line += " · forced: the one token allowed"
        return line

    def _matcher(self, candidates: Candidates) -> TokenConstraint:
        """The constraint, built from the vocabulary at the first step, in the state
        restored (if any)."""
        constraint = self.constraint
        if constraint is None:
            vocabulary = candidates.vocabulary
            if not isinstance(vocabulary, ConstraintSource):
                raise GrammarError("this model's backend cannot run a grammar")
            constraint = self.constraint = vocabulary.token_constraint(self.spec)
        restored = self.restored
        if restored is not None:
            self.restored = None
            if restored.spec == self.spec and restored.snapshot is not None:
                constraint.restore(restored.snapshot)
                self.taken = list(restored.taken)
            else:  # another grammar's state: take the reply's tokens again
                constraint.reset()
                self.taken = []
        return constraint

    def _catch_up(self, constraint: TokenConstraint, reply: Sequence[int]) -> None:
        """Hand the matcher the reply's tokens it has not taken (from the start again
        when the reply is not the one it took)."""
        taken = self.taken
        if len(taken) > len(reply) or list(reply[: len(taken)]) != taken:
            constraint.reset()
            taken.clear()
        for token in reply[len(taken) :]:
            constraint.accept(token)
            taken.append(token)

    def accept(self, token: int, prob: float) -> None:
        """Nothing yet: the matcher takes the token from the history at the next step
        (the reply may take another token than the one drawn)."""
        del token, prob

    def reset(self) -> None:
        """A new reply: the grammar's start."""
        self.generated = 0
        self.step = None
        self.taken = []
        self.restored = None
        if self.constraint is not None:
            self.constraint.reset()

    @property
    def state(self) -> GrammarState:
        """The reply's length, the tokens taken and the matcher's snapshot."""
        if self.restored is not None:  # not applied yet: still the one restored
            return replace(self.restored, generated=self.generated)
        snapshot = None if self.constraint is None else self.constraint.snapshot()
        return GrammarState(self.spec, self.generated, tuple(self.taken), snapshot)

    def restore(self, state: UnitState) -> None:
        """Take a grammar state (applied at the next step); start afresh otherwise."""
        self.reset()
        if isinstance(state, GrammarState):
            self.generated = state.generated
            self.restored = state
