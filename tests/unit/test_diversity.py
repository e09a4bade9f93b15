"""The diversity measures against the `diversity` package 0.3.1's own definitions.

The package cannot be imported here (it pulls in torch, nltk and transformers), so
its three functions are reproduced below as they stand in its source
(`diversity/compression.py`, `ngram_diversity.py`, `self_repetition.py`), with
nltk 3.8's `ngrams`; only the progress bar is left out, and the clock its gzip
header reads is pinned in the comparisons (see `sampling.analysis.diversity`).
"""

from __future__ import annotations

import gzip
import itertools
import math
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampling.analysis.diversity import (
    GZIP_MTIME,
    compression_ratio,
    distinct_n,
    ngram_diversity_score,
    self_repetition_score,
)
from tests.hypothesis_profiles import examples

# ---- the package's definitions, as published ------------------------------------


def nltk_ngrams(sequence, n):
    """nltk.util.ngrams (3.8), without padding."""
    iterables = itertools.tee(sequence, n)
    for i, sub_iterable in enumerate(iterables):
        for _ in range(i):
            next(sub_iterable, None)
    return zip(*iterables, strict=False)


def package_compression_ratio(data, algorithm="gzip", verbose=False, path=None):
    temp_dir = None
    if not path:
        temp_dir = tempfile.TemporaryDirectory()
        path = Path(temp_dir.name)
    else:
        path = Path(path)
    with (path / "original.txt").open("w+") as f:
        f.write(" ".join(data))
    original_size = os.path.getsize(os.path.join(path, "original.txt"))
    with gzip.GzipFile(str(path / "compressed.gz"), "w+") as f:
        f.write(gzip.compress(" ".join(data).encode("utf-8")))
    compressed_size = os.path.getsize(os.path.join(path, "compressed.gz"))
    if temp_dir:
        temp_dir.cleanup()
    return round(original_size / compressed_size, 3)


def package_ngram_diversity_score(data, num_n=4):
    score = 0
    data = " ".join(data).split(" ")
    for i in range(1, num_n + 1):
        ngrams = list(nltk_ngrams(data, i))
        score += len(set(ngrams)) / len(ngrams)
    return round(score, 3)


def package_self_repetition_score(dataset, n=4):
    total_sum = 0
    ngram_docs = [
        list({" ".join(ngram) for ngram in nltk_ngrams(doc.split(), n)}) for doc in dataset
    ]
    all_ngrams = sum(ngram_docs, [])  # noqa: RUF017 (as published)
    ngram_counts = Counter(all_ngrams)
    for ngram_doc in ngram_docs:
        sum_ni = sum([ngram_counts[ngram] for ngram in ngram_doc]) - len(ngram_doc)
        total_sum += np.log(sum_ni + 1)
    return total_sum / len(dataset)


def pinned_clock():
    """The clock gzip stamps its headers with, pinned to `GZIP_MTIME`."""
    return mock.patch.object(time, "time", return_value=float(GZIP_MTIME))


# ---- fixed texts, fixed outputs ---------------------------------------------------

README_TEXTS = [  # the package's README example
    "The quick brown fox jumps over the lazy dog.",
    "The quick brown fox jumps over the lazy dog again.",
    "Suddenly, the quick brown fox leaps swiftly over the sleeping dog.",
]
SAMPLES = [
    "Once upon a time there was a cat.\nThe cat sat on the mat.",
    "Once upon a time there was a dog.  The dog sat on the mat.",
    "Once upon a time there was a cat. The cat sat on the mat.",
    "",
]


def test_fixed_outputs() -> None:
    assert compression_ratio(README_TEXTS) == 1.141
    assert ngram_diversity_score(README_TEXTS) == 2.72
    assert ngram_diversity_score(README_TEXTS, num_n=3) == 1.905
    # The first two texts share 5 four-grams ("dog." and "dog" differ); the third
    # shares none ("the quick" is not "The quick").
    assert self_repetition_score(README_TEXTS) == 2 * math.log(6) / 3
    assert distinct_n(README_TEXTS, 1) == 15 / 30
    assert distinct_n(README_TEXTS, 4) == 16 / 21
    assert compression_ratio(SAMPLES) == 1.411
    assert ngram_diversity_score(SAMPLES) == 2.155
    assert self_repetition_score(SAMPLES) == pytest.approx(2.0160804902277007, abs=0)


@pytest.mark.parametrize("texts", [README_TEXTS, SAMPLES, ["é ü 日本語 " * 9], ["a"], [""]])
def test_equal_to_the_package(texts: list[str]) -> None:
    with pinned_clock():
        assert compression_ratio(texts) == package_compression_ratio(texts)
    assert self_repetition_score(texts) == package_self_repetition_score(texts)
    if ngram_diversity_score(texts) is None:
        with pytest.raises(ZeroDivisionError):
            package_ngram_diversity_score(texts)
    else:
        assert ngram_diversity_score(texts) == package_ngram_diversity_score(texts)


def test_the_splits_are_the_packages() -> None:
    # n-gram diversity splits on single spaces: "a\nb" is one word, two spaces an empty one.
    assert ngram_diversity_score(["a\nb a\nb"], num_n=1) == 0.5
    assert ngram_diversity_score(["a  a"], num_n=1) == round(2 / 3, 3)
    # Self-repetition splits on any whitespace.
    assert self_repetition_score(["a b c d", "a\nb\tc  d"]) == pytest.approx(math.log(2))


def test_undefined_cases() -> None:
    assert ngram_diversity_score(["one two three"]) is None
    assert distinct_n(["one two"], 3) is None
    assert compression_ratio([""]) == 0.0
    with pytest.raises(ValueError, match="no text"):
        self_repetition_score([])
    with pytest.raises(ValueError, match="num_n"):
        ngram_diversity_score(["a"], num_n=0)


# ---- properties ----------------------------------------------------------------------

WORDS = st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "é", "日本"])
TEXT = st.lists(WORDS, max_size=30).map(" ".join) | st.text(
    alphabet=st.sampled_from(["a", "b", " ", "\n", "é"]), max_size=40
)
TEXTS = st.lists(TEXT, min_size=1, max_size=6)


@settings(max_examples=examples(80), deadline=None)
@given(TEXTS)
def test_equal_to_the_package_on_any_texts(texts: list[str]) -> None:
    with pinned_clock():
        assert compression_ratio(texts) == package_compression_ratio(texts)
    assert self_repetition_score(texts) == package_self_repetition_score(texts)
    score = ngram_diversity_score(texts)
    if score is not None:
        assert score == package_ngram_diversity_score(texts)


@settings(max_examples=examples(80), deadline=None)
@given(TEXTS, st.integers(1, 4))
def test_ranges(texts: list[str], n: int) -> None:
    score = ngram_diversity_score(texts, num_n=n)
    if score is not None:
        assert 0.0 < score <= n
    assert self_repetition_score(texts) >= 0.0
    distinct = distinct_n(texts, n)
    assert distinct is None or 0.0 < distinct <= 1.0
    assert compression_ratio(texts) >= 0.0


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(WORDS, min_size=4, max_size=30).map(" ".join), st.integers(2, 5))
def test_copies_are_less_diverse(text: str, copies: int) -> None:
    texts = [text] * copies
    # Every 4-gram of each copy occurs in each other copy: log(1 + (copies - 1) * unique).
    unique = len({tuple(text.split()[i : i + 4]) for i in range(len(text.split()) - 3)})
    assert self_repetition_score(texts) == pytest.approx(math.log(1 + (copies - 1) * unique))
    assert self_repetition_score([text]) == 0.0
    one, many = distinct_n([text], 2), distinct_n(texts, 2)
    assert one is not None and many is not None and many == pytest.approx(one / copies)
