"""Every newer sampler against llama.cpp's own, on real logits of the default model.

Each case builds the native samplers through llama-cpp-python (whose prototypes for
them were checked against the bundled llama.h: typical(float, size_t),
top_n_sigma(float), xtc(float, float, size_t, uint32), dry(vocab*, float, float,
int32, int32, const char**, size_t), mirostat(int32, uint32, float, float, int32),
mirostat_v2(uint32, float, float), temp_ext(float, float, float),
logit_bias(int32, int32, const llama_logit_bias*)), applies them in order to a
`llama_token_data_array` of the same logits, and compares the surviving set and its
softmax with `sampling.probabilities`.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt
import pytest

from backend.bench.sampler import capture_real_logits
from sampling import SamplerSettings, probabilities

Logits = npt.NDArray[np.float32]
Native = Callable[["Model"], list[Any]]


class Model:
    """The default model's logits, vocabulary and tokenizer (a `sampling.Vocabulary`)."""

    def __init__(self, path: Path) -> None:
        self.llm = llama_cpp.Llama(str(path), n_ctx=256, n_threads=1, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.logits = capture_real_logits(self.llm, 4)
        self.n_vocab = self.llm.n_vocab()

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        return bytes(self.llm.detokenize([token], special=special))

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        return list(self.llm.tokenize(text.encode(), add_bos=False, special=special))


@pytest.fixture(scope="module")
def model(default_model_path: Path) -> Iterator[Model]:
    loaded = Model(default_model_path)
    yield loaded
    loaded.llm.close()


def native_probabilities(
    samplers: list[Any],
    logits: Logits,
    history: list[int] = (),  # type: ignore[assignment]
) -> npt.NDArray[np.float64]:
    """Apply native samplers in turn; the survivors' softmax over the vocabulary."""
    size = logits.shape[0]
    data = (llama_cpp.llama_token_data * size)()
    for token in range(size):
        data[token].id = token
        data[token].logit = float(logits[token])
        data[token].p = 0.0
    array = llama_cpp.llama_token_data_array(
        data=ctypes.cast(data, llama_cpp.llama_token_data_p), size=size, selected=-1, sorted=False
    )
    try:
        for sampler in samplers:
            for token in history:
                llama_cpp.llama_sampler_accept(sampler, token)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
        ids = np.array([array.data[i].id for i in range(array.size)], dtype=np.intp)
        values = np.array([array.data[i].logit for i in range(array.size)], dtype=np.float32)
    finally:
        for sampler in samplers:
            llama_cpp.llama_sampler_free(sampler)
    finite = np.isfinite(values)
    ids, values = ids[finite], values[finite].astype(np.float64)
    weights = np.exp(values - values.max())
    result = np.zeros(size)
    result[ids] = weights / weights.sum()
    return result


def assert_same(
    ours: npt.NDArray[np.float64], native: npt.NDArray[np.float64], rtol: float = 2e-4
) -> None:
    assert np.array_equal(np.flatnonzero(ours), np.flatnonzero(native))
    np.testing.assert_allclose(ours, native, rtol=rtol, atol=1e-7)


def temp(t: float) -> Any:
    return llama_cpp.llama_sampler_init_temp_ext(t, 0.0, 1.0)


CASES: list[tuple[str, SamplerSettings, Callable[[], list[Any]]]] = [
    (
        "typical",
        SamplerSettings(typical_p=0.9, samplers=("typ_p",)),
        lambda: [llama_cpp.llama_sampler_init_typical(0.9, 0)],
    ),
    (
        "typical at 0.3 after temperature",
        SamplerSettings(temperature=1.3, typical_p=0.3, samplers=("temperature", "typ_p")),
        lambda: [temp(1.3), llama_cpp.llama_sampler_init_typical(0.3, 0)],
    ),
    (
        "top-n-sigma",
        SamplerSettings(top_n_sigma=1.5, samplers=("top_n_sigma",)),
        lambda: [llama_cpp.llama_sampler_init_top_n_sigma(1.5)],
    ),
    (
        "xtc",
        SamplerSettings(xtc_probability=1.0, xtc_threshold=0.05, samplers=("xtc",)),
        lambda: [llama_cpp.llama_sampler_init_xtc(1.0, 0.05, 0, 42)],
    ),
    (
        "top-k then xtc then temperature",
        SamplerSettings(
            temperature=0.7,
            top_k=40,
            xtc_probability=1.0,
            xtc_threshold=0.02,
            samplers=("top_k", "xtc", "temperature"),
        ),
        lambda: [
            llama_cpp.llama_sampler_init_top_k(40),
            llama_cpp.llama_sampler_init_xtc(1.0, 0.02, 0, 42),
            temp(0.7),
        ],
    ),
    (
        "typical then min-p (min-p against the kept top)",
        SamplerSettings(typical_p=0.5, min_p=0.3, samplers=("typ_p", "min_p")),
        lambda: [
            llama_cpp.llama_sampler_init_typical(0.5, 0),
            llama_cpp.llama_sampler_init_min_p(0.3, 0),
        ],
    ),
    (
        "dynamic temperature",
        SamplerSettings(temperature=0.8, dynatemp_range=0.5, dynatemp_exponent=1.5),
        lambda: [llama_cpp.llama_sampler_init_temp_ext(0.8, 0.5, 1.5)],
    ),
    (
        "top-k then dynamic temperature",
        SamplerSettings(
            temperature=1.0, top_k=30, dynatemp_range=0.8, samplers=("top_k", "temperature")
        ),
        lambda: [
            llama_cpp.llama_sampler_init_top_k(30),
            llama_cpp.llama_sampler_init_temp_ext(1.0, 0.8, 1.0),
        ],
    ),
    (
        "llama.cpp's whole default chain, every sampler on",
        SamplerSettings(
            temperature=0.8,
            top_k=60,
            top_p=0.95,
            min_p=0.02,
            typical_p=0.95,
            top_n_sigma=3.0,
            xtc_probability=1.0,
            xtc_threshold=0.1,
            temperature_last=True,
        ),
        lambda: [
            llama_cpp.llama_sampler_init_top_n_sigma(3.0),
            llama_cpp.llama_sampler_init_top_k(60),
            llama_cpp.llama_sampler_init_typical(0.95, 0),
            llama_cpp.llama_sampler_init_top_p(0.95, 0),
            llama_cpp.llama_sampler_init_min_p(0.02, 0),
            llama_cpp.llama_sampler_init_xtc(1.0, 0.1, 0, 42),
            temp(0.8),
        ],
    ),
    (
        "temperature first, then min-p, typical and top-k",
        SamplerSettings(
            temperature=1.5,
            min_p=0.01,
            typical_p=0.8,
            top_k=25,
            samplers=("temperature", "min_p", "typ_p", "top_k"),
        ),
        lambda: [
            temp(1.5),
            llama_cpp.llama_sampler_init_min_p(0.01, 0),
            llama_cpp.llama_sampler_init_typical(0.8, 0),
            llama_cpp.llama_sampler_init_top_k(25),
        ],
    ),
]


@pytest.mark.parametrize(("name", "settings", "native"), CASES, ids=[c[0] for c in CASES])
def test_each_sampler_and_chain_matches_llama_cpp(
    model: Model, name: str, settings: SamplerSettings, native: Callable[[], list[Any]]
) -> None:
    # llama.cpp sums the entropy of the dynamic temperature in float32 over the whole
    # vocabulary: its temperature differs from ours by that sum's rounding.
    rtol = 2e-3 if settings.dynatemp_range else 2e-4
    for logits in model.logits:
        ours = probabilities(logits, settings)
        assert_same(ours, native_probabilities(native(), logits), rtol)


def test_logit_bias_matches_llama_cpp(model: Model) -> None:
    logits = model.logits[0]
    top = [int(t) for t in np.argsort(-logits)[:3]]
    pairs = ((top[0], -math.inf), (top[1], 2.5), (top[2], -1.0))
    settings = SamplerSettings(logit_bias=tuple(sorted(pairs)), top_k=10, samplers=("top_k",))
    biases = (llama_cpp.llama_logit_bias * 3)(
        *(llama_cpp.llama_logit_bias(token, bias) for token, bias in pairs)
    )
    native = [
        llama_cpp.llama_sampler_init_logit_bias(model.n_vocab, 3, biases),
        llama_cpp.llama_sampler_init_top_k(10),
    ]
    ours = probabilities(logits, settings)
    assert ours[top[0]] == 0.0
    assert_same(ours, native_probabilities(native, logits))


@pytest.mark.parametrize("version", [1, 2])
def test_mirostat_matches_llama_cpp_from_its_first_mu(model: Model, version: int) -> None:
    settings = SamplerSettings(temperature=0.9, mirostat=version, mirostat_tau=3.0)
    for logits in model.logits:
        if version == 1:
            miro = llama_cpp.llama_sampler_init_mirostat(model.n_vocab, 7, 3.0, 0.1, 100)
        else:
            miro = llama_cpp.llama_sampler_init_mirostat_v2(7, 3.0, 0.1)
        native = native_probabilities([llama_cpp.llama_sampler_init_temp(0.9), miro], logits)
        assert_same(probabilities(logits, settings), native)


def test_dry_matches_llama_cpp_on_a_repeating_history(model: Model) -> None:
    history = model.tokenize(
        "The cat sat on the mat. The dog sat on the mat. The cat sat on the", special=False
    )
    breakers = ("\n", ":", '"', "*")
    settings = SamplerSettings(dry_multiplier=0.8, dry_allowed_length=1, dry_penalty_last_n=-1)
    encoded = [text.encode() for text in breakers]
    pointers = (ctypes.c_char_p * len(encoded))(*encoded)
    for logits in model.logits:
        native = llama_cpp.llama_sampler_init_dry(
            model.vocab, 0.8, 1.75, 1, len(history), pointers, len(encoded)
        )
        ours = probabilities(logits, settings, history, vocabulary=model)
        assert not np.array_equal(ours, probabilities(logits, SamplerSettings()))
        assert_same(ours, native_probabilities([native], logits, history))
