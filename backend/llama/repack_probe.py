"""Whether llama.cpp's extra buffer types survive a batched decode of a model here.

With `use_extra_bufts` llama.cpp's CPU backend puts the weights in its extra buffer
types (repacked for its AVX2/NEON kernels, or AMX tiles on a CPU that has them). On
an AMX CPU this build's kernels crash the process on any batch of two or more tokens
(measured with SmolLM2-135M Q4_1 and Q4_0, llama-cpp-python 0.3.36). So before a
model runs with them (`--repack`, or a lockstep reply stored when they were
llama.cpp's default, rebuilt as it was decoded), a child process loads the model so
and decodes a batch: `repack_survives` is whether it came back.

A job of one sequence (`kld`, `score`) has no batch to be invariant to: it loads the
weights as llama-perplexity does, repacked, wherever this check passes
(`one_sequence_weights`).

Run as `python -m backend.llama.repack_probe MODEL`: exit code 0 when the batch
decoded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: How long the child may take (it loads the model once).
PROBE_TIMEOUT_S = 120.0

_known: dict[tuple[str, int, int], bool] = {}


def repack_survives(path: Path) -> bool:
    """Whether `path` decodes a batch with llama.cpp's extra buffer types, in a child
    process (once per file and process)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    known = _known.get(key)
    if known is None:
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        try:
            done = subprocess.run(
                [sys.executable, "-m", __name__, str(path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
            known = done.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            known = False
        _known[key] = known
    return known


@dataclass(frozen=True, slots=True)
class Weights:
    """How a job of one sequence loads a model's weights, and why.

    Attributes:
        repack: Whether llama.cpp may repack them (its extra buffer types and their
            kernels, `use_extra_bufts`).
        reason: Why, in a few words.
    """

    repack: bool
    reason: str

    @property
    def kernels(self) -> str:
        """ "repacked" or "plain": which of llama.cpp's CPU kernels run."""
        return "repacked" if self.repack else "plain"

    def describe(self) -> str:
        """E.g. "repacked (llama-perplexity's default; --no-repack: plain)"."""
        return f"{self.kernels} ({self.reason})"


def one_sequence_weights(path: Path, asked: bool | None, *, remote: bool = False) -> Weights:
    """The weights of a job of one sequence: as `asked` (`--repack`, `--no-repack`),
    else as llama-perplexity loads them (repacked) where the repacked kernels decode a
    batch of this model here, plain otherwise.

    Args:
        path: The model file.
        asked: True or False as the user asked; None: llama-perplexity's way.
        remote: The weights go to RPC servers (which load them plain).
    """
    if asked is not None:
        return Weights(asked, "--repack" if asked else "--no-repack")
    if remote:
        return Weights(False, "on RPC servers")
    if repack_survives(path):
        return Weights(True, "llama-perplexity's default; --no-repack: plain")
    return Weights(False, "llama.cpp's repacked kernels crash a batch of this model here")


def main(argv: list[str]) -> int:
    """Load the model with the extra buffer types and decode one batch; 0 if it did."""
    import llama_cpp

    from backend.llama.context import LocalContext, load_model

    quiet = llama_cpp.llama_log_callback(_quiet)  # kept alive while llama.cpp logs
    llama_cpp.llama_log_set(quiet, None)
    llama_cpp.llama_backend_init()
    model = load_model(Path(argv[1]), repack=True)
    context = LocalContext(model, 256, 16, 1, 1)
    n_vocab = context.n_vocab
    code = context.decode([(100 + 37 * i) % n_vocab for i in range(8)], 0, 0)
    context.close()
    llama_cpp.llama_model_free(model)
    return 0 if code == 0 else 1


def _quiet(level: int, text: bytes, user_data: object) -> None:
    """llama.cpp's log, dropped (the parent only reads the exit code)."""


if __name__ == "__main__":
    sys.exit(main(sys.argv))
