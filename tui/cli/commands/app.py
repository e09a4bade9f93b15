"""`samplescope [--model PATH] [options]`: open the chat app.

Precedence: built-in defaults < the config file (model, [settings], theme, [keys]) <
command-line flags. Chats are saved to the store in the user data directory unless
`--no-save` is given; a store or config file that cannot be used is reported in the
app, which starts anyway.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from backend.chat.template_switches import TemplateSwitchError, thinking_tags_of
from backend.config.config import (
    load_config_or_default,
    model_with_config,
    rpc_with_config,
    settings_with_config,
)
from backend.config.hf_fetch import HfFetchError
from backend.config.model_path import listed_models
from backend.config.paths import (
    default_store_path,
    exposed_folder_warnings,
    open_own_folders_only,
)
from backend.config.setting_sources import SettingSources
from backend.llama.rpc import RpcError
from sampling.built_in import BUILT_IN_REGISTRY, chat_defaults
from sampling.errors import SettingsError
from sampling.settings.registry import Registry
from tui.cli.options.model import (
    add_hf_flag,
    add_repack_flag,
    add_rpc_flag,
    add_steering_flags,
    model_or_hf,
)
from tui.cli.options.prompt import add_mode_flags, add_system_flag
from tui.cli.options.sampler_file import add_sampler_file_flag
from tui.cli.options.sampler_registry import carry_registry, registry_of_args
from tui.cli.options.settings import add_settings_flags, flag_settings, settings_from_args
from tui.cli.options.template_flags import add_template_flags, switches_from_args

if TYPE_CHECKING:
    from backend.llama.rpc import Endpoint
    from backend.session.backend import SessionBackend
    from backend.store.store import ChatStore
    from tui.app import SamplescopeApp


def build_app_parser(registry: Registry = BUILT_IN_REGISTRY) -> argparse.ArgumentParser:
    """The app's own options (model, threads, context...) plus the sampler flags of
    `registry`, which the options carry (`registry_of_args`)."""
    parser = argparse.ArgumentParser(
        prog="samplescope",
        description="Open the chat app. Subcommands (samplescope -h) run headless.",
    )
    parser.add_argument(
        "--model",
        "-m",
        default=None,
        help="a GGUF file or a name `samplescope models` lists (default: SmolLM2-135M)",
    )
    add_hf_flag(parser)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads (default: $SAMPLESCOPE_THREADS, else all)",
    )
    parser.add_argument("--ctx", type=int, default=4096, help="context size in tokens")
    parser.add_argument("--batch", type=int, default=256, help="prefill chunk in tokens")
    parser.add_argument(
        "--gpu-layers", type=int, default=None, help="layers offloaded (default 0; all with --rpc)"
    )
    add_rpc_flag(parser)
    add_repack_flag(parser)
    add_steering_flags(parser)  # their strength: the panel's slider; contrast β, α too
    parser.add_argument("--max-tokens", type=int, default=512, help="the longest reply")
    add_system_flag(parser, "a system prompt for every chat")
    add_mode_flags(
        parser,
        "chat, or completion: the text is continued without the chat template "
        "(default: completion for a model with no chat template and no turn tokens)",
    )
    parser.add_argument(
        "--no-save", action="store_true", help="do not save chats (default: save every chat)"
    )
    add_template_flags(parser)
    add_settings_flags(parser, registry)
    carry_registry(parser, registry)
    add_sampler_file_flag(parser)
    # `samplescope serve` runs each tab's app with it: files only in its own folders.
    parser.add_argument("--served", action="store_true", help=argparse.SUPPRESS)
    return parser


def backend_factory(
    args: argparse.Namespace,
    model: str | None = None,
    rpc: tuple[Endpoint, ...] = (),
    repack: bool = False,
) -> Callable[[], SessionBackend]:
    """A loader for the model the options name (run on the app's worker thread).

    Args:
        args: The app's parsed options.
        model: The model to load (default `args.model`; None: the bundled default).
        rpc: The RPC servers to split it across (none: this machine).
        repack: Load it with llama.cpp's repacked weights (`--repack`, the config's).
    """
    chosen = args.model if model is None else model

    def load() -> SessionBackend:
        from backend.config.model_path import resolve_model_path
        from backend.llama.control_vector import steering_of
        from backend.session.llama_backend import LlamaBackend

        return LlamaBackend.load(
            resolve_model_path(chosen),
            n_threads=args.threads,
            n_ctx=args.ctx,
            n_batch=args.batch,
            n_gpu_layers=args.gpu_layers,
            rpc=rpc,
            repack=repack,
            steering=steering_of(
                getattr(args, "control_vector", None) or (),
                getattr(args, "control_vector_layers", None),
            ),
        )

    return load


def contrast_loader(args: argparse.Namespace) -> Callable[[Path], SessionBackend]:
    """A loader for a contrast model (run on the app's worker thread): a GGUF file or a
    name `samplescope models` lists, loaded as `generate --contrast-model` loads it
    (the app's threads, context and prefill chunk; on this machine, weights not
    repacked)."""

    def load(path: Path) -> SessionBackend:
        from backend.config.model_path import resolve_model_path
        from backend.session.llama_backend import LlamaBackend

        return LlamaBackend.load(
            resolve_model_path(str(path)),
            n_threads=args.threads,
            n_ctx=args.ctx,
            n_batch=args.batch,
            n_gpu_layers=args.gpu_layers,
        )

    return load


def build_app(
    args: argparse.Namespace,
    *,
    store_path: Path | None = None,
    on_start: Callable[[SamplescopeApp], None] | None = None,
) -> SamplescopeApp:
    """The app for parsed options: config file applied, the chat store opened.

    `store_path` names the chat database (None: the one in the user data directory);
    `on_start` is called with the app once it is mounted.

    Raises:
        SettingsError: A flag (or the config file under the flags) sets a bad value.
        RpcError: --rpc is malformed.
        HfFetchError: --hf cannot be downloaded or found in the cache (it is fetched
            here, before the app takes the terminal, so that its progress bar shows).
        TemplateSwitchError: --chat-template-kwargs is malformed.
    """
    model = model_or_hf(args.model, args.hf)
    registry = registry_of_args(args)
    config, problem = load_config_or_default(registry=registry)
    notices = [problem] if problem else []
    settings = settings_from_args(args, settings_with_config(chat_defaults(registry), config))
    switches = switches_from_args(args, config.template, thinking_tags_of(settings))
    sources = (
        SettingSources()
        .given(config.settings_overrides, "config")
        .given(flag_settings(args), "flag")
    )
    from backend.store.store import ChatStore, StoreError  # not for `samplescope -h`

    store: ChatStore | None = None
    if not args.no_save:
        try:
            store = ChatStore(store_path or default_store_path(), registry=registry)
        except StoreError as error:
            notices.append(f"Chats will not be saved: {error}")
    notices.extend(line.removeprefix("samplescope: ") for line in exposed_folder_warnings())
    from tui.app import SamplescopeApp

    rpc = rpc_with_config(args.rpc, config)
    repack = args.repack or config.repack

    def open_model(path: Path) -> SessionBackend:
        return backend_factory(args, str(path), rpc, repack)()

    return SamplescopeApp(
        backend_factory=backend_factory(args, model_with_config(model, config), rpc, repack),
        list_models=listed_models,
        open_model=open_model,
        open_contrast=contrast_loader(args),
        contrast_model=None if args.contrast_model is None else Path(args.contrast_model),
        settings=settings,
        setting_sources=sources,
        template_switches=switches,
        max_tokens=args.max_tokens,
        system_prompt=args.system,
        store=store,
        config=config,
        notices=notices,
        mode=args.mode,
        on_start=on_start,
        registry=registry,
    )


def run_app(argv: list[str], registry: Registry = BUILT_IN_REGISTRY) -> int:
    """Parse the app's options (`registry`'s settings flags), run the app with
    `registry` until it quits; returns the exit code."""
    args = build_app_parser(registry).parse_args(argv)
    if args.served:
        open_own_folders_only()
    try:
        app = build_app(args)
    except (SettingsError, RpcError, HfFetchError, TemplateSwitchError) as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 2
    return run_until_quit(app)


def run_until_quit(app: SamplescopeApp) -> int:
    """Run the app until it quits, then free its model and close its store; exit code 0."""
    try:
        app.run()
    finally:
        app.close_backend()
        if app.store is not None:
            app.store.close()
    return 0
