"""`samplescope generate --beams W`: a beam search instead of a sampled reply."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from backend.chat.protocol import ChatMessage
from backend.session.phrase_bans import PhraseBans
from backend.store.recorder import ChatRecorder
from backend.store.records import StoreError
from sampling.settings.record import SamplerSettings
from tui.cli.options.numbers import finite_float
from tui.cli.reply_score_json import reply_score_json
from tui.cli.store_access import recorder_for
from tui.cli.verbose import log

if TYPE_CHECKING:
    from backend.session.beam_result import Beam, BeamSearch
    from backend.session.llama_backend import LlamaBackend
    from backend.session.model import Model


def add_beam_flags(parser: argparse.ArgumentParser) -> None:
    """Add `--beams` and `--length-penalty` to a command's parser."""
    group = parser.add_argument_group(
        "beam search",
        "Instead of sampling one reply, keep the W most probable ones, decoded together "
        "(one batch a step, the prompt shared). A beam's probability is the product of "
        "its tokens' probabilities under the sampler chain (the settings' penalties, "
        "filters and temperature applied: -t 1 with nothing cut ranks by the model's own "
        "probabilities). The best beam is the reply; --save stores the others as its "
        "branches.",
    )
    group.add_argument(
        "--beams",
        type=int,
        default=None,
        metavar="W",
        help="beam search with W beams (at most the model's sequences, 4 by default)",
    )
    group.add_argument(
        "--length-penalty",
        type=finite_float,
        default=0.0,
        metavar="A",
        help="rank finished beams by logprob / length**A (default 0: by logprob; "
        "above 0 favours longer replies)",
    )


def run_beams(
    args: argparse.Namespace,
    backend: LlamaBackend,
    messages: list[ChatMessage],
    settings: SamplerSettings,
    mode: str,
    bans: PhraseBans,
) -> int:
    """Run the beam search `args` asks for and print it (the backend is closed after).

    Raises:
        SamplescopeError: The search cannot run as asked, or the store failed.
    """
    from backend.session.beams import beam_search, check_beam_search  # llama.cpp: not for -h
    from backend.session.recorded_beams import BeamRecorder

    recorder = None
    saver = None
    try:
        check_beam_search(backend.model, settings, args.beams, args.max_tokens, args.length_penalty)
        if args.save:  # saved as it runs: a killed search keeps its best beam so far
            recorder = recorder_for(args, backend)
            saver = BeamRecorder(recorder, backend.model)
            saver.begin(messages, settings, args.max_tokens, mode, args.beams, args.length_penalty)

        def progress(step: int, live: Sequence[Beam]) -> None:
            if saver is not None:
                saver.step(step, live)
            if args.verbose >= 1:
                log(f"beam step {step}")

        search = beam_search(
            backend,
            messages,
            settings,
            width=args.beams,
            max_tokens=args.max_tokens,
            length_penalty=args.length_penalty,
            raw=mode == "completion",
            on_step=progress,
            bans=bans or None,
        )
        for notice in search.notices:
            log(notice)
        ids: list[int | None] = []
        if recorder is not None and saver is not None:
            ids = saver.finish(search)
            if recorder.error:
                raise StoreError(recorder.error)
        model: Model = backend.model
        _print(args, search, model, ids, recorder, settings, mode, backend.info.path)
    finally:
        backend.close()
        if recorder is not None:
            recorder.store.close()
    return 0


def beam_json(beam: Beam, model: Model, kept: bool, reply_id: int | None) -> dict[str, object]:
    """One hypothesis for --json."""
    from backend.session.beam_result import token_texts

    return {
        "kept": kept,
        "token_ids": list(beam.token_ids),
        "text": "".join(token_texts(model, beam.token_ids)),
        "logprob": beam.logprob,
        "score": beam.score,
        "reason": beam.reason,
        "pruned_at": beam.pruned_at,
        **({} if reply_id is None else {"reply_id": reply_id}),
    }


def _print(
    args: argparse.Namespace,
    search: BeamSearch,
    model: Model,
    ids: list[int | None],
    recorder: ChatRecorder | None,
    settings: SamplerSettings,
    mode: str,
    model_path: str,
) -> None:
    from backend.session.beam_result import token_texts

    best = search.beams[0]
    text = "".join(token_texts(model, best.token_ids))
    chat_id = None if recorder is None else recorder.chat_id
    if not args.json:
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        if chat_id is not None:
            log(f"saved as chat {chat_id}")
        for rank, beam in enumerate(search.beams[1:], start=2):
            shown = "".join(token_texts(model, beam.token_ids))
            log(f"beam {rank}: logprob {beam.logprob:.3f}: {shown!r}")
        return
    beams = [
        beam_json(beam, model, True, ids[n] if n < len(ids) else None)
        for n, beam in enumerate(search.beams)
    ]
    beams += [beam_json(beam, model, False, None) for beam in search.pruned]
    print(
        json.dumps(
            {
                **({} if chat_id is None else {"chat_id": chat_id}),
                "mode": mode,
                "text": text,
                "token_ids": list(best.token_ids),
                "settings": settings.to_json(),
                "seed": settings.seed,
                "finish_reason": best.finish_reason,
                "error": None,
                "stats": asdict(search.stats),
                "score": reply_score_json(list(best.steps)),
                "width": args.beams,
                "length_penalty": args.length_penalty,
                "ranked_by": "the sampler chain's probabilities",
                "beam_steps": search.steps,
                "banned_candidates": search.banned,
                "beams": beams,
                "model": model_path,
            },
            ensure_ascii=False,
        )
    )
