"""The scale-out deployment (deploy/): nginx accepts the config, and sessions stick to their replica.

The nginx tests skip where nginx is not installed (`apt-get install -y nginx`); the compose file is parsed
only where a YAML library happens to be installed (the project does not depend on one).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.cookies import SimpleCookie
from pathlib import Path

import pytest

from deploy.replicas import NGINX_CONF, Deployment, nginx_config, nginx_path

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
needs_nginx = pytest.mark.skipif(nginx_path() is None, reason="nginx not installed: apt-get install -y nginx")


def test_generated_config_listens_on_loopback_and_lists_every_replica():
    conf, upstream = nginx_config(18080, [18601, 18602, 18603])
    assert "listen 127.0.0.1:18080;" in conf and "listen 80;" not in conf
    assert upstream.count("server 127.0.0.1:") == 3 and "18602 max_fails=" in upstream
    # what the proxy must do for Streamlit: sticky hash, websocket upgrade, no metrics
    text = NGINX_CONF.read_text()
    for needle in ("hash $stroute_key consistent;", "proxy_set_header Upgrade $http_upgrade;",
                   "location = /_stcore/metrics", "location = /_stcore/stream", "proxy_set_header Host $http_host;"):
        assert needle in text


@needs_nginx
def test_nginx_accepts_the_generated_and_the_compose_config(tmp_path):
    conf, upstream = nginx_config(18080, [18601, 18602])
    (tmp_path / "nginx.conf").write_text(conf)
    for name, servers in (("loopback", upstream), ("compose", (DEPLOY / "upstream.compose.conf").read_text())):
        if name == "compose":  # the compose names resolve only inside compose's network
            servers = re.sub(r"^server app\d+:", "server 127.0.0.1:", servers, flags=re.MULTILINE)
            assert servers.count("server 127.0.0.1:") >= 2
        (tmp_path / "upstream.conf").write_text(servers)
        checked = subprocess.run([nginx_path(), "-t", "-q", "-e", "stderr", "-p", str(tmp_path), "-c",
                                  str(tmp_path / "nginx.conf"), "-g", f"pid {tmp_path / 'nginx.pid'};"],
                                 capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, f"{name}: {checked.stderr}"


def test_compose_file_parses():
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    services = compose["services"]
    replicas = [name for name in services if name.startswith("app")]
    upstream = (DEPLOY / "upstream.compose.conf").read_text()
    assert len(replicas) >= 2 and all(f"server {name}:8501 " in upstream for name in replicas)
    assert all("healthcheck" in services[name] for name in replicas)
    assert set(services["nginx"]["depends_on"]) == set(replicas)


async def _open_session_and_upload(url: str) -> int:
    """A browser's first steps: GET the page (cookies), open the websocket with them, upload a file.

    Returns the upload's HTTP status: 204 when it reached the replica that holds the session."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    cookies = SimpleCookie()
    for path in ("/", "/_stcore/health"):  # the page sets the routing cookie; the health check Streamlit's XSRF one
        sent = "; ".join(f"{k}={m.value}" for k, m in cookies.items())
        request = urllib.request.Request(f"{url}{path}", headers={"Cookie": sent} if sent else {})
        with urllib.request.urlopen(request, timeout=10) as response:
            for header in response.headers.get_all("Set-Cookie") or []:
                cookies.load(header)
        if path == "/":
            assert "stroute" in cookies, "nginx must set the routing cookie on the first response"
    cookie_header = "; ".join(f"{k}={m.value}" for k, m in cookies.items())
    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    async with connect(ws_url, subprotocols=["streamlit"], origin=url, max_size=None, open_timeout=20,
                       additional_headers={"Cookie": cookie_header}) as ws:
        back = BackMsg()
        back.rerun_script.query_string = ""
        await ws.send(back.SerializeToString())
        session_id = ""
        while not session_id:
            msg = ForwardMsg()
            msg.ParseFromString(await asyncio.wait_for(ws.recv(), 30))
            if msg.WhichOneof("type") == "new_session":
                session_id = msg.new_session.initialize.session_id
        boundary = uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"config.json\"\r\n"
                f"Content-Type: application/json\r\n\r\n{{}}\r\n--{boundary}--\r\n").encode()
        request = urllib.request.Request(
            f"{url}/_stcore/upload_file/{session_id}/{uuid.uuid4().hex}", data=body, method="PUT",
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}", "Cookie": cookie_header,
                     "X-Xsrftoken": cookies["_streamlit_xsrf"].value})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as err:
            return err.code


@needs_nginx
def test_uploads_reach_the_replica_holding_the_session():
    """With 2 replicas, 6 sessions each upload through nginx: all 204. Without stickiness about half would get
    Streamlit's 400 "Invalid session_id ... without sticky sessions" (all six succeeding by chance: 1 in 64)."""
    with Deployment(2) as deployment:
        with ThreadPoolExecutor(1) as thread:  # its own event loop: the browser tests leave one in this thread
            statuses = [thread.submit(asyncio.run, _open_session_and_upload(deployment.url)).result()
                        for _ in range(6)]
        metrics = urllib.request.Request(f"{deployment.url}/_stcore/metrics")
        with pytest.raises(urllib.error.HTTPError) as hidden:
            urllib.request.urlopen(metrics, timeout=10)
    assert statuses == [204] * 6
    assert hidden.value.code == 404
