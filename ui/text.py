"""Markdown-safe text. User strings (a model name from a pasted config, a scenario name) shown through
st.markdown or st.caption are escaped, so they display literally and never become links, images or HTML."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pandas as pd

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def escape(text: str) -> str:
    """Backslash-escape every character Markdown (and Streamlit's :colour[] / $math$ syntax) would act on."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def markdown_table(frame: pd.DataFrame, decimals: Mapping[str, int]) -> str:
    """`frame` as a Markdown pipe table: text escaped and left-aligned; numbers right-aligned, with
    thousands separators and `decimals[column]` places (integers as they are); missing values blank.

    st.markdown draws it as a static HTML table with the Markdown code the page has already loaded, so it is
    on screen before the charts' code arrives; st.table would first fetch ~1 MB of Arrow code, and the
    browser then holds the whole first paint until Plotly's 4.7 MB has loaded too (benchmarks/RESULTS.md)."""
    numeric = {col: pd.api.types.is_numeric_dtype(frame[col]) and not pd.api.types.is_bool_dtype(frame[col])
               for col in frame.columns}

    def cell(col: str, value) -> str:
        if pd.isna(value):
            return ""
        if numeric[col]:
            return f"{value:,.{decimals[col]}f}" if col in decimals else f"{value:,}"
        return escape(str(value))

    lines = ["| " + " | ".join(escape(str(col)) for col in frame.columns) + " |",
             "|" + "|".join("--:" if numeric[col] else ":--" for col in frame.columns) + "|"]
    lines += ["| " + " | ".join(cell(col, value) for col, value in zip(frame.columns, row)) + " |"
              for row in frame.itertuples(index=False)]
    return "\n".join(lines)
