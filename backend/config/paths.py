"""Where samplescope keeps its files: the user data and config directories.

Both follow the platform's conventions (platformdirs); the environment variables
`SAMPLESCOPE_DATA_DIR` and `SAMPLESCOPE_CONFIG_DIR` override them (tests use these to
stay out of the real home directory).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "samplescope"
DATA_DIR_ENV = "SAMPLESCOPE_DATA_DIR"
CONFIG_DIR_ENV = "SAMPLESCOPE_CONFIG_DIR"
STORE_FILENAME = "chats.sqlite3"
CONFIG_FILENAME = "config.toml"


def data_dir() -> Path:
    """The directory holding the chat database (not created here)."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def config_dir() -> Path:
    """The directory holding config.toml (not created here)."""
    override = os.environ.get(CONFIG_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def default_store_path() -> Path:
    """The chat database: `<data dir>/chats.sqlite3`."""
    return data_dir() / STORE_FILENAME


def default_config_path() -> Path:
    """The config file: `<config dir>/config.toml`."""
    return config_dir() / CONFIG_FILENAME


def rpc_cache_dir() -> Path:
    """Where `samplescope rpc-server --cache` keeps large tensors (not created here)."""
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)) / "rpc"


def user_presets_path() -> Path:
    """The user's own presets, `<config dir>/presets.toml` (`samplescope preset import`
    adds to it)."""
    return config_dir() / "presets.toml"
