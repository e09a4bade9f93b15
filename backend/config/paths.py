"""Where samplescope keeps its files: the user data and config directories.

Both follow the platform's conventions (platformdirs); the environment variables
`SAMPLESCOPE_DATA_DIR` and `SAMPLESCOPE_CONFIG_DIR` override them (tests use these to
stay out of the real home directory). The log directory is `backend.error_log`'s.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from backend.error_log import log_dir
from backend.errors import FileAccessError
from backend.private_files import exposed_folder_warning

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


def exposed_folder_warnings() -> list[str]:
    """A line for the data folder (the chats) and one for the log folder (command
    lines) when other users can read it: samplescope makes them 0700, but one made
    before, or by hand, may be open."""
    found = (
        exposed_folder_warning(data_dir(), "your chats"),
        exposed_folder_warning(log_dir(), "the errors log"),
    )
    return [line for line in found if line is not None]


def rpc_cache_dir() -> Path:
    """Where `samplescope rpc-server --cache` keeps large tensors (not created here)."""
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)) / "rpc"


def user_presets_path() -> Path:
    """The user's own presets, `<config dir>/presets.toml` (`samplescope preset import`
    adds to it)."""
    return config_dir() / "presets.toml"


_OWN_FOLDERS_ONLY = False


def open_own_folders_only() -> None:
    """From now on, `user_file` lets through only files in the data and config folders
    (the app served to a browser: whoever uses it may not be the user who runs it)."""
    global _OWN_FOLDERS_ONLY
    _OWN_FOLDERS_ONLY = True


def own_folders_only() -> bool:
    """Whether `open_own_folders_only` was called."""
    return _OWN_FOLDERS_ONLY


def user_file(path: Path) -> Path:
    """A file the user named, as the app may open it: `~` expanded; when the app is
    served, resolved (symbolic links followed) and inside the data or config folder.

    Raises:
        FileAccessError: The app is served and the file lies outside those folders.
    """
    path = path.expanduser()
    if not _OWN_FOLDERS_ONLY:
        return path
    resolved = path.resolve()
    folders = (data_dir().resolve(), config_dir().resolve())
    if any(resolved.is_relative_to(folder) for folder in folders):
        return resolved
    raise FileAccessError(
        f"{path}: the served app opens files only in {folders[0]} or {folders[1]}"
    )
