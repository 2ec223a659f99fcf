"""The plotly figure builders: traces, stacking, colours, capacity lines, curves, escaping."""

import pytest

import estimator as est
from ui import charts, tables
from estimator.breakdown import COMPONENTS

SEVEN_B = est.ParamCount.from_billions(7)


def inference_bars():
    return [(f"Inference ({b.row})", b) for b in est.inference_table(est.InferenceScenario(SEVEN_B))]


def finetune_bars():
    return [(b.row, b) for b in est.finetune_table(est.FinetuneScenario(SEVEN_B))]


def hline_values(fig):
    return sorted(shape.y0 for shape in fig.layout.shapes)


def test_every_component_has_a_label_and_a_colour_and_colours_differ():
    assert set(charts.COMPONENT_STYLE) == set(COMPONENTS)
    colours = [colour for _, colour in charts.COMPONENT_STYLE.values()]
    assert len(set(colours)) == len(colours)


def test_stacked_bar_has_one_trace_per_component_present_in_canonical_order():
    fig = charts.stacked_bar(inference_bars())
    assert fig.layout.barmode == "stack"
    assert [t.name for t in fig.data] == ["Weights", "KV cache", "Activations", "Overhead"]
    assert list(fig.data[0].x) == ["Inference (16-bit)", "Inference (8-bit)", "Inference (4-bit)"]


def test_stacked_bar_values_are_the_components_in_the_unit_and_stack_to_the_totals():
    bars = finetune_bars()
    fig = charts.stacked_bar(bars, unit="GB")
    weights = next(t for t in fig.data if t.name == "Weights")
    assert list(weights.y) == [b.component("weights") / 1e9 for _, b in bars]
    stacked = [sum(t.y[i] for t in fig.data) for i in range(len(bars))]
    assert [round(v, 1) for v in stacked] == [87.4, 18.1, 11.1, 7.6]
    assert [a.text for a in fig.layout.annotations] == ["87.4 GB", "18.1 GB", "11.1 GB", "7.6 GB"]


def test_gib_divides_by_two_to_the_thirtieth():
    bars = inference_bars()
    fig = charts.stacked_bar(bars, unit="GiB")
    assert fig.data[0].y[0] == bars[0][1].component("weights") / 2**30
    assert "GiB" in fig.data[0].hovertemplate and fig.layout.yaxis.title.text == "Memory per GPU (GiB)"


def test_a_component_keeps_its_colour_across_figures():
    inference = {t.name: t.marker.color for t in charts.stacked_bar(inference_bars()).data}
    finetune = {t.name: t.marker.color for t in charts.stacked_bar(finetune_bars()).data}
    for name in inference.keys() & finetune.keys():
        assert inference[name] == finetune[name]
    assert finetune["Gradients"] == charts.COMPONENT_STYLE["gradients"][1]


def test_hover_shows_values_in_the_unit():
    fig = charts.stacked_bar(inference_bars())
    assert all("%{y:,.2f} GB" in t.hovertemplate for t in fig.data)


def test_capacity_lines_are_the_common_24_48_80_141_gb_gpus_plus_the_chosen_one():
    lines = charts.capacity_lines(est.gpus(), "b200")
    assert [line.label for line in lines] == ["RTX 4090", "L40S", "H100 SXM", "H200", "B200"]
    assert [line.chosen for line in lines] == [False] * 4 + [True]
    assert lines[0].bytes == est.gpu("rtx-4090").memory_bytes
    assert len(charts.capacity_lines(est.gpus(), "h200")) == 4  # a common GPU is not drawn twice
    near_h100 = charts.capacity_lines(est.gpus(), "a100-80gb-sxm")  # 85.0 GB next to the H100's 85.5 GB
    assert [line.label for line in near_h100] == ["RTX 4090", "L40S", "A100 SXM4", "H200"]


def line_labels(fig):
    return [a for a in fig.layout.annotations if a.xref == "x domain"]


def test_capacity_labels_say_what_the_line_is_in_the_pages_unit():
    """Issue 14.4: 'RTX 4090 24 GB' was drawn at 25.8 GB; the label now names the usable memory it sits at (CUDA's
    totals: RTX 4090 25,386,352,640 bytes = 25.4 GB = 23.6 GiB, H100 SXM 85,028,896,768 = 85.0 GB, H200
    150,109,945,856 = 139.8 GiB)."""
    lines = charts.capacity_lines(est.gpus(), "rtx-4090")
    texts = [a.text for a in line_labels(charts.stacked_bar(finetune_bars(), "GB", lines))]
    assert "RTX 4090 (25.4 GB usable)" in texts and "H100 SXM (85.0 GB usable)" in texts
    texts = [a.text for a in line_labels(charts.stacked_bar(finetune_bars(), "GiB", lines))]
    assert "RTX 4090 (23.6 GiB usable)" in texts and "H200 (139.8 GiB usable)" in texts


def test_close_capacity_labels_do_not_overlap():
    """L4 (24.2 GB) and RTX 4090 (25.8 GB) printed on top of each other: one now goes below its line. With CUDA's
    totals the L4 (23.6 GB) is 16 px below the RTX 4090 (25.4 GB), clear of its 15 px label; the A10G (23.8 GB) is
    the close pair now."""
    lines = charts.capacity_lines(est.gpus(), "a10g")
    fig = charts.stacked_bar(inference_bars(), lines=lines)
    labels = {a.text.split(" (")[0]: a for a in line_labels(fig)}
    assert {"A10G", "RTX 4090"} <= labels.keys()
    px = charts.PLOT_PX / fig.layout.yaxis.range[1]
    spans = sorted((a.y * px, a.y * px + charts.LABEL_PX) if a.yanchor == "bottom" else
                   (a.y * px - charts.LABEL_PX, a.y * px) for a in labels.values())
    assert all(high <= low for (_, high), (low, _) in zip(spans, spans[1:]))
    assert labels["A10G"].yanchor == "top" and labels["RTX 4090"].yanchor == "bottom"


def test_bunched_lines_keep_only_labels_that_fit_and_the_chosen_one():
    model = est.catalog.model("deepseek-ai/DeepSeek-V3").architecture
    big = [(b.row, b) for b in est.finetune_table(est.FinetuneScenario(model))]
    fig = charts.stacked_bar(big, lines=charts.capacity_lines(est.gpus(), "rtx-4090"))
    assert [a.text for a in line_labels(fig)] == ["RTX 4090 (25.4 GB usable)"]
    assert len(fig.layout.shapes) == 1  # the H100 / H200 lines, a few pixels above it, are left out


def test_same_named_bars_stay_two_bars_named_as_the_comparison_table_names_them():
    """Issue 14.1: the same LoRA row added twice was drawn as one bar of twice the height."""
    lora = est.finetune_table(est.FinetuneScenario(SEVEN_B))[1]
    fig = charts.stacked_bar([("LoRA 7B", lora), ("LoRA 7B", lora)])
    assert [list(t.x) for t in fig.data] == [["LoRA 7B", "LoRA 7B (2)"]] * len(fig.data)
    totals = [a for a in fig.layout.annotations if a.xref != "x domain"]
    assert [(a.x, a.text) for a in totals] == [("LoRA 7B", "18.1 GB"), ("LoRA 7B (2)", "18.1 GB")]
    fit = est.fit(est.FinetuneScenario(SEVEN_B), lambda s: est.finetune_table(s)[1], est.gpu("rtx-4090"))
    frame = tables.comparison_frame([("LoRA 7B", lora, fit), ("LoRA 7B", lora, fit)])
    assert list(frame.columns) == list(fig.data[0].x)


def test_charts_keep_the_width_of_a_phone_and_their_labels_level():
    """Issue 14.5: a 105 px label margin left a 390 px phone 65% of the width, x labels were cut ('LoR...') and
    rotated into the legend."""
    bars = [(name, b) for name, (_, b) in zip(("Full-parameter", "LoRA", "QLoRA (8-bit)", "QLoRA (4-bit)"),
                                               finetune_bars())]
    fig = charts.stacked_bar(bars, lines=charts.capacity_lines(est.gpus(), "rtx-4090"))
    assert fig.layout.margin.r <= 10 and fig.layout.margin.l <= 10
    assert fig.layout.legend.y > 1 and fig.layout.legend.yanchor == "bottom"  # above the plot
    assert fig.layout.xaxis.tickangle == 0
    assert list(fig.layout.xaxis.ticktext) == ["Full-parameter", "LoRA", "QLoRA<br>(8-bit)", "QLoRA<br>(4-bit)"]
    assert charts.wrap("7B · LoRA · b1 × 2,048 tok") == "7B · LoRA<br>b1 × 2,048 tok"
    assert all(a.x in (0, 1) and a.xanchor in ("left", "right") for a in line_labels(fig))  # inside the plot


def test_a_total_that_a_line_would_strike_goes_inside_its_bar():
    """A bar's total written just under a capacity line was struck through by it."""
    lora = est.finetune_table(est.FinetuneScenario(est.ParamCount.from_billions(10)))[1]  # 25.0 GB, line 25.8
    fig = charts.stacked_bar([("LoRA", lora)], lines=charts.capacity_lines(est.gpus(), "rtx-4090"))
    total = next(a for a in fig.layout.annotations if a.xref != "x domain")
    assert total.y < est.gpu("rtx-4090").memory_bytes / 1e9 and total.yanchor == "top"
    assert total.bgcolor == "white"


def test_capacity_lines_are_drawn_at_usable_memory_and_the_chosen_one_stands_out():
    lines = charts.capacity_lines(est.gpus(), "a100-40gb-sxm")
    fig = charts.stacked_bar(inference_bars(), lines=lines)
    assert hline_values(fig) == sorted(line.bytes / 1e9 for line in lines)
    chosen = [s for s in fig.layout.shapes if s.line.dash == "solid"]
    assert [s.y0 for s in chosen] == [est.gpu("a100-40gb-sxm").memory_bytes / 1e9]


def test_the_axis_shows_the_bars_the_chosen_gpu_and_the_first_line_above_the_bars():
    lines = charts.capacity_lines(est.gpus(), "rtx-4090")
    top = charts.stacked_bar(inference_bars(), lines=lines).layout.yaxis.range[1]
    assert top == pytest.approx(1.1 * est.gpu("rtx-4090").memory_bytes / 1e9)  # 48/80/141 GB lines off-axis
    lines = charts.capacity_lines(est.gpus(), "h200")
    top = charts.stacked_bar(inference_bars(), lines=lines).layout.yaxis.range[1]
    assert top == pytest.approx(1.1 * est.gpu("h200").memory_bytes / 1e9)


def test_memory_curve_draws_one_line_per_row_on_a_log_axis_with_the_current_value_marked():
    x = [256, 512, 1024, 2048, 4096]
    series = [("16-bit", [10 * est.GB + v * 10**6 for v in x]), ("4-bit", [4 * est.GB + v * 10**6 for v in x])]
    fig = charts.memory_curve(x, series, "Sequence length", "GB", charts.capacity_lines(est.gpus()), current=2048)
    lines = [t for t in fig.data if t.mode == "lines"]
    markers = [t for t in fig.data if t.mode == "markers"]
    assert [t.name for t in lines] == ["16-bit", "4-bit"]
    assert list(lines[0].y) == [t / 1e9 for t in series[0][1]]
    assert [(list(m.x), list(m.y)) for m in markers] == [([2048], [12.048]), ([2048], [6.048])]
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.title.text == "Sequence length"
    assert len(fig.layout.shapes) == 4


def test_a_log_axis_labels_the_last_value_and_leaves_out_one_that_would_print_over_it():
    """At 390 px '32' and '36' (the most concurrent requests a GPU holds) ran together as '3336'."""
    fig = charts.speed_curve([1, 2, 4, 8, 16, 32, 36], [1] * 7, [1] * 7, "H100 SXM")
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 4, 8, 16, 36]
    assert list(fig.layout.xaxis.ticktext) == ["1", "2", "4", "8", "16", "36"]
    curve = charts.memory_curve([1024, 2048, 4096, 131072], [("16-bit", [1, 2, 3, 4])], "Sequence length")
    assert list(curve.layout.xaxis.ticktext) == ["1k", "2k", "4k", "128k"]


def test_user_text_in_labels_is_html_escaped():
    b = est.inference_table(est.InferenceScenario(SEVEN_B))[0]
    fig = charts.stacked_bar([('<a href="https://evil">x</a>', b)])
    assert fig.data[0].x[0] == "&lt;a href=&quot;https://evil&quot;&gt;x&lt;/a&gt;"
    curve = charts.memory_curve([1], [("<b>me</b>", [1])], "Batch size")
    assert curve.data[0].name == "&lt;b&gt;me&lt;/b&gt;"


@pytest.mark.parametrize("name, short", [
    ("NVIDIA H100 SXM 80GB", "H100 SXM"), ("NVIDIA H200 141GB (SXM)", "H200"), ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("AMD Instinct MI300X 192GB", "MI300X"), ("NVIDIA Tesla V100 SXM2 32GB", "V100 SXM2"),
])
def test_short_gpu_names(name, short):
    assert charts.short_gpu_name(name) == short


def test_validation_scatter_has_one_trace_per_component_and_the_identity_line():
    rows = [{"case": "a", "component": "weights", "estimate_bytes": 10**9, "measured_bytes": 10**9},
            {"case": "b", "component": "weights", "estimate_bytes": 2 * 10**9, "measured_bytes": 2 * 10**9},
            {"case": "a", "component": "kv_cache", "estimate_bytes": 5 * 10**8, "measured_bytes": 4 * 10**8},
            {"case": "c", "component": "logits", "estimate_bytes": 0, "measured_bytes": 0}]
    fig = charts.validation_scatter(rows)
    names = [trace.name for trace in fig.data]
    assert names == ["kv_cache", "weights", "estimate = measured"]
    assert list(fig.data[1].x) == [1.0, 2.0] and list(fig.data[0].y) == [0.5]
    assert fig.layout.xaxis.type == "log" and list(fig.data[2].x) == [0.4, 2.0]
