"""Fuzzing preset files: other tools' presets (JSON, YAML, a llama-server body) and our
own `presets.toml`.

An import gives an `ImportedPreset` whose settings build or are refused, or one
`PresetFormatError` line naming the file; `presets.toml` gives presets or one
`PresetError` line. A preset saved under any name reads back as it was written.
Random bytes, deep nesting, huge sizes, alias bombs and non-UTF-8 get the same one
line, never another exception. Examples per run come from the hypothesis profile
(tests/conftest.py): five properties of 100 examples each.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.config.llama_server_format import import_server_flags
from backend.config.preset_files import (
    TOOLS,
    imported_settings,
    preset_toml,
    read_preset_file,
    save_user_preset,
)
from backend.config.preset_interchange import ImportedPreset, PresetFormatError
from backend.config.presets import PresetError, load_presets, parse_presets
from sampling.errors import SamplescopeError
from sampling.settings.record import SamplerSettings
from tests.helpers import SPECIAL_FILE_KINDS, special_file
from tests.unit.test_fuzz_sampler import accepted_settings

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

FIELDS = sorted(
    {
        # SillyTavern, text-generation-webui, KoboldCpp and llama-server field names.
        "temp", "temperature", "top_k", "top_p", "min_p", "typical_p", "typ_p", "typical",
        "tfs", "tfs_z", "top_a", "rep_pen", "rep_pen_range", "repeat_penalty",
        "repeat_last_n", "repetition_penalty", "repetition_penalty_range", "freq_pen",
        "frequency_penalty", "presence_pen", "presence_penalty", "mirostat",
        "mirostat_mode", "mirostat_tau", "mirostat_eta", "dry_multiplier", "dry_base",
        "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers",
        "xtc_threshold", "xtc_probability", "nsigma", "top_n_sigma", "epsilon_cutoff",
        "eta_cutoff", "smoothing_factor", "smoothing_curve", "dynatemp_range",
        "dynatemp_exponent", "dynatemp_low", "dynatemp_high", "dynatemp",
        "dynamic_temperature", "temperature_last", "sampler_order", "sampler_priority",
        "samplers", "sampler_seed", "seed", "logit_bias", "banned_tokens", "grammar",
        "grammar_string", "json_schema", "penalties", "adaptive_target", "adaptive_decay",
        "min_tokens", "n_probs", "", "\x00", "é",
    }
)  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 2**31, 2**63, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10),
    st.sampled_from(["[1]", "[ 5 ]", "typ_p", "top_k", "temperature", "min_p", "1e999"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=4)), inner, max_size=4),
    ),
    max_leaves=12,
)
presets = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=8)


def folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="samplescope-fuzz-presets-"))


@pytest.fixture(scope="module")
def work() -> Path:
    return folder()


def file_id(value: object) -> str:
    """A test id: the file's name, not its (long) content."""
    return value if isinstance(value, str) and value.endswith(SUFFIXES) else "data"


SUFFIXES = (".json", ".yaml", ".toml")


def one_line(error: BaseException, path: Path | None = None) -> None:
    """The error is ours, one line, and names the file when there is one."""
    assert isinstance(error, SamplescopeError), repr(error)
    message = str(error)
    assert "\n" not in message, message
    assert len(message) < 2000, message[:200]
    if path is not None:
        assert str(path) in message, message


def import_checked(path: Path, tool: Any = None) -> ImportedPreset | None:
    """Import a file; the result's settings build, or one line names what is wrong."""
    try:
        imported = read_preset_file(path, tool)
    except PresetFormatError as error:
        one_line(error, path)
        return None
    for field in imported.unmapped:
        assert "\n" not in field.describe() or "\n" in repr(field.value)
    try:
        imported_settings(imported)
    except PresetFormatError as error:
        one_line(error)
    return imported


@HEALTH
@given(presets, st.sampled_from([None, *TOOLS]))
def test_a_json_preset_imports_or_gives_one_line(
    work: Path, data: dict[str, Any], tool: Any
) -> None:
    path = work / "preset.json"
    path.write_text(json.dumps(data, allow_nan=True), encoding="utf-8", errors="surrogatepass")
    import_checked(path, tool)


@HEALTH
@given(presets)
def test_a_yaml_preset_imports_or_gives_one_line(work: Path, data: dict[str, Any]) -> None:
    path = work / "preset.yaml"
    try:
        text = yaml.safe_dump(data, allow_unicode=True)
    except yaml.YAMLError:
        return
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    import_checked(path)


@HEALTH
@given(st.binary(max_size=200), st.sampled_from(["json", "yaml", "yml", "toml", ""]))
def test_random_bytes_import_or_give_one_line(work: Path, data: bytes, suffix: str) -> None:
    path = work / f"bytes.{suffix}"
    path.write_bytes(data)
    import_checked(path)
    try:
        load_presets(path)
    except PresetError as error:
        one_line(error, path)


@HEALTH
@given(st.lists(st.one_of(st.sampled_from(
    ["--temp", "--top-k", "--samplers", "--logit-bias", "--dry-sequence-breaker",
     "--grammar", "--json-schema", "--seed", "--mirostat", "nan", "inf", "1e999", "-1",
     "5+1", "5-inf", "x", "", "top_k;typ_p;x", "none", "--repeat-penalty", "\n", "--temp\n"]
), st.text(max_size=6)), max_size=8))  # fmt: skip
def test_llama_server_flags_import_or_give_one_line(words: list[str]) -> None:
    try:
        imported = import_server_flags(words)
    except PresetFormatError as error:
        one_line(error)
        return
    try:
        imported_settings(imported)
    except PresetFormatError as error:
        one_line(error)


names = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from(["", "a.b", "[x]", '"', "\\", "\x7f", "\x00", "\u2028", "é", "a b", "#"]),
)


@HEALTH
@given(names, accepted_settings())
def test_a_saved_preset_reads_back_as_written(name: str, chosen: SamplerSettings) -> None:
    read = parse_presets(preset_toml(name, chosen), "presets.toml")
    assert list(read) == [name]
    assert read[name] == chosen


def test_saving_twice_under_one_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "presets.toml"
    save_user_preset(path, "a\x7f\x00", SamplerSettings(temperature=0.5))
    with pytest.raises(PresetError, match="already holds a preset"):
        save_user_preset(path, "a\x7f\x00", SamplerSettings())
    assert load_presets(path) == {"a\x7f\x00": SamplerSettings(temperature=0.5)}


DEPTH = 100_000


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", "[" * DEPTH + "]" * DEPTH),
        ("deep-object.json", '{"temp":' * DEPTH + "1" + "}" * DEPTH),
        ("deep.yaml", "a: [" + "[" * DEPTH + "]" * DEPTH + "]"),
        ("deep-block.yaml", "".join(" " * n + "a:\n" for n in range(3000)) + " " * 3000 + "1\n"),
        ("bomb.yaml", "a: &a [x, x, x, x, x, x, x, x, x]\n"
         + "".join(f"{chr(98 + n)}: &{chr(98 + n)} [*{chr(97 + n)}, *{chr(97 + n)}, "
                   f"*{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}]\n"
                   for n in range(9))),
        ("self.yaml", "a: &a [*a]\n"),
        ("self-map.yaml", "a: &a {b: *a}\n"),
        ("huge-int.yaml", "seed: 1" + "0" * 5000 + "\n"),
        ("bad-date.yaml", "temperature: 1\nwhen: 2001-13-45\n"),
        ("bad-float.yaml", "temperature: !!float x\n"),
        ("python-tag.yaml", "temperature: !!python/object/apply:os.system [echo]\n"),
        ("huge-number.json", '{"temp": 1' + "0" * 5000 + "}"),
        ("huge-seed.json", '{"temp": 1, "seed": 1e999}'),
        ("nul.json", '{"temp": 1, "\x00": "\x00"}'),
        ("newline-key.json", '{"": {"\\n": 1e999}}'),
        ("controls.yaml", "temperature: 1\nx: \"\\x1b[31m\\u0085\"\n"),
        ("surrogate.json", '{"temp": "\\udc80"}'),
        ("deep.toml", "[a]\nx = " + "[" * DEPTH + "]" * DEPTH + "\n"),
        ("huge-int.toml", "[a]\nseed = 1" + "0" * 5000 + "\n"),
        ("deep-table.toml", "[a]\nx = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n"),
    ],
    ids=file_id,
)  # fmt: skip
def test_hostile_files_give_one_line(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    if name.endswith(".toml"):
        with pytest.raises(PresetError) as raised:
            load_presets(path)
        one_line(raised.value, path)
        return
    import_checked(path)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("latin1.json", b'{"temp": "\xe9"}'),
        ("latin1.yaml", b"temperature: 1\nname: \xe9\n"),
        ("latin1.toml", b'[a]\ntemperature = 1\nx = "\xe9"\n'),
        ("huge.json", b'{"temp": 1, "x": "' + b"a" * (2 << 20) + b'"}'),
        ("huge.toml", b"[a]\ntemperature = 1\n" + b"#" * (20 << 20)),
    ],
    ids=file_id,
)
def test_unreadable_files_give_one_line(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    if name.endswith(".toml"):
        with pytest.raises(PresetError) as raised:
            load_presets(path)
        one_line(raised.value, path)
        return
    with pytest.raises(PresetFormatError) as raised_import:
        read_preset_file(path)
    one_line(raised_import.value, path)


@pytest.mark.parametrize("kind", SPECIAL_FILE_KINDS)
def test_special_files_are_refused_before_reading(tmp_path: Path, kind: str) -> None:
    path = special_file(tmp_path / "special.toml", kind)
    with pytest.raises(PresetFormatError) as raised:
        read_preset_file(path)
    one_line(raised.value, path)
    with pytest.raises(PresetError) as raised_own:
        load_presets(path)
    one_line(raised_own.value, path)
