"""A plugin's failures at the boundary: any exception when loaded (sys.exit and
KeyboardInterrupt included) is one line naming the file; a setting whose flag clashes
with samplescope's options switches the plugin off with a notice, never a traceback."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from backend.chat.events import NoticeEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from sampling import Sampler, SamplerSettings
from sampling.plugins import PluginError
from tests.fake_backend import FakeBackend
from tests.helpers import readme_plugin, write_plugin
from tests.registries import with_plugin
from tests.unit.test_sampler_plugins import X
from tui.cli.main import main

QUESTION = [ChatMessage("user", "hi")]


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The config folder's samplers/ (empty)."""
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    folder = tmp_path / "config" / "samplers"
    folder.mkdir(parents=True)
    yield folder


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("import sys\nsys.exit()\n", "it called sys.exit(None) when loaded"),
        ("import sys\nsys.exit(3)\n", "it called sys.exit(3) when loaded"),
        ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
        ("raise ValueError('bad\\nvalue')\n", "ValueError: bad value"),
    ],
)
def test_anything_a_plugin_raises_when_loaded_is_one_line_naming_it(
    config: Path, capsys: pytest.CaptureFixture[str], code: str, words: str
) -> None:
    path = config / "broken.py"
    path.write_text(code, encoding="utf-8")
    with pytest.raises(PluginError, match=re.escape(words)) as caught:
        with_plugin(path)
    assert str(path) in str(caught.value)
    for argv in (["samplers"], ["generate", "-h"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == f"samplescope: {caught.value}\n"


@pytest.mark.parametrize(
    ("change", "flag"),
    [
        (("top_h", "max_tokens"), "--max-tokens"),
        (("top_h", "model"), "--model"),
        (("top_h", "help"), "--help"),
        (('label="top-h",', 'label="top-h", short_flag="-t",'), "-t"),
    ],
)
def test_a_plugin_whose_flag_clashes_is_switched_off_with_a_notice(
    config: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], flag: str
) -> None:
    path = config / "clash.py"
    path.write_text(readme_plugin().replace(*change), encoding="utf-8")
    assert main(["samplers", "--json"]) == 0
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    setting = "top_h" if "label" in change[0] else change[1]
    assert line.startswith(f"samplescope: sampler plugin {path}: its setting {setting!r}")
    assert f"({flag}) clashes with an option of samplescope" in line and "not loaded" in line
    assert f'"{setting}"' not in captured.out


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            "        candidates.cut(np.array([-1]), self.name)",
            "it kept token id -1, outside the vocabulary",
        ),
        (
            "        candidates.cut(np.array([10**6]), self.name)",
            "it kept token id 1000000, outside the vocabulary",
        ),
        ("        candidates.logits[:] = 0.0", "it wrote into the logits it was given"),
        (
            "        candidates.logits[:] = 1.0\n        raise ValueError('and failed')",
            "and failed",
        ),
        (
            "        candidates.logits = candidates.logits[:4].copy()",
            "it changed the logits' shape",
        ),
        (
            "        grown = candidates.logits.copy()\n        grown[3] = np.inf\n"
            "        candidates.replace_logits(grown)",
            "it set a logit to +inf",
        ),
    ],
)
def test_broken_candidates_switch_the_plugin_off_and_leave_the_raw_logits_alone(
    tmp_path: Path, body: str, problem: str
) -> None:
    path = write_plugin(tmp_path, "rogue", body)
    base = SamplerSettings(with_plugin(path), top_k=3, seed=5)
    raw = X.copy()
    with_it = Sampler(base.with_changes(samplers=("rogue", "top_k", "temperature")))
    without = Sampler(base.with_changes(samplers=("top_k", "temperature")))
    step = with_it.sample(raw)
    assert np.array_equal(raw, X)  # the step's raw record as the model gave it
    (note,) = step.notes
    assert "sampler plugin rogue switched off" in note and problem in note
    other = without.sample(X)
    assert replace(step, settings=other.settings) == other


def test_a_plugin_switched_off_is_told_where_it_happened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_plugin(tmp_path, "rogue", "        raise RuntimeError('no luck')")
    backend = FakeBackend()
    settings = SamplerSettings(with_plugin(path), samplers=("rogue", "temperature"), seed=2)
    events = list(backend.generate(QUESTION, LiveSettings(settings), max_tokens=3))
    notices = [e.message for e in events if isinstance(e, NoticeEvent)]
    assert notices == ["sampler plugin rogue switched off for this reply: RuntimeError: no luck"]
    first_token = next(i for i, e in enumerate(events) if isinstance(e, TokenEvent))
    assert events.index(next(e for e in events if isinstance(e, NoticeEvent))) < first_token


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            ('"top_h",\n            "float"', '"",\n            "float"'),
            "must be a Python identifier",
        ),
        (('"top_h",\n            "float"', '"top_h",\n            "complex"'), "unknown kind"),
        (('label="top-h",', 'label="top-h", short_key="t",'), "short key 't' is 'temperature'"),
        (('label="top-h",', 'label="top-h", short_flag="t",'), "its short flag must be"),
        ("fine=0.01", "its slider's steps must be above 0"),
    ],
)
def test_a_plugin_setting_that_would_break_a_flag_key_or_slider_is_refused_at_load(
    config: Path, change: tuple[str, str] | str, words: str
) -> None:
    text = readme_plugin()
    old, new = change if isinstance(change, tuple) else (change, "fine=0")
    assert old in text
    path = config.parent / "bad.py"
    path.write_text(text.replace(old, new), encoding="utf-8")
    with pytest.raises(PluginError, match=re.escape(words)) as caught:
        with_plugin(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (("minimum=0.0,", "minimum=float('nan'),"), "its minimum must be a finite number, not nan"),
        (("maximum=1.0,", "maximum=float('inf'),"), "its maximum must be a finite number, not inf"),
        (
            (
                "minimum=0.0,\n            maximum=1.0,",
                "minimum=float('nan'), maximum=float('inf'),",
            ),
            "its minimum must be a finite number, not nan",
        ),
        (
            ("hard_max=1.0,", "hard_max=float('inf'),"),
            "its slider's hard_max must be a finite number, not inf",
        ),
    ],
)
def test_a_setting_with_a_bound_that_is_not_finite_is_refused(
    config: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], words: str
) -> None:
    source = readme_plugin()
    assert change[0] in source
    (config / "unbounded.py").write_text(source.replace(*change), encoding="utf-8")
    assert main(["samplers", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()]
    assert f"setting 'top_h': {words}" in err
    assert "unbounded.py" in err
