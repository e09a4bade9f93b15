"""The Q4_0 copy of the default model the batch-invariance tests run on
(tests/quantized_models.py): written by llama.cpp's quantizer, loaded and decoded."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.llama.gguf import read_gguf
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings


def test_the_q4_0_copy_is_q4_0_and_generates(q4_0_model_path: Path) -> None:
    types = Counter(t.type_name for t in read_gguf(q4_0_model_path).tensors)
    assert types.most_common(1)[0][0] == "Q4_0"
    assert read_gguf(q4_0_model_path).metadata["general.file_type"] == 2
    backend = LlamaBackend.load(q4_0_model_path, n_ctx=512, n_batch=64, n_threads=1)
    try:
        # A prompt of many tokens: one batch through the weights' batched kernels.
        events = list(
            backend.generate(
                [ChatMessage("user", "Name three colours of the rainbow, please.")],
                LiveSettings(SamplerSettings(temperature=0.0)),
                max_tokens=8,
            )
        )
    finally:
        backend.close()
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.error is None
    assert finished.stats.prefilled_tokens > 8 and len(finished.token_ids) == 8
