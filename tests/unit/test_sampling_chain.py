"""The chain of named sampler units: registry, orders, each unit alone, bad orders."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from sampling import (
    DEFAULT_CHAT_SETTINGS,
    Sampler,
    SamplerSettings,
    SamplescopeError,
    SettingsError,
    probabilities,
)
from sampling.built_in import BUILT_IN_REGISTRY, BUILT_IN_UNITS
from sampling.candidates import Candidates
from sampling.chain import build_chain
from sampling.kept import Kept
from sampling.logits import History, checked_logits
from sampling.samplers.min_p import MinP
from sampling.samplers.penalties import Penalties, PenaltiesParams
from sampling.samplers.temperature import Temperature
from sampling.samplers.top_k import TopK
from sampling.samplers.top_p import TopP
from sampling.settings.registry import LLAMA_CPP_ORDER
from sampling.workspace import Workspace
from tests.golden import LOGITS, TOL, renormalised, softmax


def run_chain(
    settings: SamplerSettings,
    order: Sequence[str] | None = None,
    logits: object = LOGITS,
    history: History = (),
) -> Kept:
    """One step of the chain built from `settings` (and `order`), on fresh candidates."""
    checked = checked_logits(np.asarray(logits, dtype=np.float32))
    candidates = Candidates(*checked, history, Workspace())
    return build_chain(settings, order).run(candidates)


def dense(kept: Kept, size: int) -> np.ndarray:
    """The kept distribution over the whole vocabulary, indexed by token id."""
    if kept.ids is None:
        return kept.probs.copy()
    result = np.zeros(size)
    result[kept.ids] = kept.probs
    return result


# --- registry and orders ----------------------------------------------------------


LLAMA_CPP_CHAIN = (
    "penalties",
    "dry",
    "top_n_sigma",
    "top_k",
    "typ_p",
    "top_p",
    "min_p",
    "xtc",
    "temperature",
)
"""llama.cpp's default `--samplers` chain (common/common.h), the names and their order."""


FILTERS = ("top_k", "top_p", "min_p")
TEMPERATURE_FIRST = ("penalties", "temperature", *FILTERS)
"""Temperature first (candle, Hugging Face)."""
TEMPERATURE_LAST = ("penalties", *FILTERS, "temperature")
"""Temperature after the filters (llama.cpp's default; `temperature_last`)."""


def test_registry_uses_llama_cpp_sampler_names() -> None:
    # llama.cpp's chain, in its order, among the names an order may hold.
    assert [name for name in BUILT_IN_REGISTRY.sampler_names if name in LLAMA_CPP_CHAIN] == list(
        LLAMA_CPP_CHAIN
    )
    for name, unit_type in BUILT_IN_REGISTRY.samplers.items():
        assert unit_type.name == name and unit_type.placement.in_order
    # The logits units lead the registry's order, as an order must have them.
    kinds = [BUILT_IN_REGISTRY.samplers[name].kind for name in BUILT_IN_REGISTRY.sampler_names]
    assert kinds == sorted(kinds, key=lambda kind: kind != "logits")
    assert (
        tuple(
            n
            for n in BUILT_IN_REGISTRY.sampler_names
            if BUILT_IN_REGISTRY.samplers[n].kind == "logits"
        )
        == BUILT_IN_REGISTRY.logits_samplers
    )
    assert {"penalties", "dry"} <= set(BUILT_IN_REGISTRY.logits_samplers)
    outside = {unit.name for unit in BUILT_IN_UNITS if not unit.placement.in_order}
    assert outside >= {"logit_bias", "mirostat"}


def test_the_order_is_samplers_as_given_with_temperature_last_moving_it_last() -> None:
    def llama_names(order: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(name for name in order if name in LLAMA_CPP_CHAIN)

    llama = LLAMA_CPP_CHAIN[:-1]
    first = ("penalties", "dry", "temperature", *llama[2:])
    # Presets naming no order: the temperature first, before every filter.
    assert llama_names(SamplerSettings().samplers) == first
    assert SamplerSettings().order == SamplerSettings().samplers
    assert llama_names(SamplerSettings(temperature_last=True).order) == LLAMA_CPP_CHAIN
    # New chats run llama.cpp's chain, the temperature last (and anything llama.cpp
    # lacks, off, in the registry's order).
    assert llama_names(DEFAULT_CHAT_SETTINGS.samplers) == LLAMA_CPP_CHAIN
    assert LLAMA_CPP_ORDER == LLAMA_CPP_CHAIN
    assert DEFAULT_CHAT_SETTINGS.order == DEFAULT_CHAT_SETTINGS.samplers
    assert llama_names(DEFAULT_CHAT_SETTINGS.samplers)[-1] == "temperature"
    # After it only what its placement joins right after it, and adaptive-p (last).
    assert DEFAULT_CHAT_SETTINGS.samplers[-3:] == ("temperature", "smoothing", "adaptive_p")
    assert not DEFAULT_CHAT_SETTINGS.temperature_last
    # The full list of names runs as given: no comparison with the known names.
    assert SamplerSettings(samplers=BUILT_IN_REGISTRY.sampler_names).order == tuple(
        BUILT_IN_REGISTRY.sampler_names
    )
    custom = ("top_k", "temperature", "min_p")
    assert SamplerSettings(samplers=custom).order == custom
    assert SamplerSettings(samplers=custom, temperature_last=True).order == (
        "top_k",
        "min_p",
        "temperature",
    )


@pytest.mark.parametrize(
    ("settings", "names"),
    [
        (SamplerSettings(), ("temperature",)),
        (DEFAULT_CHAT_SETTINGS, ("top_k", "top_p", "min_p", "temperature")),
        (
            DEFAULT_CHAT_SETTINGS.with_changes(samplers=SamplerSettings().samplers),
            ("temperature", "top_k", "top_p", "min_p"),
        ),
        (
            DEFAULT_CHAT_SETTINGS.with_changes(repeat_penalty=1.1, temperature_last=True),
            ("penalties", "top_k", "top_p", "min_p", "temperature"),
        ),
        (
            SamplerSettings(temperature=0.0, top_k=3, repeat_penalty=2.0, repeat_last_n=4),
            ("penalties",),
        ),
        (SamplerSettings(temperature=0.0, top_k=3, top_p=0.5), ()),
    ],
)
def test_units_the_settings_turn_off_are_left_out(
    settings: SamplerSettings, names: tuple[str, ...]
) -> None:
    chain = build_chain(settings)
    assert chain.names == names
    assert chain.order == settings.order
    assert chain.greedy == settings.greedy


def test_units_hold_their_parameters() -> None:
    settings = SamplerSettings(
        temperature=0.7, top_k=7, top_p=0.5, top_p_scope="vocab", min_p=0.1, repeat_last_n=3
    )
    assert build_chain(settings).units == (Temperature(0.7), TopK(7), TopP(0.5, "vocab"), MinP(0.1))
    penalizing = settings.with_changes(presence_penalty=0.5)
    assert build_chain(penalizing).units[0] == Penalties(penalizing.of(PenaltiesParams))
    off = SamplerSettings()
    built = {
        name: unit_type.from_settings(off) for name, unit_type in BUILT_IN_REGISTRY.samplers.items()
    }
    assert built.pop("temperature") == Temperature(1.0)
    assert set(built.values()) == {None}


# --- each unit alone, against values by hand ----------------------------------------

P = softmax(LOGITS)

ALONE = [
    # (order, settings, history, expected by hand, cut_by)
    (("top_k",), SamplerSettings(top_k=2), (), renormalised(P, [0, 1]), "top_k"),
    (("top_p",), SamplerSettings(top_p=0.7), (), renormalised(P, [0, 1, 2]), "top_p"),
    (("min_p",), SamplerSettings(min_p=0.3), (), renormalised(P, [0, 1, 2]), "min_p"),
    (("temperature",), SamplerSettings(temperature=0.5), (), softmax(LOGITS, 0.5), "none"),
    # Token 0 (2.0 > 0) is divided by 2, token 5 (-1.0 <= 0) multiplied: once each.
    (
        ("penalties",),
        SamplerSettings(repeat_penalty=2.0, repeat_last_n=4),
        (0, 5, 0),
        softmax([1.0, 1.5, 1.0, 0.5, 0.0, -2.0]),
        "none",
    ),
]


@pytest.mark.parametrize(("order", "settings", "history", "expected", "cut_by"), ALONE)
def test_each_unit_alone_matches_the_values_by_hand(
    order: tuple[str, ...],
    settings: SamplerSettings,
    history: History,
    expected: list[float],
    cut_by: str,
) -> None:
    kept = run_chain(settings, order, history=history)
    assert kept.cut_by == cut_by
    assert kept.n_kept == sum(1 for value in expected if value > 0.0)
    np.testing.assert_allclose(dense(kept, 6), expected, rtol=0, atol=TOL)
    # The same unit inside the settings' own chain gives the very same numbers.
    whole = probabilities(np.asarray(LOGITS, dtype=np.float32), settings, history)
    assert np.array_equal(dense(kept, 6), whole)


# --- the order is data ----------------------------------------------------------------


def test_the_order_changes_what_is_kept() -> None:
    # top-k 2 first: 0.6225, 0.3775 within the two, so top-p 0.5 keeps one.
    # top-p 0.5 first: 0.4197 < 0.5 <= 0.6743, two kept; top-k 2 then cuts nothing.
    settings = SamplerSettings(top_k=2, top_p=0.5)
    k_then_p = run_chain(settings, ("top_k", "top_p"))
    p_then_k = run_chain(settings, ("top_p", "top_k"))
    np.testing.assert_allclose(dense(k_then_p, 6), [1.0, 0, 0, 0, 0, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(dense(p_then_k, 6), renormalised(P, [0, 1]), rtol=0, atol=TOL)
    assert (k_then_p.cut_by, p_then_k.cut_by) == ("top_p", "top_p")


def test_cut_by_names_the_last_unit_that_removed_tokens() -> None:
    # Both keep tokens 0-2 (min-p 0.3 at T=1 keeps three); only the first one cuts.
    settings = SamplerSettings(top_k=3, min_p=0.3)
    k_first = run_chain(settings, ("top_k", "min_p"))
    min_p_first = run_chain(settings, ("min_p", "top_k"))
    assert np.array_equal(dense(k_first, 6), dense(min_p_first, 6))
    assert k_first.cut_by == "top_k"
    assert min_p_first.cut_by == "min_p"


def test_top_k_after_top_p_cuts_the_kept_prefix() -> None:
    # top-p 0.9 keeps four (0.8287 < 0.9 <= 0.9224); top-k 2 then keeps the first two.
    # The ranking stays top-p's: its head band, all six tokens within 6 of the maximum.
    kept = run_chain(SamplerSettings(top_k=2, top_p=0.9), ("top_p", "top_k"))
    assert kept.cut_by == "top_k"
    assert kept.ranked is not None and kept.ranked.tolist() == [0, 1, 2, 3, 4, 5]
    np.testing.assert_allclose(dense(kept, 6), renormalised(P, [0, 1]), rtol=0, atol=TOL)


def test_temperature_placement_is_the_temperature_last_setting() -> None:
    settings = SamplerSettings(temperature=0.5, min_p=0.3)
    logits = np.asarray(LOGITS, dtype=np.float32)
    first = run_chain(settings, TEMPERATURE_FIRST)
    last = run_chain(settings, TEMPERATURE_LAST)
    assert (first.n_kept, last.n_kept) == (2, 3)
    assert np.array_equal(dense(first, 6), probabilities(logits, settings))
    assert np.array_equal(
        dense(last, 6), probabilities(logits, settings.with_changes(temperature_last=True))
    )


def test_an_empty_order_samples_the_model_at_temperature_one() -> None:
    kept = run_chain(SamplerSettings(temperature=0.5, top_k=1), ())
    assert kept.cut_by == "none"
    np.testing.assert_allclose(dense(kept, 6), P, rtol=0, atol=TOL)


def test_top_p_hands_its_sorted_bands_to_the_record() -> None:
    # Token 0 alone reaches 0.5; 150 more lie within 6 of the maximum (the head band).
    logits = np.full(400, -30.0, dtype=np.float32)
    logits[0] = 10.0
    logits[1:151] = 4.5 - 0.001 * np.arange(150)
    kept = run_chain(SamplerSettings(top_p=0.5), ("top_p",), logits)
    assert kept.ids is not None and kept.ids.tolist() == [0]
    assert kept.ranked is not None and kept.ranked.size == 151
    assert np.array_equal(kept.ranked, np.argsort(-logits, kind="stable")[:151])
    step = Sampler(SamplerSettings(top_p=0.5), n_candidates=20).sample(logits)
    assert step.table.token_ids.tolist() == list(range(20))


def test_the_first_cut_is_the_ranking() -> None:
    kept = run_chain(SamplerSettings(top_k=4, top_p=0.5), ("top_k", "top_p"))
    assert kept.ids is not None and kept.ids.tolist() == [0, 1]
    assert kept.ranked is not None and kept.ranked.tolist() == [0, 1, 2, 3]


def test_sampler_rebuilds_its_chain_with_new_settings() -> None:
    sampler = Sampler(SamplerSettings(top_k=3))
    assert sampler.chain.names == ("temperature", "top_k")
    sampler.settings = SamplerSettings(min_p=0.3, temperature_last=True)
    assert sampler.chain.names == ("min_p", "temperature")
    step = sampler.sample(np.asarray(LOGITS, dtype=np.float32))
    assert (step.cut_by, step.n_kept) == ("min_p", 3)


# --- bad orders -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("order", "words"),
    [
        (("top_k", "typical"), ["'typical'", "top_k", "min_p", "penalties", "typ_p"]),
        (("top_k", "top_p", "top_k"), ["'top_k'", "twice"]),
        (("top_k", "penalties"), ["'penalties'", "after 'top_k'"]),
        (("temperature", "penalties"), ["'penalties'", "after 'temperature'"]),
        ("top_k", ["sequence", "string"]),
        ((1,), ["1 is not one"]),
    ],
    ids=repr,
)
def test_a_bad_order_is_a_settings_error(order: Sequence[str], words: list[str]) -> None:
    with pytest.raises(SettingsError) as caught:
        build_chain(SamplerSettings(), order)
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, SamplescopeError)
    assert error.field == "samplers"
    message = str(error)
    for word in words:
        assert word in message


def test_penalties_first_then_any_order_is_fine() -> None:
    chain = build_chain(
        SamplerSettings(repeat_penalty=1.5, repeat_last_n=2, top_p=0.9),
        ("penalties", "top_p", "temperature"),
    )
    assert chain.names == ("penalties", "top_p", "temperature")
