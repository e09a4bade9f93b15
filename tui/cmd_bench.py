"""`samplescope bench`: our samplers (and later the backend) against their peers."""

from __future__ import annotations

import argparse
import os
from typing import Any

from backend.model_path import resolve_model_path


def register(subparsers: Any) -> None:
    """Add `bench` to the command line."""
    parser = subparsers.add_parser(
        "bench",
        help="benchmarks against llama.cpp's native samplers and llama-cpp-python",
        description=(
            "Microseconds per sampled token for each sampling mode, ours (record included) "
            "next to llama.cpp's native sampler chain on the same logits, with the ratio."
        ),
    )
    parser.add_argument("--model", default=None, help="GGUF file (default: SmolLM2-135M)")
    parser.add_argument("--steps", type=int, default=48, help="logit vectors per mode")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats (median)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the benchmarks and print their tables."""
    from backend.sampler_bench import format_rows, run_sampler_bench

    model_path = resolve_model_path(args.model)
    print(f"sampler: {model_path.name}, {args.steps} steps x {args.repeats} repeats")
    rows = run_sampler_bench(
        model_path, steps=args.steps, repeats=args.repeats, n_threads=args.threads
    )
    print(format_rows(rows))
    return 0
