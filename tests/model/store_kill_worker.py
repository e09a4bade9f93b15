"""A process that generates with the real model and records every token in the store.

Run by tests/test_store_kill.py, which SIGKILLs it mid-reply. Arguments: the database
path, the model path, the llama log path. It writes its chat id to stdout first.
"""

from __future__ import annotations

import sys
from pathlib import Path

from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from backend.store.store import ChatStore
from sampling.settings.record import SamplerSettings

PROMPT = "Count from 1 to 400, separated by commas."
SETTINGS = SamplerSettings(temperature=0.0, seed=1)


def main() -> int:
    db_path, model_path, log_path = (Path(arg) for arg in sys.argv[1:4])
    backend = LlamaBackend.load(model_path, n_ctx=2048, n_batch=64, n_threads=1, log_path=log_path)
    store = ChatStore(db_path)
    model = store.model_ref(model_path)
    chat = store.new_chat("kill test", model)
    store.add_message(chat, "user", PROMPT)
    print(chat, flush=True)
    writer = store.begin_reply(chat, model, SETTINGS, max_tokens=1900)
    live = LiveSettings(SETTINGS)
    for event in backend.generate([ChatMessage("user", PROMPT)], live, max_tokens=1900):
        if isinstance(event, TokenEvent):
            writer.append(event)
        elif isinstance(event, FinishedEvent):
            writer.finish_event(event)
    print("finished", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
