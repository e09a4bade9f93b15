"""`samplescope [--model PATH] [options]`: open the chat app."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from backend.protocol import ChatBackend
from sampling.errors import SettingsError
from sampling.settings import DEFAULT_CHAT_SETTINGS
from tui.settings_flags import add_settings_flags, settings_from_args


def build_app_parser() -> argparse.ArgumentParser:
    """The app's own options (model, threads, context...) plus the sampler flags."""
    parser = argparse.ArgumentParser(
        prog="samplescope",
        description="Open the chat app. Subcommands (samplescope -h) run headless.",
    )
    parser.add_argument("--model", "-m", default=None, help="a GGUF file (default: SmolLM2-135M)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all)")
    parser.add_argument("--ctx", type=int, default=4096, help="context size in tokens")
    parser.add_argument("--batch", type=int, default=256, help="prefill chunk in tokens")
    parser.add_argument("--gpu-layers", type=int, default=0, help="layers offloaded to a GPU")
    parser.add_argument("--max-tokens", type=int, default=512, help="the longest reply")
    parser.add_argument("--system", default=None, help="a system prompt for every chat")
    add_settings_flags(parser)
    return parser


def backend_factory(args: argparse.Namespace) -> Callable[[], ChatBackend]:
    """A loader for the model the options name (run on the app's worker thread)."""

    def load() -> ChatBackend:
        from backend.llama_backend import LlamaBackend
        from backend.model_path import resolve_model_path

        return LlamaBackend.load(
            resolve_model_path(args.model),
            n_threads=args.threads,
            n_ctx=args.ctx,
            n_batch=args.batch,
            n_gpu_layers=args.gpu_layers,
        )

    return load


def run_app(argv: list[str]) -> int:
    """Parse the app's options, run the app until it quits; returns the exit code."""
    args = build_app_parser().parse_args(argv)
    try:
        settings = settings_from_args(args, DEFAULT_CHAT_SETTINGS)
    except SettingsError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 2
    from tui.app import SamplescopeApp

    app = SamplescopeApp(
        backend_factory=backend_factory(args),
        settings=settings,
        max_tokens=args.max_tokens,
        system_prompt=args.system,
    )
    try:
        app.run()
    finally:
        app.close_backend()
    return 0
