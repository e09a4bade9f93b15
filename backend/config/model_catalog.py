"""The GGUF models already on disk: where other tools keep them, and what each is.

Five places are searched: the Hugging Face hub cache (its snapshot folders),
LM Studio's models folder, Ollama's store (each manifest's model layer, a
blob named by its digest), llama.cpp's download cache, and the folders the
config's `model_dirs` lists. Each model's name is the one its tool gives it
("org/repo/file.gguf", "llama3.2:1b", the file's path under the folder), which
`--model` accepts as well as a path.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from backend.config.paths import default_config_path
from backend.config.user_files import UserFileError, read_user_bytes, read_user_text
from backend.llama.gguf import read_gguf
from sampling.errors import SamplescopeError

GGUF_SUFFIX = ".gguf"
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_DIGEST = re.compile(r"sha256:[0-9a-f]+")
"""What an Ollama layer's digest looks like (its blob's name)."""
OLLAMA_DEFAULT_HOST = "registry.ollama.ai"
MANIFEST_LIMIT = 1 << 20
"""The most bytes an Ollama manifest (a small JSON file) is read to."""

FILE_TYPES: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
}
"""llama.cpp's `llama_ftype`: a GGUF's `general.file_type`, by its number."""


class ModelNotFoundError(SamplescopeError):
    """A model name matches several models on disk."""


@dataclass(frozen=True, slots=True)
class ModelSources:
    """The folders to search, each None when that tool is not set up here.

    Attributes:
        hf_cache: The Hugging Face hub cache (`HF_HUB_CACHE`, `$HF_HOME/hub`).
        lmstudio: LM Studio's models folder.
        ollama: Ollama's store (`OLLAMA_MODELS`), holding manifests/ and blobs/.
        llama_cpp: llama.cpp's download cache (`LLAMA_CACHE`).
        model_dirs: The config's `model_dirs`.
    """

    hf_cache: Path | None
    lmstudio: Path | None
    ollama: Path | None
    llama_cpp: Path | None
    model_dirs: tuple[Path, ...] = ()

    @classmethod
    def from_environment(cls, model_dirs: Sequence[str] = ()) -> ModelSources:
        """The places the tools use on this machine (their environment variables first)."""
        env = os.environ
        home = Path.home()
        hf_home = Path(env["HF_HOME"]) if env.get("HF_HOME") else home / ".cache" / "huggingface"
        hf_cache = Path(env.get("HF_HUB_CACHE") or hf_home / "hub")
        lmstudio = next(
            (
                p
                for p in (home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models")
                if p.is_dir()
            ),
            home / ".lmstudio" / "models",
        )
        ollama = Path(env.get("OLLAMA_MODELS") or home / ".ollama" / "models")
        cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else home / ".cache"
        llama_cpp = Path(env.get("LLAMA_CACHE") or cache / "llama.cpp")
        dirs = tuple(Path(d).expanduser() for d in model_dirs)
        return cls(hf_cache, lmstudio, ollama, llama_cpp, dirs)


@dataclass(frozen=True, slots=True)
class LocalModel:
    """One GGUF on disk.

    Attributes:
        name: The name its tool gives it (what `--model` accepts).
        path: The file (for Ollama, the blob).
        source: Where it was found: "huggingface", "lmstudio", "ollama",
            "llama.cpp" or "model_dirs".
        size: The file's size in bytes.
        quantization: `general.file_type` by llama.cpp's name ("Q4_K_M"), else the
            most common tensor type; "" when unread.
        architecture: `general.architecture` ("llama").
        context_length: `<arch>.context_length`, 0 when missing.
        chat_template: Whether it holds `tokenizer.chat_template`.
        problem: Why its metadata could not be read ("" when it could).
        vocab_only: It holds no tensors: a tokenizer alone (llama.cpp's test
            vocabularies), not a model that can be opened.
    """

    name: str
    path: Path
    source: str
    size: int
    quantization: str = ""
    architecture: str = ""
    context_length: int = 0
    chat_template: bool = False
    problem: str = ""
    vocab_only: bool = False

    def to_dict(self) -> dict[str, object]:
        """The model as JSON-friendly fields."""
        return {
            "name": self.name,
            "path": str(self.path),
            "source": self.source,
            "size": self.size,
            "quantization": self.quantization,
            "architecture": self.architecture,
            "context_length": self.context_length,
            "chat_template": self.chat_template,
            "problem": self.problem,
            "vocab_only": self.vocab_only,
        }


def find_models(sources: ModelSources) -> list[LocalModel]:
    """Every GGUF in the sources, each with its metadata read, in source order."""
    found = [
        *_huggingface(sources.hf_cache),
        *_folder(sources.lmstudio, "lmstudio"),
        *_ollama(sources.ollama),
        *_folder(sources.llama_cpp, "llama.cpp"),
    ]
    for folder in sources.model_dirs:
        found += _folder(folder, "model_dirs")
    return [describe(name, path, source) for name, path, source in found]


def find_model(name: str, models: Sequence[LocalModel]) -> LocalModel | None:
    """The model a name means: its full name, else its file's name when only one has
    it, else llama.cpp's `-hf` form "org/repo[:QUANT]" for a Hugging Face repository's
    one GGUF (of that quantization); None when no model has it.

    Raises:
        ModelNotFoundError: Several models share that file name, or the repository
            holds several GGUFs (of that quantization).
    """
    for model in models:
        if model.name == name:
            return model
    matches = [model for model in models if model.name.endswith(f"/{name}")]
    if not matches:
        matches = _in_hf_repo(name, models)
    if len(matches) > 1:
        names = ", ".join(model.name for model in matches)
        raise ModelNotFoundError(f"{name!r} names several models: {names}; give the full name")
    return matches[0] if matches else None


def _in_hf_repo(name: str, models: Sequence[LocalModel]) -> list[LocalModel]:
    """The Hugging Face models "org/repo[:QUANT]" names (case-insensitive quantization)."""
    repo, _, quant = name.partition(":")
    if repo.count("/") != 1:
        return []
    return [
        model
        for model in models
        if model.source == "huggingface"
        and model.name.startswith(f"{repo}/")
        and (not quant or model.quantization.lower() == quant.lower())
    ]


def describe(name: str, path: Path, source: str) -> LocalModel:
    """A GGUF's name, place and metadata (a file that cannot be read says why)."""
    try:
        size = path.stat().st_size
    except OSError as error:
        return LocalModel(name, path, source, 0, problem=str(error.strerror))
    try:
        gguf = read_gguf(path)
    except SamplescopeError as error:
        return LocalModel(name, path, source, size, problem=str(error))
    file_type = gguf.metadata.get("general.file_type")
    if isinstance(file_type, int) and file_type in FILE_TYPES:
        quantization = FILE_TYPES[file_type]
    else:
        counts = Counter(tensor.type_name for tensor in gguf.tensors)
        quantization = counts.most_common(1)[0][0] if counts else ""
    context = gguf.arch_value("context_length")
    return LocalModel(
        name,
        path,
        source,
        size,
        quantization=quantization,
        architecture=gguf.architecture,
        context_length=context if isinstance(context, int) else 0,
        chat_template="tokenizer.chat_template" in gguf.metadata,
        vocab_only=not gguf.tensors,
    )


Found = Iterator[tuple[str, Path, str]]


def _huggingface(cache: Path | None) -> Found:
    """The GGUFs of the hub cache's model repositories, newest revision first.

    The cache is walked here rather than by huggingface_hub's scan, which opens every
    file under `refs/` (a FIFO there hangs it, a non-UTF-8 one raises) and follows a
    snapshot linked out of the cache."""
    if cache is None or not cache.is_dir():
        return
    for folder in sorted(cache.glob("models--*")):
        if folder.is_dir() and not folder.is_symlink():
            yield from _snapshots(folder)


def _snapshots(folder: Path) -> Found:
    """A cached repository's GGUFs read from its snapshot folders, newest first (each
    file once; broken links, linked folders and files outside the repository left out)."""
    repo_id = folder.name.removeprefix("models--").replace("--", "/")
    snapshots = folder / "snapshots"
    try:
        root = folder.resolve()
        revisions = sorted(
            (p for p in snapshots.iterdir() if p.is_dir() and not p.is_symlink()),
            key=lambda p: -p.stat().st_mtime,
        )
    except (OSError, RuntimeError):
        return
    seen: set[str] = set()
    for revision in revisions:
        for path in sorted(revision.rglob(f"*{GGUF_SUFFIX}")):
            relative = path.relative_to(revision).as_posix()
            if relative not in seen and path.is_file() and inside(path, root):
                seen.add(relative)
                yield f"{repo_id}/{relative}", path, "huggingface"


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, its links followed, lies under the resolved folder `root`."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a link loop
        return False


def _folder(folder: Path | None, source: str) -> Found:
    """Every GGUF under a folder, named by its path inside it."""
    if folder is None or not folder.is_dir():
        return
    for path in sorted(folder.rglob(f"*{GGUF_SUFFIX}")):
        if path.is_file():
            yield path.relative_to(folder).as_posix(), path, source


def _ollama(store: Path | None) -> Found:
    """Each Ollama manifest's model layer: the blob its digest names."""
    manifests = store / "manifests" if store is not None else None
    if store is None or manifests is None or not manifests.is_dir():
        return
    root = store.resolve()
    for manifest in sorted(p for p in manifests.rglob("*") if p.is_file()):
        parts = manifest.relative_to(manifests).parts
        if len(parts) < 2 or not inside(manifest, root):  # a manifest is .../model/tag
            continue
        try:
            text = read_user_bytes(manifest, MANIFEST_LIMIT).decode("utf-8")
            layers = json.loads(text).get("layers", [])
        except (UserFileError, ValueError, AttributeError, RecursionError):
            continue
        if not isinstance(layers, list):
            continue
        digest = next(
            (
                layer.get("digest")
                for layer in layers
                if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER
            ),
            None,
        )
        # A blob's name is its digest: anything else could lead out of the store.
        if not isinstance(digest, str) or not OLLAMA_DIGEST.fullmatch(digest):
            continue
        blob = store / "blobs" / digest.replace(":", "-")
        if blob.is_file() and inside(blob, root):
            yield _ollama_name(parts), blob, "ollama"


def _ollama_name(parts: tuple[str, ...]) -> str:
    """host/namespace/model/tag as Ollama names it: "llama3.2:1b" for the library."""
    *where, model, tag = parts
    if len(where) == 2 and where[0] == OLLAMA_DEFAULT_HOST and where[1] == "library":
        return f"{model}:{tag}"
    if where and where[0] == OLLAMA_DEFAULT_HOST:
        where = where[1:]
    return "/".join((*where, f"{model}:{tag}"))


def models_on_disk() -> list[LocalModel]:
    """Every GGUF in this machine's usual places and the config's `model_dirs`."""
    return find_models(ModelSources.from_environment(config_model_dirs()))


def config_model_dirs() -> tuple[str, ...]:
    """The config file's `model_dirs`, read here alone (`backend.config.config` checks
    the whole file, and resolves the model through this module): none when the file
    is missing or broken (the commands that load it report it)."""
    path = default_config_path()
    try:
        data = tomllib.loads(read_user_text(path)) if path.exists() else {}
    except (UserFileError, ValueError, RecursionError):  # ValueError: TOML's own too
        return ()
    dirs = data.get("model_dirs", [])
    if not isinstance(dirs, list):
        return ()
    return tuple(d for d in dirs if isinstance(d, str) and d.strip())
