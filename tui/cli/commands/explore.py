"""`samplescope explore`: the tree of continuations the sampler chain keeps at a point.

`samplescope explore CHAT_ID [--reply N] [--branch ID] --at POS --depth D --width N
[flags] [--json]` explores at token POS of a saved reply (its root's children are the
candidates `whatif --at POS` lists as kept, with its `after` as their probability);
`samplescope explore --prompt TEXT --depth D --width N [flags] [--json]` explores
from the end of a prompt. Settings default to the step's own (a saved reply) or to
llama.cpp's defaults (a prompt).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from backend.chat.completion import as_document, mode_for_backend
from backend.session.explore_tree import Tree, TreeNode, TreeShape
from sampling.built_in import chat_defaults
from sampling.errors import SamplescopeError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry
from sampling.settings.summary import settings_summary
from tui.cli.options.model import add_model_flags, chosen_model_path, chosen_rpc, model_or_hf
from tui.cli.options.numbers import unit_fraction
from tui.cli.options.output import add_json_flag
from tui.cli.options.prompt import add_mode_flags, add_system_flag
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.options.settings import (
    add_settings_flags,
    bias_needs_tokenizer,
    settings_from_args,
    settings_with_user_config,
)
from tui.cli.options.template_flags import add_template_flags, template_switches
from tui.cli.prompt_messages import build_messages
from tui.cli.saved_reply import (
    DEFAULT_N_BATCH,
    DEFAULT_N_CTX,
    add_position_flags,
    find_target,
    steering_of_adapters,
    with_text_bias,
)
from tui.cli.store_access import add_db_flag, open_store
from tui.cli.text_input import read_stdin
from tui.cli.verbose import log

if TYPE_CHECKING:
    from backend.llama.control_vector import Steering
    from backend.session.llama_backend import LlamaBackend


GROUP = "chats"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `explore` to the command line."""
    parser = subparsers.add_parser(
        "explore",
        help="the tree of continuations the sampler chain keeps at a token or a prompt's end",
        description="Expand the continuations at token POS of a saved reply (or at the end of "
        "--prompt): each node's children are the candidates the chain keeps there, most probable "
        "first, at most --width of them (and no more once they reach --mass), down to --depth "
        "levels; each node shows its probability and the path's summed log-probability. The "
        "nodes are decoded in lockstep batches sharing the prompt's memory.",
    )
    add_position_flags(parser, required=False)
    parser.add_argument(
        "--prompt", default=None, metavar="TEXT", help="explore after this prompt (- reads stdin)"
    )
    add_system_flag(parser, "a system prompt (with --prompt)")
    add_mode_flags(
        parser, "with --prompt: chat (a user turn in the template) or completion (plain text)"
    )
    add_template_flags(parser)
    parser.add_argument("--depth", type=int, default=3, metavar="D", help="levels (default 3)")
    parser.add_argument(
        "--width", type=int, default=3, metavar="N", help="most children a node has (default 3)"
    )
    parser.add_argument(
        "--mass",
        type=unit_fraction,
        default=1.0,
        metavar="P",
        help="a node's children stop once their probabilities reach P (default 1: --width "
        "alone decides)",
    )
    parser.add_argument(
        "--one-at-a-time",
        action="store_true",
        help="decode each node alone instead of in lockstep batches (the same tree, slower)",
    )
    add_json_flag(parser)
    add_db_flag(parser)
    add_settings_flags(parser, registry)
    add_model_flags(parser, steering=False)
    parser.set_defaults(func=run)


def node_json(node: TreeNode) -> dict[str, object]:
    """A node and everything below it, as JSON."""
    return {
        "token_id": node.token_id,
        "text": node.text,
        "prob": node.prob,
        "logprob_path": node.logprob_path,
        "ends": node.ends,
        "children": [node_json(child) for child in node.children],
    }


def tree_json(tree: Tree) -> dict[str, object]:
    """The tree's figures and nodes (the caller adds where it is)."""
    seconds = tree.elapsed_ms / 1000
    count = tree.node_count
    return {
        "depth": tree.shape.depth,
        "width": tree.shape.width,
        "mass": tree.shape.mass,
        "settings": tree.settings.to_json(),
        "lockstep": tree.lockstep,
        "complete": tree.complete,
        "nodes": count,
        "decoded": tree.decoded,
        "decodes": tree.decodes,
        "elapsed_ms": tree.elapsed_ms,
        "nodes_per_s": count / seconds if seconds > 0 else None,
        "children": [node_json(child) for child in tree.children],
    }


def tree_lines(nodes: tuple[TreeNode, ...], depth: int = 0) -> list[str]:
    """The nodes as indented lines: text, probability, the path's log-probability."""
    lines: list[str] = []
    for node in nodes:
        label = f"{'  ' * depth}{node.text!r}"
        lines.append(f"{label:<32} p={node.prob:.4f}  logp={node.logprob_path:8.3f}")
        lines.extend(tree_lines(node.children, depth + 1))
    return lines


def _load(
    args: argparse.Namespace,
    path: str,
    n_ctx: int,
    n_batch: int,
    steering: Steering | None = None,
) -> LlamaBackend:
    """The model explored (`steering`: a saved reply's control vectors; None: none)."""
    from backend.llama.control_vector import NO_STEERING  # only now: it loads llama.cpp
    from backend.session.explore import EXPLORE_SEQ_MAX
    from backend.session.llama_backend import LlamaBackend

    switches = template_switches(args)  # checked before the model loads
    backend = LlamaBackend.load(
        path,
        n_threads=args.threads,
        n_ctx=n_ctx,
        n_batch=n_batch,
        n_gpu_layers=args.gpu_layers,
        log_path=args.log,
        rpc=chosen_rpc(args.rpc, registry_of_args(args)),
        n_seq_max=EXPLORE_SEQ_MAX,
        steering=NO_STEERING if steering is None else steering,
    )
    backend.template.switches = switches
    return backend


def _shape(args: argparse.Namespace) -> TreeShape:
    return TreeShape(args.depth, args.width, args.mass)


def _from_reply(args: argparse.Namespace) -> tuple[Tree, dict[str, object], str]:
    """Explore at a saved reply's token: the tree, where it is, a heading."""
    if args.at is None:
        raise SamplescopeError("explore CHAT_ID needs --at POS (the token's position, from 1)")
    shape = _shape(args)
    with open_store(args) as store:
        target = find_target(store, args, contrast=False)
        own = store.load_steps(target.chat, target.reply).get(target.index)
    reply = target.reply
    backend = _load(
        args,
        str(target.model_path),
        reply.n_ctx or DEFAULT_N_CTX,
        reply.n_batch or DEFAULT_N_BATCH,
        steering_of_adapters(target.adapters),  # the reply's distribution, not the bare model's
    )
    from backend.session.steer import explore_step  # only now: it loads llama.cpp

    try:
        target = with_text_bias(target, args, backend)
        tree, notices = explore_step(
            backend,
            target.chat,
            reply,
            target.index,
            target.settings,
            shape,
            uniform=None if own is None else own.draw,
            lockstep=not args.one_at_a_time,
        )
    finally:
        backend.close()
    for notice in notices:
        log(notice)
    where: dict[str, object] = {
        "chat_id": target.chat.id,
        "reply": reply.number,
        "branch": reply.id,
        "at": args.at,
    }
    heading = f"reply {reply.number} token {args.at}"
    return tree, where, heading


def _from_prompt(args: argparse.Namespace) -> tuple[Tree, dict[str, object], str]:
    """Explore after a prompt: the tree, where it is, a heading."""
    if args.at is not None or args.reply is not None or args.branch is not None:
        raise SamplescopeError(
            "--at, --reply and --branch name a saved reply's token: not --prompt"
        )
    shape = _shape(args)
    text = read_stdin() if args.prompt == "-" else args.prompt
    base = settings_with_user_config(chat_defaults(registry_of_args(args)))
    settings: SamplerSettings | None = None
    if not bias_needs_tokenizer(args):
        settings = settings_from_args(args, base)
    path = chosen_model_path(model_or_hf(args.model, args.hf), registry_of_args(args))
    backend = _load(args, str(path), args.ctx, args.batch)
    from backend.session.explore import explore  # only now: it loads llama.cpp

    try:
        if settings is None:
            tokenize = backend.runtime.tokenize
            settings = settings_from_args(args, base, lambda t: tokenize(t, special=False))
        messages = build_messages(text, args.system)
        mode, notice = mode_for_backend(backend, args.mode)
        if notice:
            log(notice)
        raw = mode == "completion"
        tree = explore(
            backend,
            as_document(messages) if raw else messages,
            (),
            settings,
            shape,
            max_tokens=shape.depth,
            raw=raw,
            lockstep=not args.one_at_a_time,
        )
    finally:
        backend.close()
    return tree, {"prompt": text, "mode": mode}, "the prompt's end"


def run(args: argparse.Namespace) -> int:
    """Explore and print the tree."""
    if (args.chat_id is None) == (args.prompt is None):
        raise SamplescopeError("give a saved chat's CHAT_ID with --at POS, or --prompt TEXT")
    if args.chat_id is not None:
        if args.hf is not None:
            raise SamplescopeError(
                "explore CHAT_ID opens the saved reply's model (or --model PATH): not --hf"
            )
        tree, where, heading = _from_reply(args)
    else:
        tree, where, heading = _from_prompt(args)
    if args.json:
        print(json.dumps({**where, **tree_json(tree)}, ensure_ascii=False))
        return 0
    batches = "one at a time" if not tree.lockstep else f"in {tree.decodes} lockstep batches"
    print(
        f"{heading}: depth {tree.shape.depth}, width {tree.shape.width}, "
        f"{settings_summary(tree.settings)}: {tree.node_count} nodes, {tree.decoded} decoded "
        f"{batches}, {tree.elapsed_ms:.0f} ms"
    )
    for line in tree_lines(tree.children):
        print(line)
    if not tree.complete:
        print("(stopped before the tree was complete)", file=sys.stderr)
    return 0
