"""Inputs in the Streamlit session, and the share link that mirrors them.

On the first run of a session the URL is decoded (`ui.links`) into the session: each estimate page's
inputs, the view settings (unit, target GPU) and the comparison set. Widgets are then bound to that state:
`bind` seeds a widget from it whenever the widget has no value yet (first render, or back from another page,
since Streamlit drops the values of widgets it did not render), and the page writes the widget's value back.
At the end of every run `sync_url` writes the link for what is on screen into the address bar.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import streamlit as st

from ui import links

PAGES, VIEW, COMPARE, WARNINGS, SHOWN = "_pages", "_view", "_compare", "_link_warnings", "_shown_page"
GGUF_FILES = "_gguf_files"  # key -> links.GgufFile: the .gguf files this session opened (ui/gguf_file.py)
# Title and icon of each page (the navigation and app.py's st.Page)
TITLES = {"inference": ("Inference", ":material/bolt:"), "finetune": ("Fine-tuning", ":material/model_training:"),
          "compare": ("Compare", ":material/compare_arrows:"), "methodology": ("Methodology", ":material/menu_book:")}
# URL path of each page (kept: shared links carry them). The page files live in views/, not pages/: with a pages/
# folder Streamlit runs the first request of a fresh server in its old multipage mode, which does not know these
# paths and shows "Page not found" over the page (streamlit PagesManager.uses_pages_directory).
URL_PATHS = {"inference": "", "finetune": "fine-tuning", "compare": "comparison", "methodology": "how-it-works"}
VIEW_KEYS = set(links.VIEW_FIELDS)


def load_link(landing_page: str) -> str:
    """Read the URL into a new session; the page the link asks for (else `landing_page`)."""
    ss = st.session_state
    if PAGES in ss:
        return landing_page
    link = links.decode(st.query_params.to_dict(), landing_page)
    ss[PAGES] = {page: links.defaults(page) for page in links.ESTIMATE_PAGES}
    if link.state is not None:
        ss[PAGES][link.page] = link.state
    ss[VIEW] = link.view
    ss[COMPARE] = link.compare
    ss[WARNINGS] = link.warnings
    return link.page


def enter(page: str) -> None:
    """Start a run of `page`. Coming from another page, drop this page's widget values left from its last
    visit, so its widgets are seeded again from the saved state (the view settings may have changed since)."""
    ss = st.session_state
    if PAGES not in ss:  # a page run without app.py (a page file run on its own): still read the link
        load_link(page)
    for key, file in ss.get(GGUF_FILES, {}).items():  # the shared registry is bounded: this session's files back
        links.add_gguf_file(file, key)
    if ss.get(SHOWN) != page:
        for key in [key for key in ss if isinstance(key, str) and key.startswith(f"{page}.")]:
            del ss[key]
        ss[SHOWN] = page


def page_state(page: str) -> dict:
    """The inputs of an estimate page ("inference" or "finetune")."""
    return st.session_state[PAGES][page]


def view() -> dict:
    """Settings shared by every page: unit and target GPU."""
    return st.session_state[VIEW]


def compare_items() -> list[links.Item]:
    return st.session_state[COMPARE]


def add_to_compare(page: str) -> None:
    """Append a copy of the page's current inputs (its selected row included) to the comparison; ValueError,
    adding nothing, when they do not make a valid scenario (the inputs can change between the page's last run
    and the click: a fast click after switching to an empty config.json)."""
    inputs = dict(page_state(page))
    links.scenario_of(page, inputs)
    items = compare_items()
    items.append(links.Item(page, inputs, uid=max((i.uid for i in items), default=0) + 1))


def take_warnings() -> list[str]:
    """The link's warnings, once: they belong to the run that opened the link."""
    return st.session_state.pop(WARNINGS, [])


def bind(page: str, key: str, to_widget: Callable[[object], object] = lambda value: value) -> tuple[str, object]:
    """The widget key for input `key` on `page`, seeded from the saved state (the page's inputs, or the view
    settings for "unit" and "gpu"), and the widget's current value. Each page has its own widget keys, even
    for the shared view settings: Streamlit does not carry a widget's value over to a widget with the same
    key on another page.

    Pages pass that value as the widget's default too. The browser can mount a widget after a later run has
    sent its element (a slow first load, a click before the whole form is drawn); such a widget starts from
    the element's default and sends it back on the next change, so a default other than the value would
    silently reset it (seen in the browser tests: flash attention off, the target GPU back to the first)."""
    widget_key = f"{page}.{key}"
    if widget_key not in st.session_state:
        saved = view() if key in VIEW_KEYS else page_state(page)
        st.session_state[widget_key] = to_widget(saved[key])
    return widget_key, st.session_state[widget_key]


def link_params(page: str) -> dict[str, str]:
    """The share link's parameters of `page` as this session has it (its inputs, the view, the comparison)."""
    return links.encode(page, page_state(page) if page in links.ESTIMATE_PAGES else None, view(), compare_items())


def sync_url(page: str) -> dict[str, str]:
    """Write the page's link into the address bar (only when it changed); the link's parameters."""
    params = link_params(page)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    return params


def share_url(page: str, params: dict[str, str]) -> str:
    """The full link: the app's root address (when the browser told us) and the query string. The root,
    not the page's path, because `p` names the page and the root always starts at app.py."""
    base = st.context.url or ""
    path = URL_PATHS[page]
    if path and base.endswith("/" + path):
        base = base[: -len(path)]
    return f"{base}?{urlencode(params, safe='/,')}"  # model ids and LoRA targets stay readable
