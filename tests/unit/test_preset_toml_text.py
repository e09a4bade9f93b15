"""Text written into presets.toml is escaped: any name or grammar (U+007F and the other
control characters included) reads back as written."""

from __future__ import annotations

import tomllib
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from backend.config.preset_files import preset_toml, save_user_preset, toml_string
from backend.config.presets import load_presets
from sampling.settings.record import SamplerSettings

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(TEXT)
def test_any_text_is_a_toml_string_that_reads_back(text: str) -> None:
    assert tomllib.loads(f"x = {toml_string(text)}\n")["x"] == text


@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20))
def test_any_preset_name_reads_back_from_its_table(name: str) -> None:
    settings = SamplerSettings(temperature=0.5)
    assert name in tomllib.loads(preset_toml(name, settings))


def test_a_name_and_a_grammar_holding_delete_are_saved_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "presets.toml"
    settings = SamplerSettings().with_changes(grammar='root ::= "a\x7f"', top_k=5)
    save_user_preset(path, "odd\x7fname", settings)
    save_user_preset(path, "plain", SamplerSettings(top_k=3))
    loaded = load_presets(path)
    assert set(loaded) == {"odd\x7fname", "plain"}
    assert loaded["odd\x7fname"].grammar == 'root ::= "a\x7f"'
    assert "\x7f" not in path.read_text(encoding="utf-8")
