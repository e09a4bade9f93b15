"""The shipped presets: text-generation-webui's and llama.cpp's documented values."""

from __future__ import annotations

from sampling.settings import SamplerSettings
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
