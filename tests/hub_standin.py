"""A local stand-in for the Hugging Face Hub: the routes huggingface_hub calls for the estimator, no internet.

Routes (as huggingface.co answers them; huggingface_hub `utils/_http.py::hf_raise_for_status` reads the errors):
    GET  /api/models?search=...                       list_models
    GET  /api/models/{id}[/revision/{rev}]            model_info: id, sha, gated, siblings, safetensors
    HEAD /{id}/resolve/{rev}/{file}                   ETag, X-Repo-Commit, Content-Length (hf_hub_download's probe)
    GET  /{id}/resolve/{rev}/{file}                   the bytes; `Range: bytes=a-b` -> 206 with that slice
Errors: 401 + `X-Error-Code: GatedRepo` for a gated repo without the token, 404 `RepoNotFound`,
`RevisionNotFound`, `EntryNotFound`. Every request is recorded (path and Range) so tests can check what was read.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Repo:
    files: dict[str, bytes]
    revisions: dict[str, str] = field(default_factory=dict)  # branch or tag -> commit; "main" added
    gated: bool = False
    safetensors: dict | None = None  # the Hub's {"parameters": {dtype: count}, "total": n}
    file_revisions: dict[str, dict[str, bytes]] = field(default_factory=dict)  # commit -> files at that commit

    def commit(self, rev: str) -> str | None:
        if rev in self.revisions:
            return self.revisions[rev]
        return rev if rev in self.revisions.values() else None

    def files_at(self, commit: str) -> dict[str, bytes]:
        return self.file_revisions.get(commit, self.files)


def commit_of(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


class HubStandIn:
    def __init__(self, token: str = "hf_test_token"):
        self.repos: dict[str, Repo] = {}
        self.ignore_range = False  # answer a range request with the whole file (200), as a hostile server might
        self.cut_off = 0  # answers the client closed before they were sent in full
        self.token = token
        self.requests: list[tuple[str, str, str]] = []  # (method, path, range)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, repo_id: str, files: dict[str, bytes], **kwargs) -> Repo:
        repo = Repo(files=files, **kwargs)
        repo.revisions.setdefault("main", commit_of(repo_id + "@main"))
        self.repos[repo_id] = repo
        return repo

    def __enter__(self) -> HubStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                self._answer(head=True)

            def do_GET(self) -> None:
                self._answer(head=False)

            def _send(self, status: int, body: bytes = b"", headers: dict | None = None, head: bool = False) -> None:
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    try:
                        self.wfile.write(body)
                    except (BrokenPipeError, ConnectionResetError):  # a client that took what it asked for and left
                        hub.cut_off += 1

            def _error(self, status: int, code: str, head: bool) -> None:
                body = json.dumps({"error": code}).encode()
                self._send(status, body, {"X-Error-Code": code, "X-Error-Message": code,
                                          "Content-Type": "application/json"}, head)

            def _authorized(self, repo: Repo) -> bool:
                return not repo.gated or self.headers.get("authorization") == f"Bearer {hub.token}"

            def _answer(self, head: bool) -> None:
                url = urlsplit(self.path)
                path = unquote(url.path)
                hub.requests.append((self.command, path, self.headers.get("range") or ""))
                if path == "/api/models":
                    query = parse_qs(url.query).get("search", [""])[0].lower()
                    found = [{"id": rid, "modelId": rid} for rid in hub.repos if query in rid.lower()]
                    return self._send(200, json.dumps(found).encode(), {"Content-Type": "application/json"}, head)
                if path.startswith("/api/models/"):
                    rest = path.removeprefix("/api/models/")
                    repo_id, _, rev = rest.partition("/revision/")
                    return self._model_info(repo_id, rev or "main", head)
                parts = path.lstrip("/").split("/")
                if len(parts) >= 5 and parts[2] == "resolve":
                    return self._resolve("/".join(parts[:2]), parts[3], "/".join(parts[4:]), head)
                self._error(404, "RepoNotFound", head)

            def _revision(self, repo_id: str, rev: str, head: bool) -> tuple[Repo, str] | None:
                """The repo and the commit `rev` names, or None once the error is sent."""
                repo = hub.repos.get(repo_id)
                if repo is None:
                    return self._error(404, "RepoNotFound", head)
                if not self._authorized(repo):
                    return self._error(401, "GatedRepo", head)
                commit = repo.commit(rev)
                if commit is None:
                    return self._error(404, "RevisionNotFound", head)
                return repo, commit

            def _model_info(self, repo_id: str, rev: str, head: bool) -> None:
                found = self._revision(repo_id, rev, head)
                if found is None:
                    return
                repo, commit = found
                info = {"id": repo_id, "modelId": repo_id, "sha": commit, "gated": "auto" if repo.gated else False,
                        "private": False, "siblings": [{"rfilename": name} for name in repo.files_at(commit)]}
                if repo.safetensors is not None:
                    info["safetensors"] = repo.safetensors
                self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)

            def _resolve(self, repo_id: str, rev: str, filename: str, head: bool) -> None:
                found = self._revision(repo_id, rev, head)
                if found is None:
                    return
                repo, commit = found
                data = repo.files_at(commit).get(filename)
                if data is None:
                    return self._error(404, "EntryNotFound", head)
                headers = {"ETag": f'"{hashlib.sha256(data).hexdigest()}"', "X-Repo-Commit": commit,
                           "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
                wanted = self.headers.get("range")
                if wanted and wanted.startswith("bytes=") and not head and not hub.ignore_range:
                    start_text, _, end_text = wanted.removeprefix("bytes=").partition("-")
                    start = int(start_text)
                    end = min(int(end_text) if end_text else len(data) - 1, len(data) - 1)
                    if start >= len(data):
                        return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                    headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                    return self._send(206, data[start:end + 1], headers)
                self._send(200, data, headers, head)

        return Handler
