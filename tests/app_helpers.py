"""Helpers for the AppTest suites (tests/test_app_*.py): start the app, read its tables, find widgets."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 60


def published_config(model_id: str) -> dict:
    """A real config.json, as the model catalog keeps it (the fields its authors published)."""
    data = json.loads(resources.files("estimator").joinpath("data", "models.json").read_text(encoding="utf-8"))
    return next(entry["config"] for entry in data["models"] if entry["id"] == model_id)


LLAMA3_8B = published_config("meta-llama/Meta-Llama-3-8B")  # the config users paste most


def start(query: dict | None = None, page: str | None = None) -> AppTest:
    """A fresh session of the app, opened with a link's query parameters; on `page` (the link's `p`)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"p": page} if page else {})
    at.query_params.update(query or {})
    at.run()
    assert_clean(at)
    return at


def assert_clean(at: AppTest) -> None:
    """No traceback and no error box."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def table(at: AppTest) -> pd.DataFrame:
    """The scenario table of an estimate page (a Markdown table), read back as the reader sees it: cells
    unescaped, numbers as floats (separators dropped), blank cells missing."""
    source = next(m.value for m in at.markdown if m.value.startswith("| Scenario |"))
    header, _, *rows = [[plain(cell.strip()) for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
                        for line in source.splitlines()]
    frame = pd.DataFrame(rows, columns=header)
    for col in header[1:]:
        numbers = pd.to_numeric(frame[col].str.replace(",", ""), errors="coerce")
        if numbers.notna().sum() == (frame[col] != "").sum():
            frame[col] = numbers
    return frame


def totals(at: AppTest, unit: str = "GB") -> list[float]:
    return list(table(at)[f"Required GPU Memory ({unit})"])


def gb(breakdowns) -> list[float]:
    """Totals as the table shows them: GB with one decimal."""
    return [round(b.total / 1e9, 1) for b in breakdowns]


def segmented(at: AppTest, key: str):
    return next(w for w in at.button_group if w.key == key)


def raw_texts(at: AppTest) -> str:
    """All markdown, caption and code text on the page, as sent (user text Markdown-escaped)."""
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [c.value for c in at.code])


def plain(markdown: str) -> str:
    """Markdown source without backslash escapes: what the reader sees."""
    return re.sub(r"\\(.)", r"\1", markdown)


def texts(at: AppTest) -> str:
    """All markdown, caption and code text on the page as the reader sees it, for searching."""
    return plain(raw_texts(at))


def errors(at: AppTest) -> list[str]:
    return [plain(e.value) for e in at.error]
