"""Load benchmark (issue 6): many people open the same shared link at once and change inputs.

Starts the app with `streamlit run` on loopback (127.0.0.1, a free port), opens N concurrent sessions on one
shared URL, and has each change an input (sequence length, concurrency, KV-cache dtype, extra weight format)
after a think time, for D seconds. Records every rerun's latency, the errors, the server's resident memory
(RSS) before the sessions connect, while they run, and at the end, and where the machine's CPU went (server,
nginx, this client, anything else). Everything stops by itself: bounded sessions, bounded duration, a timeout
on every wait, and every server it started is terminated at exit.

Three ways to run it:

- default: one `streamlit run` process, as the app was deployed until now (`deploy/replicas.py`'s
  `Deployment(1, nginx=False)`).
- `--compare-replicas 1,4 --sessions 100,300`: scale-out, measured in one run. For each replica count and each
  session count it starts a fresh deployment (1 = one process straight, as the default; N > 1 = N processes
  behind Debian's nginx with `deploy/nginx.conf`, sticky sessions, started by `deploy/replicas.py`), warms every
  replica, runs the load, stops it, and prints a table with p50/p95/max, errors, reruns/s, the CPU split and
  the ratio of each N to the first. Needs nginx (`apt-get install -y nginx`).
- `--url URL`: drives a deployment that is already running (say `scripts/replicas.sh 4 8080`, or the compose
  file); starts nothing. Memory and server CPU are measured only for the processes given with `--pids`
  (with their children), otherwise reported as not measured.

Two clients, same measurements:

- `--client protocol` (default): a real client of Streamlit's websocket protocol (`/_stcore/stream`, the
  `streamlit.proto` BackMsg/ForwardMsg protobufs), as the browser speaks it: it GETs the page first and keeps
  its cookies (nginx's routing cookie), opens the websocket with them, sends `rerun_script` with the link's
  query string, reads the elements the server sends (the widget ids), then sends `rerun_script` with the
  changed widget's state, exactly what the frontend sends when a person edits a number or picks an option. It
  sends the changed widget only (the frontend sends every widget it holds; the server reads the others from the
  session, so the rerun it does is the same). Rerun latency = time from sending the change to receiving the
  `script_finished` message of that rerun, so it is the server's time plus loopback (and nginx), without
  browser rendering. One Python process runs every session; it shares the machine's cores with the servers,
  and its CPU time is reported.
- `--client browser`: Playwright pages (one browser context each) against Debian's Chromium. Each page types a
  new sequence length or concurrency into the number input and presses Enter; latency = from the keystroke to
  the `script_finished` frame on the page's websocket. Chromium renders every rerun (tables, three Plotly
  charts), so on a small machine the browsers compete with the server for CPU: use it with fewer sessions as a
  cross-check of the protocol client.

Run: `.venv/bin/python benchmarks/bench_load.py --sessions 30 --duration 60 [--client browser] [--json out.json]`
     `.venv/bin/python benchmarks/bench_load.py --compare-replicas 1,4 --sessions 100,300 --duration 60`
     `.venv/bin/python benchmarks/bench_load.py --url http://127.0.0.1:8080 --sessions 100 [--pids 123,456]`
Targets: zero errors, p95 rerun latency under 2 s at 30 sessions with one process and at 300 sessions with 4
replicas behind nginx, server RSS growth under 100 MB per process over the run.
Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path

import psutil
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deploy.replicas import Deployment  # noqa: E402  (the same launcher as scripts/replicas.sh)
from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path  # noqa: E402  (shared with e2e)

SHARED_QUERY = "v=1&p=inference&model=meta-llama/Llama-3.1-8B&seq=8192&conc=4"
TARGET_P95_S, TARGET_GROWTH_MB = 2.0, 100.0
WAIT_S = 60.0  # the longest wait for any one rerun before it counts as an error
MAX_SESSIONS, MAX_DURATION_S, MAX_RUNS = 500, 600, 8
ERROR_ALERT = 1  # Alert.Format.ERROR
FINISHED_OK, FINISHED_EARLY_FOR_RERUN = 0, 2
MANY_PAGES_FLAGS = ["--disable-extensions", "--disable-dev-shm-usage", "--renderer-process-limit=64"]


# --- the servers ----------------------------------------------------------------------------------------------
def processes(pids: list[int]) -> list[psutil.Process]:
    """The given processes and their children (nginx's workers, anything a replica started)."""
    found: dict[int, psutil.Process] = {}
    for pid in pids:
        try:
            process = psutil.Process(pid)
            for p in [process, *process.children(recursive=True)]:
                found[p.pid] = p
        except psutil.NoSuchProcess:
            pass
    return list(found.values())


def rss_mb(pids: list[int]) -> float:
    """Resident memory of these processes and their children, in MB (10^6 bytes)."""
    total = 0
    for p in processes(pids):
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 1e6


def cpu_s(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent running anything (all cores together) since boot."""
    times = psutil.cpu_times()
    return sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq"))


def sessions_per_process(pids: list[int], ports: list[int]) -> list[int]:
    """Established connections on each replica's own port: the sessions (and page loads) each one holds."""
    counts = []
    for pid, port in zip(pids, ports):
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            counts.append(-1)
            continue
        counts.append(sum(1 for c in connections if c.status == psutil.CONN_ESTABLISHED and c.laddr
                          and c.laddr.port == port))
    return counts


@dataclass
class Target:
    """What the load is aimed at: a URL, and what is known of the processes behind it."""
    url: str
    server_pids: list[int] = field(default_factory=list)  # the Streamlit processes (RSS, CPU)
    proxy_pids: list[int] = field(default_factory=list)  # nginx (CPU)
    replica_urls: list[str] = field(default_factory=list)  # warmed one by one, straight, before the load
    replica_ports: list[int] = field(default_factory=list)
    label: str = ""


# --- results --------------------------------------------------------------------------------------------------
@dataclass
class SessionResult:
    open_s: float | None = None  # first run of the shared link (page GET, websocket, first script run)
    latencies: list[float] = field(default_factory=list)  # one per input change
    errors: list[str] = field(default_factory=list)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def summarize(results: list[SessionResult]) -> dict:
    latencies = [x for r in results for x in r.latencies]
    per_session_median = [statistics.median(r.latencies) for r in results if r.latencies]
    per_session_p95 = [percentile(r.latencies, 0.95) for r in results if r.latencies]
    opens = [r.open_s for r in results if r.open_s is not None]
    errors = [e for r in results for e in r.errors]
    return {
        "reruns": len(latencies), "errors": len(errors), "error_samples": errors[:10],
        "median_s": round(statistics.median(latencies), 3) if latencies else None,
        "p95_s": round(percentile(latencies, 0.95), 3) if latencies else None,
        "max_s": round(max(latencies), 3) if latencies else None,
        "session_median_s": {"min": round(min(per_session_median), 3), "max": round(max(per_session_median), 3)}
        if per_session_median else None,
        "session_p95_s": {"min": round(min(per_session_p95), 3), "max": round(max(per_session_p95), 3)}
        if per_session_p95 else None,
        "open_median_s": round(statistics.median(opens), 3) if opens else None,
        "open_max_s": round(max(opens), 3) if opens else None,
        "reruns_per_session": {"min": min(len(r.latencies) for r in results),
                               "max": max(len(r.latencies) for r in results)},
    }


# --- the protocol client --------------------------------------------------------------------------------------
def get_cookies(url: str) -> str:
    """GET the page as a browser does first and return its cookies as a Cookie header (nginx's routing cookie;
    Streamlit sets none on the page)."""
    cookies = SimpleCookie()
    with urllib.request.urlopen(url, timeout=WAIT_S) as response:
        response.read()
        for header in response.headers.get_all("Set-Cookie") or []:
            cookies.load(header)
    return "; ".join(f"{name}={morsel.value}" for name, morsel in cookies.items())


class ProtocolSession:
    """One browser tab's worth of Streamlit protocol: open the link, then change inputs."""

    def __init__(self, base_url: str, query: str, rng: random.Random):
        self.page_url = f"{base_url}/?{query}"
        self.url = base_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1) + "/_stcore/stream"
        self.query, self.rng = query, rng
        self.widgets: dict[str, tuple[str, object]] = {}  # label -> (element type, proto)
        self.page_hash, self.current_query = "", query
        self.result = SessionResult()

    async def _until_finished(self, ws) -> None:
        """Read ForwardMsgs until the rerun finishes; note widgets, the URL, exceptions and error boxes."""
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(await asyncio.wait_for(ws.recv(), WAIT_S))
            kind = msg.WhichOneof("type")
            if kind == "navigation":
                self.page_hash = msg.navigation.page_script_hash
            elif kind == "page_info_changed":
                self.current_query = msg.page_info_changed.query_string
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                etype = element.WhichOneof("type")
                if etype in ("number_input", "selectbox"):
                    widget = getattr(element, etype)
                    self.widgets[widget.label] = (etype, widget)
                elif etype == "exception":
                    self.result.errors.append(f"exception: {element.exception.message[:200]}")
                elif etype == "alert" and element.alert.format == ERROR_ALERT:
                    self.result.errors.append(f"error box: {element.alert.body[:200]}")
            elif kind == "script_finished":
                if msg.script_finished == FINISHED_EARLY_FOR_RERUN:
                    continue  # st.switch_page or a newer rerun: the next run follows
                if msg.script_finished != FINISHED_OK:
                    self.result.errors.append(f"script finished with status {msg.script_finished}")
                return

    def _change(self) -> tuple[BackMsg, str]:
        """A BackMsg that changes one input as a person would, and what the link must then say."""
        choice = self.rng.choice(("Sequence length", "Sequence length", "Inference concurrency", "KV-cache dtype",
                                  "Extra weight format"))
        etype, widget = self.widgets[choice]
        back = BackMsg()
        state = back.rerun_script
        state.query_string, state.page_script_hash = self.current_query, self.page_hash
        change = state.widget_states.widgets.add()
        change.id = widget.id
        if choice == "Sequence length":
            value = self.rng.choice([v for v in range(256, 131_073, 256) if v != 2048])
            change.int_value, expect = value, f"seq={value}"
        elif choice == "Inference concurrency":
            value = self.rng.randint(2, 64)
            change.int_value, expect = value, f"conc={value}"
        else:
            change.string_value = self.rng.choice(list(widget.options)[1:])  # not the default (first) option
            expect = "kv=" if choice == "KV-cache dtype" else "w="
        return back, expect

    async def run(self, deadline: float, think: tuple[float, float], start_delay: float) -> SessionResult:
        from websockets.asyncio.client import connect

        await asyncio.sleep(start_delay)
        try:
            opened = time.perf_counter()
            cookie = await asyncio.wait_for(asyncio.to_thread(get_cookies, self.page_url), WAIT_S)
            async with connect(self.url, subprotocols=["streamlit"], max_size=None, open_timeout=WAIT_S,
                               ping_interval=None, additional_headers={"Cookie": cookie} if cookie else None) as ws:
                back = BackMsg()
                back.rerun_script.query_string = self.query
                await ws.send(back.SerializeToString())
                await self._until_finished(ws)
                self.result.open_s = time.perf_counter() - opened
                while True:
                    await asyncio.sleep(self.rng.uniform(*think))
                    if time.monotonic() >= deadline:
                        break
                    back, expect = self._change()
                    sent = time.perf_counter()
                    await ws.send(back.SerializeToString())
                    await self._until_finished(ws)
                    self.result.latencies.append(time.perf_counter() - sent)
                    if expect not in self.current_query:
                        self.result.errors.append(f"the link did not follow the change ({expect} not in "
                                                  f"{self.current_query[:120]})")
        except Exception as err:  # noqa: BLE001 - a refused page, a closed websocket or a timeout is an error
            self.result.errors.append(f"{type(err).__name__}: {err}"[:200])
        return self.result


async def protocol_load(base_url: str, sessions: int, duration: float, think: tuple[float, float], seed: int,
                        ramp_s: float) -> list[SessionResult]:
    rng = random.Random(seed)
    deadline = time.monotonic() + duration
    runs = [ProtocolSession(base_url, SHARED_QUERY, random.Random(rng.random())) for _ in range(sessions)]
    return await asyncio.gather(*(s.run(deadline, think, ramp_s * i / sessions) for i, s in enumerate(runs)))


# --- the browser client ---------------------------------------------------------------------------------------
async def browser_session(browser, base_url: str, deadline: float, think: tuple[float, float], rng: random.Random,
                          start_delay: float) -> SessionResult:
    result = SessionResult()
    await asyncio.sleep(start_delay)
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    finished: asyncio.Queue = asyncio.Queue()

    def on_frame(payload) -> None:
        if isinstance(payload, str):
            return
        msg = ForwardMsg()
        msg.ParseFromString(payload)
        kind = msg.WhichOneof("type")
        if kind == "script_finished" and msg.script_finished != FINISHED_EARLY_FOR_RERUN:
            finished.put_nowait((time.perf_counter(), msg.script_finished))
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            if element.WhichOneof("type") == "exception":
                result.errors.append(f"exception: {element.exception.message[:200]}")
            elif element.WhichOneof("type") == "alert" and element.alert.format == ERROR_ALERT:
                result.errors.append(f"error box: {element.alert.body[:200]}")

    page.on("websocket", lambda ws: ws.on("framereceived", on_frame) if "_stcore/stream" in ws.url else None)
    page.on("pageerror", lambda err: result.errors.append(f"page error: {err}"[:200]))

    async def wait_finished(since: float) -> float:
        while True:
            at, status = await asyncio.wait_for(finished.get(), WAIT_S)
            if at >= since:
                if status != FINISHED_OK:
                    result.errors.append(f"script finished with status {status}")
                return at - since

    try:
        opened = time.perf_counter()
        await page.goto(f"{base_url}/?{SHARED_QUERY}", timeout=WAIT_S * 1000)
        await wait_finished(opened)
        await page.wait_for_selector("[data-testid='stDataFrame']", timeout=WAIT_S * 1000)
        result.open_s = time.perf_counter() - opened
        while True:
            await asyncio.sleep(rng.uniform(*think))
            if time.monotonic() >= deadline:
                break
            label, value = rng.choice((("Sequence length", rng.choice([v for v in range(256, 131_073, 256)
                                                                         if v != 2048])),
                                       ("Inference concurrency", rng.randint(2, 64))))
            box = page.get_by_label(label, exact=True)
            await box.fill(str(value), timeout=WAIT_S * 1000)
            while not finished.empty():
                finished.get_nowait()
            sent = time.perf_counter()
            await box.press("Enter", timeout=WAIT_S * 1000)
            result.latencies.append(await wait_finished(sent))
    except Exception as err:  # noqa: BLE001 - timeouts and closed pages are errors to count
        result.errors.append(f"{type(err).__name__}: {err}"[:200])
    finally:
        await context.close()
    return result


async def browser_load(base_url: str, sessions: int, duration: float, think: tuple[float, float], seed: int,
                       ramp_s: float) -> list[SessionResult]:
    from playwright.async_api import async_playwright

    chromium = chromium_path()
    if not chromium:
        raise SystemExit("Chromium not found: apt-get install -y chromium")
    rng = random.Random(seed)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS + MANY_PAGES_FLAGS)
        try:
            # the deadline counts from when the last session has opened its page
            deadline = time.monotonic() + ramp_s + duration
            return await asyncio.gather(*(browser_session(browser, base_url, deadline, think,
                                                          random.Random(rng.random()), ramp_s * i / sessions)
                                          for i in range(sessions)))
        finally:
            await browser.close()


# --- the run ---------------------------------------------------------------------------------------------------
async def sample(target: Target, every: float, samples: list, spread: list, stop: asyncio.Event) -> None:
    """Every `every` s: the servers' RSS and how many connections each replica holds (the busiest sample)."""
    started = time.monotonic()
    while not stop.is_set():
        if target.server_pids:
            samples.append((round(time.monotonic() - started, 1), round(rss_mb(target.server_pids), 1)))
        if target.replica_ports:
            counts = sessions_per_process(target.server_pids, target.replica_ports)
            if sum(counts) > sum(spread):
                spread[:] = counts
        try:
            await asyncio.wait_for(stop.wait(), every)
        except asyncio.TimeoutError:
            pass


async def warm_up(target: Target, warm_sessions: int) -> None:
    """A first run on every replica (imports, caches), not counted: straight to each when their addresses are
    known, otherwise `warm_sessions` sessions through the URL (each gets a new routing cookie)."""
    urls = target.replica_urls or [target.url] * warm_sessions
    for url in urls:
        warm = ProtocolSession(url, SHARED_QUERY, random.Random(0))
        await warm.run(time.monotonic(), (0, 0), 0)
        if warm.result.errors:
            raise RuntimeError(f"warm-up of {url} failed: {warm.result.errors}")


async def measure(args, sessions: int, target: Target) -> dict:
    await warm_up(target, args.warm)
    await asyncio.sleep(2)
    server_procs, proxy_procs = processes(target.server_pids), processes(target.proxy_pids)
    rss_start = rss_mb(target.server_pids) if target.server_pids else None
    server_cpu_start, proxy_cpu_start, busy_start = cpu_s(server_procs), cpu_s(proxy_procs), machine_busy_s()
    samples: list = []
    spread: list[int] = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample(target, 5.0, samples, spread, stop))
    client_cpu, started = time.process_time(), time.perf_counter()
    think = (args.think_min, args.think_max)
    load = protocol_load if args.client == "protocol" else browser_load
    results = await load(target.url, sessions, args.duration, think, args.seed, args.ramp)
    wall = time.perf_counter() - started
    client_cpu = time.process_time() - client_cpu
    rss_end = rss_mb(target.server_pids) if target.server_pids else None
    server_cpu = cpu_s(server_procs) - server_cpu_start
    proxy_cpu = cpu_s(proxy_procs) - proxy_cpu_start
    busy = machine_busy_s() - busy_start
    stop.set()
    await sampler
    await asyncio.sleep(5)  # the sessions have disconnected; the server keeps caches, drops session state
    rss_after = rss_mb(target.server_pids) if target.server_pids else None
    summary = summarize(results)
    measured = bool(target.server_pids)
    summary.update(
        target=target.label or target.url, url=target.url, processes=len(target.server_pids) or None,
        client=args.client, sessions=sessions, duration_s=args.duration, think_s=[args.think_min, args.think_max],
        ramp_s=args.ramp, wall_s=round(wall, 1), reruns_per_s=round(summary["reruns"] / wall, 2),
        rss_start_mb=round(rss_start, 1) if measured else None, rss_end_mb=round(rss_end, 1) if measured else None,
        rss_growth_mb=round(rss_end - rss_start, 1) if measured else None,
        rss_after_disconnect_mb=round(rss_after, 1) if measured else None,
        rss_peak_mb=max(mb for _, mb in samples) if samples else None, rss_samples=samples,
        server_cpu_s=round(server_cpu, 1) if measured else None,
        server_cpu_per_rerun_s=round(server_cpu / summary["reruns"], 3) if measured and summary["reruns"] else None,
        nginx_cpu_s=round(proxy_cpu, 1) if target.proxy_pids else None,
        client_cpu_s=round(client_cpu, 1),
        machine_busy_s=round(busy, 1), machine_capacity_s=round(wall * (os.cpu_count() or 1), 1),
        other_cpu_s=round(busy - client_cpu - (server_cpu + proxy_cpu if measured else 0), 1) if measured else None,
        connections_per_replica=spread or None,
        shared_link="?" + SHARED_QUERY,
        machine=f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
    )
    if not measured:
        summary["note"] = "server memory and CPU not measured (--url without --pids)"
    growth_limit = TARGET_GROWTH_MB * max(1, len(target.server_pids))
    summary["targets_met"] = {"zero_errors": summary["errors"] == 0,
                              "p95_under_2s": summary["p95_s"] is not None and summary["p95_s"] < TARGET_P95_S}
    if measured:
        summary["targets_met"]["rss_growth_under_100mb_per_process"] = summary["rss_growth_mb"] < growth_limit
    return summary


def run_deployment(args, replicas: int, sessions: int) -> dict:
    """Start a fresh deployment (1: one process straight; N > 1: N behind nginx), load it, stop it."""
    with Deployment(replicas, nginx=replicas > 1) as deployment:
        pids = deployment.replica_pids
        target = Target(url=deployment.url, server_pids=pids,
                        proxy_pids=[deployment.nginx.pid] if deployment.nginx else [],
                        replica_urls=[f"http://127.0.0.1:{p}" for p in deployment.replica_ports],
                        replica_ports=deployment.replica_ports,
                        label="1 process" if replicas == 1 else f"{replicas} replicas + nginx")
        summary = asyncio.run(asyncio.wait_for(measure(args, sessions, target), args.duration + 600))
    summary["replicas"] = replicas
    return summary


def comparison_table(summaries: list[dict]) -> str:
    """Markdown: one row per run. p95 ratio: the first replica count's p95 over this one's, same sessions.
    CPU in seconds over the run; other = everything the machine ran besides the servers, nginx and this client."""
    first = {}
    for s in summaries:
        first.setdefault(s["sessions"], s)
    lines = ["| sessions | deployment | reruns | errors | p50 | p95 | max | reruns/s | p95 ratio | server CPU "
             "(per rerun) | nginx CPU | client CPU | other CPU | machine busy |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def sec(value, digits=2):
        return "-" if value is None else f"{value:.{digits}f} s"

    for s in summaries:
        base = first[s["sessions"]]
        ratio = "-" if s is base or not s["p95_s"] or not base["p95_s"] else f"{base['p95_s'] / s['p95_s']:.1f}x"
        per = f" ({s['server_cpu_per_rerun_s']:.3f} s)" if s.get("server_cpu_per_rerun_s") else ""
        busy = f"{s['machine_busy_s']} of {s['machine_capacity_s']} s"
        lines.append(
            f"| {s['sessions']} | {s['target']} | {s['reruns']:,} | {s['errors']} | {sec(s['median_s'])} | "
            f"{sec(s['p95_s'])} | {sec(s['max_s'])} | {s['reruns_per_s']} | {ratio} | "
            f"{sec(s['server_cpu_s'], 1)}{per} | "
            f"{sec(s['nginx_cpu_s'], 1)} | {sec(s['client_cpu_s'], 1)} | {sec(s['other_cpu_s'], 1)} | {busy} |")
    return "\n".join(lines)


def int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"a comma-separated list of integers, not {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("at least one value")
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int_list, default=[30], help="sessions, or a list: 100,300")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds each session changes inputs")
    parser.add_argument("--think-min", type=float, default=2.0, help="shortest pause between two changes (s)")
    parser.add_argument("--think-max", type=float, default=6.0, help="longest pause between two changes (s)")
    parser.add_argument("--ramp", type=float, default=5.0, help="sessions open over this many seconds")
    parser.add_argument("--client", choices=("protocol", "browser"), default="protocol")
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--url", help="drive this running deployment (http://host:port); start nothing")
    parser.add_argument("--pids", type=int_list, default=[],
                        help="with --url: the server processes whose memory and CPU to measure")
    parser.add_argument("--warm", type=int, default=8, help="with --url: warm-up sessions through the URL")
    parser.add_argument("--compare-replicas", type=int_list, metavar="N,M",
                        help="start each replica count in turn (1 = one process, N > 1 = N behind nginx)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    replica_counts = args.compare_replicas or [1]
    if not all(1 <= n <= MAX_SESSIONS for n in args.sessions) or not 1 <= args.duration <= MAX_DURATION_S:
        parser.error(f"at most {MAX_SESSIONS} sessions and {MAX_DURATION_S} seconds")
    if not all(1 <= n <= 16 for n in replica_counts):
        parser.error("--compare-replicas: 1 to 16 replicas")
    if args.url and args.compare_replicas:
        parser.error("--url drives a running deployment; --compare-replicas starts its own")
    if args.pids and not args.url:
        parser.error("--pids goes with --url")
    if len(replica_counts) * len(args.sessions) > MAX_RUNS:
        parser.error(f"at most {MAX_RUNS} runs")

    summaries = []
    for replicas in replica_counts:
        for sessions in args.sessions:
            where = args.url or (f"{replicas} replicas + nginx" if replicas > 1 else "1 process")
            print(f"-- {sessions} sessions, {where}", file=sys.stderr, flush=True)
            if args.url:
                target = Target(url=args.url.rstrip("/"), server_pids=args.pids, label=args.url)
                summary = asyncio.run(asyncio.wait_for(measure(args, sessions, target), args.duration + 600))
            else:
                summary = run_deployment(args, replicas, sessions)
            summaries.append(summary)
            print(json.dumps({k: v for k, v in summary.items() if k != "rss_samples"}, indent=2), flush=True)
    if len(summaries) > 1:
        print(comparison_table(summaries))
    if args.json:
        args.json.write_text(json.dumps(summaries if len(summaries) > 1 else summaries[0], indent=2) + "\n")
    judged = [s for s in summaries if s.get("replicas", 1) == max(replica_counts)]  # the largest deployment
    return 0 if all(all(s["targets_met"].values()) for s in judged) else 1


if __name__ == "__main__":
    sys.exit(main())
