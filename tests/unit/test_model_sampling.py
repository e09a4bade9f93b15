"""The model's own sampler settings (`general.sampling.*`) and where each setting came from."""

from __future__ import annotations

import math

from backend.config.setting_sources import SettingSources, fill_from_model, sources_line
from backend.llama.model_sampling import SAMPLING_KEYS, model_sampling
from sampling.built_in import DEFAULT_CHAT_SETTINGS

BASE = DEFAULT_CHAT_SETTINGS


def test_every_key_llama_cpp_reads_maps_to_a_setting() -> None:
    suffixes = [suffix for suffix, _ in SAMPLING_KEYS]
    assert suffixes == [
        "sequence",
        "top_k",
        "top_p",
        "min_p",
        "xtc_probability",
        "xtc_threshold",
        "temp",
        "penalty_last_n",
        "penalty_repeat",
        "mirostat",
        "mirostat_tau",
        "mirostat_eta",
    ]
    for _, name in SAMPLING_KEYS:
        assert name in BASE.registry.settings_by_name


def test_values_are_read_as_llama_cpp_reads_them_back_from_text() -> None:
    float32_095 = 0.949999988079071  # 0.95 written as a float32
    own = model_sampling(
        {
            "general.sampling.temp": 0.6000000238418579,
            "general.sampling.top_p": float32_095,
            "general.sampling.top_k": 20,
            "general.sampling.penalty_last_n": 128,
            "general.sampling.penalty_repeat": 1.100000023841858,
            "general.sampling.sequence": "top-k;temp;min_p",
        },
        BASE,
    )
    assert dict(own.values) == {
        "samplers": ("top_k", "temperature", "min_p"),
        "top_k": 20,
        "top_p": 0.95,
        "temperature": 0.6,
        "repeat_last_n": 128,
        "repeat_penalty": 1.1,
    }
    assert own.key_of("repeat_last_n") == "general.sampling.penalty_last_n"
    assert own.problems == ()


def test_a_bad_value_is_one_line_and_left_out() -> None:
    own = model_sampling(
        {
            "general.sampling.temp": math.nan,
            "general.sampling.top_p": 1.5,
            "general.sampling.top_k": 2.5,
            "general.sampling.min_p": "0.1",
            "general.sampling.mirostat": True,
            "general.sampling.mirostat_tau": math.inf,
            "general.sampling.sequence": "top_k;bogus",
            "general.sampling.xtc_threshold": (0.1, 0.2),
            "general.sampling.penalty_repeat": 1.2,
        },
        BASE,
    )
    assert dict(own.values) == {"repeat_penalty": 1.2}
    assert len(own.problems) == 8
    for problem in own.problems:
        assert "\n" not in problem
        assert problem.startswith("the model file's general.sampling.")
        assert "is ignored" in problem
    assert any("temp = nan is ignored: not a finite number" in p for p in own.problems)
    assert any("top_k = 2.5 is ignored: expected a whole number" in p for p in own.problems)
    assert any("'bogus' is not a sampler" in p for p in own.problems)


def test_a_model_value_fills_only_what_the_user_did_not_set() -> None:
    own = model_sampling(
        {"general.sampling.temp": 0.6, "general.sampling.top_k": 20, "general.sampling.top_p": 0.8},
        BASE,
    )
    given = BASE.with_changes(temperature=1.2, top_p=0.9)
    sources = SettingSources().given(["temperature"], "flag").given(["top_p"], "config")
    settings, filled = fill_from_model(given, sources, own)
    assert settings.value("temperature") == 1.2
    assert settings.value("top_p") == 0.9
    assert settings.value("top_k") == 20
    assert filled.of("temperature") == "flag"
    assert filled.of("top_p") == "config"
    assert filled.of("top_k") == "model"
    assert filled.of("min_p") == "default"
    assert filled.from_model() == ("top_k",)
    assert sources_line(settings, filled) == (
        "temperature=1.2 (flag), top_p=0.9 (config), top_k=20 (model)"
    )


def test_a_preset_or_a_slider_counts_as_the_users() -> None:
    own = model_sampling({"general.sampling.top_k": 20}, BASE)
    for source in ("preset", "slider"):
        sources = SettingSources().given(["top_k"], source)  # type: ignore[arg-type]
        settings, filled = fill_from_model(BASE, sources, own)
        assert settings.value("top_k") == BASE.value("top_k")
        assert filled.of("top_k") == source


def test_no_keys_change_nothing() -> None:
    own = model_sampling({"general.name": "x"}, BASE)
    assert not own
    settings, sources = fill_from_model(BASE, SettingSources(), own)
    assert settings == BASE
    assert sources_line(settings, sources) == "all defaults"
