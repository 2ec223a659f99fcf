"""What every estimate shows, on both estimate pages: the scenario table and its stacked bar, "Add to
comparison", GPU fit with the limits on a target GPU, memory curves, and the assumptions in words.

The estimator calls are cached per inputs (`st.cache_data`), so a rerun that only changes the unit, the
row or the target GPU recomputes nothing it already has.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from estimator import catalog, fit, fit_table, max_concurrency, max_seq_len, sweep
from estimator.hardware import with_gpus
from estimator.speed import row_speed, servers
from estimator.units import in_unit
from ui import charts, chrome, form, links, state, tables
from ui.text import escape, markdown_table

SEQ_SWEEP_FLOOR = 32_768  # curves reach at least this length (or the model's trained context, if longer)
SEQ_SWEEP_CEILING = 1_048_576
LOAD_FIELD = {"inference": ("concurrency", "Concurrency", 64),
              "finetune": ("batch_size", "Batch size", 32)}  # input, axis title, x reach


def _scenario_rows(page: str, inputs: dict):
    s = links.scenario_of(page, inputs)
    return s, tables.table_rows(page, s, inputs.get("weights"))


@st.cache_data(max_entries=256, show_spinner=False)
def estimate(page: str, inputs: dict) -> list[tuple[tables.TableRow, object]]:
    """(row, Breakdown) for every row of the page's table; ValueError for invalid inputs."""
    s, rows = _scenario_rows(page, inputs)
    return [(row, row.fn(s)) for row in rows]


@st.cache_data(max_entries=128, show_spinner=False)
def fits(page: str, inputs: dict, row_key: str, gpu_ids: tuple[str, ...]) -> list:
    """GpuFit of the row on each of the GPUs `gpu_ids`."""
    s, rows = _scenario_rows(page, inputs)
    return fit_table(s, tables.selected_row(rows, row_key).fn, [catalog.gpu(gpu_id) for gpu_id in gpu_ids])


def fit_gpu_ids(page: str, target: str) -> tuple[str, ...]:
    """The GPUs of the fit table: the featured ones and the target, or all of them when the toggle asks."""
    every = st.toggle(f"All {len(catalog.gpus())} GPUs", key=f"{page}.all_gpus",
                      help="By default the table lists the common GPUs and the target GPU; this lists every "
                           "catalog GPU (consumer, workstation, datacenter and Apple silicon).")
    return tuple(g.id for g in catalog.gpus() if every or g.featured or g.id == target)


@st.cache_data(max_entries=128, show_spinner=False)
def limits(page: str, inputs: dict, row_key: str, gpu_id: str):
    """(GpuFit on the target GPU, longest sequence, most concurrent requests) at the fewest GPUs that fit."""
    s, rows = _scenario_rows(page, inputs)
    row, gpu = tables.selected_row(rows, row_key), catalog.gpu(gpu_id)
    placed = fit(s, row.fn, gpu)
    if placed.count is None:
        return placed, 0, 0
    spread = with_gpus(s, placed.count)
    most = max_concurrency(spread, row.fn, gpu.memory_bytes) if page == "inference" else 0
    return placed, max_seq_len(spread, row.fn, gpu.memory_bytes), most


@st.cache_data(max_entries=128, show_spinner=False)
def compared(page: str, inputs: dict, gpu_id: str):
    """(automatic name, Breakdown, GpuFit on the target GPU) of a compared scenario's selected row;
    ValueError when its inputs are not a valid scenario."""
    s, rows = _scenario_rows(page, inputs)
    row = tables.selected_row(rows, inputs[links.ROW[page]])
    name = tables.describe(page, links.model_name(inputs), inputs, row.label)
    return name, row.fn(s), fit(s, row.fn, catalog.gpu(gpu_id))


@st.cache_data(max_entries=128, show_spinner=False)
def row_fits(page: str, inputs: dict, gpu_id: str) -> dict[str, object]:
    """GpuFit of every row on the target GPU, by row key."""
    s, rows = _scenario_rows(page, inputs)
    gpu = catalog.gpu(gpu_id)
    return {row.key: fit(s, row.fn, gpu) for row in rows}


def spread_over(s, fn, placed) -> tuple[str, object | None]:
    """(how, Breakdown per GPU) of a row spread over the fewest GPUs that hold it (`placed`, its GpuFit): '8 x
    H200' with the scenario's own sharding, '16 x RTX 4090, ZeRO-3' when training fits only that way; ('does
    not fit on ...', None) when no count does."""
    name = charts.short_gpu_name(placed.gpu.name)
    if placed.count is not None:
        return f"{placed.count} x {name}", fn(with_gpus(s, placed.count))
    zero3 = getattr(placed, "zero3_count", None)
    if zero3:
        return f"{zero3} x {name}, ZeRO-3", fn(with_gpus(s, zero3, 3))
    return f"does not fit on {name}", None


@st.cache_data(max_entries=64, show_spinner=False)
def spread(page: str, inputs: dict, gpu_id: str) -> list[tuple[str, str, object | None]]:
    """(row short name, how, Breakdown per GPU or None) of every row on the fewest target GPUs that hold it."""
    s, rows = _scenario_rows(page, inputs)
    placed = row_fits(page, inputs, gpu_id)
    return [(row.short, *spread_over(s, row.fn, placed[row.key])) for row in rows]


@st.cache_data(max_entries=128, show_spinner=False)
def compared_spread(page: str, inputs: dict, gpu_id: str) -> tuple[str, object | None]:
    """`spread_over` for a compared scenario's selected row on the target GPU."""
    s, rows = _scenario_rows(page, inputs)
    row = tables.selected_row(rows, inputs[links.ROW[page]])
    return spread_over(s, row.fn, fit(s, row.fn, catalog.gpu(gpu_id)))


def _speed_row(page: str, inputs: dict, row_key: str) -> str:
    """The row (or format) `estimator.speed.row_speed` takes: the extra weight-format row is its format."""
    return inputs["weights"] if page == "inference" and row_key == "custom" else row_key


@st.cache_data(max_entries=64, show_spinner=False)
def speeds(page: str, inputs: dict, row_key: str) -> list[tuple[object, int | None, object | None]]:
    """(GPU, GPUs the row needs, its speed on that many) for every catalog GPU (no speed where it does not fit)."""
    s, rows = _scenario_rows(page, inputs)
    fn, name = tables.selected_row(rows, row_key).fn, _speed_row(page, inputs, row_key)
    out = []
    for gpu in catalog.gpus():
        placed = fit(s, fn, gpu)
        rate = row_speed(with_gpus(s, placed.count), name, gpu) if placed.count is not None else None
        out.append((gpu, placed.count, rate))
    return out


@st.cache_data(max_entries=64, show_spinner=False)
def speed_sweep(inputs: dict, row_key: str, gpu_id: str, placed_count: int, most: int) -> tuple[list[int], list, list]:
    """Decode tokens/s per sequence and over all sequences against concurrency, on `placed_count` target GPUs, up
    to the `most` concurrent requests their memory holds."""
    s, _ = _scenario_rows("inference", inputs)
    s, gpu, name = with_gpus(s, placed_count), catalog.gpu(gpu_id), _speed_row("inference", inputs, row_key)
    x = tables.sweep_values(min(inputs["concurrency"], most), 1, most)
    rates = [row_speed(replace(s, concurrency=c), name, gpu) for c in x]
    return x, [r.decode_tokens_per_s for r in rates], [r.throughput_tokens_per_s for r in rates]


def _speed_tab(page: str, inputs: dict, view: dict, row: str) -> None:
    """Speed of the selected row on every catalog GPU (at the count that holds it), and on the target GPU the
    decode speed against concurrency (inference)."""
    entries = speeds(page, inputs, row)
    if all(rate is None for _, _, rate in entries):
        st.info("Speed needs the architecture: choose a catalog model or a config.json.", icon=":material/speed:")
        return
    frame = tables.speed_frame(entries, training=page == "finetune")
    formats = {col: st.column_config.NumberColumn(format="%.3f" if col in ("TTFT (s)", "Step (s)") else "%,.1f")
               for col in frame.columns if col not in ("GPU", "GPUs")}
    st.dataframe(frame, hide_index=True, column_config=formats, height=300)
    st.caption("The GPUs that hold the row first, lowest memory bandwidth first: the first line that meets your "
               "target speed is the least capable card that does. Each on the GPUs the selected row needs (GPU fit)"
               + ("; a count past one server (\"16 (2 servers)\") takes the GPU's own link between servers, faster "
                  "than their network, so its decode speed is an upper bound."
                  if page == "inference" and any(n and servers(g, n) > 1 for g, n, _ in entries) else "."))
    target = next((e for e in entries if e[0].id == view["gpu"]), None)
    if page == "inference" and target is not None and target[1] is not None:
        most = limits(page, inputs, row, view["gpu"])[2]
        if most >= 1:
            x, per_sequence, total = speed_sweep(inputs, row, view["gpu"], target[1], most)
            name = charts.short_gpu_name(target[0].name)
            st.plotly_chart(charts.speed_curve(x, per_sequence, total, name, inputs["concurrency"]),
                            config={"displaylogo": False}, key=f"{page}.speed.curve")
            st.caption(f"Up to {most:,} concurrent requests of {inputs['seq_len']:,} tokens, the most that "
                       f"{target[1]} x {escape(name)} hold; each sequence at its full length (the slowest step).")
    rate = target[2] if target is not None and target[2] is not None else next(r for _, _, r in entries if r)
    with st.expander("How the speed is estimated", icon=":material/speed:"):  # on the target GPU when it fits
        st.markdown("\n".join(f"- {escape(note)}" for note in rate.assumptions))
        st.caption("A roofline per phase with efficiencies derived from published measurements (Methodology page, "
                   "Speed); the same numbers as `python -m estimator ... --gpu ID --json`.")


def out_of_range(totals: list[int], lines: list) -> bool:
    """True when no GPU drawn on the chart holds any bar: every line would sit flat at the bottom of the axis."""
    return bool(totals and lines) and min(totals) > max(line.bytes for line in lines)


def bar_chart(bars: list[tuple[str, object]], spread_bars, unit: str, lines: list, key: str, gpu_id: str) -> None:
    """The stacked bar chart of `bars` (label, Breakdown). When no GPU on the chart holds any bar, the bars are
    one GPU's share on the fewest target GPUs that hold each (`spread_bars()`: (label, how, Breakdown or None)),
    as the GPU fit computes it, so the chart stays readable; a caption says so."""
    config = {"displaylogo": False}
    if not out_of_range([b.total for _, b in bars], lines):
        st.plotly_chart(charts.stacked_bar(bars, unit, lines), config=config, key=key)
        return
    shared, gpu = spread_bars(), escape(charts.short_gpu_name(catalog.gpu(gpu_id).name))
    held = [(f"{label} · {how}", b) for label, how, b in shared if b is not None]
    smallest = f"the smallest needs {min(in_unit(b.total, unit) for _, b in bars):,.1f} {unit}"
    if not held:
        st.plotly_chart(charts.stacked_bar(bars, unit, lines), config=config, key=key)
        st.caption(f"No single GPU on the chart holds any of these ({smallest}), and no number of {gpu} does "
                   "either: a larger target GPU shows how they would be split.")
        return
    st.plotly_chart(charts.stacked_bar(held, unit, lines), config=config, key=key)
    missing = [f"{escape(label)} ({escape(how)})" for label, how, b in shared if b is None]
    st.caption(f"No single GPU on the chart holds any of these ({smallest}), so each bar is one GPU's share on "
               f"the fewest {gpu} that hold it, with the same sharding as GPU fit. "
               + (f"Not drawn: {', '.join(missing)}. " if missing else "") + "The table above is for one GPU.")


@st.cache_data(max_entries=128, show_spinner=False)
def curves(page: str, inputs: dict) -> dict[str, tuple[list[int], list[tuple[str, list[int]]]]]:
    """Totals per row against sequence length and against concurrency (inference) or batch size."""
    s, rows = _scenario_rows(page, inputs)
    trained = getattr(s.model, "max_position_embeddings", 0)
    top = min(max(SEQ_SWEEP_FLOOR, 2 * s.seq_len, trained), SEQ_SWEEP_CEILING)
    field, _, reach = LOAD_FIELD[page]
    out = {}
    for name, x in (("seq_len", tables.sweep_values(s.seq_len, 256, top)),
                    (field, tables.sweep_values(inputs[field], 1, min(max(reach, 2 * inputs[field]),
                                                                      links.fields(page)[field].high)))):
        out[name] = (x, [(row.short, [b.total for b in sweep(s, row.fn, name, x)]) for row in rows])
    return out


def decimals(frame: pd.DataFrame, unit: str) -> dict[str, int]:
    """Decimal places of the size columns: totals 0.1 of the unit, components 0.01 (their headers carry no
    unit, to stay short)."""
    places = {col: 1 for col in frame.columns if col.endswith(f"({unit})")}
    places.update({label: 2 for label, _ in charts.COMPONENT_STYLE.values() if label in frame.columns})
    return places


def number_columns(frame: pd.DataFrame, unit: str) -> dict:
    """The `decimals` of the size columns as grid column formats."""
    return {col: st.column_config.NumberColumn(format=f"%.{places}f") for col, places in decimals(frame, unit).items()}


def render(page: str) -> None:
    """Everything below the form: table, chart, comparison button, GPU fit, curves, assumptions."""
    inputs, view = state.page_state(page), state.view()
    if links.waiting_for_model(inputs):
        st.info(links.waiting_for_model(inputs), icon=":material/upload_file:")
        return
    try:
        rows = estimate(page, inputs)
    except ValueError as err:
        if _field_problem(page, inputs, str(err)):  # the form already names it under the field
            st.info("No estimate until the field marked in red is in range.", icon=":material/error:")
        else:
            st.error(escape(str(err)), icon=":material/error:")
        return
    top_left, top_right = st.columns([4, 1], vertical_alignment="bottom")
    with top_right:
        unit = form.unit(page)
    top_left.caption(_method_note(page, inputs, rows[0][1].method))
    frame = tables.scenario_frame([(row.label, b) for row, b in rows], unit)
    st.markdown(markdown_table(frame, decimals(frame, unit)))  # static: a grid costs ~200 ms a rerun to draw
    phases = tables.phase_line([(row.label, b) for row, b in rows])
    if phases:
        st.caption(escape(phases))
    selected = _controls(page, inputs, [row for row, _ in rows])
    _headline(page, inputs, rows, selected, view["gpu"], unit)
    lines = charts.capacity_lines(catalog.gpus(), view["gpu"])
    bar_chart([(row.short, b) for row, b in rows], lambda: spread(page, inputs, view["gpu"]), unit, lines,
              f"{page}.bars", view["gpu"])
    _gpu_tabs(page, inputs, view, selected, unit, lines)
    with st.expander("Assumptions", icon=":material/info:"):
        notes = [*next(b for row, b in rows if row.key == selected).assumptions,
                 "Sizes are per GPU, in GB = 10^9 bytes (GiB = 2^30 bytes when selected)",
                 "GPU capacities are the memory a framework can allocate (e.g. 24 GiB = 25.8 GB on a '24 GB' card)"]
        st.markdown("\n".join(f"- {escape(note)}" for note in notes))


def _field_problem(page: str, inputs: dict, error: str) -> bool:
    """Whether the estimate's error is a form field's out-of-range message (`form.number` shows it there)."""
    problems = (spec.out_of_range(inputs.get(name)) for name, spec in links.fields(page).items())
    return error.lower() in {problem.lower() for problem in problems if problem}


def _headline(page: str, inputs: dict, rows: list, selected: str, gpu_id: str, unit: str) -> None:
    """The answer in three lines at the top of the page (`chrome.headline_slot`), shown on narrow screens only,
    where the form would otherwise fill the first screen: the selected row's total, whether the target GPU holds
    it, and every row's total."""
    slot = chrome.headline_slot()
    if slot is None:
        return
    row, b = next((row, b) for row, b in rows if row.key == selected)
    placed = row_fits(page, inputs, gpu_id)[selected]
    with slot.container(key=f"{chrome.HEADLINE_KEY}-{page}", border=True):
        st.metric(f"{row.label}, per GPU", f"{in_unit(b.total, unit):,.1f} {unit}")
        fits_on = ("fits on " if placed.count is not None else "") + tables.fit_text(placed)
        others = " · ".join(f"{escape(r.short)} {in_unit(x.total, unit):,.1f}" for r, x in rows)
        st.caption(f"{escape(fits_on)}. All rows ({unit}): {others}. Table, charts and GPU fit are below the form.")


def _method_note(page: str, inputs: dict, method: str) -> str:
    if method == "quick":
        source = "the parameter count" if inputs["src"] == "params" else escape(links.model_name(inputs))
        return (f"**Quick method** (the reference document's rule of thumb) for {source}. "
                "Pick a catalog model or a config.json for the architecture-aware estimate.")
    return f"**Detailed method** from the architecture of {escape(links.model_name(inputs))}."


def _controls(page: str, inputs: dict, rows: list[tables.TableRow]) -> str:
    """Row and target GPU pickers and the "Add to comparison" button; the selected row key."""
    labels, name = {row.key: row.label for row in rows}, links.ROW[page]
    if inputs[name] not in labels:  # e.g. the extra weight-format row was just removed
        inputs[name] = next(iter(labels))
        st.session_state[f"{page}.{name}"] = inputs[name]
    pick_row, pick_gpu, add = st.columns([2, 2, 1.3], vertical_alignment="bottom")
    with pick_row:
        widget_key, now = state.bind(page, name)
        if now not in labels:  # the widget kept a row of the previous table (quick rows before a catalog model)
            now = st.session_state[widget_key] = inputs[name]
        row = st.selectbox("Row for GPU fit and comparison", tuple(labels), index=tuple(labels).index(now),
                           format_func=labels.get, key=widget_key)
        inputs[name] = row
    with pick_gpu:
        form.target_gpu(page)
    with add:
        full = len(state.compare_items()) >= links.MAX_COMPARE
        st.button("Add to comparison", icon=":material/add_chart:", disabled=full, key=f"{page}.add",
                  on_click=_add_to_compare, args=(page,), width="stretch",
                  help=f"Compare holds up to {links.MAX_COMPARE} scenarios; remove one there first" if full else
                  "Adds the selected row with all inputs to the Compare page")
    return row


def _add_to_compare(page: str) -> None:
    """Button callback: it runs before the page, so the page already shows the new count (and a full list)."""
    try:
        state.add_to_compare(page)
    except ValueError as err:
        st.toast(f"Not added: {escape(str(err))}", icon=":material/error:")
        return
    st.toast(f"Added to the comparison ({len(state.compare_items())} of {links.MAX_COMPARE}).",
             icon=":material/check:")


def _fit_summary(page: str, inputs: dict, placed, longest: int, most: int, unit: str) -> None:
    """How many target GPUs the row needs, the headroom, and the longest sequence / most requests that fit."""
    name = charts.short_gpu_name(placed.gpu.name)
    if placed.count is None:
        st.metric(f"{name} needed", "does not fit")
        why = f" ({escape(placed.note)})" if placed.note else ""  # e.g. "fine-tuning runs on one Mac"
        st.caption(f"No number of {name} that the estimator tries holds the selected row{why}.")
        return
    first, second = st.columns(2), st.columns(2)
    device = "Mac" if placed.gpu.kind == "apple" else "GPU"  # Macs combine over Thunderbolt 5, each its own machine
    first[0].metric(f"{name} needed", f"{placed.count} {device}{'s' if placed.count != 1 else ''}")
    first[1].metric(f"Headroom per {device}", f"{in_unit(placed.headroom_bytes, unit):,.1f} {unit}")
    second[0].metric("Longest sequence", f"{longest:,} tokens")
    if page == "inference":
        second[1].metric("Most concurrent requests", f"{most:,}")
    trained = getattr(links.model_of(inputs), "max_position_embeddings", 0)
    beyond = f" The model was trained for {trained:,} tokens." if 0 < trained < longest else ""
    st.caption(f"On {tables.fit_text(placed)}, the fewest that hold the selected row, with the other inputs as "
               f"set.{beyond}")


def _gpu_tabs(page: str, inputs: dict, view: dict, row: str, unit: str, lines: list) -> None:
    """GPU fit and the two memory curves, in tabs that track which one is open (`on_change="rerun"`), so a
    rerun computes and draws only the open one: hidden tabs would otherwise cost their sweeps, figures and
    browser renders on every change."""
    field, load_title, _ = LOAD_FIELD[page]
    tab_key = f"{page}.tab"
    fit_tab, speed_tab, seq_tab, load_tab = st.tabs(
        ["GPU fit", "Speed", "Memory vs sequence length", f"Memory vs {load_title.lower()}"],
        key=tab_key, default=st.session_state.get(tab_key), on_change="rerun")
    if speed_tab.open:
        with speed_tab:
            _speed_tab(page, inputs, view, row)
    if fit_tab.open:
        with fit_tab:
            placed, longest, most = limits(page, inputs, row, view["gpu"])
            _fit_summary(page, inputs, placed, longest, most, unit)
            frame = tables.fit_frame(fits(page, inputs, row, fit_gpu_ids(page, view["gpu"])), unit)
            st.dataframe(frame, hide_index=True, column_config=number_columns(frame, unit), height=300)
    for tab, name, title, current in ((seq_tab, "seq_len", "Sequence length", inputs["seq_len"]),
                                      (load_tab, field, load_title, inputs[field])):
        if tab.open:
            with tab:
                x, series = curves(page, inputs)[name]
                st.plotly_chart(charts.memory_curve(x, series, title, unit, lines, current),
                                config={"displaylogo": False}, key=f"{page}.curve.{name}")
                st.caption("Per GPU, other inputs as set; the diamonds mark the current value. Double-click the "
                           "chart to see curves that run above it.")
