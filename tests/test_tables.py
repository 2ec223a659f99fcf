"""DataFrame shaping for the pages: the scenario table, GPU fit, the comparison and its exports."""

from dataclasses import replace

import pandas as pd

import estimator as est
from ui import tables

SEVEN_B = est.ParamCount.from_billions(7)


def labelled(rows, s):
    return [(row.label, row.fn(s)) for row in rows]


def test_the_inference_table_is_the_reference_documents():
    s = est.InferenceScenario(SEVEN_B)
    frame = tables.scenario_frame(labelled(tables.table_rows("inference", s), s))
    assert list(frame["Scenario"]) == ["Inference (16-bit)", "Inference (8-bit)", "Inference (4-bit)"]
    assert list(frame["Required GPU Memory (GB)"]) == [18.8, 11.8, 8.3]
    assert list(frame.columns[2:]) == ["Weights", "KV cache", "Activations", "Overhead"]
    assert list(frame["Weights"]) == [14.0, 7.0, 3.5]


def test_the_finetune_table_is_the_reference_documents():
    s = est.FinetuneScenario(SEVEN_B)
    frame = tables.scenario_frame(labelled(tables.table_rows("finetune", s), s))
    assert list(frame["Scenario"]) == ["Full-parameter", "LoRA", "QLoRA (8-bit)", "QLoRA (4-bit)"]
    assert list(frame["Required GPU Memory (GB)"]) == [87.4, 18.1, 11.1, 7.6]


def test_an_extra_weight_format_adds_a_row_computed_by_the_estimator():
    s = est.InferenceScenario(est.model("meta-llama/Llama-3.1-8B").architecture, weights="q4_k_m")
    rows = tables.table_rows("inference", s, "q4_k_m")
    assert [row.key for row in rows] == ["16-bit", "8-bit", "4-bit", "custom"]
    assert rows[-1].label == "Inference (GGUF Q4_K_M)"
    assert [row.short for row in rows] == ["16-bit BF16", "8-bit FP8", "4-bit AWQ", "GGUF Q4_K_M"]  # the chart's axis
    assert [row.label for row in rows[:3]] == ["Inference (16-bit, BF16)", "Inference (8-bit, FP8)",
                                               "Inference (4-bit, AWQ)"]  # the formats the detailed rows use
    assert rows[-1].fn(s) == est.estimate_inference(s)


def test_the_selected_row_falls_back_to_the_first():
    rows = tables.table_rows("inference", est.InferenceScenario(SEVEN_B))
    assert tables.selected_row(rows, "8-bit").key == "8-bit"
    assert tables.selected_row(rows, "custom").key == "16-bit"


def test_gpu_count_cpu_memory_and_peak_columns_appear_only_when_they_say_something():
    s = est.FinetuneScenario(est.model("meta-llama/Llama-3.1-8B").architecture, num_gpus=4, zero_stage=2,
                             offload_optimizer=True)
    rows = labelled(tables.table_rows("finetune", s), s)
    frame = tables.scenario_frame(rows)
    assert {"GPUs", "All GPUs (GB)", "CPU memory (GB)"} <= set(frame.columns)
    b = est.finetune_table(s)[0]
    assert frame.loc[0, "All GPUs (GB)"] == round(b.total_all_gpus / 1e9, 1)
    assert frame.loc[0, "CPU memory (GB)"] == round(b.host_bytes / 1e9, 1)
    assert {b.peak_phase for _, b in rows} == {"backward start"} and "Peak phase" not in frame.columns
    short = replace(s, num_gpus=1, zero_stage=0, offload_optimizer=False, seq_len=128)  # phases differ: a column
    mixed = tables.scenario_frame(labelled(tables.table_rows("finetune", short), short))
    assert list(mixed["Peak phase"]) == ["optimizer step"] + ["backward start"] * 3
    plain = tables.scenario_frame([("x", est.inference_table(est.InferenceScenario(SEVEN_B))[0])])
    assert not {"GPUs", "Peak phase"} & set(plain.columns)


def test_every_training_component_shows_in_every_row_with_zero_where_the_phase_has_none():
    """Issue 14 item 8: full fine-tuning peaking at backward start still shows its Gradients column (0.00), next to
    the quick table's gradients, and the phase cell says why."""
    s = est.FinetuneScenario(est.model("Qwen/Qwen2.5-7B").architecture, batch_size=4)
    rows = labelled(tables.table_rows("finetune", s), s)
    assert {b.peak_phase for _, b in rows} == {"backward start"}
    frame = tables.scenario_frame(rows)
    assert list(frame.columns) == ["Scenario", "Required GPU Memory (GB)", "Weights", "Activations", "Logits",
                                   "Gradients", "Optimizer states", "Overhead"]  # one phase: said under it
    assert list(frame["Gradients"]) == [0.0, 0.0, 0.0, 0.0]
    assert list(frame["Optimizer states"]) == [60.92, 0.04, 0.04, 0.04]
    assert tables.phase_line(rows) == "Peak phase: backward start: activations alive, no gradients yet (0)."
    reference = est.FinetuneScenario(SEVEN_B)
    quick = tables.scenario_frame(labelled(tables.table_rows("finetune", reference), reference))
    assert list(quick["Gradients"]) == [14.0, 0.14, 0.14, 0.14]


def test_inference_columns_that_round_to_zero_in_every_row_are_left_out():
    """Issue 14 item 10: the detailed rows' fp32 logits (1 x 128,256 x 4 B = 0.5 MB) read 0.00 on every row."""
    s = est.InferenceScenario(est.model("meta-llama/Llama-3.1-8B").architecture)
    rows = labelled(tables.table_rows("inference", s), s)
    assert all(0 < b.component("logits") < 5_000_000 for _, b in rows)
    assert "Logits" not in tables.scenario_frame(rows).columns
    long = est.InferenceScenario(est.model("meta-llama/Llama-3.1-8B").architecture, concurrency=64)
    assert "Logits" in tables.scenario_frame(labelled(tables.table_rows("inference", long), long)).columns


def test_gib_tables():
    frame = tables.scenario_frame([("x", est.inference_table(est.InferenceScenario(SEVEN_B))[0])], "GiB")
    assert frame.loc[0, "Required GPU Memory (GiB)"] == round(18.8e9 / 2**30, 1)


def test_fit_frame_lists_gpus_smallest_first_with_counts_and_headroom():
    s = est.InferenceScenario(SEVEN_B)
    fits = est.fit_table(s, tables.table_rows("inference", s)[0].fn, est.gpus())
    frame = tables.fit_frame(fits)
    assert len(frame) == len(est.gpus())
    assert list(frame["Usable (GB)"]) == sorted(frame["Usable (GB)"])
    t4 = frame[frame["GPU"].str.contains("T4")].iloc[0]
    assert (t4["GPUs needed"], t4["Fits on one"]) == ("2", False)
    h100 = frame[frame["GPU"] == est.gpu("h100-sxm").name].iloc[0]
    assert h100["Headroom (GB)"] == round((est.gpu("h100-sxm").memory_bytes - 18.8e9) / 1e9, 1)


def test_nothing_fits_shows_no_count():
    s = est.InferenceScenario(est.ParamCount.from_billions(20_000))
    fit = est.fit(s, tables.table_rows("inference", s)[0].fn, est.gpu("t4"))
    frame = tables.fit_frame([fit])
    assert frame.loc[0, "GPUs needed"] == "does not fit" and fit.note == ""  # issue 14: no "None" cell
    assert tables.fit_text(fit) == "does not fit on T4"


def comparison_entries():
    gpu = est.gpu("rtx-4090")
    inf = est.InferenceScenario(SEVEN_B)
    ft = est.FinetuneScenario(SEVEN_B)
    rows_inf, rows_ft = tables.table_rows("inference", inf), tables.table_rows("finetune", ft)
    return [("7B", rows_inf[0].fn(inf), est.fit(inf, rows_inf[0].fn, gpu)),
            ("7B", rows_ft[0].fn(ft), est.fit(ft, rows_ft[0].fn, gpu))]


def test_comparison_rows_are_components_totals_and_fit_and_columns_are_unique_names():
    frame = tables.comparison_frame(comparison_entries())
    assert list(frame.columns) == ["7B", "7B (2)"]
    assert frame.loc["Total per GPU (GB)"].tolist() == ["18.8", "87.4"]
    assert frame.loc["Optimizer states (GB)"].tolist() == ["0.00", "56.00"]
    assert frame.loc["GPUs needed (RTX 4090)"].tolist() == ["1 x RTX 4090",
                                                            "does not fit on RTX 4090 (ZeRO-3: 4 GPUs)"]


def test_comparison_records_hold_bytes_fit_assumptions_and_the_link():
    entries = comparison_entries()
    records = tables.comparison_records(entries, [{"v": "1", "p": "inference"}, {"v": "1", "p": "finetune"}])
    assert records[1]["total_bytes"] == entries[1][1].total
    assert records[1]["fit"] == {"gpu": "rtx-4090", "gpus_needed": None,
                                 "per_gpu_bytes": entries[1][2].per_gpu_bytes,
                                 "headroom_bytes": entries[1][2].headroom_bytes, "note": "ZeRO-3: 4 GPUs"}
    assert records[0]["link_params"] == {"v": "1", "p": "inference"} and records[0]["assumptions"]


def test_sweep_values_are_powers_of_two_plus_the_current_value_and_the_end():
    assert tables.sweep_values(3000, 256, 4096) == [256, 512, 1024, 2048, 3000, 4096]
    assert tables.sweep_values(2048, 256, 5000) == [256, 512, 1024, 2048, 4096, 5000]
    assert tables.sweep_values(1, 1, 8) == [1, 2, 4, 8]


def test_default_comparison_names():
    state = {"seq_len": 8192, "concurrency": 4, "batch_size": 2}
    assert tables.describe("inference", "Llama 3.1 8B", state, "Inference (4-bit)") == \
        "Llama 3.1 8B · Inference (4-bit) · 8,192 tok × 4"
    assert tables.describe("finetune", "7B", state, "LoRA") == "7B · LoRA · b2 × 8,192 tok"


def test_csv_cells_that_a_spreadsheet_would_evaluate_start_with_an_apostrophe():
    # OWASP's list: =, +, -, @, tab and carriage return; plain numbers (even negative) stay numbers
    assert [tables.csv_cell(text) for text in ("=1+1", "+A1", "-A1", "@SUM(A1)", "\tx", "\rx")] == \
        ["'=1+1", "'+A1", "'-A1", "'@SUM(A1)", "'\tx", "'\rx"]
    assert [tables.csv_cell(text) for text in ("-1.5", "+3", "-1,024.0", "12.3", "does not fit", "")] == \
        ["-1.5", "+3", "-1,024.0", "12.3", "does not fit", ""]
    frame = pd.DataFrame({"=cmd()": ["@x", "4.0"]}, index=["-row", "Total"])
    assert tables.csv_text(frame) == ",'=cmd()\n'-row,'@x\nTotal,4.0\n"
