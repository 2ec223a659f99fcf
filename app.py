"""LLM GPU Memory Estimator, the Streamlit entry point: `streamlit run app.py`.

Defines the four pages. On the first run of a session it reads the link (`?v=1&p=...`) into the session and
opens the page the link names, so a shared URL reproduces the same page, inputs and numbers.
"""

import streamlit as st

from ui import state

st.set_page_config(page_title="LLM GPU Memory Estimator", page_icon=":material/memory:", layout="wide")

PAGES = {name: st.Page(f"views/{name}.py", title=title, icon=icon, url_path=state.URL_PATHS[name] or None,
                       default=name == "inference")
         for name, (title, icon) in state.TITLES.items()}

# The pages draw their own navigation (ui/chrome.py): its links carry each page's share link, so a page switch
# adds one browser-history entry, not two (Streamlit's navigation opens a page without its link, and writing the
# link then adds a second entry: Back needed two presses)
current = st.navigation(list(PAGES.values()), position="hidden")
landing = next(name for name, page in PAGES.items() if page.url_path == current.url_path)
wanted = state.load_link(landing)
if wanted != landing:
    st.switch_page(PAGES[wanted])
current.run()
