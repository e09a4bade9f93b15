"""Presets in from SillyTavern, text-generation-webui, KoboldCpp and llama-server, and
out as llama-server flags, a /completion body and a SillyTavern preset.

The files are written here in each tool's own shape (field for field as the tools'
shipped presets: SillyTavern's `default/content/presets/textgen/Default.json`,
text-generation-webui's `presets/*.yaml` over `modules/presets.py`'s defaults).
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.config.llama_server_format import (
    completion_body,
    flags_text,
    import_completion_body,
    import_server_flags,
    llama_order,
    server_flags,
)
from backend.config.paths import CONFIG_DIR_ENV
from backend.config.preset_files import (
    imported_settings,
    read_preset_file,
    save_user_preset,
)
from backend.config.preset_interchange import ImportedPreset, PresetFormatError
from backend.config.presets import PresetError, load_presets
from backend.config.sillytavern_format import export_sillytavern, import_sillytavern
from sampling.built_in import BUILT_IN_REGISTRY, CHAT_ORDER
from sampling.settings.record import SamplerSettings
from tests.helpers import readme_plugin
from tests.registries import with_plugin
from tui.cli.main import main

# SillyTavern's Default.json, field for field, with a few values changed.
SILLYTAVERN = {
    "temp": 0.7,
    "temperature_last": True,
    "top_p": 0.5,
    "top_k": 40,
    "top_a": 0,
    "tfs": 1,
    "epsilon_cutoff": 3,
    "eta_cutoff": 0,
    "typical_p": 1,
    "min_p": 0.05,
    "rep_pen": 1.2,
    "rep_pen_range": 256,
    "rep_pen_decay": 0,
    "rep_pen_slope": 1,
    "no_repeat_ngram_size": 0,
    "penalty_alpha": 0,
    "num_beams": 1,
    "length_penalty": 1,
    "min_length": 0,
    "encoder_rep_pen": 1,
    "freq_pen": 0,
    "presence_pen": 0.1,
    "skew": 0,
    "do_sample": True,
    "early_stopping": False,
    "dynatemp": True,
    "min_temp": 0.5,
    "max_temp": 1.5,
    "dynatemp_exponent": 1,
    "smoothing_factor": 0,
    "smoothing_curve": 1,
    "dry_allowed_length": 2,
    "dry_multiplier": 0.8,
    "dry_base": 1.75,
    "dry_sequence_breakers": '["\\n", ":", "\\"", "*"]',
    "dry_penalty_last_n": 0,
    "add_bos_token": True,
    "ban_eos_token": False,
    "skip_special_tokens": True,
    "mirostat_mode": 0,
    "mirostat_tau": 5,
    "mirostat_eta": 0.1,
    "guidance_scale": 1,
    "negative_prompt": "",
    "grammar_string": "",
    "json_schema": {},
    "banned_tokens": "",
    "sampler_priority": [
        "temperature",
        "dynamic_temperature",
        "quadratic_sampling",
        "top_k",
        "top_p",
        "typical_p",
        "epsilon_cutoff",
        "eta_cutoff",
        "tfs",
        "top_a",
        "min_p",
        "mirostat",
    ],
    "samplers": ["top_k", "tfs_z", "typical_p", "top_p", "min_p", "temperature"],
    "ignore_eos_token": False,
    "spaces_between_special_tokens": True,
    "speculative_ngram": False,
    "sampler_order": [6, 0, 1, 3, 4, 2, 5],
    "logit_bias": [
        {"id": "a1", "text": "[42]", "value": -2},
        {"id": "b2", "text": "Hello", "value": 3},
    ],
    "rep_pen_size": 0,
}

# A text-generation-webui preset: only what differs from `default_preset()`.
TEXTGEN_YAML = """\
dynamic_temperature: true
dynatemp_low: 0.01
dynatemp_high: 2
dynatemp_exponent: 1
temperature_last: true
min_p: 0.07
epsilon_cutoff: 3
repetition_penalty: 1.15
dry_multiplier: 0.8
dry_sequence_breakers: '"\\n", ":", "\\"", "*", "##"'
guidance_scale: 1.5
sampler_priority: |-
  repetition_penalty
  dry
  top_k
  quadratic_sampling
  temperature
  dynamic_temperature
  min_p
  no_repeat_ngram
  mirostat
"""

# KoboldCpp's /api/v1/generate sampler fields.
KOBOLDCPP = {
    "max_context_length": 4096,
    "max_length": 200,
    "rep_pen": 1.07,
    "rep_pen_range": 360,
    "rep_pen_slope": 0.7,
    "temperature": 0.9,
    "tfs": 0.95,
    "top_a": 0.1,
    "top_k": 100,
    "top_p": 0.92,
    "typical": 1,
    "min_p": 0,
    "sampler_order": [6, 0, 1, 3, 4, 2, 5],
    "sampler_seed": 77,
    "nsigma": 1.5,
    "dry_sequence_breakers": ["\n", "*"],
    "logit_bias": {"13": -1.5},
    "use_default_badwordsids": False,
}


def shell_words(line: str) -> list[str]:
    """The words bash makes of a line (as a user's shell splits an exported line)."""
    split = subprocess.run(
        ["bash", "-c", 'eval "set -- $1"; printf "%s\\0" "$@"', "_", line],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return split.split("\0")[:-1]


def write(tmp_path: Path, name: str, content: str) -> Path:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return path


def unmapped_names(imported: ImportedPreset) -> list[str]:
    return [entry.name for entry in imported.unmapped]


def test_a_sillytavern_preset_sets_what_maps_and_lists_the_rest(tmp_path: Path) -> None:
    imported = read_preset_file(write(tmp_path, "Default.json", json.dumps(SILLYTAVERN)))
    settings = imported_settings(imported)
    assert imported.tool == "sillytavern"
    assert settings.temperature == 1.0  # the middle of 0.5 .. 1.5
    assert settings.dynatemp_range == 0.5
    assert settings.temperature_last is True
    assert (settings.top_p, settings.top_k, settings.min_p) == (0.5, 40, 0.05)
    assert settings.epsilon_cutoff == 0.0003  # 3 in units of 1e-4
    assert (settings.repeat_penalty, settings.repeat_last_n) == (1.2, 256)
    assert settings.presence_penalty == 0.1
    assert settings.dry_multiplier == 0.8
    assert settings.dry_sequence_breakers == ("\n", ":", '"', "*")
    assert settings.dry_penalty_last_n == 0
    assert settings.logit_bias == ((42, -2.0),)
    # llama.cpp's names, the logits samplers put first; epsilon joins before min-p.
    assert settings.samplers == (
        "penalties",
        "dry",
        "top_k",
        "tfs",
        "typ_p",
        "top_p",
        "epsilon_cutoff",
        "min_p",
        "temperature",
    )
    assert unmapped_names(imported) == [
        "logit_bias",
        "rep_pen_decay",
        "rep_pen_slope",
        "no_repeat_ngram_size",
        "penalty_alpha",
        "num_beams",
        "length_penalty",
        "min_length",
        "encoder_rep_pen",
        "skew",
        "do_sample",
        "early_stopping",
        "add_bos_token",
        "ban_eos_token",
        "skip_special_tokens",
        "guidance_scale",
        "negative_prompt",
        "grammar_string",
        "json_schema",
        "banned_tokens",
        "sampler_priority",
        "ignore_eos_token",
        "spaces_between_special_tokens",
        "speculative_ngram",
        "sampler_order",
        "rep_pen_size",
    ]
    assert imported.unmapped[0].value == {"id": "b2", "text": "Hello", "value": 3}


def test_a_textgen_webui_preset_takes_its_tools_defaults(tmp_path: Path) -> None:
    imported = read_preset_file(write(tmp_path, "Dynamic Temperature.yaml", TEXTGEN_YAML))
    settings = imported_settings(imported)
    assert imported.tool == "text-generation-webui"
    assert settings.temperature == 1.005
    assert settings.dynatemp_range == 0.995
    assert settings.min_p == 0.07
    assert settings.epsilon_cutoff == 0.0003
    assert settings.repeat_penalty == 1.15
    assert settings.repeat_last_n == 1024  # text-generation-webui's default range
    assert settings.dry_sequence_breakers == ("\n", ":", '"', "*", "##")
    assert settings.order == (
        "penalties",
        "dry",
        "top_k",
        "smoothing",
        "epsilon_cutoff",
        "min_p",
        "temperature",
    )
    assert unmapped_names(imported) == ["sampler_priority: no_repeat_ngram", "guidance_scale"]


def test_koboldcpp_sampler_settings_map_by_their_own_names(tmp_path: Path) -> None:
    imported = read_preset_file(write(tmp_path, "kobold.json", json.dumps(KOBOLDCPP)))
    settings = imported_settings(imported)
    assert imported.tool == "koboldcpp"
    assert (settings.temperature, settings.top_k, settings.top_p) == (0.9, 100, 0.92)
    assert (settings.tfs, settings.top_a, settings.top_n_sigma) == (0.95, 0.1, 1.5)
    assert (settings.repeat_penalty, settings.repeat_last_n, settings.seed) == (1.07, 360, 77)
    assert settings.dry_sequence_breakers == ("\n", "*")
    assert settings.logit_bias == ((13, -1.5),)
    # 6 0 1 3 4 2 5: penalties, top-k, top-a, tail-free, typical, top-p, temperature.
    assert settings.samplers == (
        "penalties",
        "dry",
        "top_k",
        "top_a",
        "tfs",
        "typ_p",
        "top_p",
        "temperature",
    )
    assert unmapped_names(imported) == [
        "max_context_length",
        "max_length",
        "rep_pen_slope",
        "use_default_badwordsids",
    ]


def test_bad_files_are_refused_with_the_file_named(tmp_path: Path) -> None:
    with pytest.raises(PresetFormatError, match=r"broken\.json: not valid JSON"):
        read_preset_file(write(tmp_path, "broken.json", "{"))
    with pytest.raises(PresetFormatError, match=r"list\.yaml: a preset is a mapping"):
        read_preset_file(write(tmp_path, "list.yaml", "- 1\n"))
    bad = write(tmp_path, "bad.json", json.dumps({"temp": 1, "dry_sequence_breakers": "[1"}))
    with pytest.raises(PresetFormatError, match=r"bad\.json: dry_sequence_breakers"):
        read_preset_file(bad)
    out_of_range = read_preset_file(write(tmp_path, "neg.json", json.dumps({"temp": -1})))
    with pytest.raises(PresetFormatError, match="temperature"):
        imported_settings(out_of_range)


# Every setting on, away from its default (temperature >= the dynamic range, so
# that SillyTavern's min_temp needs no clamping).
RICH = SamplerSettings(
    temperature=0.7,
    top_k=50,
    top_p=0.9,
    min_p=0.02,
    repeat_penalty=1.1,
    repeat_last_n=128,
    frequency_penalty=0.1,
    presence_penalty=0.2,
    temperature_last=True,
    seed=1234,
    typical_p=0.95,
    top_n_sigma=1.5,
    xtc_probability=0.5,
    xtc_threshold=0.2,
    dry_multiplier=0.8,
    dry_base=1.5,
    dry_allowed_length=3,
    dry_penalty_last_n=-1,
    dry_sequence_breakers=("\n", "##"),
    mirostat=2,
    mirostat_tau=4.0,
    mirostat_eta=0.2,
    dynatemp_range=0.3,
    dynatemp_exponent=1.5,
    top_a=0.1,
    tfs=0.95,
    epsilon_cutoff=0.0003,
    eta_cutoff=0.0009,
    smoothing_factor=0.25,
    smoothing_curve=1.5,
    adaptive_target=0.4,
    adaptive_decay=0.8,
    min_tokens=5,
    logit_bias={42: 2.0, 7: -1.5},
    samplers=CHAT_ORDER,
    top_p_scope="vocab",
    draw="gumbel",
    rng="xorshift128",
)
ALL_FIELDS = {spec.name for spec in BUILT_IN_REGISTRY.settings}

SILLYTAVERN_LACKS = {
    "top_p_scope",
    "draw",
    "rng",
    "min_tokens",
    "adaptive_target",
    "adaptive_decay",
}
LLAMA_CPP_LACKS = {
    "top_p_scope",
    "draw",
    "rng",
    "top_a",
    "tfs",
    "epsilon_cutoff",
    "eta_cutoff",
    "smoothing_factor",
    "smoothing_curve",
    "min_tokens",
    "temperature_last",  # folded into the order written
}


def differing(before: SamplerSettings, after: SamplerSettings, names: set[str]) -> dict[str, Any]:
    return {
        name: (getattr(before, name), getattr(after, name))
        for name in sorted(names)
        if getattr(before, name) != getattr(after, name)
    }


def test_every_setting_but_six_round_trips_through_sillytavern() -> None:
    preset, unmapped = export_sillytavern(RICH)
    assert sorted(entry.name for entry in unmapped) == sorted(SILLYTAVERN_LACKS)
    back = imported_settings(import_sillytavern(json.loads(json.dumps(preset))))
    assert differing(RICH, back, ALL_FIELDS - SILLYTAVERN_LACKS) == {}
    assert import_sillytavern(preset).unmapped == ()


def test_a_ban_goes_to_sillytavern_as_its_strongest_bias() -> None:
    preset, unmapped = export_sillytavern(SamplerSettings(logit_bias="5=-inf"))
    assert preset["logit_bias"] == [{"text": "[5]", "value": -100}]
    assert [entry.describe() for entry in unmapped] == [
        "logit_bias = '5=-inf' (a ban, written as -100)"
    ]


@pytest.mark.parametrize("form", ["completion-json", "llama-server"])
def test_every_setting_llama_cpp_holds_round_trips(form: str) -> None:
    if form == "completion-json":
        body, unmapped = completion_body(RICH)
        imported = import_completion_body(json.loads(json.dumps(body)))
    else:
        words, unmapped = server_flags(RICH)
        imported = import_server_flags(shell_words(flags_text(words)))
    assert imported.unmapped == ()
    assert sorted(entry.name for entry in unmapped) == sorted(
        LLAMA_CPP_LACKS - {"temperature_last"}
    )
    back = imported_settings(imported)
    held = ALL_FIELDS - LLAMA_CPP_LACKS - {"samplers"}
    assert differing(RICH, back, held) == {}
    # The order that ran (the temperature moved last) without what llama.cpp lacks;
    # adaptive-p, on, joins last again as llama.cpp runs it.
    assert llama_order(back) == llama_order(RICH)
    assert back.samplers == (*llama_order(RICH), "adaptive_p")
    assert back.samplers[-2] == "temperature"


def test_a_ban_and_no_breakers_in_llama_cpps_spellings() -> None:
    settings = SamplerSettings(logit_bias="5=-inf;9=+1.5", dry_sequence_breakers=())
    body, _ = completion_body(settings)
    assert body["logit_bias"] == [[5, False], [9, 1.5]]
    assert body["dry_sequence_breakers"] == []
    words, _ = server_flags(settings)
    text = flags_text(words)
    assert "--logit-bias 5-inf --logit-bias 9+1.5" in text
    assert "--dry-sequence-breaker none" in text
    back = imported_settings(import_server_flags(shell_words(text)))
    assert back.logit_bias == ((5, -math.inf), (9, 1.5))
    assert back.dry_sequence_breakers == ()
    assert imported_settings(import_completion_body(body)).logit_bias == back.logit_bias


def test_imported_presets_are_saved_among_the_users_presets(tmp_path: Path) -> None:
    path = tmp_path / "config" / "presets.toml"
    save_user_preset(path, "rich", RICH)
    save_user_preset(path, "plain 'one'", SamplerSettings(temperature=0.5))
    loaded = load_presets(path)
    assert loaded == {"rich": RICH, "plain 'one'": SamplerSettings(temperature=0.5)}
    with pytest.raises(PresetError, match="already holds a preset named 'rich'"):
        save_user_preset(path, "rich", SamplerSettings())


def test_the_preset_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    source = write(tmp_path, "Dynamic Temperature.yaml", TEXTGEN_YAML)
    assert main(["preset", "import", str(source), "--name", "dyn"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("text-generation-webui preset 'dyn': ")
    assert "  guidance_scale = 1.5 (no counterpart in samplescope)" in out
    assert main(["preset", "import", str(source), "--name", "dyn"]) == 1
    assert "already holds a preset named 'dyn'" in capsys.readouterr().err
    assert main(["compare", "--list-presets"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith("ArgMax ")  # the shipped presets, then the user's
    assert listed[-1].startswith("dyn ")

    assert main(["preset", "export", "--preset", "dyn", "--format", "sillytavern"]) == 0
    captured = capsys.readouterr()
    exported = json.loads(captured.out)
    assert (exported["dynatemp"], exported["min_temp"], exported["max_temp"]) == (True, 0.01, 2)
    assert exported["min_p"] == 0.07
    assert captured.err == ""

    assert main(["preset", "export", "--top-a", "0.2", "--seed", "3"]) == 0
    captured = capsys.readouterr()
    words = shell_words(captured.out)
    assert words[words.index("--seed") + 1] == "3"
    assert words[words.index("--temp") + 1] == "0.8"
    assert "top_a = 0.2 (llama.cpp has no such setting)" in captured.err

    # A preset sets no seed: none is written (llama-server then draws one), and DRY's
    # newline breaker stays on the one line, escaped as bash reads it.
    assert main(["preset", "export", "--preset", "TopP p=0.9 t=0.8"]) == 0
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and "--seed" not in line
    assert "--dry-sequence-breaker $'\\n'" in line
    words = shell_words(line)
    assert words[words.index("--dry-sequence-breaker") + 1] == "\n"
    assert main(["preset", "export", "--preset", "TopP p=0.9 t=0.8", "-s", "0"]) == 0
    assert "--seed 0" in capsys.readouterr().out

    assert main(["preset", "export", "--format", "completion-json", "-t", "0.5"]) == 0
    assert json.loads(capsys.readouterr().out)["temperature"] == 0.5


VALUES: dict[str, list[Any]] = {
    "temperature": [0.0, 0.3, 0.8, 1.0, 1.7],
    "top_k": [0, 1, 40, 200],
    "top_p": [0.5, 0.95, 1.0],
    "min_p": [0.0, 0.05, 0.3],
    "repeat_penalty": [1.0, 1.18],
    "repeat_last_n": [0, 64, 2048],
    "frequency_penalty": [0.0, 0.5],
    "presence_penalty": [0.0, -0.5],
    "temperature_last": [False, True],
    "seed": [0, 7, 2**32 + 5],
    "typical_p": [0.8, 1.0],
    "top_n_sigma": [-1.0, 0.5, 2.0],
    "xtc_probability": [0.0, 0.5, 1.0],
    "xtc_threshold": [0.05, 0.1, 0.6],
    "dry_multiplier": [0.0, 0.8],
    "dry_base": [1.75, 1.1],
    "dry_allowed_length": [2, 5],
    "dry_penalty_last_n": [-1, 0, 256],
    "dry_sequence_breakers": [(), ("\n",), ("\n", ":", '"', "*"), ("##", " and")],
    "mirostat": [0, 1, 2],
    "mirostat_tau": [5.0, 3.5],
    "mirostat_eta": [0.1, 0.25],
    "dynatemp_range": [0.0, 0.5],
    "dynatemp_exponent": [1.0, 2.5],
    "top_a": [0.0, 0.2],
    "tfs": [1.0, 0.9],
    "epsilon_cutoff": [0.0, 0.0003, 0.0009],
    "eta_cutoff": [0.0, 0.0004, 0.002],
    "smoothing_factor": [0.0, 0.3],
    "smoothing_curve": [1.0, 2.0],
    "adaptive_target": [-1.0, 0.3],
    "adaptive_decay": [0.9, 0.5],
    "logit_bias": [(), ((3, 1.5),), ((1, -2.0), (99, 0.25))],
}


@st.composite
def mapped_settings(draw: st.DrawFn) -> SamplerSettings:
    changes = {name: draw(st.sampled_from(values)) for name, values in VALUES.items()}
    changes["temperature"] = max(changes["temperature"], changes["dynatemp_range"])
    order = draw(st.permutations(list(CHAT_ORDER[2:])))
    if changes["adaptive_target"] >= 0.0:  # on, it must end the order (its placement)
        order = [*(name for name in order if name != "adaptive_p"), "adaptive_p"]
    changes["samplers"] = (*CHAT_ORDER[:2], *order)
    return SamplerSettings(**changes)


@given(mapped_settings())
def test_sillytavern_round_trips_any_settings(settings: SamplerSettings) -> None:
    preset, _ = export_sillytavern(settings)
    back = imported_settings(import_sillytavern(json.loads(json.dumps(preset))))
    assert differing(settings, back, ALL_FIELDS - SILLYTAVERN_LACKS) == {}


@given(mapped_settings())
def test_llama_server_round_trips_any_settings(settings: SamplerSettings) -> None:
    body, _ = completion_body(settings)
    words, _ = server_flags(settings)
    for imported in (
        import_completion_body(json.loads(json.dumps(body))),
        import_server_flags(shell_words(flags_text(words))),
    ):
        back = imported_settings(imported)
        assert differing(settings, back, ALL_FIELDS - LLAMA_CPP_LACKS - {"samplers"}) == {}
        assert llama_order(back) == llama_order(settings)


def test_a_plugins_setting_and_name_are_listed_not_exported(tmp_path: Path) -> None:
    plugin = tmp_path / "top_h.py"
    plugin.write_text(readme_plugin(), encoding="utf-8")
    settings = SamplerSettings(with_plugin(plugin), samplers="top_h;top_k;temperature")
    settings = settings.with_changes(top_h=0.4)
    for export in (server_flags, completion_body, export_sillytavern):
        _, unmapped = export(settings)
        assert [entry.describe() for entry in unmapped] == [
            "top_h = 0.4 (a sampler plugin's setting)"
        ]
    body, _ = completion_body(settings)
    assert body["samplers"] == ["top_k", "temperature"]
