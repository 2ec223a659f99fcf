"""The frame of every page: title, the Share control, the warnings of a stale or tampered link, and the
closing step that writes the link for what is on screen."""

from __future__ import annotations

import streamlit as st

from ui import state
from ui.text import escape


# Markdown tables (the scenario table) scroll sideways inside their column instead of spilling out of it on a
# narrow screen; a fixed rule of ours, no user text.
TABLE_STYLE = "<style>[data-testid='stMarkdownContainer'] table {display: block; overflow-x: auto;}</style>"


def header(page: str, title: str, intro: str):
    """Title with a Share slot on its right, the intro line, and the link's warnings (first run only).
    Returns the slot `footer` fills, once the page knows its final inputs."""
    state.enter(page)
    st.html(TABLE_STYLE)
    left, right = st.columns([5, 1], vertical_alignment="bottom")
    left.title(title)
    slot = right.empty()
    st.caption(intro)
    warnings = state.take_warnings()
    if warnings:
        st.warning("This link had values the app could not use; it shows the defaults for them instead.\n\n"
                   + "\n".join(f"- {escape(w)}" for w in warnings), icon=":material/link_off:")
    return slot


def footer(page: str, slot) -> None:
    """Write the page's link into the address bar and into the Share popover."""
    params = state.sync_url(page)
    with slot.container(), st.popover("Share", icon=":material/share:", width="stretch"):
        st.caption("This link opens the same page with the same inputs and comparison set:")
        st.code(state.share_url(page, params), language=None, wrap_lines=True)
