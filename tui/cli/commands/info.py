"""`samplescope info [MODEL]`: what a GGUF file holds, read without loading it."""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

from backend.llama.gguf import GgufFile, MetaValue, validate_gguf
from backend.llama.pieces import visible_piece
from backend.llama.rpc import Endpoint, RpcError, parse_endpoints, probe
from sampling.errors import SamplescopeError
from sampling.settings.registry import Registry
from tui.cli.options.model import chosen_model_path
from tui.cli.options.sampler_registry import registry_of_args

# (label, tokenizer.ggml.<key>); the first four are listed even when absent.
SPECIAL_TOKEN_KEYS: tuple[tuple[str, str], ...] = (
    ("bos", "bos_token_id"),
    ("eos", "eos_token_id"),
    ("eot", "eot_token_id"),
    ("pad", "padding_token_id"),
    ("eom", "eom_token_id"),
    ("unk", "unknown_token_id"),
    ("sep", "seperator_token_id"),  # sic: llama.cpp's key is misspelled
    ("mask", "mask_token_id"),
)
CONTROL_TOKEN_TYPE = 3
USER_DEFINED_TOKEN_TYPE = 4


class ModelArgumentError(SamplescopeError):
    """The model was named twice, differently."""


GROUP = "model"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `info` to the command line."""
    parser = subparsers.add_parser(
        "info",
        help="show a GGUF model's metadata, vocabulary, chat template and tensors",
        description=(
            "Read a GGUF file's header (without loading the model) and print its "
            "architecture, sizes, vocabulary, special tokens, chat template and tensor "
            "types, then the devices llama.cpp sees (CPU, GPUs) and its build's "
            "features. MODEL (or --model) defaults to $SAMPLESCOPE_MODEL, then to the "
            "bundled SmolLM2-135M-Instruct."
        ),
    )
    parser.add_argument("model_arg", nargs="?", metavar="MODEL", help="a GGUF file")
    parser.add_argument("--model", help="a GGUF file (same as MODEL)")
    parser.add_argument(
        "--metadata", action="store_true", help="also print every metadata key and value"
    )
    parser.add_argument(
        "--rpc",
        default=None,
        metavar="HOST:PORT[,...]",
        help="also report each llama.cpp RPC server's devices and memory",
    )
    parser.set_defaults(func=run)


def _chosen_model(args: argparse.Namespace) -> str | None:
    if args.model_arg and args.model and args.model_arg != args.model:
        raise ModelArgumentError(
            f"two different models given: MODEL={args.model_arg!r} and --model={args.model!r}"
        )
    chosen: str | None = args.model_arg or args.model
    return chosen


NUMBERED_FAMILY = 8
"""Control tokens differing only in their numbers, from this many on, are a family."""

MAX_NAMED = 40
"""The most named control tokens `info` lists."""


def control_token_summary(control: list[str]) -> list[str]:
    """Lines summarising the control tokens: count, the named ones, numbered families.

    A vocabulary can hold thousands of placeholders (`<unused123>`,
    `<|reserved_special_token_7|>`): those that differ only in their numbers are
    summarised per family (count, first and last); the rest are listed by name, up
    to `MAX_NAMED`.
    """
    families: dict[str, list[str]] = defaultdict(list)
    for text in control:
        families[re.sub(r"\d+", "#", text)].append(text)
    named = [text for text in control if len(families[re.sub(r"\d+", "#", text)]) < NUMBERED_FAMILY]
    lines = [f"  control tokens ({len(control)})"]
    if named:
        shown = " ".join(visible_piece(text) for text in named[:MAX_NAMED])
        more = len(named) - MAX_NAMED
        lines.append(
            f"    named ({len(named)}): {shown}" + (f" … and {more} more" if more > 0 else "")
        )
    for members in families.values():
        if len(members) >= NUMBERED_FAMILY:
            lines.append(
                f"    numbered ({len(members)}): {visible_piece(members[0])} "
                f"{visible_piece(members[1])} … {visible_piece(members[-1])}"
            )
    return lines


def _human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _short(value: MetaValue, limit: int = 80) -> str:
    if isinstance(value, tuple):
        head = ", ".join(_short(item, 20) for item in value[:5])
        more = f", … ({len(value)} items)" if len(value) > 5 else ""
        return f"[{head}{more}]"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _token_text(tokens: tuple[MetaValue, ...], token_id: MetaValue) -> str:
    if isinstance(token_id, int) and 0 <= token_id < len(tokens):
        return visible_piece(str(tokens[token_id]))
    return "(outside the vocabulary)"


def describe(gguf: GgufFile, registry: Registry, *, all_metadata: bool = False) -> list[str]:
    """The lines `samplescope info` prints for a parsed GGUF file (its sampling settings
    read against `registry`'s)."""
    meta = gguf.metadata
    lines = [
        f"file            {gguf.path}",
        f"file size       {_human_bytes(gguf.file_size)} ({gguf.file_size} bytes)",
        f"format          GGUF v{gguf.version}, {len(meta)} metadata keys, "
        f"alignment {gguf.alignment}",
    ]

    def row(label: str, value: MetaValue | None) -> None:
        shown = "(not set)" if value is None else value if isinstance(value, str) else _short(value)
        lines.append(f"{label:<15} {shown}")

    row("architecture", gguf.architecture or None)
    row("name", meta.get("general.name"))
    row("context length", gguf.arch_value("context_length"))
    row("embedding size", gguf.arch_value("embedding_length"))
    row("layers", gguf.arch_value("block_count"))
    heads, kv_heads = (
        gguf.arch_value("attention.head_count"),
        gguf.arch_value("attention.head_count_kv"),
    )
    lines.append(
        f"{'heads':<15} {'(not set)' if heads is None else heads}"
        + ("" if kv_heads is None else f" (key/value heads: {kv_heads})")
    )
    row("feed-forward", gguf.arch_value("feed_forward_length"))

    tokens_value = meta.get("tokenizer.ggml.tokens", ())
    tokens = tokens_value if isinstance(tokens_value, tuple) else ()
    lines.append(
        f"{'vocabulary':<15} {len(tokens)} tokens (model {meta.get('tokenizer.ggml.model', '?')}, "
        f"pre-tokenizer {meta.get('tokenizer.ggml.pre', '?')})"
    )
    lines.append("special tokens")
    for index, (label, key) in enumerate(SPECIAL_TOKEN_KEYS):
        token_id = meta.get(f"tokenizer.ggml.{key}")
        if token_id is None:
            if index < 4:
                lines.append(f"  {label:<5} (none)")
            continue
        lines.append(f"  {label:<5} {token_id!s:>6}  {_token_text(tokens, token_id)}")
    types = meta.get("tokenizer.ggml.token_type", ())
    if isinstance(types, tuple) and len(types) == len(tokens):
        control = [str(tokens[i]) for i, kind in enumerate(types) if kind == CONTROL_TOKEN_TYPE]
        lines.extend(control_token_summary(control))

    counts: dict[str, int] = defaultdict(int)
    sizes: dict[str, int] = defaultdict(int)
    for tensor in gguf.tensors:
        counts[tensor.type_name] += 1
        sizes[tensor.type_name] += tensor.nbytes
    total = sum(sizes.values())
    lines.append(f"tensors         {len(gguf.tensors)}, {_human_bytes(total)} ({total} bytes)")
    for type_name in sorted(sizes, key=lambda name: -sizes[name]):
        lines.append(
            f"  {type_name:<8} {counts[type_name]:>5} tensor{'' if counts[type_name] == 1 else 's'}"
            f"  {_human_bytes(sizes[type_name]):>10}"
            f"  ({sizes[type_name]} bytes)"
        )

    if all_metadata:
        lines.append("metadata")
        for key, value in meta.items():
            lines.append(f"  {key} ({gguf.metadata_types[key]}) = {_short(value)}")

    lines.extend(describe_sampling(gguf, registry))
    template = meta.get("tokenizer.chat_template")
    if isinstance(template, str) and template:
        lines.append(f"thinking        {thinking_line(template)}")
        lines.append("chat template")
        lines.extend(template.splitlines() or [""])
    else:
        lines.append(f"chat template   (none: {without_template(tokens, types)})")
    return lines


def thinking_line(template: str) -> str:
    """Whether the chat template thinks, and with which tags samplescope tells its
    sections apart (`backend.chat.thinking_format`)."""
    from backend.chat.thinking_format import thinking_format_of

    known = thinking_format_of(template)
    if known is None:
        return "no thinking tags in the chat template (--thinking-tags names them)"
    ends = " or ".join(known.ends)
    return f"{known.start} … {ends} ({known.name}, from the chat template)"


def describe_sampling(gguf: GgufFile, registry: Registry) -> list[str]:
    """The model's own sampler settings (`general.sampling.*`), each as it is used:
    the model's value fills a setting unless the user's config file sets it (a flag
    or a preset would too), and a bad value is ignored with the reason."""
    from backend.config.config import load_config_or_default, settings_with_config
    from backend.config.setting_sources import SettingSources, fill_from_model
    from backend.llama.model_sampling import model_sampling
    from sampling.built_in import chat_defaults

    config, _problem = load_config_or_default(registry=registry)
    configured = settings_with_config(chat_defaults(registry), config)
    own = model_sampling(gguf.metadata, configured)
    if not own.values and not own.problems:
        return [f"{'sampling':<15} (the model sets none: llama.cpp's defaults)"]
    sources = SettingSources().given(config.settings_overrides, "config")
    used, sources = fill_from_model(configured, sources, own)
    lines = [
        f"{'sampling':<15} the model's own settings (general.sampling.*), where the user sets none"
    ]
    for name, value in own.values:
        spec = registry.settings_by_name[name]
        shown = spec.format(value)
        if sources.of(name) == "model":
            where = "from the model"
        else:
            where = f"the config file's {spec.format(used.value(name))} is used"
        lines.append(f"  {name:<15} {shown:<10} {where} ({own.key_of(name)})")
    lines.extend(f"  {problem}" for problem in own.problems)
    return lines


def without_template(tokens: tuple[MetaValue, ...], types: MetaValue) -> str:
    """What samplescope does for a model whose GGUF has no chat template: the built-in
    template its special tokens name (as `backend.chat.template` picks it), else
    completion mode."""
    kinds = types if isinstance(types, tuple) and len(types) == len(tokens) else ()
    specials = [
        str(token)
        for token, kind in zip(tokens, kinds, strict=False)
        if kind in (CONTROL_TOKEN_TYPE, USER_DEFINED_TOKEN_TYPE)
    ]
    from backend.chat.template import builtin_template_for  # jinja2: not for `-h`

    builtin = builtin_template_for(specials)
    if builtin is None:
        return "no turn tokens samplescope knows either: it runs in completion mode"
    name, markers, _ = builtin
    return f"samplescope uses {name}'s built-in template, named by {' '.join(markers)}"


def describe_servers(endpoints: tuple[Endpoint, ...]) -> tuple[list[str], bool]:
    """Lines naming each RPC server's devices and memory; False if one is unusable."""
    from backend.llama.ggml_devices import device_memory, require_rpc, rpc_devices

    require_rpc()
    lines, usable = ["RPC servers"], True
    for endpoint in endpoints:
        try:
            probe(endpoint)  # llama.cpp itself would abort on an unreachable server
        except RpcError as error:
            lines.append(f"  {endpoint}  unusable: {error}")
            usable = False
            continue
        for device in rpc_devices(endpoint):
            free, total = device_memory(device)
            lines.append(
                f"  {endpoint}  {device.name}  {_human_bytes(free)} free of {_human_bytes(total)}"
            )
    return lines, usable


BUILD_HINT = (
    "no GPU in this build: llama-cpp-python was built from source for the CPU;"
    " samplescope's docs/setup.md says how to build it for CUDA, Metal or Vulkan"
    " (CMAKE_ARGS)"
)


def describe_devices() -> list[str]:
    """The devices llama.cpp sees here, with their memory, and its build's features."""
    from backend.llama.ggml_devices import local_devices, rpc_supported, system_info

    devices = local_devices()
    lines = [f"llama.cpp devices (llama-cpp-python {llama_cpp_version()})"]
    for device in devices:
        memory = (
            f"{_human_bytes(device.free)} free of {_human_bytes(device.total)}"
            if device.total
            else "memory not reported"
        )
        lines.append(f"  {device.name}  {device.kind}  {device.description}  ({memory})")
    if not devices:
        lines.append("  none")
    if not any(device.kind in ("GPU", "integrated GPU") for device in devices):
        lines.append(f"  {BUILD_HINT}")
    lines.append(f"  RPC backend: {'yes' if rpc_supported() else 'no'}")
    lines.append(f"  system: {system_info()}")
    return lines


def describe_lockstep(path: Path) -> list[str]:
    """Whether lockstep decoding (compare, explore, beams) is exact for this model on
    this build: the model is loaded (one thread, a small context) for its self-check."""
    from backend.session.llama_backend import LlamaBackend

    try:
        backend = LlamaBackend.load(path, n_ctx=256, n_batch=64, n_threads=1)
    except SamplescopeError as error:
        return [f"lockstep decoding: not checked ({error})"]
    try:
        invariant = backend.info.batch_invariant
    finally:
        backend.close()
    if invariant:
        return [
            "lockstep decoding: exact (self-check at load: a sequence decoded beside"
            " three others got its logits alone, bit for bit; each sequence has its own"
            " KV stream and the weights are not repacked)"
        ]
    return [
        "lockstep decoding: not exact here (self-check at load: a sequence decoded beside"
        " others got other logits than alone); compare's columns can differ from"
        " `generate`, and their replies replay in lockstep"
    ]


def llama_cpp_version() -> str:
    """The installed llama-cpp-python's version."""
    import llama_cpp

    return str(getattr(llama_cpp, "__version__", "?"))


def run(args: argparse.Namespace) -> int:
    """Print the model's description and the devices llama.cpp sees (and the RPC
    servers' memory); 1 if a server is unusable."""
    endpoints = parse_endpoints(args.rpc) if args.rpc else ()
    gguf = validate_gguf(chosen_model_path(_chosen_model(args), registry_of_args(args)))
    print("\n".join(describe(gguf, registry_of_args(args), all_metadata=args.metadata)), flush=True)
    try:
        devices = describe_devices()
    except Exception as error:  # a broken llama.cpp install: the file's description stands
        devices = [f"llama.cpp devices: cannot be listed ({type(error).__name__}: {error})"]
    print("\n".join(devices))
    if not endpoints:
        print("\n".join(describe_lockstep(gguf.path)))
        return 0
    lines, usable = describe_servers(endpoints)
    print("\n".join(lines))
    return 0 if usable else 1
