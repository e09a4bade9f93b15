"""Files only their owner may read: the chat database (every chat) and the errors log
(every logged command line, prompts included), kept as shells keep their history.

A folder samplescope creates for them is 0700 and a file 0600, whatever the umask;
a file already there that others could read is narrowed to 0600. A folder already
there is left as it is (it may be shared on purpose) but `exposed_folder_warning`
says in one line when other users can list it.

A module of its own at the top of `backend`, below every other unit: the errors log
uses it as the store does.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_FOLDER_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_OTHERS = stat.S_IRWXG | stat.S_IRWXO
_OTHERS_READ = stat.S_IRGRP | stat.S_IROTH


def private_folder(folder: Path) -> None:
    """Create `folder` (and its missing parents) readable by its owner alone; a folder
    already there is left as it is.

    Raises:
        OSError: It cannot be created.
    """
    missing = [folder, *folder.parents]
    first_existing = next((n for n, path in enumerate(missing) if path.is_dir()), len(missing))
    for path in reversed(missing[:first_existing]):
        try:
            path.mkdir(mode=PRIVATE_FOLDER_MODE)
        except FileExistsError:
            if not path.is_dir():
                raise
            continue
        os.chmod(path, PRIVATE_FOLDER_MODE)  # mkdir's mode is narrowed by the umask only


def private_file(path: Path) -> None:
    """Create `path` empty (0600) when it is missing; narrow it to its owner when it is
    there and others may read or write it. A file owned by someone else is left.

    Raises:
        OSError: It cannot be created.
    """
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        narrow(path)
        return
    os.close(descriptor)


def private_database(path: Path) -> None:
    """`private_file` for an SQLite database, and its companion files narrowed when
    there (SQLite gives the -wal, -shm and -journal files it makes the database's own
    permissions).

    Raises:
        OSError: It cannot be created.
    """
    private_file(path)
    for companion in ("-wal", "-shm", "-journal"):
        narrow(path.with_name(path.name + companion))


def narrow(path: Path) -> None:
    """Take away every permission of others on an existing file of ours (a missing
    file, or one we may not change, is left)."""
    try:
        mode = path.stat().st_mode
        if stat.S_ISREG(mode) and mode & _OTHERS:
            os.chmod(path, stat.S_IMODE(mode) & ~_OTHERS)
    except OSError:
        pass


def exposed_folder_warning(folder: Path, what: str) -> str | None:
    """One line when an existing `folder` can be listed by its group or by everyone
    (its files are still 0600); None when it is private or missing.

    Args:
        folder: The folder.
        what: What it holds, for the line ("your chats").
    """
    try:
        mode = folder.stat().st_mode
    except OSError:
        return None
    if not stat.S_ISDIR(mode) or not mode & _OTHERS_READ:
        return None
    return (
        f"samplescope: {folder} (holding {what}) can be read by other users:"
        f" `chmod 700 {folder}` makes it yours alone"
    )
