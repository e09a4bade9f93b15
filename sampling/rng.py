"""Seeded uniform generators: numpy's PCG64 and run.c's xorshift128."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

import numpy as np
import numpy.typing as npt

_MASK32 = 0xFFFFFFFF
_XORSHIFT_MULTIPLIER = 1812433253
_TWO_POW_MINUS_24 = 1.0 / 16777216.0


class UniformSource(Protocol):
    """A seeded stream of uniforms in [0, 1)."""

    def uniform(self) -> float:
        """The next uniform."""
        ...

    def uniforms(self, count: int) -> npt.NDArray[np.float64]:
        """The next `count` uniforms, in stream order."""
        ...

    def exponentials(self, out: npt.NDArray[np.float64]) -> None:
        """Fill `out` with standard exponential variates, in stream order."""
        ...

    @property
    def position(self) -> Hashable:
        """Where the stream stands: an immutable value `seek` goes back to."""
        ...

    def seek(self, position: Hashable) -> None:
        """Go back (or forward) to a `position` this kind of source gave."""
        ...


class Pcg64Source:
    """numpy's PCG64; every seed from 0 to 2**64 - 1 gives its own stream."""

    def __init__(self, seed: int) -> None:
        self._generator = np.random.Generator(np.random.PCG64(seed))

    def uniform(self) -> float:
        """The next uniform in [0, 1) (53 random bits)."""
        return float(self._generator.random())

    def uniforms(self, count: int) -> npt.NDArray[np.float64]:
        """The next `count` uniforms."""
        return self._generator.random(count)

    def exponentials(self, out: npt.NDArray[np.float64]) -> None:
        """Fill `out` with standard exponential variates (numpy's ziggurat)."""
        self._generator.standard_exponential(out=out)

    @property
    def position(self) -> tuple[int, int, int, int]:
        """PCG64's state and increment, and its buffered 32-bit half."""
        state = self._generator.bit_generator.state
        inner = state["state"]
        return (
            int(inner["state"]),
            int(inner["inc"]),
            int(state["has_uint32"]),
            int(state["uinteger"]),
        )

    def seek(self, position: Hashable) -> None:
        """Go to a `position` a PCG64 source gave."""
        assert isinstance(position, tuple) and len(position) == 4
        state, inc, has_uint32, uinteger = position
        self._generator.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": state, "inc": inc},
            "has_uint32": has_uint32,
            "uinteger": uinteger,
        }


class Xorshift128Source:
    """run.c's xorshift128, bit for bit.

    Seeding takes the low 32 bits of the seed (run.c's seed is an `unsigned int`);
    0 becomes 1. A uniform is the top 24 bits of the next output times 2**-24.
    """

    def __init__(self, seed: int) -> None:
        x = (seed & _MASK32) or 1
        y = (x * _XORSHIFT_MULTIPLIER + 1) & _MASK32
        z = (y * _XORSHIFT_MULTIPLIER + 1) & _MASK32
        w = (z * _XORSHIFT_MULTIPLIER + 1) & _MASK32
        self._state = (x, y, z, w)

    def next_u32(self) -> int:
        """The next 32-bit output."""
        x, y, z, w = self._state
        t = (x ^ (x << 11)) & _MASK32
        w_next = (w ^ (w >> 19) ^ (t ^ (t >> 8))) & _MASK32
        self._state = (y, z, w, w_next)
        return w_next

    def uniform(self) -> float:
        """The next uniform, exactly as run.c's `rng_uniform` computes it."""
        return (self.next_u32() >> 8) * _TWO_POW_MINUS_24

    def uniforms(self, count: int) -> npt.NDArray[np.float64]:
        """The next `count` uniforms."""
        return np.fromiter((self.uniform() for _ in range(count)), np.float64, count)

    def exponentials(self, out: npt.NDArray[np.float64]) -> None:
        """Fill `out` with -log(1 - u), one uniform per variate."""
        np.log1p(-self.uniforms(out.shape[0]), out=out)
        np.negative(out, out=out)

    @property
    def position(self) -> tuple[int, int, int, int]:
        """The four 32-bit words of the state."""
        return self._state

    def seek(self, position: Hashable) -> None:
        """Go to a `position` an xorshift128 source gave."""
        assert isinstance(position, tuple) and len(position) == 4
        x, y, z, w = position
        self._state = (int(x), int(y), int(z), int(w))


def make_source(kind: str, seed: int) -> UniformSource:
    """The generator named `kind` ("pcg64" or "xorshift128"), seeded."""
    if kind == "xorshift128":
        return Xorshift128Source(seed)
    return Pcg64Source(seed)
