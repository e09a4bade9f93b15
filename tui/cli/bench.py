"""`samplescope bench`: each part of samplescope measured against its peer, same run."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from tui.cli.model_flags import chosen_model_path

PARTS = ("sampler", "backend", "tui")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `bench` to the command line."""
    parser = subparsers.add_parser(
        "bench",
        help="benchmarks, each as a ratio against its peer measured in the same run",
        description=(
            "sampler: µs per sampled token for each mode, ours (record included) next to "
            "llama.cpp's native sampler chain on the same logits. backend: decode and prefill "
            "tokens/s against llama-cpp-python's own loop, and peak memory. tui: a reply "
            "streamed through the app against the same generation consumed bare."
        ),
    )
    parser.add_argument("--model", default=None, help="GGUF file (default: SmolLM2-135M)")
    parser.add_argument(
        "--only", choices=PARTS, action="append", help="run only this part (repeatable)"
    )
    parser.add_argument("--steps", type=int, default=48, help="sampler: logit vectors per mode")
    parser.add_argument("--repeats", type=int, default=7, help="sampler: timed repeats (median)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the chosen benchmarks and print their tables."""
    parts = args.only or list(PARTS)
    model_path = chosen_model_path(args.model)
    print(f"model: {model_path.name} · threads: {args.threads}")
    if "sampler" in parts:
        from backend.bench.sampler import format_rows, run_sampler_bench

        print(f"\n## sampler ({args.steps} logit vectors x {args.repeats} repeats, median)")
        rows = run_sampler_bench(
            model_path, steps=args.steps, repeats=args.repeats, n_threads=args.threads
        )
        print(format_rows(rows))
    if "backend" in parts:
        from backend.bench.generation import format_rows as format_backend
        from backend.bench.generation import run_backend_bench

        print("\n## backend (best of 3 alternating runs)")
        print(format_backend(run_backend_bench(model_path, n_threads=args.threads)))
    if "tui" in parts:
        # A fresh process: once a thread has run llama.cpp's OpenMP team, decoding from
        # another thread of the same process is far slower (measured: 140 -> 53 tok/s),
        # and the parts above decode on the main thread.
        print("\n## tui", flush=True)
        subprocess.run(
            [sys.executable, "-m", "tui.bench", str(model_path), str(args.threads)],
            check=True,
        )
    return 0
