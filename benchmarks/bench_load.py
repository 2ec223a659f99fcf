"""Load benchmark (issue 6): many people open the same shared link at once and change inputs.

Starts the app with `streamlit run` on loopback (127.0.0.1, a free port), opens N concurrent sessions on one
shared URL, and has each change an input (sequence length, concurrency, KV-cache dtype, extra weight format)
after a think time, for D seconds. Records every rerun's latency, the errors, and the server's resident memory
(RSS) before the sessions connect, while they run, and at the end. Everything stops by itself: bounded
sessions, bounded duration, a timeout on every wait, and the server is terminated at exit.

Two clients, same measurements:

- `--client protocol` (default): a real client of Streamlit's websocket protocol (`/_stcore/stream`, the
  `streamlit.proto` BackMsg/ForwardMsg protobufs), as the browser speaks it: it sends `rerun_script` with the
  link's query string, reads the elements the server sends (the widget ids), then sends `rerun_script` with the
  changed widget's state, exactly what the frontend sends when a person edits a number or picks an option. It
  sends the changed widget only (the frontend sends every widget it holds; the server reads the others from the
  session, so the rerun it does is the same). Rerun latency = time from sending the change to receiving the
  `script_finished` message of that rerun, so it is the server's time plus loopback, without browser rendering.
  Light enough that 30+ sessions and the server share two cores honestly.
- `--client browser`: Playwright pages (one browser context each) against Debian's Chromium. Each page types a
  new sequence length or concurrency into the number input and presses Enter; latency = from the keystroke to
  the `script_finished` frame on the page's websocket. Chromium renders every rerun (tables, three Plotly
  charts), so on a small machine the browsers compete with the server for CPU: use it with fewer sessions as a
  cross-check of the protocol client.

Run: `.venv/bin/python benchmarks/bench_load.py --sessions 30 --duration 60 [--client browser] [--json out.json]`
Targets: zero errors, p95 rerun latency under 2 s at 30 sessions, server RSS growth under 100 MB over the run.
Results: benchmarks/RESULTS_load.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path, wait_healthy  # noqa: E402  (shared with e2e)

SHARED_QUERY = "v=1&p=inference&model=meta-llama/Llama-3.1-8B&seq=8192&conc=4"
TARGET_P95_S, TARGET_GROWTH_MB = 2.0, 100.0
WAIT_S = 60.0  # the longest wait for any one rerun before it counts as an error
ERROR_ALERT = 1  # Alert.Format.ERROR
FINISHED_OK, FINISHED_EARLY_FOR_RERUN = 0, 2
MANY_PAGES_FLAGS = ["--disable-extensions", "--disable-dev-shm-usage", "--renderer-process-limit=64"]


# --- the server ---------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
         "--server.runOnSave", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def rss_mb(pid: int) -> float:
    """Resident memory of the server process and its children, in MB (10^6 bytes)."""
    process = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)]) / 1e6


# --- results --------------------------------------------------------------------------------------------------
@dataclass
class SessionResult:
    open_s: float | None = None  # first run of the shared link
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
class ProtocolSession:
    """One browser tab's worth of Streamlit protocol: open the link, then change inputs."""

    def __init__(self, port: int, query: str, rng: random.Random):
        self.url, self.query, self.rng = f"ws://127.0.0.1:{port}/_stcore/stream", query, rng
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
            async with connect(self.url, subprotocols=["streamlit"], max_size=None, open_timeout=WAIT_S,
                               ping_interval=None) as ws:
                opened = time.perf_counter()
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
        except (OSError, asyncio.TimeoutError, KeyError) as err:
            self.result.errors.append(f"{type(err).__name__}: {err}"[:200])
        except Exception as err:  # noqa: BLE001 - a closed websocket or a protocol error is an error to count
            self.result.errors.append(f"{type(err).__name__}: {err}"[:200])
        return self.result


async def protocol_load(port: int, sessions: int, duration: float, think: tuple[float, float], seed: int,
                        ramp_s: float) -> list[SessionResult]:
    rng = random.Random(seed)
    deadline = time.monotonic() + duration
    runs = [ProtocolSession(port, SHARED_QUERY, random.Random(rng.random())) for _ in range(sessions)]
    return await asyncio.gather(*(s.run(deadline, think, ramp_s * i / sessions) for i, s in enumerate(runs)))


# --- the browser client ---------------------------------------------------------------------------------------
async def browser_session(browser, port: int, deadline: float, think: tuple[float, float], rng: random.Random,
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
        await page.goto(f"http://127.0.0.1:{port}/?{SHARED_QUERY}", timeout=WAIT_S * 1000)
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


async def browser_load(port: int, sessions: int, duration: float, think: tuple[float, float], seed: int,
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
            return await asyncio.gather(*(browser_session(browser, port, deadline, think, random.Random(rng.random()),
                                                          ramp_s * i / sessions) for i in range(sessions)))
        finally:
            await browser.close()


# --- the run ---------------------------------------------------------------------------------------------------
async def sample_rss(pid: int, every: float, samples: list, stop: asyncio.Event) -> None:
    started = time.monotonic()
    while not stop.is_set():
        samples.append((round(time.monotonic() - started, 1), round(rss_mb(pid), 1)))
        try:
            await asyncio.wait_for(stop.wait(), every)
        except asyncio.TimeoutError:
            pass


async def measure(args, port: int, server: subprocess.Popen) -> dict:
    warm = ProtocolSession(port, SHARED_QUERY, random.Random(0))  # first run: imports and caches, not counted
    await warm.run(time.monotonic(), (0, 0), 0)
    if warm.result.errors:
        raise RuntimeError(f"warm-up failed: {warm.result.errors}")
    await asyncio.sleep(2)
    server_process = psutil.Process(server.pid)
    rss_start, cpu_start = rss_mb(server.pid), server_process.cpu_times()
    samples: list = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_rss(server.pid, 5.0, samples, stop))
    client_cpu, started = time.process_time(), time.perf_counter()
    think = (args.think_min, args.think_max)
    load = protocol_load if args.client == "protocol" else browser_load
    results = await load(port, args.sessions, args.duration, think, args.seed, args.ramp)
    wall = time.perf_counter() - started
    rss_end, cpu_end = rss_mb(server.pid), server_process.cpu_times()
    stop.set()
    await sampler
    await asyncio.sleep(5)  # the sessions have disconnected; the server keeps caches, drops session state
    rss_after = rss_mb(server.pid)
    summary = summarize(results)
    summary.update(
        client=args.client, sessions=args.sessions, duration_s=args.duration, think_s=[args.think_min, args.think_max],
        ramp_s=args.ramp, wall_s=round(wall, 1), reruns_per_s=round(summary["reruns"] / wall, 2),
        rss_start_mb=round(rss_start, 1), rss_end_mb=round(rss_end, 1), rss_growth_mb=round(rss_end - rss_start, 1),
        rss_after_disconnect_mb=round(rss_after, 1), rss_peak_mb=max(mb for _, mb in samples) if samples else None,
        rss_samples=samples,
        server_cpu_s=round((cpu_end.user + cpu_end.system) - (cpu_start.user + cpu_start.system), 1),
        client_cpu_s=round(time.process_time() - client_cpu, 1), shared_link="?" + SHARED_QUERY,
        machine=f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
    )
    summary["targets_met"] = {"zero_errors": summary["errors"] == 0,
                              "p95_under_2s": summary["p95_s"] is not None and summary["p95_s"] < TARGET_P95_S,
                              "rss_growth_under_100mb": summary["rss_growth_mb"] < TARGET_GROWTH_MB}
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds each session changes inputs")
    parser.add_argument("--think-min", type=float, default=2.0, help="shortest pause between two changes (s)")
    parser.add_argument("--think-max", type=float, default=6.0, help="longest pause between two changes (s)")
    parser.add_argument("--ramp", type=float, default=5.0, help="sessions open over this many seconds")
    parser.add_argument("--client", choices=("protocol", "browser"), default="protocol")
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if not (1 <= args.sessions <= 200 and 1 <= args.duration <= 600):
        parser.error("at most 200 sessions and 600 seconds")
    port = free_port()
    server = start_server(port)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", server)
        summary = asyncio.run(asyncio.wait_for(measure(args, port, server), args.duration + 600))
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    print(json.dumps({k: v for k, v in summary.items() if k != "rss_samples"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if all(summary["targets_met"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
