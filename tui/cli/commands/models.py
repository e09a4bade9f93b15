"""`samplescope models`: the GGUF models already on disk, from other tools' stores."""

from __future__ import annotations

import argparse
import json

from backend.config.model_catalog import LocalModel
from backend.config.model_path import listed_models
from sampling.settings.registry import Registry
from tui.cli.options.output import add_json_flag

GROUP = "model"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `models` to the command line."""
    parser = subparsers.add_parser(
        "models",
        help="list the GGUF models on disk (Hugging Face, LM Studio, Ollama, llama.cpp)",
        description=(
            "List the GGUF models in the Hugging Face hub cache, LM Studio's models "
            "folder, Ollama's store, llama.cpp's cache and the config's model_dirs "
            "(searched with their subfolders), then the bundled default model: the "
            "list the app's model picker (f7) shows. `--model NAME` opens one by the "
            "name shown. Files holding a tokenizer alone (no weights) are left out."
        ),
    )
    add_json_flag(parser, "a JSON list of the models' fields")
    parser.add_argument(
        "--all",
        action="store_true",
        help="list the vocabulary-only GGUFs too (tokenizer alone, marked as such)",
    )
    parser.set_defaults(func=run)


def size_text(size: int) -> str:
    """A byte count as "1.2 GB", "350 MB", "12 KB"."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def model_line(model: LocalModel) -> str:
    """One model in one line: name, size, quantization, architecture, context, template,
    source, path."""
    if model.problem:
        return f"{model.name}  [{model.source}]  unreadable: {model.problem}"
    if model.vocab_only:
        return f"{model.name}  [{model.source}]  vocabulary only (no weights)  {model.path}"
    template = "chat template" if model.chat_template else "no chat template"
    return (
        f"{model.name}  {size_text(model.size)}  {model.quantization or '?'}  "
        f"{model.architecture or '?'}  ctx {model.context_length or '?'}  {template}  "
        f"[{model.source}]  {model.path}"
    )


def run(args: argparse.Namespace) -> int:
    """Print the models, one per line or as JSON."""
    models = listed_models(vocab_only=args.all)
    if args.json:
        print(json.dumps([model.to_dict() for model in models], indent=2))
        return 0
    if not models:
        print(
            "no GGUF models found, and the bundled default is not installed "
            "(see `samplescope models -h` for where it looks)"
        )
    for model in models:
        print(model_line(model))
    return 0
