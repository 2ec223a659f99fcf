"""The plotly figure builders: traces, stacking, colours, capacity lines, curves, escaping."""

import pytest

import estimator as est
from ui import charts
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
    assert [line.label for line in lines] == ["RTX 4090 24 GB", "L40S 48 GB", "H100 SXM 80 GB", "H200 141 GB",
                                              "B200 180 GB"]
    assert [line.chosen for line in lines] == [False] * 4 + [True]
    assert lines[0].bytes == est.gpu("rtx-4090").memory_bytes
    assert len(charts.capacity_lines(est.gpus(), "h200")) == 4  # a common GPU is not drawn twice
    near_h100 = charts.capacity_lines(est.gpus(), "a100-80gb-sxm")  # 85.0 GB next to the H100's 85.5 GB
    assert [line.label for line in near_h100] == ["RTX 4090 24 GB", "L40S 48 GB", "A100 SXM4 80 GB", "H200 141 GB"]


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
