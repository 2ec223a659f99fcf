"""What the deployed server gives away (issue 10): error details, and requests it makes on its own."""

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from app_helpers import APP, TIMEOUT
from streamlit.testing.v1 import AppTest

from ui import links
from tests.e2e.conftest import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]


def test_an_unexpected_error_shows_a_generic_message_without_details(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("secret at /srv/estimator/estimator/links.py")

    monkeypatch.setattr(links, "scenario_of", broken)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert len(at.exception) == 1
    shown = at.exception[0]
    assert "This app has encountered an error" in shown.message
    assert "secret" not in shown.message and not shown.stack_trace and "RuntimeError" not in str(shown.proto)


class Listener:
    """A TCP port that counts the connections made to it: the server's proxy, so any outbound request the
    app makes (Streamlit uses `requests`, which honours HTTP(S)_PROXY) lands here instead of the internet."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port, self.connections, self.stop = self.sock.getsockname()[1], 0, False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def test_the_server_makes_no_outbound_request_at_start_up():
    proxy, port = Listener(), free_port()
    proxy_url = f"http://127.0.0.1:{proxy.port}"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(ROOT), "HTTP_PROXY": proxy_url, "HTTPS_PROXY": proxy_url,
           "http_proxy": proxy_url, "https_proxy": proxy_url, "NO_PROXY": "", "no_proxy": ""}
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                               "--server.port", str(port), "--server.fileWatcherType", "none"],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", server)
        time.sleep(3)  # the start-up banner, and with it the external-IP lookup, comes after the server is up
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0]
        proxy.close()
    assert proxy.connections == 0, output
    assert "External URL" not in output and "URL: http://localhost:" in output, output
