"""A token constraint: which tokens a grammar allows next, as the grammar unit asks it.

The grammar unit (`sampling.samplers.grammar`) is pure numpy; the matcher behind it is
llama.cpp's grammar sampler, which the backend wraps (`backend.llama.grammar`). The
unit asks the model's vocabulary for a `TokenConstraint` (the vocabulary is a
`ConstraintSource`), then every step asks it which candidates are legal and tells it
each token the reply takes.

`GrammarSpec` is what the settings ask for (`GrammarParams.spec`): GBNF text, or a
JSON schema the backend converts to GBNF, and the trigger patterns of a lazy grammar.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from sampling.ordering import IdArray

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class GrammarSpec:
    """The grammar the settings ask for.

    Attributes:
        gbnf: GBNF text (llama.cpp's grammar format), or "" when `json_schema` is given.
        json_schema: A JSON schema's text, converted to GBNF by the backend, or "".
        triggers: Regular expressions searched in the reply's text: while none has
            matched, the grammar allows every token (a lazy grammar); then the grammar
            takes the text from the match on (so its root starts with what the trigger
            matched) and constrains what follows. Empty: it applies from the first token.
    """

    gbnf: str = ""
    json_schema: str = ""
    triggers: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        """Its name on screen: "json schema" or "gbnf", "lazy" when triggered."""
        kind = "json schema" if self.json_schema else "gbnf"
        return f"lazy {kind}" if self.triggers else kind


class TokenConstraint(Protocol):
    """A grammar's matcher in one state: what it allows next, and how it moves on."""

    def allowed(self, ids: IdArray | None) -> BoolArray:
        """Whether each token may come next.

        Args:
            ids: The tokens to ask about, or None for every token of the vocabulary.

        Returns:
            One bool per token asked about (by id over the vocabulary when None).
        """
        ...

    def accept(self, token: int) -> None:
        """Move on past `token`, which `allowed` allows.

        Raises:
            GrammarDeadEnd: The grammar does not allow it.
        """
        ...

    def reset(self) -> None:
        """Go back to the grammar's start."""
        ...

    def snapshot(self) -> Hashable:
        """A frozen copy of the state, for `restore` (of this constraint or another
        of the same grammar)."""
        ...

    def restore(self, snapshot: Hashable) -> None:
        """Go back to a state `snapshot` gave."""
        ...


@runtime_checkable
class ConstraintSource(Protocol):
    """A vocabulary that builds token constraints from grammars (the runtime does)."""

    def token_constraint(self, spec: GrammarSpec) -> TokenConstraint:
        """A constraint in the grammar's start state.

        Raises:
            GrammarError: The grammar or schema cannot be parsed (llama.cpp's message).
        """
        ...
