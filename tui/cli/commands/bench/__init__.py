"""`samplescope bench`: each part of samplescope measured against its peer, same run."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from pathlib import Path

from sampling.settings.registry import Registry
from tui.cli.options.model import add_rpc_flag, chosen_model_path
from tui.cli.options.sampler_registry import registry_of_args

PARTS = (
    "sampler",
    "grammar",
    "backend",
    "compare",
    "guidance",
    "thinking",
    "explore",
    "sweep",
    "loops",
    "kld",
    "tui",
    "rpc",
)
# The parts that are one run and one table, in PARTS order: their module in
# backend.bench, its run and format functions, and the table's title. Imported only
# when chosen, so that the command line starts without llama.cpp.
ONE_TABLE_PARTS = {
    "compare": ("compare", "run_compare_bench", "format_result",
                "four columns, best of 3 alternating runs"),
    "guidance": ("guidance", "run_guidance_bench", "format_result",
                 "a reply with a negative prompt beside it against plain, best of 3"),
    "thinking": ("thinking", "run_thinking_bench", "format_result",
                 "a reply that thinks, budget counting, against plain, best of 3"),
    "explore": ("explore", "run_explore_bench", "format_rows",
                "width 3, depth 4, best of 3 alternating runs"),
    "sweep": ("sweep", "run_sweep_bench", "format_result",
              "4 settings x 4 samples, 48 tokens, best of 3 alternating runs"),
    "loops": ("loops", "run_loop_bench", "format_result",
              "the watch over a 200-token greedy reply, median of 7"),
    "kld": ("kld", "run_kld_bench", "format_result",
            "the model against itself, ctx 512, one run each, fresh processes"),
}  # fmt: skip


GROUP = "setup"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `bench` to the command line."""
    parser = subparsers.add_parser(
        "bench",
        help="benchmarks, each as a ratio against its peer measured in the same run",
        description=(
            "sampler: µs per sampled token for each mode, ours (record included) next to "
            "llama.cpp's native sampler chain on the same logits. grammar: µs per step under "
            "a JSON schema, ours (the grammar first) next to llama.cpp's grammar sampler on "
            "the whole vocabulary, and next to its draw-then-check on rejection; a lazy "
            "grammar's trigger step at tokens 100 and 700, ours next to llama.cpp's lazy "
            "grammar, and ours at 700 next to ours at 100. backend: "
            "decode and prefill tokens/s against llama-cpp-python's own loop, and peak "
            "memory. compare: four columns in lockstep against the same columns in turn, "
            "wall time and tokens/s per column. guidance: a reply with its negative prompt "
            "decoded beside it against the same reply plain, decode tokens/s. thinking: a reply "
            "that thinks, with the reasoning budget counting and its sections tracked, against "
            "the same reply plain, decode tokens/s. explore: the "
            "tree of width 3 and depth 4 in lockstep batches against the same nodes one per "
            "llama_decode, nodes per second. "
            "sweep: a 4-setting x 4-sample grid in lockstep batches against the same samples "
            "in turn, wall time. loops: the loop watch's µs a token against the sampler's, "
            "on a real reply that loops. kld: `samplescope kld` (the model against itself, "
            "ctx 512) against llama-perplexity --kl-divergence ($LLAMA_PERPLEXITY or on the "
            "PATH), tokens scored per second, and peak memory against one chunk of logits. "
            "tui: a reply streamed through the app "
            "against the same generation consumed bare. rpc: decode and prefill tokens/s "
            "with the model split across two loopback rpc-servers (or --rpc servers) against "
            "the same model on this machine."
        ),
    )
    parser.add_argument("--model", default=None, help="GGUF file (default: SmolLM2-135M)")
    parser.add_argument(
        "--only", choices=PARTS, action="append", help="run only this part (repeatable)"
    )
    parser.add_argument("--steps", type=int, default=48, help="sampler: logit vectors per mode")
    parser.add_argument("--repeats", type=int, default=7, help="sampler: timed repeats (median)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    add_rpc_flag(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the chosen benchmarks and print their tables."""
    parts = args.only or list(PARTS)
    model_path = chosen_model_path(args.model, registry_of_args(args))
    # Before any part loads a model: until then llama-cpp-python's own callback prints
    # llama.cpp's warnings (such as the SWA cache notice) to the terminal.
    from backend.llama.log import install_llama_log

    install_llama_log()
    print(f"model: {model_path.name} · threads: {args.threads}")
    if "sampler" in parts:
        from backend.bench.sampler import format_rows, run_sampler_bench

        print(f"\n## sampler ({args.steps} logit vectors x {args.repeats} repeats, median)")
        rows = run_sampler_bench(
            model_path, steps=args.steps, repeats=args.repeats, n_threads=args.threads
        )
        print(format_rows(rows))
    if "grammar" in parts:
        from backend.bench.grammar import run_grammar_bench
        from backend.bench.sampler import format_rows as format_grammar

        print(
            f"\n## grammar (a JSON schema's reply, up to {args.steps} steps x {args.repeats}"
            " repeats, median)"
        )
        grammar_rows = run_grammar_bench(
            model_path, steps=args.steps, repeats=args.repeats, n_threads=args.threads
        )
        print(format_grammar(grammar_rows))
    if "backend" in parts:
        from backend.bench.generation import format_rows as format_backend
        from backend.bench.generation import run_backend_bench

        print("\n## backend (best of 3 alternating runs)")
        print(format_backend(run_backend_bench(model_path, n_threads=args.threads)))
        from backend.bench.repack import format_repack_rows, run_repack_bench

        print("\n## exact lockstep's cost to one sequence: weights plain vs repacked (best of 3)")
        print(format_repack_rows(run_repack_bench(model_path, n_threads=args.threads)))
    for part, (module_name, run_name, format_name, title) in ONE_TABLE_PARTS.items():
        if part in parts:
            module = importlib.import_module(f"backend.bench.{module_name}")
            print(f"\n## {part} ({title})")
            result = getattr(module, run_name)(model_path, n_threads=args.threads)
            print(getattr(module, format_name)(result), flush=True)
    if "tui" in parts:
        # A fresh process: once a thread has run llama.cpp's OpenMP team, decoding from
        # another thread of the same process is far slower (measured: 140 -> 53 tok/s),
        # and the parts above decode on the main thread.
        print("\n## tui", flush=True)
        subprocess.run(
            [sys.executable, "-m", "tui.bench", str(model_path), str(args.threads)],
            check=True,
        )
    if "rpc" in parts:
        _run_rpc(model_path, args)
    return 0


def _run_rpc(model_path: Path, args: argparse.Namespace) -> None:
    """The rpc part: through --rpc servers, else two loopback servers started here."""
    from backend.bench.rpc import format_rpc_rows, run_rpc_bench
    from backend.llama.rpc import parse_endpoints
    from tui.cli.commands.bench.local_rpc_servers import local_servers

    if args.rpc:
        endpoints = parse_endpoints(args.rpc)
        print(f"\n## rpc ({len(endpoints)} servers, {args.threads} local threads, best of 3)")
        print(format_rpc_rows(run_rpc_bench(model_path, endpoints, n_threads=args.threads)))
        return
    # The servers share this machine's cores: half the threads each.
    server_threads = max(1, args.threads // 2)
    print(
        f"\n## rpc (2 loopback servers x {server_threads} thread(s) against"
        f" {args.threads} local threads, best of 3)",
        flush=True,
    )
    with local_servers(2, threads=server_threads) as servers:
        endpoints = tuple(server.endpoint for server in servers)
        rows = run_rpc_bench(model_path, endpoints, n_threads=args.threads)
    print(format_rpc_rows(rows))
