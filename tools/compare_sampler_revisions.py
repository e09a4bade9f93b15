"""Two revisions of `sampling/`, timed call by call on the same logits.

Usage (from the checkout, with the project's virtual environment):

    .venv/bin/python tools/compare_sampler_revisions.py OLD [NEW] [--rounds N]

OLD and NEW are git revisions; NEW defaults to the working tree. Both packages are
copied into a temporary folder under other names (`sampling_old`, `sampling_new`),
so one process holds both. Every mode of `samplescope bench --only sampler` that
both revisions know runs on 48 real logit vectors of the default model and 48 flat
ones. Each vector is written into one reused buffer (as the app hands the sampler a
view of llama.cpp's buffer) and then sampled by both revisions, in alternating
order, so that the machine's load falls on both alike; each round makes both
samplers afresh, in alternating order, since where their scratch buffers land moves
the figures by a few per cent. A figure is the mean over vectors of the median over
rounds; the ratio is new / old.

Run it alone: another process on the same cores makes both sides slower, unevenly.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
STEPS = 48


def copy_package(revision: str | None, name: str, into: Path) -> ModuleType:
    """`sampling/` at `revision` (None: the working tree), importable as `name`."""
    target = into / name
    if revision is None:
        shutil.copytree(ROOT / "sampling", target, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision, "sampling"],
            check=True,
            capture_output=True,
        ).stdout
        unpacked = into / f"{name}-unpacked"
        unpacked.mkdir()
        subprocess.run(["tar", "-x", "-C", str(unpacked)], input=archive, check=True)
        (unpacked / "sampling").rename(target)
    for path in target.rglob("*.py"):  # the sampler units live in a subpackage
        text = path.read_text()
        text = text.replace("from sampling.", f"from {name}.")
        path.write_text(text.replace("from sampling import", f"from {name} import"))
    if str(into) not in sys.path:
        sys.path.insert(0, str(into))
    return __import__(name)


def real_logits() -> list[np.ndarray]:
    """The default model's logits over STEPS greedy steps of a chat prompt."""
    sys.path.insert(0, str(ROOT))
    import llama_cpp

    from backend.bench.sampler import capture_real_logits
    from backend.config.model_path import default_model_path

    llm = llama_cpp.Llama(str(default_model_path()), n_ctx=512, n_threads=2, verbose=False)
    try:
        return capture_real_logits(llm, STEPS)
    finally:
        llm.close()


def modes(package: ModuleType) -> dict[str, tuple[Any, tuple[int, ...]]]:
    """The rows of `samplescope bench --only sampler` that predate this tool's revisions."""
    settings = package.SamplerSettings
    chat = package.DEFAULT_CHAT_SETTINGS
    return {
        "argmax": (settings(temperature=0.0), ()),
        "all t=0.8": (settings(temperature=0.8, seed=42), ()),
        "top-k 40": (settings(temperature=0.8, top_k=40, seed=42), ()),
        "top-p 0.9": (settings(temperature=0.8, top_p=0.9, seed=42), ()),
        "top-k 40 + top-p 0.9": (settings(temperature=0.8, top_k=40, top_p=0.9, seed=42), ()),
        "min-p 0.05": (settings(temperature=0.8, min_p=0.05, seed=42), ()),
        "gumbel": (settings(temperature=0.8, draw="gumbel"), ()),
        "chat defaults+penalty": (
            chat.with_changes(repeat_penalty=1.1),
            tuple(range(100, 164)),
        ),
        "chat defaults, T last": (chat.with_changes(temperature_last=True), ()),
    }


def compare(
    old: ModuleType, new: ModuleType, logits: list[np.ndarray], rounds: int
) -> list[tuple[str, float, float]]:
    """(mode, old µs, new µs) for every mode, timed call by call in alternation."""
    view = np.empty_like(logits[0])
    clock: Callable[[], int] = time.perf_counter_ns
    rows = []
    old_modes, new_modes = modes(old), modes(new)
    for name, (old_settings, history) in old_modes.items():
        times: list[list[list[int]]] = [[[] for _ in logits] for _ in range(2)]
        for round_index in range(rounds):
            # Fresh samplers each round, made in alternating order: where their scratch
            # buffers land (which side is made first) moves a step by a few per cent.
            if round_index % 2 == 0:
                samplers = (old.Sampler(old_settings), new.Sampler(new_modes[name][0]))
            else:
                newer = new.Sampler(new_modes[name][0])
                samplers = (old.Sampler(old_settings), newer)
            for index, vector in enumerate(logits):
                view[:] = vector
                order = (0, 1) if (round_index + index) % 2 == 0 else (1, 0)
                for side in order:
                    started = clock()
                    samplers[side].sample(view, history)
                    times[side][index].append(clock() - started)
        old_us, new_us = (
            statistics.fmean(statistics.median(per_vector) for per_vector in side) / 1e3
            for side in times
        )
        rows.append((name, old_us, new_us))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="a git revision")
    parser.add_argument("new", nargs="?", help="a git revision (default: the working tree)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        old = copy_package(args.old, "sampling_old", Path(folder))
        new = copy_package(args.new, "sampling_new", Path(folder))
        real = real_logits()
        generator = np.random.default_rng(0)
        flat = [generator.standard_normal(real[0].shape[0]).astype(np.float32) for _ in real]
        print(f"old = {args.old}, new = {args.new or 'working tree'}, {args.rounds} rounds")
        print(f"| {'mode':<22} | logits | old µs | new µs | new/old |")
        print(f"|{'-' * 24}|--------|--------|--------|---------|")
        for kind, logits in (("real", real), ("flat", flat)):
            for name, old_us, new_us in compare(old, new, logits, args.rounds):
                print(
                    f"| {name:<22} | {kind:<6} | {old_us:6.1f} | {new_us:6.1f} "
                    f"| {new_us / old_us:7.3f} |"
                )


if __name__ == "__main__":
    main()
