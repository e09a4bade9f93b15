"""How varied a set of texts is: the lexical measures of Shaib et al., "Standardizing
the Measurement of Text Diversity" (2024), as the `diversity` package 0.3.1 computes
them, and distinct-n (Li et al., 2016).

The package's own definitions are followed to the character, without depending on it
(it pulls in torch):

- **compression ratio** (`compression_ratio`, gzip): the texts joined by one space,
  UTF-8; its size over the size of that text gzipped at level 9 and gzipped again
  (the package writes `gzip.compress(text)` through a `GzipFile` named
  "compressed.gz"), rounded to 3 decimals. Higher is more repetitive. The package
  stamps the inner gzip header with the clock, which moves the doubly compressed size
  by a byte for about 1% of texts; here the stamp is fixed (`GZIP_MTIME`), so a text
  always gets one figure, the one the package gives at that time.
- **n-gram diversity score** (`ngram_diversity_score`, n = 1..num_n): the texts joined
  by one space and split on single spaces (`str.split(" ")`: newlines do not split,
  two spaces make an empty word), then the sum over n of unique n-grams / all
  n-grams, rounded to 3 decimals. Higher is more diverse; at most num_n. Where the
  package divides by zero (fewer words than num_n) it is None here.
- **self-repetition** (`self_repetition_score`, n = 4): each text split on any
  whitespace (`str.split()`), its set of n-grams; for each text the number of times
  its n-grams occur in the other texts, s; the mean over texts of log(s + 1). Not
  rounded (the package returns it as is). Higher is more repetitive.
- **distinct-n**: unique n-grams / all n-grams, the n-grams taken within each text
  (whitespace words, `str.split()`) and pooled; None when no text has n words.
"""

from __future__ import annotations

import gzip
import io
from collections import Counter
from collections.abc import Sequence

import numpy as np

#: The inner gzip header's time stamp (2023-11-14; the package uses the clock).
GZIP_MTIME = 1_700_000_000
#: The name the package's outer gzip file carries in its header ("compressed").
GZIP_FILE_NAME = "compressed.gz"


def compression_ratio(texts: Sequence[str]) -> float:
    """Original size / doubly gzipped size of the texts joined by a space (3 decimals).

    The joined text is empty → 0.0, as the package gives.
    """
    joined = " ".join(texts).encode("utf-8")
    inner = gzip.compress(joined, compresslevel=9, mtime=GZIP_MTIME)
    buffer = io.BytesIO()
    with gzip.GzipFile(GZIP_FILE_NAME, "w+", fileobj=buffer, mtime=GZIP_MTIME) as outer:
        outer.write(inner)
    return round(len(joined) / len(buffer.getvalue()), 3)


def _ngrams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """Consecutive n-grams of `words` (none when there are fewer than n), as nltk's."""
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def ngram_diversity_score(texts: Sequence[str], num_n: int = 4) -> float | None:
    """Sum over n = 1..num_n of unique / all n-grams of the joined texts (3 decimals).

    Returns:
        The score, or None when the joined text has fewer than `num_n` words.
    """
    if num_n < 1:
        raise ValueError(f"invalid num_n={num_n}: expected at least 1")
    words = " ".join(texts).split(" ")
    if len(words) < num_n:
        return None
    score = 0.0
    for n in range(1, num_n + 1):
        grams = _ngrams(words, n)
        score += len(set(grams)) / len(grams)
    return round(score, 3)


def self_repetition_score(texts: Sequence[str], n: int = 4) -> float:
    """Mean over texts of log(1 + occurrences of its n-grams in the other texts).

    Raises:
        ValueError: No text given (the package divides by zero).
    """
    if not texts:
        raise ValueError("self-repetition of no text")
    per_text = [list({" ".join(gram) for gram in _ngrams(text.split(), n)}) for text in texts]
    counts = Counter(gram for grams in per_text for gram in grams)
    total = 0.0
    for grams in per_text:
        others = sum(counts[gram] for gram in grams) - len(grams)
        total += float(np.log(others + 1))  # the package's numpy log, summed in order
    return total / len(texts)


def distinct_n(texts: Sequence[str], n: int) -> float | None:
    """Unique / all n-grams within the texts (whitespace words), pooled; None when
    no text has `n` words."""
    if n < 1:
        raise ValueError(f"invalid n={n}: expected at least 1")
    grams = [gram for text in texts for gram in _ngrams(text.split(), n)]
    return len(set(grams)) / len(grams) if grams else None
