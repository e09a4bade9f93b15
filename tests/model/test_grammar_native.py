"""The grammar unit against llama.cpp's own grammar sampler, on the default model.

Each step's kept set is compared with a grammar sampler built independently through
llama-cpp-python on the same GBNF, taken through the same reply tokens and applied to
the same logits; and 20 replies at temperature 1 under a JSON schema all parse and
validate.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import pytest

from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.llama.grammar import gbnf_of
from backend.session.llama_backend import LlamaBackend
from sampling import SamplerSettings, probabilities
from sampling.constraint import GrammarSpec
from sampling.errors import GrammarDeadEnd, GrammarError
from sampling.records import Step
from tui.resources import shipped_presets

PRESET = shipped_presets()["json person"]
SCHEMA = json.loads(PRESET.json_schema)
QUESTION = [ChatMessage("user", "Describe a person as JSON.")]


def valid_person(text: str) -> bool:
    """Whether `text` is a JSON object that the preset's schema accepts."""
    value = json.loads(text)
    if not isinstance(value, dict) or set(value) != set(SCHEMA["required"]):
        return False
    name, age, member, colour = (value[key] for key in ("name", "age", "member", "colour"))
    properties = SCHEMA["properties"]
    return (
        isinstance(name, str)
        and properties["name"]["minLength"] <= len(name) <= properties["name"]["maxLength"]
        and isinstance(age, int)
        and not isinstance(age, bool)
        and isinstance(member, bool)
        and colour in properties["colour"]["enum"]
    )


def person_settings(**changes: Any) -> SamplerSettings:
    """The "json person" preset with only the grammar (no filter), changed."""
    return SamplerSettings(json_schema=PRESET.json_schema).with_changes(**changes)


class Native:
    """llama.cpp's grammar sampler on its own vocabulary (a second load of the model)."""

    def __init__(self, path: Path, gbnf: str) -> None:
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self.model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
        vocab = llama_cpp.llama_model_get_vocab(self.model)
        self.sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
        assert self.sampler

    def legal(self, logits: np.ndarray, taken: list[int]) -> np.ndarray:
        """The ids whose logit stays finite when the grammar, after `taken`, applies."""
        llama_cpp.llama_sampler_reset(self.sampler)
        for token in taken:
            llama_cpp.llama_sampler_accept(self.sampler, token)
        size = logits.shape[0]
        data = (llama_cpp.llama_token_data * size)()
        for token in range(size):
            data[token].id = token
            data[token].logit = float(logits[token])
        array = llama_cpp.llama_token_data_array(
            data=ctypes.cast(data, llama_cpp.llama_token_data_p),
            size=size,
            selected=-1,
            sorted=False,
        )
        llama_cpp.llama_sampler_apply(self.sampler, ctypes.byref(array))
        values = np.ctypeslib.as_array(
            (ctypes.c_float * (3 * size)).from_address(ctypes.addressof(data))
        ).reshape(size, 3)[:, 1]
        return np.flatnonzero(np.isfinite(values))

    def close(self) -> None:
        llama_cpp.llama_sampler_free(self.sampler)
        llama_cpp.llama_model_free(self.model)


@pytest.fixture(scope="module")
def native(default_model_path: Path) -> Iterator[Native]:
    made = Native(default_model_path, gbnf_of(GrammarSpec(json_schema=PRESET.json_schema)))
    yield made
    made.close()


def reply(
    backend: LlamaBackend, settings: SamplerSettings, sink: list[tuple[int, Any, list[int]]] | None
) -> tuple[list[Step], FinishedEvent]:
    live = LiveSettings(settings)
    if sink is not None:
        live.step_sink = lambda index, logits, history: sink.append(
            (index, np.array(logits, copy=True), list(history))
        )
    steps: list[Step] = []
    finished = None
    for event in backend.generate(QUESTION, live, max_tokens=120):
        if isinstance(event, TokenEvent):
            steps.append(event.step)
        elif isinstance(event, FinishedEvent):
            finished = event
    assert finished is not None
    return steps, finished


def test_each_step_keeps_what_llamas_grammar_sampler_keeps(
    llama_backend: LlamaBackend, native: Native
) -> None:
    sink: list[tuple[int, Any, list[int]]] = []
    steps, finished = reply(llama_backend, person_settings(seed=7), sink)
    assert finished.reason == "eos", finished.error
    assert len(sink) == len(steps) > 10
    runtime = llama_backend.runtime
    prompt = len(sink[0][2])
    forced = 0
    for (index, logits, history), step in zip(sink, steps, strict=True):
        taken = history[prompt:]
        assert len(taken) == index
        legal = native.legal(logits, taken)
        ours = probabilities(logits, step.settings, history, vocabulary=runtime, generated=index)
        assert np.array_equal(np.flatnonzero(ours), legal), f"step {index}"
        weights = np.exp(logits[legal].astype(np.float64) - logits[legal].max())
        np.testing.assert_allclose(ours[legal], weights / weights.sum(), rtol=1e-9, atol=1e-15)
        assert step.n_kept == legal.shape[0]
        assert step.forced == (legal.shape[0] == 1)
        everything = np.exp(logits.astype(np.float64) - logits.max())
        removed = 1.0 - everything[legal].sum() / everything.sum()
        assert step.figure("grammar", "removed") == pytest.approx(removed, abs=1e-9)
        forced += step.forced
    assert forced > 0  # the schema's punctuation and keys leave one token at a time
    assert valid_person(finished.text)


def test_twenty_seeds_at_temperature_one_all_validate(llama_backend: LlamaBackend) -> None:
    texts = []
    for seed in range(1, 21):
        _, finished = reply(llama_backend, person_settings(seed=seed, temperature=1.0), None)
        assert finished.reason == "eos", (seed, finished.reason, finished.text)
        texts.append(finished.text)
        assert valid_person(finished.text), (seed, finished.text)
    assert len(set(texts)) > 10  # temperature 1 really samples


def test_a_bad_grammar_is_one_line_with_llamas_position(llama_backend: LlamaBackend) -> None:
    runtime = llama_backend.runtime
    with pytest.raises(GrammarError) as caught:
        runtime.token_constraint(GrammarSpec(gbnf='root ::= ("yes" | "no"\nx ::= [a-'))
    assert str(caught.value) == "invalid grammar: expecting ')' at line 2 column 3 ('::= [a-')"
    with pytest.raises(GrammarError, match=r"^invalid grammar: Undefined rule identifier 'y'$"):
        runtime.token_constraint(GrammarSpec(gbnf="root ::= y"))
    with pytest.raises(GrammarError, match=r"^invalid JSON schema: Expecting"):
        runtime.token_constraint(GrammarSpec(json_schema='{"type": '))


def test_a_dead_end_ends_the_reply_and_keeps_the_backend(llama_backend: LlamaBackend) -> None:
    # min_tokens bans the end of generation the finished grammar asks for.
    settings = SamplerSettings(grammar='root ::= "yes"', min_tokens=5)
    steps, finished = reply(llama_backend, settings, None)
    assert finished.reason == "grammar" and finished.text == "yes"
    assert steps and all(step.figure("grammar", "removed") is not None for step in steps)
    _, again = reply(llama_backend, SamplerSettings(grammar='root ::= "no"'), None)
    assert again.reason == "eos" and again.text == "no"


def test_rewind_restores_the_grammar_state(llama_backend: LlamaBackend) -> None:
    settings = person_settings(seed=11)
    _, straight = reply(llama_backend, settings, None)
    generation = llama_backend.generate_many(
        QUESTION, [LiveSettings(settings)], max_tokens=120, rewindable=True
    )
    rewound = False
    finished = None
    for _, event in generation:
        if isinstance(event, TokenEvent) and event.index == 12 and not rewound:
            generation.rewind(0, 6)  # back into the middle of the object
            rewound = True
        elif isinstance(event, FinishedEvent):
            finished = event
    assert rewound and finished is not None
    assert finished.reason == "eos"
    assert finished.token_ids == straight.token_ids and valid_person(finished.text)


def test_the_grammar_bench_runs_both_rows(default_model_path: Path) -> None:
    from backend.bench.grammar import run_grammar_bench

    rows = run_grammar_bench(
        default_model_path, steps=4, repeats=1, n_threads=1, trigger_at=(20, 60)
    )
    assert [(row.mode, row.logits_kind, row.steps) for row in rows] == [
        ("grammar first", "json", 4),
        ("grammar on rejection", "json", 4),
        ("lazy trigger @20", "text", 10),
        ("lazy trigger @60", "text", 10),
        ("trigger @60/ours@20", "ours", 10),
    ]
    assert all(row.ours_us > 0 and row.native_us > 0 for row in rows)


def test_a_lazy_grammar_waits_for_its_trigger(llama_backend: LlamaBackend) -> None:
    runtime = llama_backend.runtime
    spec = GrammarSpec(gbnf='root ::= "Answer: " ("yes" | "no")', triggers=("Answer",))
    constraint = runtime.token_constraint(spec)
    assert constraint.allowed(None).all()  # nothing matched yet: every token
    for token in runtime.tokenize("I think so. Answer:", special=False):
        constraint.accept(token)
    allowed = np.flatnonzero(constraint.allowed(None))
    texts = {runtime.token_bytes(int(token)) for token in allowed}
    assert 0 < len(allowed) < 20 and b" yes" in texts and b" no" in texts
    assert all(b" yes".startswith(text) or b" no".startswith(text) for text in texts)


def test_a_lazy_grammar_allows_what_llama_cpps_lazy_grammar_allows(
    llama_backend: LlamaBackend, default_model_path: Path
) -> None:
    # llama.cpp gets the grammar without its triggers and the watch follows them: at
    # every token, before and after the trigger, the legal set is llama.cpp's own
    # lazy grammar's (which matches the whole reply at every token).
    from backend.llama.grammar import TOKEN_DATA
    from backend.llama.triggers import searched

    runtime = llama_backend.runtime
    gbnf = 'root ::= "Answer: " ("yes" | "no") " because " [a-z ]*'
    spec = GrammarSpec(gbnf=gbnf, triggers=("Ans(?=wer)", "maybe$"))
    ours = runtime.token_constraint(spec)
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(default_model_path).encode(), params)
    vocab = llama_cpp.llama_model_get_vocab(model)
    patterns = [searched(p).encode() for p in spec.triggers]
    native = llama_cpp.llama_sampler_init_grammar_lazy_patterns(
        vocab, gbnf.encode(), b"root", (ctypes.c_char_p * 2)(*patterns), 2, None, 0
    )
    data = np.zeros(runtime.n_vocab, dtype=TOKEN_DATA)
    try:
        tokens = runtime.tokenize("So, I think so. Answer: yes because it is", special=False)
        for token in tokens:
            data["id"], data["logit"] = np.arange(runtime.n_vocab), 0.0
            array = llama_cpp.llama_token_data_array(
                data=data.ctypes.data_as(llama_cpp.llama_token_data_p),
                size=runtime.n_vocab,
                selected=-1,
                sorted=False,
            )
            llama_cpp.llama_sampler_apply(native, ctypes.byref(array))
            assert np.array_equal(ours.allowed(None), data["logit"] == 0.0)
            ours.accept(token)
            llama_cpp.llama_sampler_accept(native, token)
        assert not ours.allowed(None).all()  # triggered on the way
    finally:
        llama_cpp.llama_sampler_free(native)
        llama_cpp.llama_model_free(model)


def test_a_trigger_that_never_ends_stops_the_reply_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tui.cli.main import main

    # The bias makes the reply a's; on a's with no c, (a|aa)+c backtracks without end.
    argv = ["generate", "Hi", "-t", "0", "--logit-bias", "a=+100", "--max-tokens", "60"]
    argv += ["--threads", "1", "--grammar", 'root ::= "c"', "--grammar-triggers", "(a|aa)+c"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("samplescope:")] == [
        "samplescope: the trigger pattern '(a|aa)+c' took over 1 s of CPU to match the reply"
        " (a pattern that backtracks without end?): the reply stops here"
    ]


def test_a_const_holding_escapes_is_a_reply_that_parses_to_it(llama_backend: LlamaBackend) -> None:
    # Written in JSON as \u0000, \\, \n and \": the converter's grammar spelt them as
    # GBNF escapes (a NUL no token can match: every such reply dead-ended).
    value = 'a\x00b\\c\nd"e'
    settings = SamplerSettings(temperature=0.0, json_schema=json.dumps({"const": value}))
    llama_backend.reset()
    events = list(llama_backend.generate(QUESTION, LiveSettings(settings), max_tokens=40))
    end = events[-1]
    assert isinstance(end, FinishedEvent) and end.reason == "eos"
    assert json.loads(end.text) == value


def test_what_llama_cpp_refuses_is_one_line_and_never_aborts(llama_backend: LlamaBackend) -> None:
    runtime = llama_backend.runtime
    cases = {
        'root ::= ("a"': "invalid grammar: expecting ')' at the end",
        'root ::= root "a"': "invalid grammar: unsupported grammar, left recursion detected"
        " for nonterminal at index 0",
    }
    for gbnf, message in cases.items():
        with pytest.raises(GrammarError) as caught:
            runtime.token_constraint(GrammarSpec(gbnf=gbnf))
        assert str(caught.value) == message
    # std::regex would abort the process on this pattern: the child process takes it.
    with pytest.raises(GrammarError, match=r"^invalid grammar: a trigger pattern is not a regex"):
        runtime.token_constraint(GrammarSpec(gbnf='root ::= "a"', triggers=("(abc",)))


def test_a_trigger_the_grammar_refuses_ends_the_reply_not_the_process(
    llama_backend: LlamaBackend,
) -> None:
    # The trigger matches "Answer", but the grammar starts with "Result": llama.cpp
    # would abort on handing it the text; the watch ends the reply instead.
    runtime = llama_backend.runtime
    spec = GrammarSpec(gbnf='root ::= "Result: " ("yes" | "no")', triggers=("Answer", "Result"))
    constraint = runtime.token_constraint(spec)
    tokens = runtime.tokenize("I think so. Answer: yes", special=False)
    with pytest.raises(GrammarDeadEnd, match="which the grammar does not start with"):
        for token in tokens:
            constraint.accept(token)
    # Rewound to before the trigger, the grammar goes on as it was.
    again = runtime.token_constraint(spec)
    before = again.snapshot()
    for token in runtime.tokenize("Nothing yet", special=False):
        again.accept(token)
    again.restore(before)
    for token in runtime.tokenize("I think so. Result:", special=False):
        again.accept(token)
    assert not again.allowed(None).all()


def test_a_stored_constrained_reply_replays_token_for_token(
    llama_backend: LlamaBackend, default_model_path: Path, tmp_path: Path
) -> None:
    from backend.session.replay import replay
    from backend.store.store import ChatStore

    settings = person_settings(seed=5, temperature=1.0)
    llama_backend.reset()
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        model = store.model_ref(default_model_path)
        chat_id = store.new_chat("json", model)
        store.add_message(chat_id, "user", QUESTION[0].content)
        info = llama_backend.info
        writer = store.begin_reply(
            chat_id, model, settings, max_tokens=120, n_ctx=info.n_ctx, n_batch=info.n_batch
        )
        for event in llama_backend.generate(QUESTION, LiveSettings(settings), max_tokens=120):
            if isinstance(event, TokenEvent):
                writer.append(event)
            elif isinstance(event, FinishedEvent):
                writer.finish_event(event)
                assert valid_person(event.text)
        chat = store.load_chat(chat_id)
        reply = chat.replies[0]
        steps = store.load_steps(chat, reply)
    assert reply.settings_at(0).json_schema == settings.json_schema
    assert len(steps) == len(reply.token_ids)
    assert all(step.figure("grammar", "removed") is not None for step in steps.values())
    result = replay(llama_backend, chat, reply)
    assert result.identical
