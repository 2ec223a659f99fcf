"""'What would make it fit': when the selected row does not fit the target GPU with the page's own settings,
one line naming the mildest change that fits (estimator.advice) and every change with its memory per GPU."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from estimator import catalog
from estimator.advice import best, finetune_advice, inference_advice
from estimator.finetune import estimate_finetune
from estimator.hardware import fit
from estimator.inference import estimate_inference, inference_rows
from estimator.units import in_unit
from ui import charts, links, state, tables
from ui.text import escape


@st.cache_data(max_entries=64, show_spinner=False)
def suggestions(page: str, inputs: dict, row_key: str, gpu_id: str):
    """(label of the row, its GpuFit, the suggestions) for the page's selected row on `gpu_id`; ValueError for
    inputs that make no scenario."""
    s, gpu = links.scenario_of(page, inputs), catalog.gpu(gpu_id)
    rows = tables.table_rows(page, s, inputs.get("weights"))
    row = tables.selected_row(rows, row_key)
    if page == "finetune":
        s = replace(s, technique=row.key)
        return row.label, fit(s, estimate_finetune, gpu), finetune_advice(s, gpu)
    own = dict(inference_rows(s))
    if row.key == "custom":
        own = {**own, "custom": estimate_inference}
    labelled = [(key, fn) for key, fn in own.items()]
    return row.label, fit(s, row.fn, gpu), inference_advice(s, labelled, row.key, gpu)


def _selected(page: str, name: str, saved: object) -> object:
    """A widget's value in this run, or the saved one before the widget is drawn (the advice is drawn above it)."""
    return st.session_state.get(f"{page}.{name}", saved)


def _fits_text(tip) -> str:
    if not tip.fits:
        return "does not fit"
    return "fits" + (f" on {tip.fit.count} GPUs" if tip.fit.count > 1 else "")


def render(page: str) -> None:
    """Nothing when the row fits; otherwise the warning line and the table of changes."""
    inputs, view = state.page_state(page), state.view()
    if links.waiting_for_model(inputs):
        return
    row_key = _selected(page, links.ROW[page], inputs[links.ROW[page]])
    gpu_id = _selected(page, "gpu", view["gpu"])
    try:
        label, placed, tips = suggestions(page, inputs, row_key, gpu_id)
    except (ValueError, KeyError):
        return  # the page's own error box says why
    if placed.count is not None:
        return
    unit, name = view["unit"], charts.short_gpu_name(placed.gpu.name)

    def size(num_bytes: int) -> str:
        return f"{in_unit(num_bytes, unit):,.1f} {unit}"

    top = best(tips)
    # plain text: warnings carry no Markdown of their own, so anything left in them is escaped user text
    head = (f"{escape(label)} does not fit on {escape(name)} with these settings: {size(placed.per_gpu_bytes)} "
            f"per GPU, {size(placed.gpu.memory_bytes)} usable.")
    if top is None:
        st.warning(head + " No change the estimator tries makes it fit.", icon=":material/warning:")
        return
    where = f" on {top.fit.count} GPUs" if top.fit.count > 1 else ""
    st.warning(f"{head} Mildest change that fits: {escape(top.change)}: {size(top.fit.per_gpu_bytes)} per "
               f"GPU{where}.", icon=":material/lightbulb:")
    with st.expander(f"What would make it fit ({len(tips)} changes, each computed)", icon=":material/build:"):
        st.markdown("\n".join(f"- {escape(tip.change)}: **{size(tip.fit.per_gpu_bytes)}** per GPU, {_fits_text(tip)}"
                               for tip in tips))  # a list: the page's only table stays the estimate
        st.caption("Each line changes one input of the selected row (the last, when there is one, several), with "
                   "the other inputs as set; memory per GPU at the fewest GPUs that hold it.")
