"""Run N replicas of the app behind nginx with sticky sessions, without Docker.

Starts N `streamlit run app.py` processes on loopback ports (127.0.0.1, free ports), waits until each answers
`/_stcore/health`, then starts nginx (Debian's `/usr/sbin/nginx`: `apt-get install -y nginx`)
with `deploy/nginx.conf`, its `listen` line set to 127.0.0.1:PORT and an upstream list of the N ports, in a
temporary directory. Runs in the foreground; on exit, Ctrl-C or SIGTERM it stops nginx and every replica. If a
replica dies, nginx's passive checks (max_fails/fail_timeout) send new connections to the others and this script
starts the replica again on its port (its sessions reconnect to a fresh one and the link restores the inputs).

Run: `python deploy/replicas.py --replicas 4 --port 8080` (or `scripts/replicas.sh 4 8080`), then open
http://127.0.0.1:8080. `benchmarks/bench_load.py --compare-replicas 1,4` uses `Deployment` from here.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NGINX_CONF = Path(__file__).resolve().parent / "nginx.conf"
NGINX_HINT = "nginx not found: apt-get update && apt-get install -y nginx"
STREAMLIT_OPTIONS = ["--server.headless", "true", "--server.address", "127.0.0.1", "--server.fileWatcherType",
                     "none", "--server.runOnSave", "false", "--browser.gatherUsageStats", "false"]
MAX_REPLICAS = 32
MAX_RESTARTS = 20  # replica restarts in one foreground run before giving up (a crash loop)


def nginx_path() -> str | None:
    return next((p for p in (shutil.which("nginx"), "/usr/sbin/nginx") if p and os.access(p, os.X_OK)), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_config(listen_port: int, replica_ports: list[int]) -> tuple[str, str]:
    """deploy/nginx.conf listening on 127.0.0.1:listen_port, and its upstream.conf for these replicas."""
    conf, count = re.subn(r"^(\s*)listen 80;.*$", rf"\1listen 127.0.0.1:{listen_port};",
                          NGINX_CONF.read_text(), flags=re.MULTILINE)
    if count != 1:
        raise RuntimeError(f"{NGINX_CONF} must have exactly one `listen 80;` line, found {count}")
    upstream = "".join(f"server 127.0.0.1:{p} max_fails=2 fail_timeout=10s;\n" for p in replica_ports)
    return conf, upstream


def wait_healthy(url: str, processes: list[subprocess.Popen], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                raise RuntimeError(f"{process.args[0]} exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not become healthy within {timeout:.0f} s")


def stop(process: subprocess.Popen, timeout: float = 10) -> None:
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


class Deployment:
    """N Streamlit replicas on loopback ports; with nginx in front when `nginx` is true (always for N > 1).

    `url` is what a browser opens: nginx's address, or the replica's own with one replica and no nginx.
    Use as a context manager; leaving it stops everything it started.
    """

    def __init__(self, replicas: int, port: int | None = None, nginx: bool = True, quiet: bool = True):
        if not 1 <= replicas <= MAX_REPLICAS:
            raise ValueError(f"replicas must be 1 to {MAX_REPLICAS}")
        self.replicas, self.use_nginx, self.quiet = replicas, nginx or replicas > 1, quiet
        self.port = port or free_port()
        self.replica_ports: list[int] = []
        self.processes: list[subprocess.Popen] = []  # the replicas, then nginx
        self.nginx: subprocess.Popen | None = None
        self.workdir: tempfile.TemporaryDirectory | None = None
        self._log = None  # nginx's messages when quiet

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port if self.use_nginx else self.replica_ports[0]}"

    @property
    def replica_pids(self) -> list[int]:
        return [p.pid for p in self.processes if p is not self.nginx]

    def _start_replica(self, port: int) -> subprocess.Popen:
        output = subprocess.DEVNULL if self.quiet else None
        return subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                 *STREAMLIT_OPTIONS], cwd=ROOT, stdout=output, stderr=output)

    def start(self, timeout: float = 120) -> Deployment:
        nginx = nginx_path() if self.use_nginx else None
        if self.use_nginx and not nginx:
            raise RuntimeError(NGINX_HINT)
        try:
            self.replica_ports = [free_port() for _ in range(self.replicas)] if self.use_nginx else [self.port]
            self.processes = [self._start_replica(port) for port in self.replica_ports]
            for port in self.replica_ports:
                wait_healthy(f"http://127.0.0.1:{port}", self.processes, timeout)
            if self.use_nginx:
                self.workdir = tempfile.TemporaryDirectory(prefix="llm-memory-nginx-")
                run_dir = Path(self.workdir.name)
                conf, upstream = nginx_config(self.port, self.replica_ports)
                (run_dir / "nginx.conf").write_text(conf)
                (run_dir / "upstream.conf").write_text(upstream)
                command = [nginx, "-e", "stderr", "-p", str(run_dir), "-c", str(run_dir / "nginx.conf"),
                           "-g", f"daemon off; pid {run_dir / 'nginx.pid'};"]
                checked = subprocess.run([*command, "-t", "-q"], capture_output=True, text=True, timeout=30)
                if checked.returncode != 0:
                    raise RuntimeError(f"nginx -t refused the configuration:\n{checked.stderr}")
                # quiet: nginx's own messages go to a file (read back if it fails), not to a pipe nobody reads
                self._log = open(run_dir / "nginx.log", "w") if self.quiet else None  # noqa: SIM115 - see stop()
                self.nginx = subprocess.Popen(command, stdout=self._log, stderr=self._log)
                self.processes.append(self.nginx)
                try:
                    wait_healthy(self.url, self.processes, 30)
                except RuntimeError as err:
                    tail = (run_dir / "nginx.log").read_text()[-2000:] if self.quiet else ""
                    raise RuntimeError(f"{err}\n{tail}") from None
        except BaseException:
            self.stop()
            raise
        return self

    def restart_dead_replicas(self) -> list[int]:
        """Start again every replica that has exited, on its own port; the ports restarted."""
        restarted = []
        for i, port in enumerate(self.replica_ports):
            if self.processes[i].poll() is not None:
                self.processes[i] = self._start_replica(port)
                restarted.append(port)
        return restarted

    def stop(self) -> None:
        for process in reversed(self.processes):  # nginx first, so that no request reaches a stopping replica
            stop(process)
        self.processes.clear()
        self.nginx = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.workdir is not None:
            self.workdir.cleanup()
            self.workdir = None

    def __enter__(self) -> Deployment:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=4, help=f"Streamlit processes (1-{MAX_REPLICAS})")
    parser.add_argument("--port", type=int, default=8080, help="nginx listens on 127.0.0.1:PORT")
    args = parser.parse_args()
    if not 1 <= args.replicas <= MAX_REPLICAS:
        parser.error(f"--replicas must be 1 to {MAX_REPLICAS}")
    if not nginx_path():
        print(NGINX_HINT, file=sys.stderr)
        return 2

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    deployment = Deployment(args.replicas, args.port, nginx=True, quiet=False)
    try:
        deployment.start()
        print(f"{args.replicas} replica(s) on ports {', '.join(map(str, deployment.replica_ports))} behind nginx: "
              f"{deployment.url} (Ctrl-C stops everything)", flush=True)
        restarts = 0
        while deployment.nginx.poll() is None:
            time.sleep(1)
            for port in deployment.restart_dead_replicas():  # meanwhile nginx sends its sessions elsewhere
                restarts += 1
                print(f"the replica on port {port} exited; restarted it ({restarts} restarts)", file=sys.stderr)
                if restarts > MAX_RESTARTS:
                    print("too many restarts, stopping", file=sys.stderr)
                    return 1
        print(f"stopping: nginx exited with code {deployment.nginx.returncode}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        deployment.stop()


if __name__ == "__main__":
    sys.exit(main())
