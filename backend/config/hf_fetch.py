"""`--hf ORG/REPO[:QUANT]`: a GGUF from a Hugging Face repository, as llama.cpp's `-hf`.

The quantization is matched in the file names, case-insensitively; without one,
Q4_K_M, else the repository's first GGUF (llama.cpp's rule). Projector files
(`mmproj`) are never chosen, and a model split in parts ("-00001-of-00003.gguf")
brings every part and opens the first. Files go through huggingface_hub into its
cache, with its progress bar. When the hub cannot be asked (`HF_HUB_OFFLINE=1`, or
no network) the cached copy of the repository opens, or the error says it is not
cached.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sampling.errors import SamplescopeError

DEFAULT_QUANT = "Q4_K_M"
"""llama.cpp's `-hf` default quantization."""

HUB_TIMEOUT_SECONDS = 10.0
"""How long asking the hub for a repository's files may take."""

_REF = re.compile(r"^([A-Za-z0-9][\w.-]*)/([\w.-]+)(?::([\w.-]+))?$")
_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
_TRUE = frozenset({"1", "on", "yes", "true"})


class HfFetchError(SamplescopeError):
    """A `--hf` model cannot be named, found, fetched or opened from the cache."""


@dataclass(frozen=True, slots=True)
class HfRef:
    """A repository and an optional quantization: "org/repo[:QUANT]".

    Attributes:
        repo: "org/repo".
        quant: The quantization asked for ("Q8_0"), or None: llama.cpp's default.
    """

    repo: str
    quant: str | None = None

    def __str__(self) -> str:
        return self.repo if self.quant is None else f"{self.repo}:{self.quant}"


@dataclass(frozen=True, slots=True)
class HfModel:
    """The GGUF a `--hf` reference opens.

    Attributes:
        path: The file to load (a split model's first part), in the hub cache.
        files: Every file fetched, relative to the repository.
        note: How it was found when not downloaded ("" when the hub answered).
    """

    path: Path
    files: tuple[str, ...]
    note: str = ""


def parse_hf_ref(text: str) -> HfRef:
    """Read "org/repo[:QUANT]".

    Raises:
        HfFetchError: It is not of that form.
    """
    match = _REF.match(text.strip())
    if match is None:
        raise HfFetchError(
            f"--hf {text!r}: give a Hugging Face repository as ORG/REPO[:QUANT],"
            f" e.g. bartowski/SmolLM2-135M-Instruct-GGUF:{DEFAULT_QUANT}"
        )
    org, name, quant = match.groups()
    return HfRef(f"{org}/{name}", quant)


def choose_gguf(files: Sequence[str], quant: str | None) -> tuple[str, ...]:
    """The files a quantization means in a repository's file list, the one to open first.

    Args:
        files: The repository's files (paths inside it).
        quant: The quantization asked for; None: Q4_K_M, else the first GGUF.

    Returns:
        The GGUF, or every part of a split one (first part first); () when none fits.
    """
    ggufs = sorted(f for f in files if f.lower().endswith(".gguf") and "mmproj" not in f.lower())
    wanted = DEFAULT_QUANT if quant is None else quant
    tag = re.compile(rf"(?<![A-Za-z0-9]){re.escape(wanted)}(?![A-Za-z0-9_])", re.IGNORECASE)
    matching = [f for f in ggufs if tag.search(f)]
    if not matching and quant is None:
        matching = ggufs
    if not matching:
        return ()
    return _with_parts(matching[0], ggufs)


def _with_parts(chosen: str, ggufs: Sequence[str]) -> tuple[str, ...]:
    """A single file, or all of a split model's parts in order."""
    split = _SPLIT.search(chosen)
    if split is None:
        return (chosen,)
    stem = chosen[: split.start()]
    count = split.group(2)
    parts = [f"{stem}-{i:05d}-of-{count}.gguf" for i in range(1, int(count) + 1)]
    by_lower = {f.lower(): f for f in ggufs}
    return tuple(by_lower.get(p.lower(), p) for p in parts)


def hub_offline() -> bool:
    """Whether `HF_HUB_OFFLINE` asks for no network (read now, not at import)."""
    from huggingface_hub import constants

    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE or bool(
        constants.HF_HUB_OFFLINE
    )


def hub_cache() -> Path:
    """The hub cache: `HF_HUB_CACHE`, else `$HF_HOME/hub`, else ~/.cache/huggingface/hub."""
    from backend.config.model_catalog import ModelSources

    cache = ModelSources.from_environment().hf_cache
    assert cache is not None  # from_environment always names one
    return cache


def fetch_hf_model(
    ref: HfRef,
    *,
    cache_dir: Path | None = None,
    endpoint: str | None = None,
    progress: bool = True,
) -> HfModel:
    """Download the GGUF a reference names into the hub cache (or find it there).

    Args:
        ref: The repository and quantization.
        cache_dir: The hub cache (default: `hub_cache()`).
        endpoint: The hub's address (default: `HF_ENDPOINT` as set now, else
            huggingface_hub's).
        progress: Show huggingface_hub's progress bar on stderr.

    Raises:
        HfFetchError: No GGUF fits, the hub refuses, or the hub cannot be reached
            and the cache has no copy.
    """
    cache = hub_cache() if cache_dir is None else cache_dir
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    if hub_offline():
        return _from_cache(ref, cache, "HF_HUB_OFFLINE is set")
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    try:
        info = HfApi(endpoint=endpoint).model_info(ref.repo, timeout=HUB_TIMEOUT_SECONDS)
    except HfHubHTTPError as error:
        cached = _cached(ref, cache, "the hub refused")
        if cached is None:
            raise HfFetchError(f"--hf {ref}: {_first_line(error)}") from error
        return cached
    except OfflineModeIsEnabled:
        return _from_cache(ref, cache, "HF_HUB_OFFLINE is set")
    except Exception as error:  # no network: the HTTP client's own connection errors
        return _from_cache(ref, cache, f"the hub cannot be reached: {_first_line(error)}")
    names = [sibling.rfilename for sibling in info.siblings or ()]
    files = choose_gguf(names, ref.quant)
    if not files:
        raise HfFetchError(_no_gguf(ref, names))
    return HfModel(_download(ref.repo, files, info.sha, cache, endpoint, progress), files)


def _download(
    repo: str,
    files: Sequence[str],
    revision: str | None,
    cache: Path,
    endpoint: str | None,
    progress: bool,
) -> Path:
    """Fetch each file into the cache; the first one's path."""
    from huggingface_hub import hf_hub_download

    paths: list[Path] = []
    try:
        for name in files:
            downloaded = hf_hub_download(
                repo,
                name,
                revision=revision,
                cache_dir=cache,
                endpoint=endpoint,
                tqdm_class=_progress_bar(shown=progress),
            )
            paths.append(Path(downloaded))
    except Exception as error:  # HTTP refusals, and the HTTP client's connection errors
        raise HfFetchError(f"--hf {repo}: downloading failed: {_first_line(error)}") from error
    return paths[0]


COMMIT_HASH = re.compile(r"[0-9a-f]{40}")
"""What a cached reference (refs/main) holds: a commit's hash."""


def cached_files(repo: str, cache: Path) -> tuple[Path, list[str]] | None:
    """The snapshot folder of a repository's cached revision (refs/main, else the
    newest) and its files, or None when the cache has none."""
    from backend.config.model_catalog import inside

    folder = cache / f"models--{repo.replace('/', '--')}"
    snapshots = folder / "snapshots"
    if folder.is_symlink() or not snapshots.is_dir():
        return None
    ref = folder / "refs" / "main"
    snapshot: Path | None = None
    commit = ""
    if ref.is_file():  # a FIFO would never end
        try:
            with ref.open("rb") as handle:
                commit = handle.read(100).decode("ascii").strip()
        except (OSError, UnicodeDecodeError):
            commit = ""
    # A reference names a commit: a 40-digit hash, never a path ("/", "../.."); a
    # snapshot is a folder of the cache, never a link out of it.
    if COMMIT_HASH.fullmatch(commit):
        candidate = snapshots / commit
        snapshot = candidate if candidate.is_dir() and not candidate.is_symlink() else None
    if snapshot is None:
        try:
            revisions = sorted(
                (p for p in snapshots.iterdir() if p.is_dir() and not p.is_symlink()),
                key=lambda p: p.stat().st_mtime,
            )
        except OSError:
            return None
        if not revisions:
            return None
        snapshot = revisions[-1]
    root = folder.resolve()
    files = sorted(
        p.relative_to(snapshot).as_posix()
        for p in snapshot.rglob("*")
        if p.is_file() and inside(p, root)
    )
    return snapshot, files


def _cached(ref: HfRef, cache: Path, why: str) -> HfModel | None:
    """The cached copy of what a reference names (every part present), else None."""
    found = cached_files(ref.repo, cache)
    files = choose_gguf(found[1], ref.quant) if found else ()
    if found is None or not files or not all((found[0] / f).is_file() for f in files):
        return None
    return HfModel(found[0] / files[0], files, note=f"{why}: opening the cached copy")


def _from_cache(ref: HfRef, cache: Path, why: str) -> HfModel:
    """The cached copy, when the hub cannot be asked."""
    cached = _cached(ref, cache, why)
    if cached is None:
        what = "no GGUF" if ref.quant is None else f"no {ref.quant} GGUF"
        raise HfFetchError(
            f"--hf {ref}: {why}, and the Hugging Face cache ({cache}) holds {what}"
            f" of {ref.repo}: it is not cached; download it on a machine with network"
            f" access, or copy the cache here"
        )
    return cached


def _no_gguf(ref: HfRef, names: Sequence[str]) -> str:
    ggufs = sorted(n for n in names if n.lower().endswith(".gguf"))
    if not ggufs:
        return f"--hf {ref}: the repository holds no GGUF file"
    listed = ", ".join(ggufs[:8]) + (" ..." if len(ggufs) > 8 else "")
    return f"--hf {ref}: no GGUF of quantization {ref.quant} in {ref.repo}; it holds {listed}"


def _progress_bar(*, shown: bool) -> type[Any]:
    """huggingface_hub's progress bar, shown on any stderr (its own shows on a terminal
    only) unless `HF_HUB_DISABLE_PROGRESS_BARS` turns it off; or never shown."""
    from huggingface_hub.utils.tqdm import are_progress_bars_disabled, tqdm

    shown = shown and not are_progress_bars_disabled()

    class ProgressBar(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = not shown
            super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]

    return ProgressBar


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
