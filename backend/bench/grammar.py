"""`samplescope bench --only grammar`: a step under a JSON schema, ours against llama.cpp.

The logits are those of a real constrained reply of the default model (the "json
person" preset's schema, greedy), so that every step's grammar state is one a reply
reaches. Each row times one step per logit vector, the grammar included, the
grammar taking the reply's token after it:

- "grammar first": ours (the grammar unit first in the chain, the record included)
  against llama.cpp's grammar sampler applied to the whole vocabulary and then its
  chain (temperature 0.8, the draw): the same distribution, the one samplescope
  draws from.
- "grammar on rejection": ours again, against llama.cpp's common sampler's way: draw
  from the chain first, check that one token against the grammar, and only when it is
  rejected apply the grammar to the whole vocabulary and draw again. It is cheaper
  when the model already follows the grammar, and it does not draw from the
  distribution under the constraint.
- the lazy grammar's trigger step at tokens 100 and 700 (`backend.bench.triggers`),
  one run.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from backend.bench.sampler import BenchRow, Logits, ModelWords
from backend.bench.triggers import trigger_rows
from backend.llama.grammar import GrammarTemplates, LlamaGrammarConstraint
from backend.llama.reference import plain_llama
from backend.llama.triggers import TOKEN_DATA
from sampling import Sampler, SamplerSettings
from sampling.constraint import GrammarSpec

PROMPT = "<|im_start|>user\nDescribe a person as JSON.<|im_end|>\n<|im_start|>assistant\n"
SCHEMA = (
    '{"type": "object", "properties": {"name": {"type": "string", "minLength": 1,'
    ' "maxLength": 16}, "age": {"type": "integer"}, "member": {"type": "boolean"},'
    ' "colour": {"enum": ["red", "green", "blue"]}}, "required": ["name", "age",'
    ' "member", "colour"], "additionalProperties": false}'
)
"""The "json person" preset's schema."""


class GrammarWords(ModelWords):
    """A llama-cpp-python model as a vocabulary that builds llama.cpp grammars."""

    def __init__(self, llm: Any) -> None:
        super().__init__(llm)
        self.templates = GrammarTemplates(llama_cpp.llama_model_get_vocab(llm.model), self.n_vocab)

    def token_constraint(self, spec: GrammarSpec) -> LlamaGrammarConstraint:
        """llama.cpp's grammar for `spec` (`sampling.constraint.ConstraintSource`)."""
        return self.templates.constraint(spec)


def constrained_reply(
    llm: Any, words: GrammarWords, steps: int
) -> tuple[list[int], list[Logits], list[int]]:
    """The prompt's tokens, and a greedy reply's logits and tokens under the schema (at
    most `steps`)."""
    prompt = llm.tokenize(PROMPT.encode(), add_bos=False, special=True)
    llm.reset()
    llm.eval(prompt)
    sampler = Sampler(SamplerSettings(temperature=0.0, json_schema=SCHEMA), vocabulary=words)
    history = list(prompt)
    captured: list[Logits] = []
    tokens: list[int] = []
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    for _ in range(steps):
        pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        logits = np.ctypeslib.as_array(pointer, shape=(words.n_vocab,)).copy()
        captured.append(logits)
        token = sampler.sample(logits, history).token_id
        tokens.append(token)
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            break
        history.append(token)
        llm.eval([token])
    return prompt, captured, tokens


class NativeGrammar:
    """llama.cpp's grammar sampler and chain (temperature 0.8, the draw) on token data."""

    def __init__(self, vocab: Any, gbnf: str, n_vocab: int) -> None:
        self.grammar = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
        self.chain = llama_cpp.llama_sampler_chain_init(
            llama_cpp.llama_sampler_chain_default_params()
        )
        llama_cpp.llama_sampler_chain_add(self.chain, llama_cpp.llama_sampler_init_temp(0.8))
        llama_cpp.llama_sampler_chain_add(self.chain, llama_cpp.llama_sampler_init_dist(42))
        self.data = np.zeros(n_vocab, dtype=TOKEN_DATA)
        self.one = np.zeros(1, dtype=TOKEN_DATA)

    def _array(self, data: np.ndarray) -> Any:
        return llama_cpp.llama_token_data_array(
            data=data.ctypes.data_as(llama_cpp.llama_token_data_p),
            size=data.shape[0],
            selected=-1,
            sorted=False,
        )

    def _fill(self, logits: Logits) -> Any:
        data = self.data
        data["id"] = np.arange(data.shape[0], dtype=np.int32)
        data["logit"] = logits
        data["p"] = 0.0
        return self._array(data)

    def first(self, logits: Logits) -> int:
        """The grammar on the whole vocabulary, then the chain: the token drawn."""
        array = self._fill(logits)
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(array))
        llama_cpp.llama_sampler_apply(self.chain, ctypes.byref(array))
        return int(self.data["id"][array.selected])

    def on_rejection(self, logits: Logits) -> int:
        """llama.cpp's common sampler: draw, check that token, on rejection constrain
        the whole vocabulary and draw again."""
        array = self._fill(logits)
        llama_cpp.llama_sampler_apply(self.chain, ctypes.byref(array))
        token = int(self.data["id"][array.selected])
        one = self.one
        one["id"], one["logit"] = token, 1.0
        single = self._array(one)
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(single))
        if np.isfinite(one["logit"][0]):
            return token
        return self.first(logits)

    def take(self, token: int) -> None:
        """The reply's token: the grammar and the chain move on."""
        llama_cpp.llama_sampler_accept(self.grammar, token)
        llama_cpp.llama_sampler_accept(self.chain, token)

    def free(self) -> None:
        llama_cpp.llama_sampler_free(self.grammar)
        llama_cpp.llama_sampler_free(self.chain)


def _time_ours(
    words: GrammarWords, prompt: Sequence[int], logits: Sequence[Logits], taken: Sequence[int]
) -> float:
    sampler = Sampler(
        SamplerSettings(temperature=0.8, seed=42, json_schema=SCHEMA), vocabulary=words
    )
    total = 0.0
    for index, vector in enumerate(logits):
        history = [*prompt, *taken[:index]]
        started = time.perf_counter()
        sampler.sample(vector, history)
        total += time.perf_counter() - started
    return total / len(logits) * 1e6


def _time_native(
    way: Callable[[NativeGrammar, Logits], int],
    make: Callable[[], NativeGrammar],
    logits: Sequence[Logits],
    taken: Sequence[int],
) -> float:
    native = make()
    try:
        total = 0.0
        for index, vector in enumerate(logits):
            started = time.perf_counter()
            way(native, vector)
            if index < len(taken):
                native.take(taken[index])
            total += time.perf_counter() - started
    finally:
        native.free()
    return total / len(logits) * 1e6


def run_grammar_bench(
    model_path: Path,
    *,
    steps: int = 48,
    repeats: int = 7,
    n_threads: int = 2,
    trigger_at: tuple[int, int] = (100, 700),
) -> list[BenchRow]:
    """Time both rows, ours and native alternating; each figure the median of `repeats`;
    then the trigger rows at the tokens `trigger_at`, once."""
    from backend.llama.grammar import gbnf_of

    llm = plain_llama(str(model_path), n_ctx=512, n_threads=n_threads, verbose=False)
    try:
        words = GrammarWords(llm)
        prompt, logits, taken = constrained_reply(llm, words, steps)
        gbnf = gbnf_of(GrammarSpec(json_schema=SCHEMA))
        vocab = llama_cpp.llama_model_get_vocab(llm.model)

        def make() -> NativeGrammar:
            return NativeGrammar(vocab, gbnf, words.n_vocab)

        rows: list[BenchRow] = []
        for name, way in (
            ("grammar first", NativeGrammar.first),
            ("grammar on rejection", NativeGrammar.on_rejection),
        ):
            _time_ours(words, prompt, logits, taken)
            _time_native(way, make, logits, taken)
            ours, native = [], []
            for _ in range(repeats):
                ours.append(_time_ours(words, prompt, logits, taken))
                native.append(_time_native(way, make, logits, taken))
            rows.append(
                BenchRow(
                    name, "json", statistics.median(ours), statistics.median(native), len(logits)
                )
            )
        # One run: llama.cpp's side takes about a minute to reach token 700.
        return rows + trigger_rows(vocab, words.n_vocab, trigger_at)
    finally:
        llm.close()
