"""Plotly figure builders: plain functions from estimates to figures, with no Streamlit in them.

- `stacked_bar`: one bar per table row (or compared scenario), stacked by memory component, with horizontal
  lines at GPU capacities, so "does it fit" is visible at a glance.
- `memory_curve`: total memory against sequence length, concurrency or batch size, one line per row, with
  the same capacity lines, so users see where they run out.
- `engine_bar`: one GPU as a serving engine divides it, a horizontal bar up to the engine's budget, with lines at
  the budget and at the GPU's memory.
Every page colours a component the same way (`COMPONENT_STYLE`). Capacity lines sit at the memory a
framework can allocate (`Gpu.memory_bytes`: CUDA's total where the catalog has it, 25.4 GB on an "RTX 4090
24 GB"), as the GPU-fit table counts it, and say so in the page's unit ("RTX 4090 (25.4 GB usable)"). Labels sit
inside the plot and never overlap; legends sit above the plot and x labels are wrapped, so that a chart keeps its
width and stays readable on a 390 px phone. Labels may be user text (scenario names): they are HTML-escaped, since
plotly renders a subset of HTML in labels.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from estimator.breakdown import Breakdown
from estimator.catalog import Gpu
from estimator.units import in_unit

COMPONENT_STYLE = {  # name -> (label, colour); colour-blind-safe Tableau 10 hues
    "weights": ("Weights", "#4E79A7"),
    "vision": ("Vision tower", "#76B7B2"),
    "reference_model": ("Reference model", "#9C755F"),
    "generation_engine": ("vLLM engine", "#D4A6C8"),
    "master_weights": ("Master weights (fp32)", "#A0CBE8"),
    "kv_cache": ("KV cache", "#F28E2B"),
    "state": ("Recurrent state", "#EDC948"),
    "activations": ("Activations", "#59A14F"),
    "logits": ("Logits", "#8CD17D"),
    "rollout_cache": ("Rollout KV cache", "#FFBE7D"),
    "reference_logits": ("Reference logits", "#D7B5A6"),
    "gradients": ("Gradients", "#E15759"),
    "optimizer_states": ("Optimizer states", "#B07AA1"),
    "optimizer_step": ("Optimizer step buffers", "#FF9DA7"),
    "overhead": ("Overhead", "#BAB0AC"),
}
HOST_STYLE = ("CPU (offloaded)", "#9C755F")  # what a row keeps in host RAM, drawn beside its GPU bar
BAR_GAP = 0.3  # between the categories of a stacked bar chart
ROW_COLOURS = ("#4E79A7", "#F28E2B", "#59A14F", "#E15759", "#B07AA1", "#76B7B2", "#EDC948", "#9C755F")  # Tableau 10
COMMON_GPUS = ("rtx-4090", "l40s", "h100-sxm", "h200")  # the 24, 48, 80 and 141 GB classes
CHOSEN_COLOUR, LINE_COLOUR = "#1C2430", "#8C8C8C"  # the target GPU solid and dark, the others dotted grey
HEIGHT = 400
# Capacity labels sit inside the plot, just above (or below) their line, so the plot keeps the full width on a
# phone. Two labels closer than LABEL_PX on a plot of PLOT_PX (a 400 px figure with a three-row legend on a
# 390 px screen; more on a desktop) would overlap: the second goes below its line, else its line is left out.
PLOT_PX, LABEL_PX = 230, 15
LABEL_BACKGROUND = "rgba(255,255,255,0.85)"  # a line running through a label stops at its edge
LEGEND = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, title_text="", traceorder="normal",
              entrywidth=85, font=dict(size=11))  # above the plot, clear of the x labels; two to a row on a phone
TOOLBAR_PX = 34  # a band above the legend for plotly's toolbar, which covered the legend's last entries on hover
WRAP_CHARS = 14  # x labels are broken into lines of about this many characters, so they stay level and unclipped


@dataclass(frozen=True)
class Capacity:
    """A horizontal line at a GPU's usable memory (`Gpu.memory_bytes`); `label` is the GPU's short name."""

    label: str
    bytes: int
    chosen: bool = False  # the user's target GPU: drawn solid and dark

    def text(self, unit: str) -> str:
        """What the line means, in the page's unit: 'RTX 4090 (25.4 GB usable)', 'RTX 4090 (23.6 GiB usable)'."""
        return f"{self.label} ({in_unit(self.bytes, unit):,.1f} {unit} usable)"


def short_gpu_name(name: str) -> str:
    """'NVIDIA H100 SXM 80GB' -> 'H100 SXM': vendor words, capacities and parentheses dropped."""
    name = re.sub(r"\(.*?\)|\b\d+\s?GB\b|\bNVIDIA\b|\bGeForce\b|\bAMD Instinct\b|\bTesla\b", " ", name)
    return " ".join(name.split())


def capacity_lines(gpus: Sequence[Gpu], chosen_id: str | None = None) -> list[Capacity]:
    """Lines for the common 24 / 48 / 80 / 141 GB GPUs and the chosen one, lowest first. A common GPU within
    5% of the chosen one is left out: the two labels would overlap, and the chosen line marks that size."""
    chosen = next((g for g in gpus if g.id == chosen_id), None)

    def common(g: Gpu) -> bool:
        return g.id in COMMON_GPUS and (chosen is None or
                                        abs(g.memory_bytes - chosen.memory_bytes) > 0.05 * chosen.memory_bytes)

    lines = [Capacity(short_gpu_name(g.name), g.memory_bytes) for g in gpus if common(g)]
    if chosen:
        lines.append(Capacity(short_gpu_name(chosen.name), chosen.memory_bytes, True))
    return sorted(lines, key=lambda line: line.bytes)


def unique_labels(labels: Sequence[str]) -> list[str]:
    """'a', 'a' -> 'a', 'a (2)', as the comparison table and its CSV name same-named scenarios: a bar chart's
    categories must differ, or plotly stacks two scenarios into one bar."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def wrap(label: str, width: int = WRAP_CHARS) -> str:
    """An x label broken into lines (plotly's <br>) of about `width` characters, at the ' · ' between a
    scenario's parts first, else at spaces, so that labels stay level and whole on a phone instead of being
    rotated or cut to 'LoR...'. `label` is already escaped."""
    lines: list[str] = []
    for part in label.split(" · "):
        words = part.split(" ")
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " · " + part
            continue
        lines.append(words[0])
        for word in words[1:]:  # a table row's name ('QLoRA (8-bit)') breaks sooner than a scenario's part
            if len(lines[-1]) + 1 + len(word) <= (width if " · " in label else width - 4):
                lines[-1] += " " + word
            else:
                lines.append(word)
    return "<br>".join(lines)


def _y_top(highest: float, lines: Sequence[Capacity], unit: str) -> float:
    """Axis top: the tallest value, the chosen GPU's line and the first line above the tallest value, so
    lines far above (141 GB over a 10 GB bar) do not flatten the bars; zooming out shows the rest."""
    above = [in_unit(line.bytes, unit) for line in lines if in_unit(line.bytes, unit) >= highest]
    chosen = [in_unit(line.bytes, unit) for line in lines if line.chosen]
    return 1.1 * max(highest, min(above, default=highest), *chosen)


@dataclass(frozen=True)
class End:
    """What a plot holds at its left or right edge, where capacity labels go, in axis units: the end bar's
    top (0 for curves, which start low) and the span of the total written on it."""

    top: float = 0.0
    text: tuple[float, float] = (0.0, 0.0)


def placed_lines(lines: Sequence[Capacity], unit: str, top: float,
                 ends: dict[str, End] | None = None) -> list[tuple[Capacity, str, str]]:
    """(line, side, "above" or "below") for the lines drawn on an axis from 0 to `top`. A label goes at a side
    ("left" or "right", `ends` in order of preference) above its line (below when another line is just above
    it, whose label then goes above that line), the chosen GPU's first, then
    lowest first, choosing in turn a place clear of the labels already placed and of the end bar and its total,
    then one clear of labels and totals (over a bar, on its white background), then one clear of labels only; a
    line whose label has none of these is left out, as is its label (the chosen GPU's keeps its line and goes
    above it). Lines above the axis keep their label above (they show on zooming out)."""
    ends = ends or {"left": End()}
    px = PLOT_PX / top if top > 0 else 0.0
    taken: list[tuple[float, float, str]] = []

    def clear(low: float, high: float, side: str, level: int) -> bool:
        end = ends[side]
        if any(not (high <= a or low >= b) for a, b, _ in taken):  # labels at opposite sides meet on a phone
            return False
        if level < 2 and not (high <= end.text[0] * px or low >= end.text[1] * px):
            return False
        return level > 0 or low >= end.top * px

    out = []
    for line in sorted(lines, key=lambda line: (not line.chosen, line.bytes)):
        y = in_unit(line.bytes, unit) * px
        if y > PLOT_PX:
            out.append((line, next(iter(ends)), "above"))
            continue
        near_above = any(0 < (in_unit(other.bytes, unit) * px) - y < LABEL_PX for other in lines)
        order = (("below", (y - LABEL_PX, y)), ("above", (y, y + LABEL_PX)))  # below when a line is just above
        spots = [(side, where, span) for side in ends for where, span in (order if near_above else order[::-1])
                 if span[0] >= 0 and span[1] <= PLOT_PX + LABEL_PX]
        spot = next(((side, where, span) for level in range(3) for side, where, span in spots
                     if clear(*span, side, level)), None)
        if spot:
            taken.append((*spot[2], spot[0]))
            out.append((line, spot[0], spot[1]))
        elif line.chosen:
            out.append((line, next(iter(ends)), "above"))
    return sorted(out, key=lambda placed: placed[0].bytes)


def _capacity_layout(lines: Sequence[Capacity], unit: str, top: float,
                     ends: dict[str, End] | None) -> tuple[list[dict], list[dict]]:
    """(shapes, labels): each line across the plot and its label inside the plot (`placed_lines`). Built as
    plain layout dicts and handed to plotly once: `add_hline` and `add_annotation` re-validate the figure on
    every call, which made the figures most of a page rerun (benchmarks/RESULTS.md)."""
    shapes, labels = [], []
    for line, side, where in placed_lines(lines, unit, top, ends):
        y, colour = in_unit(line.bytes, unit), CHOSEN_COLOUR if line.chosen else LINE_COLOUR
        shapes.append(dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=y, y1=y,
                           line=dict(color=colour, width=2 if line.chosen else 1,
                                     dash="solid" if line.chosen else "dot")))
        labels.append(dict(xref="x domain", x=0 if side == "left" else 1, xanchor=side, yref="y", y=y,
                           yanchor="bottom" if where == "above" else "top", showarrow=False, borderpad=1,
                           text=html.escape(line.text(unit)), bgcolor=LABEL_BACKGROUND,
                           font=dict(size=11, color=colour)))
    return shapes, labels


def _figure(traces: list[dict], lines: Sequence[Capacity], unit: str, top: float, x_title: str = "",
            annotations: Sequence[dict] = (), xaxis: dict | None = None, ends: dict[str, End] | None = None,
            **layout) -> go.Figure:
    """One figure from trace dicts, the capacity lines and the shared layout, validated by plotly once."""
    shapes, labels = _capacity_layout(lines, unit, top, ends)
    return go.Figure(data=traces, layout=dict(
        height=HEIGHT, margin=dict(l=10, r=10, t=TOOLBAR_PX, b=10), hovermode="closest", legend=LEGEND,
        yaxis=dict(title_text=f"Memory per GPU ({unit})", range=[0, top], rangemode="tozero"),
        xaxis=dict(title_text=x_title, automargin=True, **(xaxis or {})), shapes=shapes,
        annotations=[*annotations, *labels], **layout))


def stacked_bar(bars: Sequence[tuple[str, Breakdown]], unit: str = "GB", lines: Sequence[Capacity] = ()) -> go.Figure:
    """One bar per (label, breakdown), stacked by component in the canonical order, totals on top (inside the
    bar's top where a capacity line would run through them). Bars are keyed by position: same-named bars get
    ' (2)', ' (3)' as the comparison table does. When a row offloads to CPU memory (`Breakdown.host_bytes`: the
    optimizer, parameters or activations), a hatched bar beside its GPU bar shows what moved there."""
    labels = unique_labels([html.escape(label) for label, _ in bars])
    host = [in_unit(b.host_bytes, unit) for _, b in bars]
    group = {"offsetgroup": "gpu"} if any(host) else {}  # the GPU stack left, the CPU bar right of each row
    traces = []
    for name, (label, colour) in COMPONENT_STYLE.items():
        values = [in_unit(b.component(name), unit) for _, b in bars]
        if any(values):
            traces.append(dict(type="bar", name=label, x=labels, y=values, marker=dict(color=colour), **group,
                               hovertemplate=f"%{{x}}<br>{label}: %{{y:,.2f}} {unit}<extra></extra>"))
    shift = 0.0
    if any(host):
        label, colour = HOST_STYLE
        traces.append(dict(type="bar", name=label, x=labels, y=host, offsetgroup="cpu",
                           marker=dict(color=colour, pattern=dict(shape="/")),
                           hovertemplate=f"%{{x}}<br>{label}: %{{y:,.2f}} {unit}<extra></extra>"))
        shift = (1 - BAR_GAP) / 4  # each of the two bars is half the category's bar width
    totals = [in_unit(b.total, unit) for _, b in bars]
    top = _y_top(max([*totals, *host], default=0), lines, unit)
    height = LABEL_PX * top / PLOT_PX if top > 0 else 0.0  # a label's height in axis units
    levels = [in_unit(line.bytes, unit) for line in lines]
    inside = [total >= 2 * height and any(total <= level <= total + height for level in levels) for total in totals]
    # numbers place an annotation on a category axis: category i sits at i (plotly layout.annotations.x)
    on_top = [dict(x=i - shift if shift else label, y=total, text=f"{total:,.1f} {unit}", showarrow=False,
                   bgcolor="white", borderpad=1, font=dict(size=11), yanchor="top" if within else "bottom")
              for i, (label, total, within) in enumerate(zip(labels, totals, inside))]
    on_top += [dict(x=i + shift, y=value, text=f"{value:,.1f}", showarrow=False, font=dict(size=10),
                    yanchor="bottom") for i, value in enumerate(host) if value]
    ends = {}
    if totals:
        for side, i in sorted((("left", 0), ("right", -1)), key=lambda pair: totals[pair[1]]):  # the lower end first
            text = (totals[i] - height, totals[i]) if inside[i] else (totals[i], totals[i] + height)
            ends[side] = End(totals[i], text)
    return _figure(traces, lines, unit, top, annotations=on_top, ends=ends, barmode="stack", bargap=BAR_GAP,
                   xaxis=dict(tickangle=0, tickvals=labels, ticktext=[wrap(label) for label in labels]))


def memory_curve(x: Sequence[int], series: Sequence[tuple[str, Sequence[int]]], x_title: str, unit: str = "GB",
                 lines: Sequence[Capacity] = (), current: int | None = None) -> go.Figure:
    """Total bytes per GPU against `x` (log scale), one line per (label, totals); `current` (one of `x`) is
    marked on every line. The axis stops near three times the chosen GPU (or 1.5 x the current value), where
    the curves cross the capacity lines; far larger values are a zoom-out away."""
    traces = []
    highest = now = 0.0
    for i, (label, totals) in enumerate(series):
        y = [in_unit(t, unit) for t in totals]
        highest = max([highest, *y])
        now = max(now, y[list(x).index(current)] if current in x else 0)
        colour, name = ROW_COLOURS[i % len(ROW_COLOURS)], html.escape(label)
        traces.append(dict(type="scatter", x=list(x), y=y, name=name, mode="lines", line=dict(color=colour, width=2),
                           hovertemplate=f"{name}<br>{x_title} %{{x:,}}: %{{y:,.1f}} {unit}<extra></extra>"))
        if current in x:
            at = y[list(x).index(current)]
            traces.append(dict(type="scatter", x=[current], y=[at], mode="markers", showlegend=False,
                               name=f"{name} (current)", marker=dict(color=colour, size=10, symbol="diamond"),
                               hovertemplate=f"{name}, current {x_title}<br>%{{x:,}}: %{{y:,.1f}} {unit}"
                                             "<extra></extra>"))
    chosen = [in_unit(line.bytes, unit) for line in lines if line.chosen]
    shown = min(highest, max(3 * max(chosen, default=0), 1.5 * now)) or highest  # where the lines cross
    return _figure(traces, lines, unit, _y_top(shown, lines, unit), x_title,  # labels left, where curves start low
                   xaxis=_log_ticks(x))


def _tick(value: int) -> str:
    """Axis text: 131072 -> '128k', 3000 -> '3,000'."""
    return f"{value // 1024}k" if value >= 1024 and value % 1024 == 0 else f"{value:,}"


def _log_ticks(x: Sequence[int]) -> dict:
    """A log axis labelled at the sweep's values, the last always, leaving out a value within 1.4x of the next
    labelled one (32 beside a last value of 36 would print over it on a phone)."""
    kept: list[int] = []
    for value in sorted(x, reverse=True):
        if not kept or kept[-1] >= 1.4 * value:
            kept.append(value)
    kept.reverse()
    return dict(type="log", tickvals=kept, ticktext=[_tick(v) for v in kept])


def speed_curve(x: Sequence[int], per_sequence: Sequence[float], total: Sequence[float], gpu: str,
                current: int | None = None) -> go.Figure:
    """Decode speed against concurrency on one GPU type (log-log): tokens/s of each sequence, which falls as the
    KV cache and the touched experts grow, and over all sequences, which rises until compute bounds it."""
    traces = []
    for i, (label, y) in enumerate((("Per sequence", per_sequence), ("All sequences", total))):
        colour = ROW_COLOURS[i % len(ROW_COLOURS)]
        traces.append(dict(type="scatter", x=list(x), y=list(y), name=label, mode="lines+markers",
                           line=dict(color=colour, width=2), marker=dict(size=5),
                           hovertemplate=f"{label}<br>%{{x:,}} sequences: %{{y:,.1f}} tokens/s<extra></extra>"))
        if current in x:
            traces.append(dict(type="scatter", x=[current], y=[y[list(x).index(current)]], mode="markers",
                               showlegend=False, marker=dict(color=colour, size=11, symbol="diamond"),
                               hoverinfo="skip"))
    fig = go.Figure(traces)
    fig.update_layout(height=HEIGHT, margin=dict(t=30, r=20), legend=dict(orientation="h", y=-0.25),
                      title=dict(text=html.escape(f"Decode speed on {gpu}"), font=dict(size=14)),
                      xaxis=dict(title="Concurrent sequences", **_log_ticks(x)),
                      yaxis=dict(type="log", title="Tokens/s", dtick=1, tickformat=","))  # powers of ten only
    return fig


def validation_scatter(rows: list[dict]) -> go.Figure:
    """Estimated against measured bytes for every traced component (validation/results.csv), log-log, with
    the line where they are equal. Rows are dicts with component, estimate_bytes, measured_bytes, case."""
    fig = go.Figure()
    shown = [r for r in rows if r["estimate_bytes"] > 0 and r["measured_bytes"] > 0]
    for i, name in enumerate(sorted({r["component"] for r in shown})):
        points = [r for r in shown if r["component"] == name]
        fig.add_trace(go.Scatter(
            x=[r["measured_bytes"] / 1e9 for r in points], y=[r["estimate_bytes"] / 1e9 for r in points],
            mode="markers", name=html.escape(name), marker=dict(size=7, color=ROW_COLOURS[i % len(ROW_COLOURS)]),
            text=[html.escape(r["case"]) for r in points],
            hovertemplate="%{text}<br>measured %{x:.4g} GB<br>estimate %{y:.4g} GB<extra></extra>"))
    if shown:
        low = min(min(r["estimate_bytes"], r["measured_bytes"]) for r in shown) / 1e9
        high = max(max(r["estimate_bytes"], r["measured_bytes"]) for r in shown) / 1e9
        fig.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", name="estimate = measured",
                                 line=dict(color=LINE_COLOUR, dash="dot"), hoverinfo="skip"))
    fig.update_layout(height=HEIGHT + 100, xaxis=dict(type="log", title="Measured (GB)"),
                      yaxis=dict(type="log", title="Estimated (GB)"), margin=dict(t=20, r=20),
                      legend=dict(orientation="h", y=-0.2))
    return fig


NOT_RATES = ("ttft_ms", "tpot_ms", "train_mfu")  # speed metrics that are not tokens/s
PHASE_SYMBOLS = {"decode": "circle", "prefill": "square", "throughput": "diamond", "training": "triangle-up"}


def speed_scatter(rows: list[dict]) -> go.Figure:
    """Estimated against measured speed for every compared record (validation/speed_results.csv), log-log, one
    colour per engine and one marker per phase; held-out records hollow. Rows are dicts with id, engine, phase,
    measured, estimated, held_out (text, as the CSV holds them). Rates only: TTFT / TPOT (ms) and MFU (a fraction)
    are in the table, not on the tokens/s axes."""
    fig = go.Figure()
    shown = [r for r in rows if not r["skip"] and r.get("metric") not in NOT_RATES]
    engines = sorted({r["engine"] for r in shown})
    colour = {engine: ROW_COLOURS[i % len(ROW_COLOURS)] for i, engine in enumerate(engines)}
    for engine in engines:  # the legend names the engines (colours); the caption says which marker is which phase
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=html.escape(engine), legendgroup=engine,
                                 marker=dict(size=9, color=colour[engine], symbol="circle"), hoverinfo="skip"))
    for group in sorted({(r["engine"], r["phase"]) for r in shown}):
        points = [r for r in shown if (r["engine"], r["phase"]) == group]
        symbol = PHASE_SYMBOLS.get(group[1], "circle")
        fig.add_trace(go.Scatter(
            x=[float(r["measured"]) for r in points], y=[float(r["estimated"]) for r in points], mode="markers",
            name=html.escape(f"{group[0]} {group[1]}"), text=[html.escape(r["id"]) for r in points],
            legendgroup=group[0], showlegend=False,
            marker=dict(size=9, color=colour[group[0]],
                        symbol=[f"{symbol}-open" if r["held_out"] == "True" else symbol for r in points]),
            hovertemplate="%{text}<br>%{fullData.name}<br>measured %{x:,.1f}<br>estimated %{y:,.1f}<extra></extra>"))
    if shown:
        values = [float(r[k]) for r in shown for k in ("measured", "estimated")]
        low, high = min(values) / 1.5, max(values) * 1.5
        for factor, dash, label in ((1, "dot", "estimate = measured"), (1.2, "dash", "±20%")):
            for i, f in enumerate((factor, 1 / factor) if factor != 1 else (1,)):
                fig.add_trace(go.Scatter(x=[low, high], y=[low * f, high * f], mode="lines", name=label,
                                         showlegend=i == 0, line=dict(color=LINE_COLOUR, dash=dash, width=1),
                                         hoverinfo="skip"))
    fig.update_layout(height=HEIGHT + 100, xaxis=dict(type="log", title="Measured (tokens/s)", dtick=1, tickformat=","),
                      yaxis=dict(type="log", title="Estimated (tokens/s)", dtick=1, tickformat=","),
                      margin=dict(t=20, r=20),
                      legend=dict(orientation="h", y=-0.2))
    return fig


ENGINE_STYLE = {  # the serving engines' components (estimator.engines.ENGINE_COMPONENTS) and the unused headroom;
    # short names, so that the legend packs three to a row on a phone (the hover says more)
    "weights": ("Weights", COMPONENT_STYLE["weights"][1]),
    "vision": ("Vision tower", COMPONENT_STYLE["vision"][1]),
    "lora": ("LoRA slots", COMPONENT_STYLE["master_weights"][1]),
    "activations": ("Activations", COMPONENT_STYLE["activations"][1]),
    "non_torch": ("Non-torch", COMPONENT_STYLE["overhead"][1]),
    "allreduce_buffers": ("All-reduce buffers", COMPONENT_STYLE["reference_model"][1]),
    "cuda_graphs": ("CUDA graphs", COMPONENT_STYLE["optimizer_states"][1]),
    "kv_cache": ("KV cache", COMPONENT_STYLE["kv_cache"][1]),
    "unused": ("Unused", "#EEEEEE"),
}
ENGINE_HOVER = {"lora": "A and B buffers for Max LoRAs adapters of Max LoRA rank",
                "activations": "profiling peak", "non_torch": "NCCL, CUDA libraries, outside PyTorch",
                "allreduce_buffers": "custom / quick all-reduce IPC buffers (ROCm)",
                "unused": "headroom up to the engine's budget"}
ENGINE_BAR_HEIGHT = 270


def engine_bar(report, unit: str = "GB") -> go.Figure:
    """One GPU's memory as a serving engine divides it (a `ServeReport`): one horizontal bar stacked by component,
    then the unused headroom up to the engine's budget, with vertical lines at the budget (dashed) and at the GPU's
    memory (solid)."""
    parts = [*report.per_gpu, ("unused", max(0, report.budget_bytes - report.total))]
    traces = []
    for name, size in parts:
        if not size:
            continue
        label, colour = ENGINE_STYLE.get(name, (name, LINE_COLOUR))
        value, more = in_unit(size, unit), f" ({ENGINE_HOVER[name]})" if name in ENGINE_HOVER else ""
        traces.append(dict(type="bar", orientation="h", name=label, x=[value], y=[""], marker=dict(
            color=colour, line=dict(color="#BAB0AC", width=1) if name == "unused" else dict(width=0)),
            hovertemplate=f"{label}{more}: {value:,.2f} {unit}<extra></extra>"))
    budget, gpu = in_unit(report.budget_bytes, unit), in_unit(report.gpu_bytes, unit)
    top = 1.03 * max(in_unit(report.total, unit), budget, gpu)
    # the lines are named in the legend rather than labelled on the plot: the budget sits close to the GPU's line
    # (90% of it for vLLM), where two labels would overlap on a phone; the GPU's name is above the chart
    shapes = [dict(type="line", xref="x", x0=x, x1=x, yref="paper", y0=0, y1=1, name=name, showlegend=True,
                   line=dict(color=CHOSEN_COLOUR, width=2, dash=dash))
              for x, name, dash in ((budget, f"Budget {budget:,.1f} {unit}", "dash"),
                                    (gpu, f"GPU {gpu:,.1f} {unit}", "solid"))]
    return go.Figure(data=traces, layout=dict(
        height=ENGINE_BAR_HEIGHT, margin=dict(l=10, r=10, t=10, b=10), barmode="stack", bargap=0.3,
        hovermode="closest", shapes=shapes, xaxis=dict(range=[0, top], ticksuffix=f" {unit}", rangemode="tozero"),
        yaxis=dict(visible=False), legend=dict(orientation="h", yanchor="top", y=-0.12, xanchor="left", x=0,
                                               title_text="", traceorder="normal", entrywidth=105)))
