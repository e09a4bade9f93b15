"""`samplescope sweep`: many samples of every setting of a grid on your prompts, and
the figures that place each setting on a quality-against-diversity frontier."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from backend.chat.completion import mode_for_backend
from backend.config.paths import default_store_path
from backend.config.user_files import UserFileError, load_json, read_user_text
from backend.session.recorded_sweep import keep_sweep, result_file, save_sample
from backend.session.sweep import (
    DEFAULT_PARALLEL,
    MAX_PARALLEL,
    MAX_SAMPLES,
    SampleToken,
    SweepPlan,
    SweepSample,
    run_sweep,
)
from backend.session.sweep_result import SampleRecord, SweepFileError, SweepResult, record_of
from backend.store.records import StoreError
from sampling.analysis.sweep_metrics import DEFAULT_TOP_K
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.settings.registry import Registry
from tui.cli.commands.sweep.args import SweepArgumentError, grid_settings, read_prompts
from tui.cli.commands.sweep.output import csv_text, order_line, print_table
from tui.cli.options.model import add_model_flags, load_backend
from tui.cli.options.output import add_json_flag
from tui.cli.options.prompt import add_mode_flags, add_system_flag
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.options.template_flags import add_template_flags, template_switches
from tui.cli.store_access import add_db_flag, recorder_for
from tui.cli.verbose import log

DEFAULT_SEED = 42
#: The most bytes a saved sweep result (`--view FILE`) may hold.
RESULT_LIMIT = 256 << 20


GROUP = "sample"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `sweep` to the command line."""
    parser = subparsers.add_parser(
        "sweep",
        help="many samples per setting of a grid; quality against diversity",
        description=(
            "Sample every prompt N times (seeds SEED, SEED+1, ...) under every setting of "
            "the grid (each --set, or the off values, times the product of the --grid "
            "lists), every sample of a prompt decoded in lockstep, and print each "
            "setting's raw log-probability per token and perplexity (quality), the share "
            "of tokens outside the raw top k, length, finish reasons and the diversity of "
            "its samples (compression ratio, n-gram diversity, self-repetition, "
            "distinct-n), each as its mean over prompts ± standard error. Every sample is "
            "saved as a chat (the app opens it with its records), and the sweep is kept "
            "with them: the app's saved chats (ctrl+o) list it as one entry that opens "
            "on its frontier. Ctrl-C stops and keeps "
            "what was done."
        ),
    )
    parser.add_argument(
        "--prompt", action="append", default=[], metavar="TEXT", help="a prompt (repeatable)"
    )
    parser.add_argument(
        "--prompts",
        type=Path,
        default=None,
        metavar="FILE",
        help='prompts, one a line (a *.jsonl file: a JSON string or {"prompt": ...} a line)',
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help='one axis of the grid, e.g. "temperature=0.7,1.0,1.5" (repeatable: the product);'
        ' "think.temperature=0.2,0.6" varies a thinking model\'s thinking alone',
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="K=V,...",
        help='a setting as compare takes it, e.g. "min_p=0.1" (repeatable; times the grid)',
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=4,
        help=f"samples per setting (default 4; the sweep's samples in all, prompts ×"
        f" settings × samples, at most {MAX_SAMPLES:,})",
    )
    parser.add_argument(
        "--seed", "-s", type=int, default=DEFAULT_SEED, help="the first sample's seed (42)"
    )
    parser.add_argument("--max-tokens", type=int, default=64, help="sample length (default 64)")
    parser.add_argument(
        "--temperature",
        choices=("first", "last"),
        default="first",
        help="where the chain runs the temperature: first (before the filters, as Hugging "
        "Face and the min-p paper; default) or last (llama.cpp's chain)",
    )
    parser.add_argument(
        "--top-k-share",
        type=int,
        default=DEFAULT_TOP_K,
        metavar="K",
        help=f"count the sampled tokens outside the raw top K (default {DEFAULT_TOP_K})",
    )
    add_system_flag(parser, "a system prompt before each prompt")
    add_template_flags(parser)
    add_mode_flags(
        parser, "chat (each prompt a user turn) or completion (each prompt continued as text)"
    )
    output = parser.add_mutually_exclusive_group()
    add_json_flag(output)
    output.add_argument("--csv", action="store_true", help="print one CSV row per setting")
    parser.add_argument("--no-save", action="store_true", help="do not save the samples as chats")
    parser.add_argument(
        "--parallel",
        type=int,
        default=DEFAULT_PARALLEL,
        metavar="N",
        help=f"samples of a prompt decoded at once in one lockstep batch (default"
        f" {DEFAULT_PARALLEL}, at most {MAX_PARALLEL})",
    )
    parser.add_argument(
        "--in-turn",
        action="store_true",
        help="decode the samples one after the other (default: a prompt's samples in lockstep)",
    )
    parser.add_argument(
        "--view",
        nargs="?",
        const="",
        default=None,
        metavar="FILE",
        help="then open the app on the frontier (quality against diversity; a point's "
        "samples open as chats); with FILE, a result saved with --json (or the one a "
        "saved sweep keeps, named on stderr), nothing is run",
    )
    add_db_flag(parser)
    add_model_flags(parser)
    parser.set_defaults(func=run)


def plan_from_args(args: argparse.Namespace) -> SweepPlan:
    """The sweep the arguments describe (mode "chat" until the model is known).

    Raises:
        SweepArgumentError: The prompts, grid or counts are wrong.
    """
    if not 1 <= args.parallel <= MAX_PARALLEL:
        raise SweepArgumentError(
            f"invalid --parallel {args.parallel}: expected 1 to {MAX_PARALLEL}"
        )
    if not 1 <= args.samples <= MAX_SAMPLES:
        raise SweepArgumentError(
            f"invalid --samples {args.samples:,}: expected 1 to {MAX_SAMPLES:,} (a sweep's"
            " samples in all: prompts × settings × samples)"
        )
    if args.top_k_share < 1:
        raise SweepArgumentError(f"invalid --top-k-share {args.top_k_share}: expected ≥ 1")
    prompts = read_prompts(args.prompt, args.prompts)
    settings = grid_settings(args.sets, args.grid, args.temperature, registry_of_args(args))
    return SweepPlan(
        prompts=tuple(prompts),
        settings=tuple(settings),
        samples=args.samples,
        seed=args.seed,
        max_tokens=args.max_tokens,
        mode=args.mode or "chat",
        system=args.system,
    )


@contextmanager
def cancel_on_interrupt() -> Iterator[threading.Event]:
    """A cancel flag the first Ctrl-C sets (the sweep stops and keeps what it did);
    a second Ctrl-C interrupts at once."""
    cancel = threading.Event()

    def interrupted(signum: int, frame: FrameType | None) -> None:
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()
        log("stopping: the samples running finish as cancelled (Ctrl-C again to quit now)")

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield cancel
    finally:
        signal.signal(signal.SIGINT, previous)


def run(args: argparse.Namespace) -> int:
    """Run the sweep and print its figures (or view a saved one); exit code 1 if a
    sample failed, 130 if cancelled."""
    if args.view:
        return view(args, read_result(Path(args.view), registry_of_args(args)))
    plan = plan_from_args(args)
    switches = template_switches(args)
    backend = load_backend(args, n_seq_max=min(args.parallel, plan.per_prompt))
    backend.template.switches = switches
    records: list[SampleRecord] = []
    recorder = None if args.no_save else recorder_for(args, backend)
    try:
        mode, notice = mode_for_backend(backend, args.mode)
        if notice:
            log(notice)
        if backend.info.batch_invariant is False and not args.in_turn:
            log(
                "lockstep decoding is not exact with this model here (the load's check):"
                " a sample may differ from generate alone; --in-turn decodes one at a time"
            )
        plan = replace(plan, mode=mode)
        total = len(plan.keys) * plan.max_tokens
        console = Console(file=sys.stderr)
        columns = (
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tokens · {task.fields[samples]} samples"),
            TimeElapsedColumn(),
        )
        with (
            cancel_on_interrupt() as cancel,
            Progress(*columns, console=console, transient=True) as progress,
        ):
            task = progress.add_task("sweep", total=total, samples=f"0/{len(plan.keys)}")
            for event in run_sweep(backend, plan, cancel=cancel, in_turn=args.in_turn):
                if isinstance(event, SampleToken):
                    progress.advance(task)
                elif isinstance(event, SweepSample):
                    chat_id = None if recorder is None else save_sample(recorder, plan, event)
                    records.append(record_of(event, chat_id, args.top_k_share))
                    unused = plan.max_tokens - len(event.steps)
                    progress.update(
                        task, advance=unused, samples=f"{len(records)}/{len(plan.keys)}"
                    )
                    if event.finished.reason == "error":
                        log(f"a sample failed: {event.finished.error}")
            cancelled = cancel.is_set()
        info = backend.info
        result = SweepResult(
            info.path,
            plan,
            tuple(records),
            args.top_k_share,
            cancelled=cancelled,
            contrast_model=info.contrast_model,
            control_vectors=info.control_vectors,
            control_layers=info.control_layers,
        )
        if recorder is not None and not recorder.error:
            try:  # the saved chats list it as one entry
                keep_sweep(recorder.store, result)
            except StoreError as error:
                log(f"the sweep is not kept with its samples: {error}")
    finally:
        backend.close()
        if recorder is not None:
            recorder.store.close()
    if recorder is not None and recorder.error:
        raise StoreError(recorder.error)
    emit(args, result)
    if args.view is not None:
        view(args, result)
    if cancelled:
        return 130
    return 1 if any(r.figures.finish_reason == "error" for r in records) else 0


def emit(args: argparse.Namespace, result: SweepResult) -> None:
    """Print the result as the flags ask (JSON, CSV, or a table), and where it is saved."""
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    elif args.csv:
        sys.stdout.write(csv_text(result))
    else:
        print_table(result)
    saved = [r.chat_id for r in result.samples if r.chat_id is not None]
    if saved:
        log(
            f"samples saved as chats {min(saved)}..{max(saved)}, listed in the app's saved"
            f" chats (ctrl+o) as one sweep; {order_line(result)}"
        )
        kept = keep_result(args, result)
        if kept is not None:
            log(f"`samplescope sweep --view {kept}` shows this sweep again without running it")
    else:
        log(order_line(result))


def keep_result(args: argparse.Namespace, result: SweepResult) -> Path | None:
    """Write a saved sweep's result beside its chat database (`sweeps/`, `result_file`),
    for `--view` to show it again without running it; the file, or None when it cannot
    be written (said on stderr) or no sample was saved."""
    path = result_file(Path(getattr(args, "db", None) or default_store_path()), result)
    if path is None:
        return None
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result.to_json(), ensure_ascii=False), encoding="utf-8")
    except OSError as error:
        log(f"the sweep's result could not be kept in {folder}: {error.strerror}")
        return None
    return path


def read_result(path: Path, registry: Registry = BUILT_IN_REGISTRY) -> SweepResult:
    """A sweep result saved with `--json`, its settings made with `registry` (the run's).

    Raises:
        SweepFileError: The file cannot be read or is not one.
    """
    try:
        values = load_json(read_user_text(path, RESULT_LIMIT), str(path))
    except UserFileError as error:
        raise SweepFileError(str(error)) from None
    if not isinstance(values, dict):
        raise SweepFileError(f"{path}: not a sweep result")
    return SweepResult.from_json(values, registry)


def view(args: argparse.Namespace, result: SweepResult) -> int:
    """Open the app (on the sweep's model and chat database) on the sweep's screen."""
    from tui.cli.commands.app import build_app, build_app_parser, run_until_quit
    from tui.sweep.command import open_sweep

    argv = ["--model", result.model, "--ctx", str(args.ctx), "--batch", str(args.batch)]
    if args.threads is not None:
        argv += ["--threads", str(args.threads)]
    app = build_app(
        build_app_parser(registry_of_args(args)).parse_args(argv),
        store_path=args.db,
        on_start=lambda app: open_sweep(app, result),
    )
    return run_until_quit(app)
