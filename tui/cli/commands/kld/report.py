"""What `samplescope kld` prints: llama-perplexity's block of statistics, or the JSON
object with every scored token."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backend.score.kld import KldResult
from backend.score.kld_sections import SectionDivergence
from sampling.analysis.divergence import DivergenceSummary, DivergenceTotals, Estimate, summarize
from sampling.sections import Section, spans_of
from tui.cli.json_numbers import finite_or_null


def chunk_line(index: int, totals: DivergenceTotals) -> str:
    """llama-perplexity's line after a chunk (its running figures)."""
    s = summarize(totals)
    return (
        f"{index + 1:4d}    {s.ppl_test.value:9.4f} ± {s.ppl_test.uncertainty:9.4f}"
        f"    {s.log_ppl_ratio.value:10.5f} ± {s.log_ppl_ratio.uncertainty:10.5f}"
        f"    {s.kld.value:10.5f} ± {s.kld.uncertainty:10.5f}"
        f"    {100 * s.rms_delta_p.value:6.3f} ± {100 * s.rms_delta_p.uncertainty:6.3f} %"
        f"    {100 * s.same_top.value:6.3f} ± {100 * s.same_top.uncertainty:6.3f} %"
    )


CHUNK_HEADER = (
    "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence"
    "              Δp RMS            Same top p"
)


def _pm(estimate: Estimate) -> str:
    return f"{estimate.value:10.6f} ± {estimate.uncertainty:10.6f}"


def _pm_percent(estimate: Estimate) -> str:
    return f"{100 * estimate.value:6.3f} ± {100 * estimate.uncertainty:5.3f} %"


def _label(label: str) -> str:
    """llama-perplexity's percentile labels: "99.9%   ", " 5.0%   ", "Median  "."""
    if label in ("Maximum", "Minimum"):
        return label
    if label == "Median":
        return "Median "
    return f"{label:>5}  "


def summary_lines(summary: DivergenceSummary) -> list[str]:
    """The block llama-perplexity prints after its last chunk, line for line."""
    lines = [
        "====== Perplexity statistics ======",
        f"Mean PPL(Q)                   : {_pm(summary.ppl_test)}",
        f"Mean PPL(base)                : {_pm(summary.ppl_base)}",
        f"Cor(ln(PPL(Q)), ln(PPL(base))): {100 * summary.log_ppl_correlation:6.2f}%",
        f"Mean ln(PPL(Q)/PPL(base))     : {_pm(summary.log_ppl_ratio)}",
        f"Mean PPL(Q)/PPL(base)         : {_pm(summary.ppl_ratio)}",
        f"Mean PPL(Q)-PPL(base)         : {_pm(summary.ppl_difference)}",
        "",
        "====== KL divergence statistics ======",
        f"Mean    KLD: {_pm(summary.kld)}",
    ]
    lines += [f"{_label(label)} KLD: {value:10.6f}" for label, value in summary.kld_percentiles]
    lines += [
        "",
        "====== Token probability statistics ======",
        f"Mean    Δp: {_pm_percent(summary.delta_p)}",
    ]
    lines += [
        f"{_label(label)} Δp: {100 * value:6.3f}%" for label, value in summary.delta_p_percentiles
    ]
    lines += [
        f"RMS Δp    : {_pm_percent(summary.rms_delta_p)}",
        f"Same top p: {_pm_percent(summary.same_top)}",
    ]
    return lines


def section_lines(parts: Sequence[SectionDivergence]) -> list[str]:
    """The thinking's and the answer's mean KLD and top-token agreement, after the
    block (none for a text that does not think)."""
    if not parts:
        return []
    lines = ["", "====== By section ======"]
    for part in parts:
        if part.mean_kld is None or part.same_top is None:
            lines.append(f"{part.kind:<8}: no token scored")
            continue
        lines.append(
            f"{part.kind:<8}: {part.n_scored} tokens, mean KLD {part.mean_kld:10.6f},"
            f" same top p {100 * part.same_top:6.3f} %"
        )
    return lines


def _estimate(estimate: Estimate) -> dict[str, float | None]:
    return {
        "value": finite_or_null(estimate.value),
        "uncertainty": finite_or_null(estimate.uncertainty),
    }


def kld_json(
    result: KldResult,
    summary: DivergenceSummary,
    texts: Sequence[str],
    sections: Sequence[Section] = (),
    by_section: Sequence[SectionDivergence] = (),
) -> dict[str, Any]:
    """The `--json` object: the named statistics, llama-perplexity's whole block under
    `statistics`, and every scored token; for a text that thinks, each token's section,
    the sections' spans, and the thinking's and the answer's figures.

    Args:
        result: The run.
        summary: Its statistics.
        texts: The text of every token of `result.plan.tokens`.
        sections: The section of every token of `result.plan.tokens` (empty: the text
            does not think).
        by_section: The sections' figures (`backend.score.kld_sections`).
    """
    plan = result.plan
    d = result.divergence
    p_base = d.p_base
    p_test = d.p_test
    tokens = [
        {
            "position": int(result.positions[i]),
            "token_id": int(result.token_ids[i]),
            "text": texts[int(result.positions[i])],
            "kld": float(d.kld[i]),
            "kld_reverse": float(d.kld_reverse[i]),
            "delta_p": float(d.delta_p[i]),
            "p_base": float(p_base[i]),
            "p_test": float(p_test[i]),
            "top_base": int(d.top_base[i]),
            "top_test": int(d.top_test[i]),
            **({"section": str(sections[int(result.positions[i])])} if sections else {}),
        }
        for i in range(result.positions.size)
    ]
    values = {
        "mean_kld": summary.kld.value,
        "median_kld": summary.kld_at("Median"),
        "max_kld": summary.kld_at("Maximum"),
        "same_top_p": summary.same_top.value,
        "ppl_base": summary.ppl_base.value,
        "ppl_test": summary.ppl_test.value,
        "rms_delta_p": summary.rms_delta_p.value,
        "n_scored": summary.count,
        "rule": "every_position" if plan.every_position else "chunks",
        "rule_text": plan.describe(),
        "n_ctx": plan.n_ctx,
        "n_chunk": plan.n_chunk,
        "statistics": {
            "ppl_test": _estimate(summary.ppl_test),
            "ppl_base": _estimate(summary.ppl_base),
            "log_ppl_correlation": finite_or_null(summary.log_ppl_correlation),
            "log_ppl_ratio": _estimate(summary.log_ppl_ratio),
            "ppl_ratio": _estimate(summary.ppl_ratio),
            "ppl_difference": _estimate(summary.ppl_difference),
            "kld": _estimate(summary.kld),
            "kld_percentiles": dict(summary.kld_percentiles),
            "delta_p": _estimate(summary.delta_p),
            "delta_p_percentiles": dict(summary.delta_p_percentiles),
            "rms_delta_p": _estimate(summary.rms_delta_p),
            "same_top_p": _estimate(summary.same_top),
        },
        "tokens": tokens,
    }
    if sections:
        values["sections"] = [
            {"kind": str(span.kind), "first": span.first, "last": span.last}
            for span in spans_of(sections)
        ]
        for part in by_section:
            values[str(part.kind)] = {
                "n_scored": part.n_scored,
                "mean_kld": part.mean_kld,
                "same_top_p": part.same_top,
            }
    return values
