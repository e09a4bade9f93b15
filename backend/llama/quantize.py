"""A GGUF model requantized with llama.cpp's own quantizer (`llama_model_quantize`).

What `llama-quantize --allow-requantize` does, for the bench's and the tests' copies of
the default model in another type (a Q4_0 copy: weights llama.cpp's CPU backend would
repack).
"""

from __future__ import annotations

from pathlib import Path

import llama_cpp

from backend.llama.context import LlamaError

#: llama.cpp's `llama_ftype` of a Q4_0 model (its 1-d tensors stay F32).
Q4_0 = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0


def quantize(source: Path, target: Path, ftype: int = Q4_0, *, n_threads: int = 1) -> Path:
    """Write `source` requantized to `ftype` at `target` (kept when it exists).

    Args:
        source: A GGUF model (any quantization: requantizing is allowed).
        target: Where the copy goes.
        ftype: llama.cpp's `llama_ftype` (`Q4_0`, or e.g. `LLAMA_FTYPE_MOSTLY_Q8_0`).
        n_threads: The quantizer's threads.

    Returns:
        `target`.

    Raises:
        LlamaError: llama.cpp's quantizer returned an error code.
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
        raise LlamaError(f"llama_model_quantize({source} -> ftype {ftype}) returned {code}")
    partial.rename(target)
    return target


def quantized_copy(source: Path, folder: Path, ftype: int = Q4_0, name: str = "") -> Path:
    """`source` requantized to `ftype` in `folder`, named `<stem>-<name or ftype>.gguf`."""
    return quantize(source, folder / f"{source.stem}-{name or f'ftype{ftype}'}.gguf", ftype)
