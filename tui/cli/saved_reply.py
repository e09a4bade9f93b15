"""Shared bits of the commands that work on a saved reply (`whatif`, `branch`, `explore`,
`replay`).

They take the chat, `--reply N` (from 1; default the last), `--branch ID` (default
the branch the conversation follows), `--at POS` (from 1, as in the app), the
settings flags (default: the step's own settings), and reload the model the reply
used with its context and prefill chunk size, its control vectors and its contrast
model (`explore`, which grows no second distribution, not the contrast model).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from backend.errors import ModelFileError
from backend.store.lookup import check_position, find_branch, settings_for
from backend.store.records import recorded_control_vectors
from backend.store.store import ChatRecord, ChatStore, ModelRef, ReplyRecord, StoreError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry
from tui.cli.options.model import add_rpc_flag, chosen_rpc
from tui.cli.options.output import add_json_flag
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.options.settings import add_settings_flags, bias_needs_tokenizer, settings_from_args
from tui.cli.store_access import add_db_flag

if TYPE_CHECKING:
    from backend.llama.control_vector import Steering
    from backend.session.llama_backend import LlamaBackend

DEFAULT_N_CTX = 4096  # LlamaBackend.load's defaults, for replies that did not record them
DEFAULT_N_BATCH = 256


def add_position_flags(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Add CHAT_ID, --reply, --branch and --at: a token of a saved reply.

    Args:
        required: Whether CHAT_ID and --at must be given (else they default to None).
    """
    parser.add_argument(
        "chat_id",
        type=int,
        nargs=None if required else "?",
        default=None,
        metavar="CHAT_ID",
        help="a saved chat's id",
    )
    parser.add_argument(
        "--reply", type=int, default=None, metavar="N", help="which reply, from 1 (default: last)"
    )
    parser.add_argument(
        "--branch",
        type=int,
        default=None,
        metavar="ID",
        help="which branch of the reply (see `samplescope tree`; default: the one shown)",
    )
    parser.add_argument(
        "--at", type=int, required=required, metavar="POS", help="the token's position, from 1"
    )


def add_step_flags(parser: argparse.ArgumentParser, registry: Registry) -> None:
    """Add CHAT_ID, --reply, --branch, --at, --json, the model and `registry`'s settings
    flags."""
    add_position_flags(parser)
    add_json_flag(parser)
    parser.add_argument(
        "--model", default=None, metavar="PATH", help="use this GGUF instead of the recorded path"
    )
    parser.add_argument(
        "--contrast-model",
        default=None,
        metavar="PATH",
        help="use this GGUF as the contrast model instead of the recorded path",
    )
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    add_rpc_flag(parser)
    add_db_flag(parser)
    add_settings_flags(parser, registry)


@dataclass(frozen=True, slots=True)
class Target:
    """The step a command works on.

    Attributes:
        chat: The chat.
        reply: The branch.
        index: 0-based index of the token.
        settings: The step's own settings with the flags on top.
            model_path: The GGUF to load.
        adapters: The control vectors and the contrast model to load it with (the reply's).
    """

    chat: ChatRecord
    reply: ReplyRecord
    index: int
    settings: SamplerSettings
    model_path: Path
    adapters: Adapters


@dataclass(frozen=True, slots=True)
class Adapters:
    """What a saved reply's model was loaded with besides the file.

    Attributes:
        vectors: Its control vectors' files with their scales.
        layers: The first and last layer they steer (None: every layer).
        contrast: The smaller model it was contrasted with (None: none, or not loaded).
    """

    vectors: tuple[tuple[str, float], ...] = ()
    layers: tuple[int, int] | None = None
    contrast: Path | None = None


def recorded_adapters(
    store: ChatStore, reply: ReplyRecord, contrast_model: str | None = None, *, contrast: bool
) -> Adapters:
    """The control vectors a reply was made with and (with `contrast`) its contrast
    model: `contrast_model`, else the recorded path; a warning on stderr when that
    file is not the one recorded.

    Raises:
        StoreError: The recorded control vectors cannot be read.
        ModelFileError: A control vector's file or the contrast model is missing.
    """
    try:
        vectors, layers = recorded_control_vectors(reply.control_vectors)
    except ValueError as error:
        raise StoreError(f"reply {reply.number}: {error}") from None
    for path, _scale in vectors:
        if not Path(path).is_file():
            raise ModelFileError(
                f"the control vector {path} that reply {reply.number} was made with is"
                " missing: without it the model is not the one that made the reply"
            )
    recorded = reply.contrast_model
    if not contrast or (recorded is None and contrast_model is None):
        return Adapters(vectors, layers)
    small = Path(contrast_model) if contrast_model else Path(recorded.path if recorded else "")
    if not small.is_file():
        raise ModelFileError(
            f"the contrast model {small} that reply {reply.number} was made with is missing;"
            " pass --contrast-model PATH to use another copy of it"
        )
    if recorded is not None:
        warning = check_model(small, recorded, store.model_ref(small))
        if warning:
            print(warning, file=sys.stderr)
    return Adapters(vectors, layers, small)


def steering_of_adapters(adapters: Adapters) -> Steering:
    """The control vectors a saved reply's model applied, as a load takes them."""
    from backend.llama.control_vector import ControlVector, Steering  # loads llama.cpp

    return Steering(
        tuple(ControlVector(Path(file), scale) for file, scale in adapters.vectors),
        adapters.layers,
    )


def load_saved(
    path: Path, reply: ReplyRecord, adapters: Adapters, args: argparse.Namespace
) -> LlamaBackend:
    """The model at `path` as the reply ran it: its context and prefill chunk size (both
    change logits), its control vectors and its contrast model, its chat template's
    switches (they change the prompt), holding as many
    sequences as rebuilding it decodes at once (a sweep's sample: its whole lockstep
    batch)."""
    from backend.chat.template_switches import TemplateSwitches
    from backend.session.llama_backend import LlamaBackend
    from backend.session.replay import sequences_of

    steering = steering_of_adapters(adapters)
    tags = reply.settings_at(0).value("thinking_tags")
    assert isinstance(tags, tuple)
    switches = TemplateSwitches.from_json(reply.template_switches, tags)  # before the load
    n_ctx, n_batch = reply.n_ctx or DEFAULT_N_CTX, reply.n_batch or DEFAULT_N_BATCH
    sequences = sequences_of(reply)
    n_seq_max = sequences if sequences > 1 else None  # a lockstep batch's siblings too
    backend = LlamaBackend.load(
        path,
        n_threads=args.threads,
        n_ctx=n_ctx,
        n_batch=n_batch,
        rpc=chosen_rpc(args.rpc, registry_of_args(args)),
        steering=steering,
        n_seq_max=n_seq_max,
    )
    if adapters.contrast is not None:
        try:
            small = LlamaBackend.load(
                adapters.contrast,
                n_threads=args.threads,
                n_ctx=n_ctx,
                n_batch=n_batch,
                n_seq_max=n_seq_max,
            )
            backend.add_contrast(small)
        except BaseException:
            backend.close()
            raise
    backend.template.switches = switches
    return backend


def find_target(store: ChatStore, args: argparse.Namespace, *, contrast: bool = True) -> Target:
    """Resolve the chat, reply, branch and position the flags name, and (with
    `contrast`) the contrast model the reply was made with (`--contrast-model`, else
    the recorded one).

    Raises:
        StoreError: No such chat, reply, branch or position.
        ModelFileError: The model file or the reply's contrast model is missing.
    """
    chat = store.load_chat(args.chat_id)
    reply = find_branch(chat, args.reply, args.branch)
    index = check_position(reply, args.at)
    own = settings_for(chat, reply, index)
    # A logit bias naming a token by its text waits for the model (`with_text_bias`).
    settings = own if bias_needs_tokenizer(args) else settings_from_args(args, own)
    path = recorded_model(store, reply, args.model)
    small = getattr(args, "contrast_model", None)
    adapters = recorded_adapters(store, reply, small, contrast=contrast)
    return Target(chat, reply, index, settings, path, adapters)


def load_for(target: Target, args: argparse.Namespace) -> LlamaBackend:
    """The model with the reply's context, prefill chunk size, control vectors and
    contrast model."""
    return load_saved(target.model_path, target.reply, target.adapters, args)


def with_text_bias(target: Target, args: argparse.Namespace, backend: LlamaBackend) -> Target:
    """The target with the flags applied once the model can tokenize `--logit-bias` text.

    Raises:
        SettingsError: A flag's value is bad, or a text is not exactly one token.
    """
    if not bias_needs_tokenizer(args):
        return target
    own = settings_for(target.chat, target.reply, target.index)
    settings = settings_from_args(
        args, own, lambda text: backend.runtime.tokenize(text, special=False)
    )
    return replace(target, settings=settings)


def piece_text(backend: LlamaBackend, token: int) -> str:
    """A token's text (special tokens by name), undecodable bytes replaced."""
    return backend.runtime.token_bytes(token, special=True).decode("utf-8", "replace")


def check_model(path: Path, recorded: ModelRef, actual: ModelRef) -> str | None:
    """A warning when the file is not the one that generated the reply, else None."""
    if actual.size != recorded.size or actual.sha256 != recorded.sha256:
        return (
            f"warning: {path} is not the file that generated this reply "
            f"(recorded size {recorded.size}, sha256 {recorded.sha256[:16]}…; "
            f"now size {actual.size}, sha256 {actual.sha256[:16]}…): "
            "the replay may differ"
        )
    return None


def recorded_model(store: ChatStore, reply: ReplyRecord, model: str | None) -> Path:
    """The GGUF to load for a stored reply: `--model`, else the recorded path; a warning
    on stderr when the file is not the one recorded.

    Raises:
        ModelFileError: The file is missing.
    """
    path = Path(model) if model else Path(reply.model.path)
    if not path.is_file():
        raise ModelFileError(
            f"the model file {path} that generated reply {reply.number} is missing; "
            "pass --model PATH to use another copy of it"
        )
    warning = check_model(path, reply.model, store.model_ref(path))
    if warning:
        print(warning, file=sys.stderr)
    return path
