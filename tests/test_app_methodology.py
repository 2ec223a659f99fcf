"""The Methodology page, through Streamlit's AppTest: it renders, and its numbers are the estimator's."""

from app_helpers import start, texts

import estimator as est
from estimator.formats import WEIGHT_FORMATS


def test_methodology_renders_the_formulas_and_the_worked_example():
    at = start(page="methodology")
    assert at.title[0].value == "Methodology"
    example = at.dataframe[0].value
    assert list(example["Required GPU Memory (GB)"]) == [18.8, 11.8, 8.3, 87.4, 18.1, 11.1, 7.6]
    headers = [h.value for h in at.header]
    assert headers[:3] == ["Quick method (the reference document)", "Detailed method: inference",
                           "Detailed method: fine-tuning"] and "Sources" in headers
    assert len(at.get("latex")) >= 4


def test_the_format_and_gpu_tables_come_from_the_catalogs():
    at = start(page="methodology")
    frames = [d.value for d in at.dataframe]
    formats = next(f for f in frames if "Bits per weight" in f.columns)
    assert list(formats["Id (link)"]) == list(WEIGHT_FORMATS)
    assert dict(zip(formats["Id (link)"], formats["Bits per weight"]))["nf4-dq"] == 4.127
    gpus = next(f for f in frames if "Usable (GB)" in f.columns)
    assert len(gpus) == len(est.gpus())


def test_the_module_notes_are_the_estimators_docstrings():
    at = start(page="methodology")
    assert est.quick.__doc__.strip() in texts(at)


def test_the_validation_summary_and_scatter_come_from_the_committed_results():
    from validation import load_results, summary

    at = start(page="methodology")
    frames = [d.value for d in at.dataframe]
    table = next(f for f in frames if "Median |error| (%)" in f.columns)
    expected = summary(load_results())
    assert list(table["Component"]) == list(expected)
    assert table.set_index("Component").loc["kv_cache", "Median |error| (%)"] == round(
        expected["kv_cache"]["median_abs_error_pct"], 2)
    assert "Validated against real model code" in [h.value for h in at.header]


def test_the_presets_and_the_recipe_comparison_are_on_the_page():
    from estimator.frameworks import FRAMEWORK_PRESETS
    from validation import recipes

    at = start(page="methodology")
    assert "Memory savers and framework presets" in [h.value for h in at.header]
    frames = [d.value for d in at.dataframe]
    presets = next(f for f in frames if "Source" in f.columns and "Input" in f.columns)
    assert len(presets) == sum(len(f.settings) for f in FRAMEWORK_PRESETS.values())
    assert "unsloth_zoo/fused_losses/cross_entropy_loss.py" in " ".join(presets["Source"])
    compared = next(f for f in frames if "measured_gib" in f.columns)
    rows = recipes.run(write=False)
    assert list(compared["error_pct"]) == [row["error_pct"] for row in rows]
    median = compared["error_pct"].abs().median()
    assert f"{len(rows)} records; median |error| {median:.1f}%." in texts(at)


def test_the_speed_section_shows_the_committed_speed_errors_the_scatter_and_the_efficiencies():
    import statistics

    from estimator import speed
    from validation import speed as speed_validation

    at = start(page="methodology")
    assert "Speed" in [h.value for h in at.header]
    assert "methodology.speed" in [c.key for c in at.get("plotly_chart")]
    frames = [d.value for d in at.dataframe]
    errors = next(f for f in frames if "Each left out (%)" in f.columns)
    rows = [r for r in speed_validation.load_results() if not r["skip"] and r["engine"] == "llama.cpp"
            and r["gpu_class"] == "apple" and r["phase"] == "decode"]
    line = errors[(errors["engine"] == "llama.cpp") & (errors["gpu_class"] == "apple")
                  & (errors["phase"] == "decode")].iloc[0]
    assert line["Median |error| (%)"] == round(statistics.median(abs(float(r["error_pct"])) for r in rows), 1)
    efficiencies = next(f for f in frames if "Efficiency" in f.columns)
    assert len(efficiencies) == len(speed._efficiency_table())


def test_the_speed_scatter_plots_rates_one_colour_per_engine_one_marker_per_phase():
    from ui import charts
    from validation import speed as speed_validation

    rows = speed_validation.load_results()
    fig = charts.speed_scatter(rows)
    points = [t for t in fig.data if t.mode == "markers" and t.showlegend is False]  # the data, one per phase
    legend = [t.name for t in fig.data if t.mode == "markers" and t.showlegend is not False]  # one per engine
    rates = [r for r in rows if not r["skip"] and r["metric"] not in ("ttft_ms", "tpot_ms", "train_mfu")]
    assert sum(len(t.x) for t in points) == len(rates) < len([r for r in rows if not r["skip"]])
    assert legend == sorted({r["engine"] for r in rates})
    colours = {t.name.split(" ")[0]: t.marker.color for t in points}
    assert len(set(colours.values())) == len(colours) == len(legend)  # each engine its own colour
    assert {t.marker.symbol[0].removesuffix("-open") for t in points if t.name.endswith("prefill")} == {"square"}


def test_the_recipe_table_names_each_records_own_settings_and_the_medians_per_framework():
    """Records that ran older code or a non-default option (validation/recipes.RECORD_SETTINGS) say so in the table;
    the caption gives each framework's median |error| from the same rows."""
    import statistics

    from validation import recipes

    at = start(page="methodology")
    compared = next(d.value for d in at.dataframe if "measured_gib" in d.value.columns)
    rows = recipes.run(write=False)
    assert list(compared["record_settings"]) == [row["record_settings"] for row in rows]
    assert set(compared["record_settings"]) == {"", "loss=shifted", "loss=chunked-compiled"}
    torchtune = [abs(row["error_pct"]) for row in rows if row["framework"] == "torchtune"]
    assert f"torchtune {statistics.median(torchtune):.1f}% ({len(torchtune)})" in texts(at)


def test_the_engine_table_shows_each_quantity_over_every_record_and_over_the_fully_stated_ones():
    import csv
    import statistics

    at = start(page="methodology")
    frames = [d.value for d in at.dataframe]
    table = next(f for f in frames if "era" in f.columns and "Median |error| (%)" in f.columns).set_index(
        ["engine", "era", "quantity"])
    # by hand from the committed CSV: vLLM V1 "GPU KV cache size" rows, all of them and those without unstated inputs
    with open("validation/engine_results.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if (r["engine"], r["era"], r["quantity"]) == ("vllm", "v1", "kv_tokens")]
    stated = [r for r in rows if not r["unstated"]]
    assert 0 < len(stated) < len(rows)
    everything = table.loc[("vllm", "v1", "kv_tokens")]
    assert everything["Records"] == len(rows)
    assert everything["Median |error| (%)"] == round(statistics.median(abs(float(r["error_pct"])) for r in rows), 1)
    only_stated = table.loc[("vllm", "v1", "kv_tokens, every input stated")]
    assert only_stated["Records"] == len(stated)
    assert only_stated["Median |error| (%)"] == round(
        statistics.median(abs(float(r["error_pct"])) for r in stated), 1)


def test_the_host_offload_rate_is_the_derived_one():
    from estimator import speed
    at = start(page="methodology")
    host = speed._host_offload()["vllm"]
    assert f"**{host.value:.3f}** of its peak: the median over {len(host.records)} published" in texts(at)


def test_the_host_ram_rate_is_the_derived_one():
    from estimator import speed
    at = start(page="methodology")
    host = speed._host_compute()[("llama.cpp", "decode")]
    assert f"**{host.value:.3f}**, the median over {len(host.records)} published runs" in texts(at)
