"""Fixtures: a live `updown dev` (built from this repository unless
UPDOWN_BIN names a binary) and a scripted fake server for retry paths."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
try:  # the installed package (as CI tests it), else the source tree
    import updown  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

PRO_KEY = "ud_dev_pro"
ENTERPRISE_KEY = "ud_dev_enterprise"
STARTER_KEY = "ud_dev_starter"


def pytest_configure(config):
    # Under CI a missing pandas is a failure, not a skip.
    if os.environ.get("CI") == "true":
        import pandas  # noqa: F401


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def updown_bin(tmp_path_factory) -> str:
    if os.environ.get("UPDOWN_BIN"):
        return os.environ["UPDOWN_BIN"]
    out = tmp_path_factory.mktemp("bin") / "updown"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/updown"], cwd=ROOT, check=True)
    return str(out)


@pytest.fixture(scope="session")
def base_url(updown_bin) -> str:
    port = _free_port()
    log = tempfile.TemporaryFile()
    env = dict(os.environ, AI_PROVIDER="builtin")
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen([updown_bin, "dev", "--addr", f"127.0.0.1:{port}", "--snapshots-per-market", "400"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"updown dev exited with {proc.returncode}:\n{log.read().decode()[-3000:]}")
            try:
                req = urllib.request.Request(url + "/v1/markets?coin=BTC&limit=1", headers={"X-API-Key": PRO_KEY})
                with urllib.request.urlopen(req, timeout=2) as r:
                    if json.loads(r.read())["total"] > 0:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("updown dev did not answer within 120 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


class Script:
    """What the fake server answers: a list of (status, headers, body) per
    path, the last repeated (status 0: the connection closed unanswered);
    and the requests it saw, and their JSON bodies (None without one)."""

    def __init__(self):
        self.routes = {}
        self.seen = []
        self.bodies = []
        self.headers = []  # each request's headers, as a dict
        self.lock = threading.Lock()

    def on(self, method, path, *answers):
        self.routes[(method, path)] = list(answers)

    def next(self, method, path):
        with self.lock:
            self.seen.append((method, path, time.monotonic()))
            answers = self.routes.get((method, path.split("?")[0]))
            if not answers:
                return 404, {}, {"success": False, "error": {"code": "RESOURCE_NOT_FOUND", "message": "no route"}}
            return answers.pop(0) if len(answers) > 1 else answers[0]

    def count(self, path):
        return sum(1 for _, p, _ in self.seen if p.split("?")[0] == path)


@pytest.fixture
def fake():
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            n = int(self.headers.get("Content-Length") or 0)
            sent = self.rfile.read(n) if n else b""
            with script.lock:
                script.bodies.append(json.loads(sent) if sent else None)
                script.headers.append(dict(self.headers))
            status, headers, body = script.next(self.command, self.path)
            if status == 0:  # the connection lost after the request arrived
                self.close_connection = True
                return
            # bytes are sent as they are (with the headers' Content-Type):
            # an answer that is not the API's JSON.
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            if "Content-Type" not in headers:
                self.send_header("Content-Type", "application/json")
            self.send_header("X-Request-Id", f"req-{len(script.seen)}")
            for k, v in headers.items():
                self.send_header(k, v)
            if "Content-Length" not in headers:  # a longer one: the answer cut short
                self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = _answer

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    script.url = f"http://127.0.0.1:{srv.server_address[1]}"
    yield script
    srv.shutdown()
    srv.server_close()
