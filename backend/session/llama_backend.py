"""The llama.cpp backend: a GGUF model generating through the one loop.

`LlamaBackend` loads a model (`backend.llama.runtime.LlamaRuntime`, the `Model` the
loop decodes with), takes its chat template from the GGUF, and is otherwise the
`SessionBackend` every front end generates with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from backend.chat.protocol import ModelInfo
from backend.chat.template import model_template
from backend.llama.control_vector import NO_STEERING, Steering
from backend.llama.rpc import Endpoint
from backend.llama.runtime import LlamaRuntime, RuntimeOptions
from backend.session.backend import SessionBackend
from sampling.errors import SamplescopeError
from sampling.samplers.control_strength import control_strength
from sampling.settings.record import SamplerSettings


class LlamaBackend(SessionBackend):
    """A GGUF model behind the `backend.chat.protocol.ChatBackend` protocol.

    Build it with `LlamaBackend.load`. Exactly one thread may call `generate` (and
    `reset`, `close`, `forward`); others may read `info` and set a cancel event.
    """

    def __init__(self, runtime: LlamaRuntime, log_path: Path | None = None) -> None:
        self.runtime = runtime
        self.log_path = log_path
        template, notice = model_template(runtime)
        name = runtime.meta("general.name") or runtime.path.stem
        info = ModelInfo(
            name=name,
            path=str(runtime.path),
            n_ctx=runtime.n_ctx,
            n_threads=runtime.n_threads,
            n_vocab=runtime.n_vocab,
            n_batch=runtime.n_batch,
            placement=runtime.placement,
            batch_invariant=runtime.batch_invariant,
            repack=runtime.repack,
            control_vectors=tuple(
                (str(vector.path.resolve()), vector.scale) for vector in runtime.steering.vectors
            ),
            control_layers=runtime.steering.layers,
        )
        super().__init__(runtime, template, info, template_notice=notice)

    @classmethod
    def load(
        cls,
        model_path: str | Path,
        *,
        n_threads: int | None = None,
        n_ctx: int = 4096,
        n_batch: int = 256,
        n_gpu_layers: int | None = None,
        log_path: str | Path | None = None,
        rpc: Sequence[Endpoint] = (),
        n_seq_max: int | None = None,
        flash_attn: bool = False,
        repack: bool = False,
        steering: Steering = NO_STEERING,
    ) -> LlamaBackend:
        """Validate a GGUF file, route llama.cpp's log to a file, and load the model.

        Args:
            model_path: The GGUF file.
            n_threads: Threads for decode and prefill; None means all cores.
            n_ctx: Context size in tokens (capped at the model's training context).
            n_batch: Prefill chunk size.
            n_gpu_layers: Layers to offload to GPUs or RPC servers; None: none, or every
                layer when `rpc` names servers.
            log_path: Where llama.cpp's log goes (None: the default log file).
            rpc: llama.cpp RPC servers to split the model across (its context then
                lives in a child process: `backend.llama.isolated`).
            n_seq_max: How many sequences the memory holds at once (None: the
                runtime's default; an explore tree grows wider batches with more).
            flash_attn: Flash attention as llama.cpp's tools decide it (else off).
            repack: Let llama.cpp repack the weights for its faster kernels (`--repack`):
                lockstep is then not exact (a sequence beside others can get other
                tokens than alone), and a model whose repacked kernels crash a batch on
                this CPU is refused.
            steering: Control vectors every context applies (`--control-vector`).

        Raises:
            ModelFileError: The file is missing, not GGUF, truncated or corrupt.
            LlamaError: llama.cpp could not create the context.
            RpcError: An RPC server cannot be reached or used (named in the message).
        """
        from backend.llama.gguf import validate_gguf
        from backend.llama.log import install_llama_log

        path = Path(model_path)
        validate_gguf(path, arrays=False)  # before llama.cpp reads a byte of it
        log_file = install_llama_log(None if log_path is None else Path(log_path))
        options = RuntimeOptions(
            n_ctx,
            n_batch,
            n_threads,
            n_gpu_layers,
            tuple(rpc),
            flash_attn=flash_attn,
            repack=repack,
            steering=steering,
        )
        if n_seq_max is not None:
            options = replace(options, n_seq_max=n_seq_max)
        return cls(LlamaRuntime(path, options), log_file)

    def close(self) -> None:
        """Free the model, and the contrast model beside it (idempotent)."""
        self.runtime.close()
        self.drop_contrast()

    def prepare_model(self, settings: SamplerSettings) -> None:
        """Apply the control vectors' strength `settings` ask for (`control_strength`):
        a new one makes the memory's tokens stale, so it is cleared and the next reply
        decodes its conversation again."""
        if self.runtime.set_control_strength(control_strength(settings)):
            self.session.memory.clear()

    # ---- debugging ----------------------------------------------------------------

    def forward(self, token: int, pos: int = 0) -> list[tuple[int, float]]:
        """Logits of one forward step: `token` alone at position `pos` (run.c's `fwd`).

        The KV cache is cleared (a fresh context). A lone token attends only to
        itself, so llama.cpp's logits do not depend on `pos`; run.c's differ because
        its cache holds zeros (or stale rows) at the earlier positions.

        Returns:
            Every (token id, logit) pair, by descending logit.

        Raises:
            SamplescopeError: The token id or the position is out of range.
        """
        rt = self.runtime
        self.reset()  # the probe leaves the memory empty
        if not 0 <= token < rt.n_vocab:
            raise SamplescopeError(f"invalid token id {token}: expected 0 .. {rt.n_vocab - 1}")
        if not 0 <= pos < rt.n_ctx:
            raise SamplescopeError(f"invalid position {pos}: expected 0 .. {rt.n_ctx - 1}")
        logits = rt.probe(token, pos)
        order = np.argsort(-logits, kind="stable")
        return [(int(i), float(logits[i])) for i in order]
