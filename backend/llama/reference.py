"""llama-cpp-python's own `Llama`, loading the weights as samplescope does.

`Llama` takes llama.cpp's default model parameters, which let the CPU backend put the
weights in its extra buffer types (repacked for AVX2/NEON kernels, or AMX tiles).
samplescope loads without them (`backend.llama.context.load_model`: their batched
kernels make a sequence's logits depend on its neighbours, and on an AMX CPU this
build's kernels crash on a batch of two or more tokens). A peer measured or checked
against samplescope (the benches, the tests' references) loads the same way:
`plain_llama` builds a `Llama` so, and `load_plain_by_default` makes every later
`Llama` do it (the test suite's choice). A job of one sequence (`kld`, `score`) loads
them as llama-perplexity does where they run (`backend.llama.repack_probe`): its
references are built by `llama_with`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import llama_cpp
import llama_cpp.llama_cpp as llama_cpp_module

_llama_defaults: Callable[[], Any] = llama_cpp_module.llama_model_default_params


def _plain_defaults() -> Any:
    """llama.cpp's default model parameters without the extra buffer types."""
    params = _llama_defaults()
    params.use_extra_bufts = False
    return params


@contextlib.contextmanager
def plain_weights() -> Iterator[None]:
    """Every `Llama` built inside loads its weights without the extra buffer types."""
    before = llama_cpp_module.llama_model_default_params
    llama_cpp_module.llama_model_default_params = _plain_defaults
    try:
        yield
    finally:
        llama_cpp_module.llama_model_default_params = before


@contextlib.contextmanager
def llama_cpp_weights() -> Iterator[None]:
    """Every `Llama` built inside loads its weights with llama.cpp's defaults (the extra
    buffer types: repacked, as llama-perplexity loads them), whatever
    `load_plain_by_default` chose."""
    before = llama_cpp_module.llama_model_default_params
    llama_cpp_module.llama_model_default_params = _llama_defaults
    try:
        yield
    finally:
        llama_cpp_module.llama_model_default_params = before


def llama_with(repack: bool, *args: Any, **kwargs: Any) -> llama_cpp.Llama:
    """`llama_cpp.Llama(*args, **kwargs)` with the weights repacked (llama.cpp's
    default, llama-perplexity's) or plain (samplescope's lockstep)."""
    with llama_cpp_weights() if repack else plain_weights():
        return llama_cpp.Llama(*args, **kwargs)


def plain_llama(*args: Any, **kwargs: Any) -> llama_cpp.Llama:
    """`llama_cpp.Llama(*args, **kwargs)` with the weights loaded as samplescope loads them."""
    with plain_weights():
        return llama_cpp.Llama(*args, **kwargs)


def load_plain_by_default() -> None:
    """From now on every `Llama` loads its weights as samplescope loads them."""
    llama_cpp_module.llama_model_default_params = _plain_defaults
