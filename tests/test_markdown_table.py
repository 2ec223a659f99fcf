"""The scenario table as Markdown (ui/text.py): what the reader sees, and that user text stays text."""

import math

import pandas as pd

import estimator as est
from ui import tables
from ui.text import markdown_table


def test_the_reference_table_reads_as_the_document_prints_it():
    rows = est.inference_table(est.InferenceScenario(est.ParamCount.from_billions(7)))
    frame = tables.scenario_frame([(f"Inference ({bits})", b) for bits, b in zip(("16-bit", "8-bit", "4-bit"), rows)])
    lines = markdown_table(frame, {"Required GPU Memory (GB)": 1, "Weights": 2}).splitlines()
    assert lines[0].startswith("| Scenario | Required GPU Memory \\(GB\\) | Weights |")
    assert lines[1].startswith("|:--|--:|--:|")  # text left, numbers right
    assert [line.split(" | ")[1] for line in lines[2:]] == ["18.8", "11.8", "8.3"]
    assert lines[2].split(" | ")[2] == "14.00"


def test_thousands_integers_and_missing_values():
    frame = pd.DataFrame({"Scenario": ["a", "b"], "Total (GB)": [1234.5, math.nan], "GPUs": [8, 16]})
    assert markdown_table(frame, {"Total (GB)": 1}).splitlines()[2:] == ["| a | 1,234.5 | 8 |", "| b |  | 16 |"]


def test_user_text_cannot_break_the_table_or_become_markup():
    frame = pd.DataFrame({"Scenario": ["a | b <img src=x> [l](http://e.example) **x**"], "Total (GB)": [1.0]})
    row = markdown_table(frame, {"Total (GB)": 1}).splitlines()[2]
    assert row.count(" | ") == 1  # the user's pipe is escaped, so still two cells
    assert "\\<img src=x\\>" in row and "\\[l\\]\\(http" in row and "\\*\\*x" in row  # shown as typed
