"""One row per sampled token of a saved chat: the per-token record a notebook reads.

Every branch of every stored turn (on screen or not) gives one row per token, its
shared tokens (those before its fork, its parent's) included, with the numbers its
stored step holds: the probability it was drawn with, its raw log-probability (the
model's distribution at temperature 1 before any filter), its rank there, the entropy,
how many tokens the samplers kept and which sampler cut last, the step's table of
most probable candidates, and what each unit reported of the step (guidance's and
contrast's: both distributions' top tokens and their combination's).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from backend.store.records import ChatRecord, ModelRef, ReplyRecord
from backend.store.store import ChatStore
from sampling.records import Step
from sampling.samplers.base import Report
from sampling.samplers.guidance_report import has_two_distributions, report_json

CandidateText = Callable[[ModelRef, int], str | None]
"""A token id's text in a model's vocabulary, or None when it cannot be read."""


@dataclass(frozen=True, slots=True)
class TopToken:
    """One row of a step's candidate table.

    Attributes:
        token_id: The candidate.
        text: Its text in the model's vocabulary (None when the vocabulary is not at hand).
        prob_raw: Its probability at temperature 1 before any filter.
        prob: Its probability in the distribution drawn from (0 when cut).
        kept: Whether it survived every sampler.
        removed_by: The sampler that removed it ("" when kept).
    """

    token_id: int
    text: str | None
    prob_raw: float
    prob: float
    kept: bool
    removed_by: str


@dataclass(frozen=True, slots=True)
class TokenRow:
    """One sampled token of one reply branch.

    Attributes:
        chat: The chat's id.
        reply: The reply's number in its chat (`ReplyRecord.number`).
        branch: The branch's number within its turn (1: the turn's first reply).
        branch_id: The branch's id (`export --format json`'s `branch_id`).
        followed: Whether the chat shows this branch.
        position: 0-based index of the token in the reply.
        token_id: The token.
        text: The text it added to the reply (None when not stored).
        prob: Its probability in the distribution drawn from.
        logprob_raw: Its log-probability, nats, at temperature 1 before any filter
            (None when the step records neither its logit nor a table row for it).
        rank: Its 1-based rank there (None when below the table and not recorded).
        entropy: Entropy of that distribution, nats.
        kept: How many tokens the samplers kept.
        cut_by: The last sampler that removed tokens ("none" when none was cut).
        top: The step's candidate table, most probable first.
        reports: What each unit reported of the step, by unit name, JSON-ready: a
            report of two distributions (guidance's, contrast's) as `report_json`
            gives it (each token with its text), another as its figures (a list of
            tokens as [id, number] pairs).
        section: "thinking" or "answer" (`sampling.sections`): the answer for a
            model that does not think.
    """

    chat: int
    reply: int
    branch: int
    branch_id: int
    followed: bool
    position: int
    token_id: int
    text: str | None
    prob: float
    logprob_raw: float | None
    rank: int | None
    entropy: float
    kept: int
    cut_by: str
    top: tuple[TopToken, ...]
    reports: dict[str, object] = field(default_factory=dict)
    section: str = "answer"


def _logprob(probability: float | None) -> float | None:
    if probability is None or probability <= 0.0:
        return None if probability is None else -math.inf
    return math.log(probability)


def step_row(
    head: tuple[int, ReplyRecord, bool],
    position: int,
    step: Step,
    text: str | None,
    candidate_text: CandidateText | None,
) -> TokenRow:
    """The row of one token; `head` is (chat id, branch, whether it is followed)."""
    chat_id, branch, followed = head
    table = step.table
    top = tuple(
        TopToken(
            token_id=int(token_id),
            text=None if candidate_text is None else candidate_text(branch.model, int(token_id)),
            prob_raw=float(table.prob_before[i]),
            prob=float(table.prob_after[i]),
            kept=bool(table.kept[i]),
            removed_by=table.removed_by[i],
        )
        for i, token_id in enumerate(table.token_ids)
    )
    return TokenRow(
        chat=chat_id,
        reply=branch.number,
        branch=branch.branch,
        branch_id=branch.id,
        followed=followed,
        position=position,
        token_id=step.token_id,
        text=text,
        prob=float(step.prob),
        logprob_raw=_logprob(step.prob_unfiltered),
        rank=step.rank_known,
        entropy=float(step.entropy),
        kept=int(step.n_kept),
        cut_by=step.cut_by,
        top=top,
        reports={
            name: _report(report, branch.model, candidate_text)
            for name, report in step.reports.items()
        },
        section=str(step.section),
    )


def _report(
    report: Report, model: ModelRef, candidate_text: CandidateText | None
) -> dict[str, object]:
    """A unit's report of a step, JSON-ready (see `TokenRow.reports`)."""
    if has_two_distributions(report):
        text = None if candidate_text is None else (lambda token: candidate_text(model, token))
        return report_json(report, text)
    return {
        name: [list(pair) for pair in value] if isinstance(value, tuple) else value
        for name, value in report.items()
    }


def chat_token_rows(
    store: ChatStore, chat: ChatRecord, candidate_text: CandidateText | None = None
) -> list[TokenRow]:
    """Every stored token record of a chat: by turn, then branch, then position.

    Tokens without a stored record (replies saved before records were kept) have no
    row.

    Raises:
        StoreError: A record cannot be read.
    """
    followed = {m.reply.id for m in chat.stored_messages if m.reply is not None}
    rows: list[TokenRow] = []
    for message in chat.stored_messages:
        for branch in message.branches:
            steps = store.load_steps(chat, branch)
            pieces = store.load_pieces(chat, branch)
            head = (chat.id, branch, branch.id in followed)
            rows += [
                step_row(head, index, steps[index], pieces.get(index), candidate_text)
                for index in range(len(branch.token_ids))
                if index in steps
            ]
    return rows
