"""Phrase bans on SmolLM2: a phrase from its own greedy reply, banned, never comes out;
every rejected attempt is stored as a ghost holding it; the reply replays exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chat.events import FinishedEvent, GenerationEvent, RewindEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from backend.session.phrase_bans import PhraseBans
from backend.session.replay import replay
from backend.store.recorded import recorded
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tui.cli.main import main

PROMPT = "Write a short story about a lighthouse keeper."
QUESTION = [ChatMessage("user", PROMPT)]
MAX_TOKENS = 48
SEED_TOKENS = 24
"""The reply length for the tests that try 20 seeds: the banned phrase comes early (the
greedy reply has it within its first 20 tokens), and 10 or 11 of the 20 seeds go back
whether their replies are 24 or 48 tokens long."""


@pytest.fixture
def backend(llama_backend: LlamaBackend) -> Iterator[LlamaBackend]:
    llama_backend.reset()
    yield llama_backend
    llama_backend.reset()


@pytest.fixture(scope="module")
def liked_phrase(llama_backend: LlamaBackend) -> str:
    """Two words of the model's greedy reply, from the second character of the first:
    a phrase it likes, beginning inside a token."""
    llama_backend.reset()
    events = llama_backend.generate(
        QUESTION, LiveSettings(SamplerSettings(temperature=0.0)), max_tokens=MAX_TOKENS
    )
    text = next(e for e in events if isinstance(e, FinishedEvent)).text
    words = text.split()
    long_words = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
    first = long_words[0]
    phrase = " ".join(words[first : first + 2])[1:]
    print("greedy reply:", repr(text), "banned phrase:", repr(phrase))
    return phrase


def generate_saved(
    backend: LlamaBackend,
    store: ChatStore,
    model: Path,
    seed: int,
    bans: PhraseBans,
    max_tokens: int = MAX_TOKENS,
) -> tuple[list[GenerationEvent], ChatRecorder]:
    settings = DEFAULT_CHAT_SETTINGS.with_changes(seed=seed)
    recorder = ChatRecorder(store, model, n_ctx=backend.info.n_ctx, n_batch=backend.info.n_batch)
    assert recorder.begin_reply(QUESTION, settings, max_tokens)
    events = list(
        recorded(
            backend.generate(QUESTION, LiveSettings(settings), max_tokens=max_tokens, bans=bans),
            recorder,
        )
    )
    assert recorder.error is None
    return events, recorder


def test_a_banned_phrase_never_comes_out_and_each_attempt_is_a_stored_ghost(
    backend: LlamaBackend, store: ChatStore, default_model_path: Path, liked_phrase: str
) -> None:
    bans = PhraseBans((liked_phrase,))
    rejected_seeds = 0
    discarded = 0
    for seed in range(20):
        events, recorder = generate_saved(
            backend, store, default_model_path, seed, bans, SEED_TOKENS
        )
        finished = events[-1]
        assert isinstance(finished, FinishedEvent) and finished.reason == "max_tokens"
        assert liked_phrase not in finished.text
        rewinds = [e for e in events if isinstance(e, RewindEvent)]
        assert finished.stats.discarded_tokens == sum(len(r.token_ids) for r in rewinds)
        assert recorder.chat_id is not None
        chat = store.load_chat(recorder.chat_id)
        branches = {b.id: b for b in chat.messages[-1].branches}
        assert chat.replies[0].text == finished.text
        assert len(recorder.ghost_ids) == len(rewinds)
        for ghost_id in recorder.ghost_ids:
            ghost = branches[ghost_id]
            assert ghost.is_ghost and liked_phrase in ghost.text
        rejected_seeds += bool(rewinds)
        discarded += finished.stats.discarded_tokens
    print(f"{rejected_seeds} of 20 seeds went back; {discarded} tokens discarded in all")
    assert rejected_seeds >= 5  # the model does like the phrase


def test_ignoring_case_bans_the_phrase_in_any_case(
    backend: LlamaBackend, store: ChatStore, default_model_path: Path, liked_phrase: str
) -> None:
    bans = PhraseBans((liked_phrase.upper(),), ignore_case=True)
    went_back = 0
    for seed in range(20):
        events, _ = generate_saved(backend, store, default_model_path, seed, bans, SEED_TOKENS)
        finished = events[-1]
        assert isinstance(finished, FinishedEvent)
        assert liked_phrase.lower() not in finished.text.lower()
        went_back += any(isinstance(e, RewindEvent) for e in events)
    assert went_back >= 5


def test_a_reply_that_went_back_replays_exactly_from_its_record(
    backend: LlamaBackend, store: ChatStore, default_model_path: Path, liked_phrase: str
) -> None:
    for seed in range(20):
        backend.reset()
        events, recorder = generate_saved(
            backend, store, default_model_path, seed, PhraseBans((liked_phrase,))
        )
        if any(isinstance(e, RewindEvent) for e in events):
            break
    else:
        pytest.fail("no seed went back")
    assert recorder.chat_id is not None
    chat = store.load_chat(recorder.chat_id)
    assert replay(backend, chat, chat.replies[0]).identical


def test_generate_json_reports_the_ghosts_and_the_discarded_tokens(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, liked_phrase: str
) -> None:
    argv = ["generate", PROMPT, "-t", "0", "--max-tokens", str(MAX_TOKENS), "--json"]
    argv += ["--threads", "1", "--ban", liked_phrase, "--save", "--db", str(tmp_path / "c.db")]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert liked_phrase not in result["text"]
    ghosts = result["ghosts"]
    assert ghosts and all(liked_phrase in g["text"] or g["matched"] == liked_phrase for g in ghosts)
    assert result["stats"]["discarded_tokens"] == sum(len(g["token_ids"]) for g in ghosts)
    with ChatStore(tmp_path / "c.db") as store:
        chat = store.load_chat(result["chat_id"])
        stored = {b.id: b for b in chat.messages[-1].branches}
        for ghost in ghosts:
            branch = stored[ghost["reply_id"]]
            assert branch.is_ghost and branch.fork_at == ghost["at"]
            assert list(branch.token_ids[ghost["at"] :]) == ghost["token_ids"]


def test_a_banned_regex_that_never_ends_stops_the_reply_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The bias makes the reply a's; on a's with no c, (a|aa)+c tries every way of
    # cutting them into ones and twos at each start: without a time limit the reply
    # (and Ctrl-C) waited for ever.
    argv = ["generate", "Hi", "-t", "0", "--logit-bias", "a=+100", "--max-tokens", "60"]
    argv += ["--threads", "1", "--ban", "(a|aa)+c", "--ban-regex"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out.strip() and set(out.strip()) == {"a"}  # the reply so far
    lines = [line for line in err.splitlines() if line.startswith("samplescope:")]
    assert lines == [
        "samplescope: the banned phrase '(a|aa)+c' took over 1 s of CPU to match the reply"
        " (a pattern that backtracks without end?): the reply stops here"
    ]


REGEX_IMPORTED = """
import sys
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from backend.session.phrase_bans import PhraseBans
from sampling.built_in import DEFAULT_CHAT_SETTINGS

backend = LlamaBackend.load(sys.argv[1], n_ctx=512, n_threads=1)
question = [ChatMessage("user", "Hi")]
settings = LiveSettings(DEFAULT_CHAT_SETTINGS)
for _ in backend.generate(question, settings, max_tokens=8):
    pass
print("plain", "regex" in sys.modules)
for _ in backend.generate(question, settings, max_tokens=8, bans=PhraseBans(("zebra",))):
    pass
print("banned", "regex" in sys.modules)
"""


def test_a_reply_without_bans_or_triggers_never_imports_regex(default_model_path: Path) -> None:
    # The regex package costs 2 MB of peak memory: only a user's pattern needs it.
    out = subprocess.run(
        [sys.executable, "-c", REGEX_IMPORTED, str(default_model_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    assert [line for line in out if line.startswith(("plain", "banned"))] == [
        "plain False",
        "banned True",
    ]
