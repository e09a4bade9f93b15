"""The user's TOML config: default model, default sampler settings, theme, keys.

The file lives at `<user config dir>/config.toml` (`samplescope config --path`;
`SAMPLESCOPE_CONFIG_DIR` overrides the directory). Every entry is optional:

    model = "~/models/qwen2.5-0.5b-instruct-q4_k_m.gguf"
    theme = "gruvbox"
    rpc = ["10.0.0.2:50052", "10.0.0.3:50052"]   # or "10.0.0.2:50052,10.0.0.3:50052"
    surprise = "p<0.05"   # which tokens the token cursor's [ ] jump to, or "surprise>2"
    repack = false        # true: llama.cpp's repacked weights (faster, inexact side by side)

    [settings]          # any SamplerSettings field
    temperature = 0.7
    top_k = 40
    seed = 1234

    [keys]              # action = "key"
    quit = "ctrl+q"

    [bans]              # phrases a reply may not hold (it backtracks; see --ban)
    phrases = ["as an AI", "delve"]
    ignore_case = true  # default false
    regex = false       # each phrase a regular expression

    [loops]             # repetition loops: "off", "mark" or "stop" (see loops_table)
    mode = "mark"

    [template]          # the chat template's switches (backend.chat.template_switches)
    kwargs = { enable_thinking = false }
    reasoning_effort = "low"
    reasoning_preserve = true

Precedence, lowest first: built-in defaults (`chat_defaults`, the default
model) < the config file < command-line flags. Wiring, for a command or the app:

    config, problem = load_config_or_default(registry=registry)     # never raises
    if problem: show it (stderr / a notification) and carry on with defaults
    settings = settings_from_args(args, settings_with_config(chat_defaults(registry), config))
    model_path = resolve_model_path(model_with_config(args.model, config))

A missing file is not an error (all defaults). A broken file raises `ConfigError`
naming the file and the line from `load_config`.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backend.chat.template_switches import (
    NO_SWITCHES,
    TemplateSwitches,
    parse_template_table,
    template_toml,
)
from backend.config.loops_table import loops_toml, parse_loops
from backend.config.model_path import MODEL_ENV
from backend.config.paths import default_config_path
from backend.config.user_files import DEFAULT_LIMIT, UserFileError, read_user_text
from backend.llama.rpc import Endpoint, RpcError, format_endpoints, parse_endpoints
from backend.session.loop_watch import LoopGuard
from backend.session.phrase_bans import DEFAULT_TRIES, PhraseBanError, PhraseBans
from sampling.analysis.surprise import DEFAULT_SURPRISE, SurpriseRule, parse_surprise
from sampling.built_in import BUILT_IN_REGISTRY, DEFAULT_CHAT_SETTINGS, chat_defaults
from sampling.errors import SamplescopeError, SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of
from sampling.thinking_settings import thinking_record

TOP_LEVEL_KEYS = (
    "model",
    "theme",
    "rpc",
    "model_dirs",
    "surprise",
    "repack",
    "settings",
    "keys",
    "bans",
    "loops",
    "template",
)
BAN_KEYS = ("phrases", "ignore_case", "regex", "tries")


class ConfigError(SamplescopeError):
    """The config file cannot be read or holds a bad entry; names the file and line."""


@dataclass(frozen=True, slots=True)
class Config:
    """The parsed config file (only what it sets; defaults elsewhere).

    Attributes:
        path: The file it came from (None: no file, all defaults).
        model: The default model path (`~` not yet expanded), or None.
        theme: The Textual theme name, or None (the app's own default).
        rpc: llama.cpp RPC servers to split the model across (empty: this machine).
        model_dirs: Folders of GGUF files `samplescope models` lists (`~` not yet
            expanded).
        surprise: Which tokens count as surprising (`sampling.analysis.surprise`), or None
            (the default rule).
        repack: Load models with llama.cpp's repacked weights (`--repack`).
        settings: The sampler settings fields the file sets, as (field, value) pairs.
        keys: Key overrides as (action, key) pairs.
        bans: The phrases a reply may not hold ([bans]; none: nothing banned).
        loops: What a repetition loop in a reply does ([loops]; default: marked).
        template: The chat template's switches ([template]; the flags go on top).
    """

    path: Path | None = None
    model: str | None = None
    theme: str | None = None
    rpc: tuple[Endpoint, ...] = ()
    model_dirs: tuple[str, ...] = ()
    surprise: SurpriseRule | None = None
    repack: bool = False
    settings: tuple[tuple[str, Any], ...] = ()
    keys: tuple[tuple[str, str], ...] = ()
    bans: PhraseBans = field(default_factory=PhraseBans)
    loops: LoopGuard = field(default_factory=LoopGuard)
    template: TemplateSwitches = NO_SWITCHES

    @property
    def settings_overrides(self) -> dict[str, Any]:
        """The sampler fields the file sets, as a dict."""
        return dict(self.settings)

    @property
    def key_overrides(self) -> dict[str, str]:
        """action -> key, as a dict."""
        return dict(self.keys)


def settings_with_config(base: SamplerSettings, config: Config) -> SamplerSettings:
    """`base` with the config file's [settings] applied (flags then go on top).

    The values were validated against `DEFAULT_CHAT_SETTINGS` at load time; applied
    to another base they are validated again (SettingsError names the field).
    """
    return base.with_changes(**config.settings_overrides) if config.settings else base


def model_with_config(explicit: str | os.PathLike[str] | None, config: Config) -> str | None:
    """The model to pass to `resolve_model_path`: --model, else $SAMPLESCOPE_MODEL,
    else the config file's `model`, else None (the bundled default)."""
    if explicit is not None and str(explicit) != "":
        return os.fspath(explicit)
    return os.environ.get(MODEL_ENV) or config.model


def rpc_with_config(explicit: str | None, config: Config) -> tuple[Endpoint, ...]:
    """The RPC servers to use: --rpc (an empty string: none), else the config's `rpc`.

    Raises:
        RpcError: --rpc is not HOST:PORT[,HOST:PORT...].
    """
    if explicit is not None:
        return parse_endpoints(explicit) if explicit.strip() else ()
    return config.rpc


def load_config(path: Path | None = None, registry: Registry = BUILT_IN_REGISTRY) -> Config:
    """Read and validate the config file.

    Args:
        path: The file; default `default_config_path()`.
        registry: The registry its [settings] are read with (the front door's: the
            built-in units and the plugins it loaded).

    Returns:
        The config; `Config()` (all defaults) when the file does not exist.

    Raises:
        ConfigError: The file is unreadable, not TOML, has an unknown key or a bad
            value. The message names the file and the line.
    """
    path = default_config_path() if path is None else Path(path)
    if not path.exists():
        return Config()
    try:
        text = read_user_text(path, DEFAULT_LIMIT)
    except UserFileError as error:
        raise ConfigError(f"cannot read the config file: {error}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from error
    except ValueError:  # an integer past Python's 4,300 digits
        raise ConfigError(f"config file {path} holds a number too long to read") from None
    except RecursionError:
        raise ConfigError(f"config file {path} nests tables or arrays too deeply") from None
    return _parse(path, text, data, registry)


def load_config_or_default(
    path: Path | None = None, registry: Registry = BUILT_IN_REGISTRY
) -> tuple[Config, str | None]:
    """Like `load_config`, but a broken file gives the defaults plus the message.

    Returns:
        (config, None) normally; (Config(), message) when the file is broken — show
        the message and start on defaults.
    """
    try:
        return load_config(path, registry), None
    except ConfigError as error:
        return Config(), f"{error} (using the defaults)"


def _parse(path: Path, text: str, data: dict[str, Any], registry: Registry) -> Config:
    def fail(table: str | None, key: str, problem: str) -> ConfigError:
        line = find_line(text, table, key)
        where = f", line {line}" if line is not None else ""
        name = key if table is None else f"{table}.{key}"
        return ConfigError(f"config file {path}{where}: {name}: {problem}")

    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise fail(None, key, f"unknown key; expected one of {', '.join(TOP_LEVEL_KEYS)}")
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise fail(None, "model", f"expected a file path in quotes, got {model!r}")
    theme = data.get("theme")
    if theme is not None and (not isinstance(theme, str) or not theme.strip()):
        raise fail(None, "theme", f"expected a theme name in quotes, got {theme!r}")

    rpc: tuple[Endpoint, ...] = ()
    if "rpc" in data:
        value = data["rpc"]
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise fail(None, "rpc", f'expected "HOST:PORT" or a list of them, got {value!r}')
        try:
            rpc = parse_endpoints(items) if any(i.strip() for i in items) else ()
        except RpcError as error:
            raise fail(None, "rpc", str(error)) from error

    model_dirs = data.get("model_dirs", [])
    if not isinstance(model_dirs, list) or not all(
        isinstance(d, str) and d.strip() for d in model_dirs
    ):
        raise fail(None, "model_dirs", f"expected a list of folders in quotes, got {model_dirs!r}")

    surprise = None
    if "surprise" in data:
        value = data["surprise"]
        try:
            surprise = parse_surprise(value if isinstance(value, str) else repr(value))
        except SettingsError as error:
            raise fail(None, "surprise", str(error)) from error

    repack = data.get("repack", False)
    if not isinstance(repack, bool):
        raise fail(None, "repack", f"expected true or false, got {repack!r}")

    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise fail(None, "settings", "expected a table: [settings]")
    for key in settings:
        if key not in registry.settings_by_name or key == "extra":
            raise fail(
                "settings",
                key,
                f"unknown setting; expected one of {', '.join(registry.settings_by_name)}",
            )
    try:
        # The order, biases and breakers may be written as text or as TOML arrays.
        settings = {
            key: value
            if registry.settings_by_name[key].is_scalar
            else registry.settings_by_name[key].coerce(value)
            for key, value in settings.items()
        }
        thinking_record(chat_defaults(registry).with_changes(**settings))
    except SettingsError as error:
        raise fail("settings", error.field, str(error)) from error

    keys = data.get("keys", {})
    if not isinstance(keys, dict):
        raise fail(None, "keys", "expected a table: [keys]")
    for action, key in keys.items():
        if not isinstance(key, str) or not key.strip():
            raise fail("keys", action, f'expected a key in quotes such as "ctrl+q", got {key!r}')

    return Config(
        path=path,
        model=model,
        theme=theme,
        rpc=rpc,
        model_dirs=tuple(model_dirs),
        surprise=surprise,
        repack=repack,
        settings=tuple(settings.items()),
        keys=tuple((str(a), str(k)) for a, k in keys.items()),
        bans=_parse_bans(data.get("bans", {}), fail),
        loops=parse_loops(data.get("loops", {}), fail),
        template=parse_template_table(data.get("template", {}), fail),
    )


def _parse_bans(table: object, fail: Callable[[str | None, str, str], ConfigError]) -> PhraseBans:
    """The [bans] table as `PhraseBans`."""
    if not isinstance(table, dict):
        raise fail(None, "bans", "expected a table: [bans]")
    for key in table:
        if key not in BAN_KEYS:
            raise fail("bans", key, f"unknown key; expected one of {', '.join(BAN_KEYS)}")
    phrases = table.get("phrases", [])
    if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
        raise fail("bans", "phrases", f"expected a list of texts in quotes, got {phrases!r}")
    for key in ("ignore_case", "regex"):
        if not isinstance(table.get(key, False), bool):
            raise fail("bans", key, f"expected true or false, got {table[key]!r}")
    tries = table.get("tries", DEFAULT_TRIES)
    if not isinstance(tries, int) or isinstance(tries, bool):
        raise fail("bans", "tries", f"expected a whole number, got {tries!r}")
    try:
        return PhraseBans(
            tuple(phrases),
            ignore_case=table.get("ignore_case", False),
            regex=table.get("regex", False),
            tries=tries,
        )
    except PhraseBanError as error:
        raise fail("bans", "phrases", str(error)) from error


_TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")


def find_line(text: str, table: str | None, key: str) -> int | None:
    """The 1-based line where `key` is set (in `[table]`, or top level), if found.

    Understands `[table]` headers, `key = …` inside them, dotted `table.key = …` at
    the top level and `table = {…}` inline tables (the table's line); quoted keys
    too. Good enough to point at the line; None when not found.
    """
    key_pattern = rf"""(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')"""
    plain = re.compile(rf"^\s*{key_pattern}\s*=")
    header = re.compile(rf"^\s*\[\s*{key_pattern}\s*\]")
    dotted = inline = None
    if table is not None:
        dotted = re.compile(rf"^\s*{re.escape(table)}\s*\.\s*{key_pattern}\s*=")
        inline = re.compile(rf"^\s*{re.escape(table)}\s*=\s*\{{")
    current: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _TABLE.match(line)
        if match:
            current = match.group(1).strip().strip("\"'")
            if table is None and header.match(line):
                return number
            continue
        if current == table and plain.match(line):
            return number
        at_top = current is None and dotted is not None and inline is not None
        if at_top and (dotted.match(line) or (inline.match(line) and key in line)):  # type: ignore[union-attr]
            return number
    return None


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def effective_toml(
    config: Config, *, model: str, base: SamplerSettings = DEFAULT_CHAT_SETTINGS
) -> str:
    """The effective configuration (file on top of defaults) as TOML text.

    Args:
        config: The loaded config.
        model: The model path that would be used (resolved by the caller).
        base: The built-in settings the file's [settings] apply to (the chat's, made
            with the front door's registry: `chat_defaults`; default the built-in
            units' alone).
    """
    settings = settings_with_config(base, config)
    lines = [
        f"# config file: {config.path if config.path else '(none: built-in defaults)'}",
        f"model = {_toml_value(model)}",
        f"theme = {_toml_value(config.theme)}"
        if config.theme
        else "# theme: not set (the app's default)",
        f"rpc = {_toml_value(format_endpoints(config.rpc))}"
        if config.rpc
        else "# rpc: not set (the model runs on this machine)",
        f"model_dirs = [{', '.join(_toml_value(d) for d in config.model_dirs)}]"
        if config.model_dirs
        else "# model_dirs: not set (`samplescope models` searches the other tools' stores)",
        f"surprise = {_toml_value(config.surprise.text)}"
        if config.surprise
        else f"# surprise: not set ({DEFAULT_SURPRISE.text}: the token cursor's [ ] jumps)",
        f"repack = {_toml_value(config.repack)}"
        + ("" if config.repack else "  # the weights as loaded: exact side by side"),
        "",
        "[settings]",
    ]
    set_here = config.settings_overrides
    for name, value in settings.to_dict().items():
        note = "  # from the config file" if name in set_here else ""
        spec = registry_of(settings).settings_by_name[name]
        # The order, biases and breakers are written in their text form.
        text = _toml_value(value if spec.is_scalar else spec.format(value))
        lines.append(f"{name} = {text}{note}")
    lines += ["", "[keys]"]
    lines += [f"{_toml_value(a)} = {_toml_value(k)}" for a, k in config.keys]
    bans = config.bans
    lines += [
        "",
        "[bans]",
        f"phrases = [{', '.join(_toml_value(p) for p in bans.phrases)}]",
        f"ignore_case = {_toml_value(bans.ignore_case)}",
        f"regex = {_toml_value(bans.regex)}",
        f"tries = {bans.tries}",
        "",
        *loops_toml(config.loops),
        "",
        *template_toml(config.template),
    ]
    return "\n".join(lines) + "\n"
