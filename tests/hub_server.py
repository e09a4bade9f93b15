"""A Hugging Face hub on loopback for the `--hf` tests: a repository's file list and its
files, answered as the hub answers huggingface_hub (never the network)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@contextmanager
def fake_hub(repos: Mapping[str, Mapping[str, bytes]]) -> Iterator[tuple[str, list[str]]]:
    """Serve repositories ("org/repo" to {path: bytes}) on 127.0.0.1.

    Yields:
        The endpoint's address and the list of paths requested (method and path).
    """
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _route(self, head: bool) -> None:
            path = unquote(self.path.split("?")[0])
            requests.append(f"{self.command} {path}")
            for repo, files in repos.items():
                if path in (f"/api/models/{repo}", f"/api/models/{repo}/revision/main"):
                    body = json.dumps(
                        {
                            "id": repo,
                            "sha": COMMIT,
                            "siblings": [{"rfilename": name} for name in files],
                        }
                    ).encode()
                    self._send(200, body, {"Content-Type": "application/json"}, head)
                    return
                for revision in ("main", COMMIT):
                    prefix = f"/{repo}/resolve/{revision}/"
                    if path.startswith(prefix) and path[len(prefix) :] in files:
                        data = files[path[len(prefix) :]]
                        headers = {
                            "X-Repo-Commit": COMMIT,
                            "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                            "Content-Type": "application/octet-stream",
                        }
                        self._send(200, data, headers, head)
                        return
            self._send(
                404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"}, head
            )

        def _send(self, code: int, body: bytes, headers: dict[str, str], head: bool) -> None:
            self.send_response(code)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def do_GET(self) -> None:
            self._route(head=False)

        def do_HEAD(self) -> None:
            self._route(head=True)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
