"""How `samplescope sweep` prints its result: a table, CSV rows, or JSON."""

from __future__ import annotations

import csv
import io
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from backend.session.sweep_result import ORDER_WORDS, SweepResult, metric
from sampling.analysis.sweep_metrics import Estimate, SettingMetrics

#: The table is printed at most this wide (a pipe gets it whole up to this width).
MAX_WIDTH = 240


def order_line(result: SweepResult) -> str:
    """The chain order the sweep ran, in words."""
    return "chain: " + ORDER_WORDS[result.temperature_order]


def _cell(value: Estimate | None, digits: int = 3, scale: float = 1.0) -> str:
    if value is None:
        return "-"
    text = f"{value.mean * scale:.{digits}f}"
    if value.stderr is not None:
        text += f"±{value.stderr * scale:.{digits}f}"
    return text


#: The columns of the sections' figures (when a sample thinks): heading, figure, digits
#: and scale.
SECTION_COLUMNS = (
    ("think len", "thinking_length", 1, 1.0),
    ("answer len", "answer_length", 1, 1.0),
    ("think loops %", "thinking_loop_rate", 0, 100.0),
    ("answer loops %", "answer_loop_rate", 0, 100.0),
    ("think logp", "thinking_logprob", 3, 1.0),
    ("answer logp", "answer_logprob", 3, 1.0),
)


def section_cells(metrics: SettingMetrics) -> list[str]:
    """A setting's cells of the sections' columns."""
    return [
        _cell(metric(metrics, name), digits, scale) for _, name, digits, scale in SECTION_COLUMNS
    ]


def result_table(result: SweepResult) -> Table:
    """One row per setting: quality, diversity, length, finish reasons, frontier mark;
    the thinking's and the answer's length, loops and logp/token when a sample thinks."""
    plan = result.plan
    table = Table(
        title=(
            f"{plan.shape} (seeds {plan.seed}..{plan.seed + plan.samples - 1}),"
            f" ≤ {plan.max_tokens} tokens; mean ± standard error over prompts"
        ),
        caption=(
            f"{order_line(result)}. ★: on the quality (logp) × diversity (NGD) frontier."
            f" >top{result.top_k}: share of sampled tokens outside the raw top {result.top_k}."
        ),
    )
    for name in ("setting", "★", "logp/token", "ppl", f">top{result.top_k} %", "length"):
        table.add_column(name, justify="left" if name == "setting" else "right", no_wrap=True)
    table.add_column("loops %", justify="right", no_wrap=True)
    thinks = result.thinks
    for heading, *_ in SECTION_COLUMNS if thinks else ():
        table.add_column(heading, justify="right", no_wrap=True)
    table.add_column("finish", no_wrap=True)
    for name in ("CR", "NGD", "self-rep", "distinct-2"):
        table.add_column(name, justify="right", no_wrap=True)
    frontier = set(result.frontier())
    for index, metrics in enumerate(result.metrics):
        finish = " ".join(f"{why}:{n}" for why, n in metrics.finish_reasons.items())
        table.add_row(
            plan.settings[index].label,
            "★" if index in frontier else "",
            _cell(metrics.logprob),
            _cell(metrics.perplexity, 2),
            _cell(metrics.outside_top_k, 1, 100.0),
            _cell(metrics.length, 1),
            _cell(metrics.loop_rate, 0, 100.0),
            *(section_cells(metrics) if thinks else ()),
            finish or "-",
            _cell(metrics.compression_ratio),
            _cell(metrics.ngram_diversity),
            _cell(metrics.self_repetition),
            _cell(metrics.distinct[1]),
        )
    return table


def print_table(result: SweepResult, file: Any = None) -> None:
    """The result as a table: as wide as it needs (at most `MAX_WIDTH` columns), or the
    terminal's width when that is wider."""
    out = sys.stdout if file is None else file
    table = result_table(result)
    measuring = Console(file=io.StringIO(), width=MAX_WIDTH)
    needed = measuring.measure(table).maximum
    width = max(min(needed, MAX_WIDTH), Console(file=out).width)
    console = Console(file=out, width=width, highlight=False, markup=False, emoji=False)
    console.print(f"model: {result.model}")
    if result.cancelled:
        console.print("cancelled: the figures are over the samples finished before it")
    console.print(table)


def csv_text(result: SweepResult) -> str:
    """One CSV row per setting: its label and settings, then each figure's mean,
    standard error and number of prompts (the sections' too when a sample thinks), the
    finish reasons and the frontier mark."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["setting", "label", "temperature_order", "samples", "on_frontier"]
    names = result.metric_names
    for name in names:
        header += [name, f"{name}_stderr", f"{name}_n"]
    header += ["finish_reasons", "top_k"]
    writer.writerow(header)
    frontier = set(result.frontier())
    for index, metrics in enumerate(result.metrics):
        row: list[Any] = [
            index,
            result.plan.settings[index].label,
            result.temperature_order,
            metrics.samples,
            "true" if index in frontier else "false",
        ]
        for name in names:
            value = metric(metrics, name)
            row += (
                ["", "", 0]
                if value is None
                else [repr(value.mean), "" if value.stderr is None else repr(value.stderr), value.n]
            )
        row += [";".join(f"{why}={n}" for why, n in metrics.finish_reasons.items()), result.top_k]
        writer.writerow(row)
    return buffer.getvalue()
