"""Mirostat 1 and 2 (llama.cpp's `mirostat` and `mirostat_v2`).

It runs outside the order, as in llama.cpp's common sampler: when on, the chain
after the logit bias (and a ban, a grammar) is a plain temperature and mirostat
alone; mirostat sets that temperature itself (its placement replaces the order). Both versions keep
a prefix of the order sized from the state mu, which each draw updates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.samplers.base import Report, UnitBase
from sampling.samplers.temperature import TemperatureParams
from sampling.samplers.unit import UnitState
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import REPLACES_ORDER, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.samplers.unit import StepContext, UnitKind
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class MirostatParams:
    """Mirostat's parameters, one field per setting.

    Attributes:
        mirostat: 0 (off), 1 or 2: after temperature, mirostat alone chooses the kept
            set from its state mu (the `samplers` order is not used).
        mirostat_tau: Mirostat's target surprise, in bits (mu starts at 2 * tau).
        mirostat_eta: Mirostat's learning rate.
    """

    mirostat: int = setting(
        SettingSpec(
            "mirostat",
            "int",
            rank=230,
            default=0,
            off=0,
            group="mirostat",
            label="mirostat",
            help="mirostat 1 or 2 (replaces the chain after temperature); 0 is off",
            minimum=0,
            maximum=2,
            slider=SliderRange(0, 2, hard_min=0, hard_max=2, fine=1, coarse=2),
        )
    )
    mirostat_tau: float = setting(
        SettingSpec(
            "mirostat_tau",
            "float",
            rank=240,
            default=5.0,
            group="mirostat",
            label="miro. tau",
            help="mirostat: the target surprise in bits",
            minimum=0.0,
            slider=SliderRange(0.0, 10.0, hard_min=0.0, hard_max=100.0, fine=0.1, coarse=1.0),
            short_key="tau",
            needs="mirostat",
        )
    )
    mirostat_eta: float = setting(
        SettingSpec(
            "mirostat_eta",
            "float",
            rank=250,
            default=0.1,
            group="mirostat",
            label="miro. eta",
            help="mirostat: the learning rate of mu",
            minimum=0.0,
            slider=SliderRange(0.0, 1.0, hard_min=0.0, hard_max=10.0, fine=0.01, coarse=0.1),
            short_key="eta",
            needs="mirostat",
        )
    )


MIROSTAT_M = 100
"""Tokens mirostat 1 estimates the Zipf exponent from (llama.cpp's common passes 100)."""


@dataclass(frozen=True, slots=True)
class MirostatState:
    """Mirostat's state between steps.

    Attributes:
        version: The mirostat it belongs to (1 or 2): the other starts afresh.
        mu: mu for the next step, or None before the first draw (2 * tau).
    """

    version: int
    mu: float | None


@dataclass(slots=True)
class Mirostat(UnitBase):
    """Mirostat 1 or 2: a kept set sized from the state mu, which each draw updates.

    Version 1 keeps the top k, k from mu and the Zipf exponent estimated on the top
    100 probabilities; version 2 keeps the tokens whose surprise (-log2 p) is at
    most mu. After each draw, mu -= eta * (surprise - tau) (`accept`). A change of
    tau or eta keeps mu; another version starts afresh.

    Attributes:
        version: 1 or 2.
        tau: The target surprise, in bits (mu starts at 2 * tau).
        eta: The learning rate.
        temperature: The plain temperature it reads the logits at (dynamic
            temperature does not apply under mirostat, as in llama.cpp).
    """

    name: ClassVar[str] = "mirostat"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = REPLACES_ORDER
    params: ClassVar[type[MirostatParams]] = MirostatParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(MirostatParams)
    group_titles: ClassVar[Mapping[str, str]] = {"mirostat": "mirostat"}
    label: ClassVar[str] = "mirostat"
    row_label: ClassVar[str] = "miro"
    draws: ClassVar[bool] = False
    keeps_state: ClassVar[bool] = True
    version: int
    tau: float = 5.0
    eta: float = 0.1
    temperature: float = 1.0
    _mu: float | None = field(default=None, compare=False)

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Mirostat | None:
        """Built when mirostat is 1 or 2."""
        params = settings.of(MirostatParams)
        if not cls.is_on(settings):
            return None
        return cls(
            params.mirostat,
            params.mirostat_tau,
            params.mirostat_eta,
            settings.of(TemperatureParams).temperature,
        )

    @property
    def mu(self) -> float:
        """mu for the next step."""
        return 2.0 * self.tau if self._mu is None else self._mu

    def begin(self, step: StepContext) -> None:
        """Nothing to draw (the sampler draws the token); a step that redoes a recorded
        one runs with the mu that step reported."""
        mu = step.recorded.get(self.name, {}).get("mu")
        if isinstance(mu, int | float) and not isinstance(mu, bool):
            self._mu = float(mu)

    def report(self) -> Report:
        """The mu this step ran with (before the draw updates it)."""
        return {"mu": self.mu}

    @classmethod
    def describe(cls, report: Report, settings: SamplerSettings) -> str:
        """ "mirostat 2 μ 5.23": the version, and the mu the step ran with."""
        mu = report.get("mu")
        shown = f"{mu:.2f}" if isinstance(mu, float | int) else "?"
        return f"mirostat {settings.of(MirostatParams).mirostat} μ {shown}"

    def apply(self, candidates: Candidates) -> None:
        """Read the logits at the plain temperature, then cut the kept set to the size
        mu asks for."""
        candidates.temperature = self.temperature
        mu = self.mu
        weights = candidates.weights()
        total = float(weights.sum())
        size = candidates.size
        if self.version == 1:
            head = candidates.head_of(weights, min(MIROSTAT_M, size))
            keep = _mirostat_k(head / total, mu, candidates.logits.shape[0])
        else:
            with np.errstate(divide="ignore"):
                surprise = -np.log2(weights / total)
            # Surprise grows along the order: the tokens at most mu are a prefix.
            keep = max(int(np.count_nonzero(surprise <= mu)), 1)
        if keep < size:
            candidates.cut(candidates.head(keep), self.name)

    def accept(self, token: int, prob: float) -> None:
        """mu moves toward the target surprise: mu -= eta * (-log2 p - tau)."""
        del token
        self._mu = self.mu - self.eta * (-math.log2(prob) - self.tau)

    def reset(self) -> None:
        """mu starts again at 2 * tau."""
        self._mu = None

    @property
    def state(self) -> MirostatState:
        """The version and mu."""
        return MirostatState(self.version, self._mu)

    def restore(self, state: UnitState) -> None:
        """Take mu from a state of the same version; start afresh from any other."""
        if isinstance(state, MirostatState) and state.version == self.version:
            self._mu = state.mu
        else:
            self._mu = None


def _mirostat_k(probs: np.ndarray, mu: float, n_vocab: int) -> int:
    """Mirostat 1's k from the top probabilities (llama.cpp's s_hat and k)."""
    count = min(MIROSTAT_M - 1, probs.shape[0] - 1)
    if count <= 0:
        return 1
    i = np.arange(count, dtype=np.float64)
    t = np.log((i + 2.0) / (i + 1.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        b = np.log(probs[:count] / probs[1 : count + 1])
        s_hat = np.float64(np.sum(t * b) / np.sum(t * t))
        epsilon = s_hat - 1.0
        ratio = (epsilon * np.float64(2.0) ** mu) / (1.0 - np.float64(n_vocab) ** -epsilon)
        k = float(ratio ** (1.0 / s_hat))
    if not math.isfinite(k):
        return n_vocab
    return max(int(k), 1)
