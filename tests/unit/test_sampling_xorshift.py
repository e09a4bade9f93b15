"""xorshift128 and run.c's sampler against C compiled from seed 002's code.

The C below is run.c's `rng_seed`, `rng_next`, `rng_uniform` and `sample()` as seed
002 prints them (greedy, softmax with temperature, iterative top-k, id-order
roulette, all in float32), wrapped in a small main that prints its outputs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sampling import Sampler, SamplerSettings
from sampling.modes import runc
from sampling.rng import Xorshift128Source

# Never a skip: llama-cpp-python is built from source with this compiler, so a
# machine without one cannot run samplescope's tests at all.
C_COMPILER = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def test_a_c_compiler_is_there() -> None:
    assert C_COMPILER is not None, "no C compiler (cc, gcc or clang) on PATH"


RNG_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { unsigned int x,y,z,w; } RNG;

static void rng_seed(RNG *r, unsigned int s) {
    r->x = s ? s : 1;                          /* seed=0 会被替换成 1 */
    r->y = r->x * 1812433253u + 1;
    r->z = r->y * 1812433253u + 1;
    r->w = r->z * 1812433253u + 1;
}

static unsigned int rng_next(RNG *r) {
    unsigned int t = r->x ^ (r->x << 11);
    r->x = r->y; r->y = r->z; r->z = r->w;
    r->w = r->w ^ (r->w >> 19) ^ (t ^ (t >> 8));
    return r->w;
}

static float rng_uniform(RNG *r) {
    return (rng_next(r) >> 8) * (1.0f / 16777216.0f);   /* [0, 1) */
}
"""

UNIFORMS_MAIN = r"""
int main(int argc, char **argv) {
    unsigned int seed = (unsigned int)strtoul(argv[1], NULL, 10);
    int n = atoi(argv[2]);
    RNG rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) {
        printf("%a\n", (double)rng_uniform(&rng));
    }
    return 0;
}
"""

# run.c's sample(), assembled from seed 002's four strategy snippets.
SAMPLE_C = r"""
static int sample(float *logits, int vocab_size, float temperature, int top_k, RNG *rng) {
    if (temperature == 0.0f) {
        int best = 0;
        float bestv = logits[0];
        for (int i = 1; i < vocab_size; i++) {
            if (logits[i] > bestv) { bestv = logits[i]; best = i; }
        }
        return best;   /* 直接选分数最高的 */
    }
    float *probs = malloc(sizeof(float) * vocab_size);
    float maxl = logits[0];
    for (int i = 1; i < vocab_size; i++) if (logits[i] > maxl) maxl = logits[i];
    float inv_t = 1.0f / temperature;
    float sum = 0.0f;
    for (int i = 0; i < vocab_size; i++) {
        probs[i] = expf((logits[i] - maxl) * inv_t);   /* 缩放后 softmax */
        sum += probs[i];
    }
    if (top_k > 0 && top_k < vocab_size) {
        char *keep = calloc(vocab_size, 1);
        for (int s = 0; s < top_k; s++) {
            int best = -1; float bestv = -1e30f;
            for (int i = 0; i < vocab_size; i++) {
                if (!keep[i] && probs[i] > bestv) { bestv = probs[i]; best = i; }
            }
            keep[best] = 1;
        }
        sum = 0.0f;
        for (int i = 0; i < vocab_size; i++) {
            if (!keep[i]) probs[i] = 0.0f;
            else sum += probs[i];
        }
        free(keep);
    }
    float r = rng_uniform(rng) * sum;     /* [0, sum) 的随机数 */
    float cum = 0.0f;
    int chosen = vocab_size - 1;          /* 兜底 */
    for (int i = 0; i < vocab_size; i++) {
        cum += probs[i];
        if (r < cum) { chosen = i; break; }   /* 落到哪个区间 */
    }
    free(probs);
    return chosen;
}

/* argv: seed temperature top_k n_draws logit... ; prints one token id a line. */
int main(int argc, char **argv) {
    unsigned int seed = (unsigned int)strtoul(argv[1], NULL, 10);
    float temperature = (float)atof(argv[2]);
    int top_k = atoi(argv[3]);
    int n = atoi(argv[4]);
    int vocab_size = argc - 5;
    float *logits = malloc(sizeof(float) * vocab_size);
    for (int i = 0; i < vocab_size; i++) logits[i] = (float)atof(argv[5 + i]);
    RNG rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) {
        printf("%d\n", sample(logits, vocab_size, temperature, top_k, &rng));
    }
    return 0;
}
"""


def compile_c(tmp_path: Path, name: str, source: str) -> Path:
    assert C_COMPILER is not None
    c_file = tmp_path / f"{name}.c"
    c_file.write_text(source, encoding="utf-8")
    binary = tmp_path / name
    subprocess.run(
        [C_COMPILER, "-O0", "-ffp-contract=off", "-o", str(binary), str(c_file), "-lm"],
        check=True,
        capture_output=True,
    )
    return binary


@pytest.fixture(scope="module")
def uniforms_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_c(tmp_path_factory.mktemp("xorshift"), "uniforms", RNG_C + UNIFORMS_MAIN)


@pytest.fixture(scope="module")
def sample_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_c(
        tmp_path_factory.mktemp("runc"), "sample", RNG_C + "#include <math.h>\n" + SAMPLE_C
    )


def c_uniforms(binary: Path, seed: int, count: int) -> list[float]:
    out = subprocess.run(
        [str(binary), str(seed), str(count)], check=True, capture_output=True, text=True
    ).stdout
    return [float.fromhex(line) for line in out.split()]


@pytest.mark.parametrize("seed", [0, 1, 42, 12345, 2**32 - 1])
def test_uniforms_match_c_bit_for_bit(uniforms_binary: Path, seed: int) -> None:
    expected = c_uniforms(uniforms_binary, seed, 1000)
    source = Xorshift128Source(seed)
    actual = [source.uniform() for _ in range(1000)]
    # C prints each float exactly (%a, hexadecimal); compare bit for bit.
    assert actual == expected
    assert len(set(actual)) > 990


def test_uniforms_batch_matches_one_at_a_time(uniforms_binary: Path) -> None:
    expected = c_uniforms(uniforms_binary, 7, 300)
    batch = Xorshift128Source(7).uniforms(300)
    assert batch.tolist() == expected


def test_seed_is_taken_mod_2_32_like_an_unsigned_int(uniforms_binary: Path) -> None:
    # run.c's seed is an unsigned int: 2**32 + 5 wraps to 5; 0 and 2**32 both become 1.
    assert Xorshift128Source(2**32 + 5).uniforms(5).tolist() == c_uniforms(uniforms_binary, 5, 5)
    zero = c_uniforms(uniforms_binary, 0, 5)
    assert zero == c_uniforms(uniforms_binary, 1, 5)
    assert Xorshift128Source(2**32).uniforms(5).tolist() == zero
    assert Xorshift128Source(0).uniforms(5).tolist() == zero


def test_sampler_draws_the_c_uniforms(uniforms_binary: Path) -> None:
    expected = c_uniforms(uniforms_binary, 42, 50)
    sampler = Sampler(SamplerSettings(rng="xorshift128", seed=42))
    logits = np.array([2.0, 1.5, 1.0, 0.5, 0.0, -1.0], dtype=np.float32)
    assert [sampler.sample(logits).draw for _ in range(50)] == expected


# Logit vectors where run.c's float32 cumulative sums are well separated from the
# uniforms it draws (checked below), so float32 vs float64 cannot change a pick.
RUNC_CASES = [
    # (logits, temperature, top_k, seed)
    ([2.0, 1.5, 1.0, 0.5, 0.0, -1.0], 1.0, 0, 42),
    ([2.0, 1.5, 1.0, 0.5, 0.0, -1.0], 0.8, 3, 12345),
    ([2.0, 1.5, 1.0, 0.5, 0.0, -1.0], 0.5, 40, 7),
    ([0.3, -1.2, 2.5, 2.4, 0.0, 1.1, -0.7, 3.0], 1.3, 4, 299792458),
    ([0.3, -1.2, 2.5, 2.4, 0.0, 1.1, -0.7, 3.0], 0.7, 0, 1),
    ([-3.0, 4.0, 1.0, 3.5, 2.0, -1.0, 0.5, 3.9, 0.0, 2.2], 1.0, 6, 0),
    ([-3.0, 4.0, 1.0, 3.5, 2.0, -1.0, 0.5, 3.9, 0.0, 2.2], 2.0, 2, 2**32 - 1),
]


def runc_float32_boundaries(logits: list[float], temperature: float, top_k: int) -> np.ndarray:
    """run.c's float32 cumulative probabilities over the kept tokens, divided by sum."""
    values = np.array(logits, dtype=np.float32)
    probs = np.exp((values - values.max()) * np.float32(1.0 / temperature)).astype(np.float32)
    if 0 < top_k < len(logits):
        order = np.argsort(-probs, kind="stable")
        probs[order[top_k:]] = 0
    cumulative = np.cumsum(probs, dtype=np.float32)
    return cumulative / cumulative[-1]


@pytest.mark.parametrize(("logits", "temperature", "top_k", "seed"), RUNC_CASES)
def test_runc_sample_picks_the_same_tokens(
    sample_binary: Path,
    uniforms_binary: Path,
    logits: list[float],
    temperature: float,
    top_k: int,
    seed: int,
) -> None:
    draws = 200
    out = subprocess.run(
        [str(sample_binary), str(seed), repr(temperature), str(top_k), str(draws)]
        + [repr(x) for x in logits],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    expected = [int(line) for line in out.split()]
    # Guard: no uniform lies within 1e-5 of a cumulative boundary, so the pick does
    # not depend on float32 rounding (a failure here means: pick other vectors).
    boundaries = runc_float32_boundaries(logits, temperature, top_k)
    uniforms = np.array(c_uniforms(uniforms_binary, seed, draws))
    assert np.abs(uniforms[:, None] - boundaries[None, :]).min() > 1e-5

    settings = SamplerSettings(temperature=temperature, top_k=top_k, seed=seed, rng="xorshift128")
    sampler = Sampler(settings)
    array = np.array(logits, dtype=np.float32)
    actual = [sampler.sample(array).token_id for _ in range(draws)]
    assert actual == expected
    # Not a degenerate check: several tokens come up.
    assert len(set(expected)) >= min(3, top_k or len(logits))


def test_runc_greedy(sample_binary: Path) -> None:
    logits = [0.3, -1.2, 2.5, 2.4, 0.0, 1.1, -0.7, 3.0]
    out = subprocess.run(
        [str(sample_binary), "5", "0", "40", "10"] + [repr(x) for x in logits],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    sampler = Sampler(SamplerSettings(temperature=0.0, top_k=40, seed=5, rng="xorshift128"))
    array = np.array(logits, dtype=np.float32)
    assert [sampler.sample(array).token_id for _ in range(10)] == [int(x) for x in out.split()]


def test_runc_mode_helper_matches_c(sample_binary: Path) -> None:
    logits = [-3.0, 4.0, 1.0, 3.5, 2.0, -1.0, 0.5, 3.9, 0.0, 2.2]
    out = subprocess.run(
        [str(sample_binary), "42", "0.8", "5", "100"] + [repr(x) for x in logits],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    sampler = Sampler(runc(temperature=0.8, top_k=5, seed=42))
    array = np.array(logits, dtype=np.float32)
    assert [sampler.sample(array).token_id for _ in range(100)] == [int(x) for x in out.split()]
