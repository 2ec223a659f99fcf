"""Compare: up to six scenarios added from the estimate pages, side by side.

One table (rows = memory components, totals and GPU fit; columns = scenarios) and one stacked bar chart, one
bar per scenario (same-named scenarios get ' (2)', as in the table).
Scenarios can be renamed, opened again on their page, removed, and exported as CSV or JSON.
"""

import json

import streamlit as st

from estimator import catalog
from ui import charts, chrome, form, links, results, state, tables
from ui.text import escape

PAGE = "compare"
PAGE_FILES = {"inference": "views/inference.py", "finetune": "views/finetune.py"}


def remove(uid: int) -> None:
    state.compare_items()[:] = [item for item in state.compare_items() if item.uid != uid]


def open_on_its_page(item: links.Item) -> None:
    state.page_state(item.page).update(item.state)
    st.switch_page(PAGE_FILES[item.page], query_params=state.link_params(item.page))  # one history entry


slot = chrome.header(PAGE, "Compare scenarios", "Scenarios added with \"Add to comparison\" on the Inference and "
                                                "Fine-tuning pages, side by side; sizes per GPU.")
items = state.compare_items()
if not items:
    st.info("Nothing to compare yet. On the Inference or Fine-tuning page, pick a row and press "
            "**Add to comparison** (up to six scenarios).", icon=":material/add_chart:")
    for name in PAGE_FILES:
        title, icon = state.TITLES[name]
        st.page_link(PAGE_FILES[name], label=title, icon=icon, query_params=state.link_params(name))
else:
    gpu_col, _, unit_col = st.columns([2, 3, 1], vertical_alignment="bottom")
    with gpu_col:
        gpu_id = form.target_gpu(PAGE)
    with unit_col:
        unit = form.unit(PAGE)
    estimates, problems = {}, {}  # by item uid: (automatic name, Breakdown, GpuFit), or the error's words
    for item in items:
        try:
            estimates[item.uid] = results.compared(item.page, item.state, gpu_id)
        except ValueError as err:
            problems[item.uid] = str(err)
    for item in items:  # apply renames first, so the table shows them in this run
        typed = st.session_state.get(f"compare.name.{item.uid}")
        if typed is not None and item.uid in estimates:
            item.name = "" if typed.strip() in ("", estimates[item.uid][0]) else links.clean_scenario_name(typed)
    names = {item.uid: item.name or (estimates[item.uid][0] if item.uid in estimates else f"Scenario {item.uid}")
             for item in items}
    valid = [item for item in items if item.uid in estimates]
    entries = [(names[item.uid], *estimates[item.uid][1:]) for item in valid]
    frame = tables.comparison_frame(entries, unit)
    if entries:
        st.dataframe(frame, height=35 * (len(frame) + 1) + 3)  # every row visible
        labels = charts.unique_labels([name for name, _, _ in entries])  # as the table's columns: by item
        results.bar_chart(list(zip(labels, [b for _, b, _ in entries])),
                          lambda: [(label, *results.compared_spread(item.page, item.state, gpu_id))
                                   for label, item in zip(labels, valid)],
                          unit, charts.capacity_lines(catalog.gpus(), gpu_id), "compare.bars", gpu_id)

    st.subheader("Scenarios")
    st.caption("Type over a name to rename it (empty: the automatic name). Open loads a scenario's inputs on its "
               "page, to change them and add it again.")
    for item in items:
        name_col, open_col, remove_col = st.columns([6, 1, 1], vertical_alignment="bottom")
        key = f"compare.name.{item.uid}"
        if key not in st.session_state:
            st.session_state[key] = names[item.uid]
        name_col.text_input(f"Name of scenario {item.uid}", key=key, max_chars=links.MAX_SCENARIO_NAME_CHARS,
                            label_visibility="collapsed")
        if item.uid in problems:
            name_col.error(f"This scenario cannot be estimated: {escape(problems[item.uid])}. Open it to fix its "
                           "inputs, or remove it.", icon=":material/error:")
        if open_col.button("Open", key=f"compare.open.{item.uid}", help="Load these inputs on their page",
                           width="stretch"):
            open_on_its_page(item)
        remove_col.button("Remove", key=f"compare.remove.{item.uid}", on_click=remove, args=(item.uid,),
                          width="stretch")

    links = [links.encode(item.page, item.state, state.view()) for item in valid]
    csv_col, json_col, clear_col = st.columns(3)
    csv_col.download_button("Download CSV", tables.csv_text(frame), file_name="comparison.csv", mime="text/csv",
                            icon=":material/download:", on_click="ignore", width="stretch", disabled=not entries)
    json_col.download_button("Download JSON", json.dumps(tables.comparison_records(entries, links), indent=2),
                             file_name="comparison.json", mime="application/json", icon=":material/download:",
                             on_click="ignore", width="stretch", disabled=not entries)
    clear_col.button("Remove all", on_click=lambda: state.compare_items().clear(), icon=":material/delete:",
                     width="stretch")
chrome.footer(PAGE, slot)
