"""The frame of every page: title, the Share control, the warnings of a stale or tampered link, the slot for the
headline result on a phone, and the closing step that writes the link for what is on screen."""

from __future__ import annotations

import threading

import streamlit as st

from ui import state
from ui.text import escape

HEADLINE_KEY = "headline"  # the phone-only summary's container key (class st-key-headline-<page>)
NARROW_ONLY = "narrow-only"  # containers keyed narrow-only-<name> show on narrow screens only
NARROW_PX = 640  # Streamlit stacks columns below this width: the form then fills the first screen
# Fixed rules of ours, no user text:
# - Markdown tables (the scenario table) scroll sideways inside their column instead of spilling out of it.
# - The headline summary (and any container keyed narrow-only-...) shows on narrow screens only; wide screens
#   have the table beside the form.
# - Display formulas (Methodology) scroll sideways inside the page, with a shadow at the edge that can be
#   scrolled (a fading cover over a shadow: the cover scrolls with the formula, the shadow stays), so a
#   formula cut at the edge of a phone says there is more.
STYLE = """<style>
[data-testid='stMarkdownContainer'] table {display: block; overflow-x: auto;}
@media (min-width: 641px) {
  [data-testid='stElementContainer']:has(> [class*='st-key-headline-']),
  [class*='st-key-headline-'], [class*='st-key-narrow-only-'] {display: none;}
}
@media (max-width: 640px) { .katex-display {font-size: 0.85em;} }
.katex-display {
  overflow-x: auto; overflow-y: hidden; padding: 0.2em 0;
  background:
    linear-gradient(to right, white 30%, rgba(255,255,255,0)) left / 2em 100% no-repeat local,
    linear-gradient(to left, white 30%, rgba(255,255,255,0)) right / 2em 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, rgba(0,0,0,.35), rgba(0,0,0,0)) left / 1.1em 100% no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.35), rgba(0,0,0,0)) right / 1.1em 100% no-repeat scroll;
}
</style>"""  # a constant (no user text can reach it): 640 / 641 px = NARROW_PX, keys as above
_run = threading.local()  # this script run's headline slot (each run of a session is one thread at a time)


def header(page: str, title: str, intro: str):
    """Title with a Share slot on its right, the intro line, the link's warnings (first run only) and an empty
    slot for the headline result (`headline_slot`). Returns the slot `footer` fills, once the page knows its
    final inputs."""
    state.enter(page)
    st.html(STYLE)
    navigation()
    left, right = st.columns([5, 1], vertical_alignment="bottom")
    left.title(title)
    slot = right.empty()
    st.caption(intro)
    warnings = state.take_warnings()
    if warnings:
        st.warning("This link had values the app could not use; it shows the defaults for them instead.\n\n"
                   + "\n".join(f"- {escape(w)}" for w in warnings), icon=":material/link_off:")
    _run.headline = st.empty()
    return slot


def navigation() -> None:
    """A link to every page, carrying that page's share link (`state.link_params`), so that the address the
    browser records on a switch is already the page's link and writing it changes nothing."""
    with st.container(horizontal=True, gap="small", key="navigation"):
        for name, (title, icon) in state.TITLES.items():
            st.page_link(f"views/{name}.py", label=title, icon=icon, query_params=state.link_params(name))


def headline_slot():
    """The slot above the form that the results fill with the headline (shown on narrow screens only); None
    outside a page run that called `header`."""
    return getattr(_run, "headline", None)


def footer(page: str, slot) -> None:
    """Write the page's link into the address bar and into the Share popover."""
    _run.headline = None
    params = state.sync_url(page)
    with slot.container(), st.popover("Share", icon=":material/share:", width="stretch"):
        st.caption("This link opens the same page with the same inputs and comparison set:")
        st.code(state.share_url(page, params), language=None, wrap_lines=True)
