"""The shipped presets: text-generation-webui's and llama.cpp's documented values."""

from __future__ import annotations

from sampling.settings.record import SamplerSettings
from tui.resources import shipped_presets


def test_text_generation_webuis_presets_carry_its_values() -> None:
    presets = shipped_presets()
    assert presets["webui Top-P"] == SamplerSettings(top_p=0.95)
    assert presets["webui min_p"] == SamplerSettings(min_p=0.05)
    assert presets["webui simple-1"] == SamplerSettings(
        temperature=0.7, top_p=0.9, top_k=20, repeat_penalty=1.15, repeat_last_n=1024
    )
    assert presets["webui LLaMA-Precise"] == SamplerSettings(
        temperature=0.7, top_p=0.1, top_k=40, repeat_penalty=1.18, repeat_last_n=1024
    )
    assert presets["webui Qwen3 - Thinking"] == SamplerSettings(
        temperature=0.6, top_p=0.95, top_k=20
    )
    assert presets["webui Qwen3 - No Thinking"] == SamplerSettings(
        temperature=0.7, top_p=0.8, top_k=20, presence_penalty=1.5, repeat_last_n=1024
    )


def test_the_first_four_presets_stay_the_compare_views_default_columns() -> None:
    assert list(shipped_presets())[:4] == ["ArgMax", "All t=0.8", "All t=1.5", "TopK k=40 t=0.8"]


LLAMA_DEFAULTS = SamplerSettings(
    temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_last_n=64, temperature_last=True
)


def test_text_generation_webuis_presets_of_the_newer_samplers() -> None:
    presets = shipped_presets()
    assert presets["webui Creative"] == SamplerSettings(min_p=0.02, xtc_probability=0.5)
    assert presets["webui Mirostat"] == SamplerSettings(mirostat=2, mirostat_tau=8.0)
    dynamic = presets["webui Dynamic Temperature"]
    low = dynamic.temperature - dynamic.dynatemp_range
    high = dynamic.temperature + dynamic.dynatemp_range
    assert (round(low, 9), round(high, 9)) == (0.01, 2.0)
    assert dynamic.temperature_last and dynamic.min_p == 0.07


def test_llama_cpps_documented_examples() -> None:
    presets = shipped_presets()
    xtc = presets["llama.cpp XTC"]
    assert xtc.order == ("min_p", "xtc")
    assert (xtc.min_p, xtc.xtc_probability, xtc.xtc_threshold) == (0.02, 0.5, 0.1)
    assert presets["llama.cpp DRY"] == LLAMA_DEFAULTS.with_changes(
        dry_multiplier=0.8, dry_base=1.75, dry_allowed_length=2, dry_penalty_last_n=-1
    )
    assert presets["llama.cpp mirostat 2"] == SamplerSettings(
        temperature=0.8, temperature_last=True, mirostat=2, mirostat_eta=0.05, mirostat_tau=3.0
    )
    assert presets["llama.cpp typical 0.9"] == LLAMA_DEFAULTS.with_changes(typical_p=0.9)
    assert presets["llama.cpp top-n-sigma 1"] == LLAMA_DEFAULTS.with_changes(top_n_sigma=1.0)
