"""Requantized copies of the default model, written with llama.cpp's own quantizer.

The default model is Q4_1; a Q4_0 copy is a type llama.cpp's CPU backend repacks
(on a CPU with AVX2 or NEON it lays the weights out again at load, and on one with
AMX puts them in AMX tiles; their batched matmul then sums in another order than the
one-row kernel). The tests that need a model with repackable weights quantize one
here (`backend.llama.quantize`, as `llama-quantize --allow-requantize` does) and share
it through the session-scoped fixture `q4_0_model_path` (tests/conftest.py).
"""

from __future__ import annotations

from backend.llama.context import LlamaError as QuantizeError
from backend.llama.quantize import Q4_0, quantize, quantized_copy

__all__ = ["Q4_0", "QuantizeError", "quantize", "quantized_copy"]
