"""Markdown-safe text. User strings (a model name from a pasted config, a scenario name) shown through
st.markdown or st.caption are escaped, so they display literally and never become links, images or HTML."""

import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def escape(text: str) -> str:
    """Backslash-escape every character Markdown (and Streamlit's :colour[] / $math$ syntax) would act on."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)
