"""Requantized copies of the default model, written with llama.cpp's own quantizer.

The default model is Q4_1, a type llama.cpp's CPU backend does not repack; a Q4_0
copy is (on a CPU with AVX2 or NEON llama.cpp lays its weights out again at load,
and its batched matmul then sums in another order than the one-row kernel). The
tests that need a model with repackable weights quantize one here
(`llama_model_quantize`, as `llama-quantize --allow-requantize` does) and share it
through the session-scoped fixture `q4_0_model_path` (tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import llama_cpp

#: llama.cpp's `llama_ftype` of a Q4_0 model (its 1-d tensors stay F32).
Q4_0 = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0


class QuantizeError(RuntimeError):
    """llama.cpp's quantizer failed (its code in the message)."""


def quantize(source: Path, target: Path, ftype: int = Q4_0, *, n_threads: int = 1) -> Path:
    """Write `source` requantized to `ftype` at `target` (kept when it exists).

    Args:
        source: A GGUF model (any quantization: requantizing is allowed).
        target: Where the copy goes.
        ftype: llama.cpp's `llama_ftype` (`Q4_0`, or e.g. `LLAMA_FTYPE_MOSTLY_Q8_0`).
        n_threads: The quantizer's threads (the test machine is shared: one).

    Returns:
        `target`.

    Raises:
        QuantizeError: llama.cpp returned an error code.
    """
    if target.exists():
        return target
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.allow_requantize = True
    params.nthread = n_threads
    partial = target.with_name(target.name + ".partial")
    code = llama_cpp.llama_model_quantize(
        str(source).encode("utf-8"), str(partial).encode("utf-8"), params
    )
    if code != 0:
        partial.unlink(missing_ok=True)
        raise QuantizeError(f"llama_model_quantize({source} -> ftype {ftype}) returned {code}")
    partial.rename(target)
    return target


def quantized_copy(source: Path, folder: Path, ftype: int = Q4_0, name: str = "") -> Path:
    """`source` requantized to `ftype` in `folder`, named `<stem>-<name or ftype>.gguf`."""
    return quantize(source, folder / f"{source.stem}-{name or f'ftype{ftype}'}.gguf", ftype)
