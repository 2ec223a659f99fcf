"""The Fine-tuning page's "Memory savers" group, driven through Streamlit's AppTest: the framework preset sets the
inputs it uses (and back), each saver is a widget, and the numbers are the estimator's."""

from app_helpers import assert_clean, errors, gb, start, texts, totals

import estimator as est
from estimator.frameworks import with_framework

LLAMA_31_8B = "meta-llama/Llama-3.1-8B"
QUERY = {"model": LLAMA_31_8B, "row": "qlora-4bit", "seq": "4096"}


def scenario(**fields):
    base = {"technique": "qlora-4bit", "seq_len": 4096, **fields}
    return est.FinetuneScenario(est.model(LLAMA_31_8B).architecture, **base)


def test_the_unsloth_preset_sets_its_inputs_and_lowers_the_qlora_row():
    at = start(QUERY, page="finetune")
    before = totals(at)
    at.selectbox(key="finetune.framework").set_value("unsloth").run()
    assert_clean(at)
    assert at.selectbox(key="finetune.loss").value == "fused"
    assert at.toggle(key="finetune.offload_activations").value is True
    assert at.selectbox(key="finetune.optimizer").value == "adamw-8bit"
    expected = gb(est.finetune_table(scenario(**with_framework({"framework": "unsloth",
                                                                "technique": "qlora-4bit"}))))
    assert totals(at) == expected and expected[3] < before[3]
    shown = texts(at)
    assert "Unsloth preset: loss = fused" in shown and "unsloth_zoo/fused_losses/cross_entropy_loss.py" in shown
    assert at.query_params["fw"] == "unsloth" and "loss" not in at.query_params  # the preset's: not repeated


def test_going_back_to_hf_restores_todays_inputs_and_numbers():
    at = start(QUERY, page="finetune")
    before = totals(at)
    at.selectbox(key="finetune.framework").set_value("torchtune").run()
    at.selectbox(key="finetune.framework").set_value("hf").run()
    assert_clean(at)
    assert totals(at) == before
    assert at.selectbox(key="finetune.loss").value == "standard"


def test_a_preset_input_changed_by_hand_stays_changed():
    at = start(QUERY, page="finetune")
    at.selectbox(key="finetune.framework").set_value("unsloth").run()
    at.selectbox(key="finetune.loss").set_value("standard").run()
    assert_clean(at)
    fields = with_framework({"framework": "unsloth", "technique": "qlora-4bit", "loss": "standard"})
    assert totals(at) == gb(est.finetune_table(scenario(**fields)))


def test_gradient_accumulation_shows_the_effective_batch():
    at = start({**QUERY, "batch": "2"}, page="finetune")
    at.number_input(key="finetune.grad_accum").set_value(8).run()
    assert_clean(at)
    assert "Effective batch: 2 x 8 x 1 GPU(s) = 16 sequences per optimizer step" in texts(at)
    assert totals(at) == gb(est.finetune_table(scenario(batch_size=2, grad_accum=8)))


def test_a_saver_conflict_is_named_on_the_page():
    at = start({**QUERY, "oib": "1"}, page="finetune")
    at.number_input(key="finetune.grad_accum").set_value(2).run()
    assert any("grad_accum must be 1 with optimizer_in_backward" in error for error in errors(at))


def test_offloaded_activations_show_as_cpu_memory_in_the_table():
    at = start({**QUERY, "offact": "1"}, page="finetune")
    assert_clean(at)
    from app_helpers import table
    s = scenario(offload_activations=True)
    assert list(table(at)["CPU memory (GB)"])[3] == round(est.estimate_finetune(s).host_bytes / 1e9, 1)


def test_the_stacked_bar_draws_offloaded_bytes_beside_the_gpu_bar():
    """A row with host bytes gets a hatched CPU bar in its own offset group, its height the host bytes; a chart
    without any offload keeps one stack per row."""
    from ui import charts

    offloaded = est.estimate_finetune(scenario(offload_activations=True))
    plain = est.estimate_finetune(scenario())
    figure = charts.stacked_bar([("offloaded", offloaded), ("plain", plain)])
    [cpu] = [t for t in figure.data if t.name == charts.HOST_STYLE[0]]
    assert cpu.offsetgroup == "cpu" and cpu.marker.pattern.shape == "/"
    assert list(cpu.y) == [offloaded.host_bytes / 1e9, 0.0]
    assert {t.offsetgroup for t in figure.data if t.name != charts.HOST_STYLE[0]} == {"gpu"}
    assert all(t.offsetgroup is None for t in charts.stacked_bar([("plain", plain)]).data)


def test_a_link_naming_only_the_framework_means_its_preset_as_the_cli_does(capsys):
    """`fw=unsloth` alone: the preset's values are the link's defaults for the inputs it sets; a value changed
    back to the page default is written out (`loss=standard`), so it survives the round trip."""
    import json

    from estimator.cli import main
    from ui import links

    state = links.decode({"v": "1", "p": "finetune", "fw": "unsloth", "row": "qlora-4bit",
                          "model": LLAMA_31_8B}, "finetune").state
    assert state["loss"] == "fused" and state["offload_activations"] is True
    assert main(["finetune", "--model", LLAMA_31_8B, "--framework", "unsloth", "--technique", "qlora-4bit",
                 "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["rows"][0]["total_bytes"]
    assert est.estimate_finetune(links.scenario_of("finetune", state)).total == cli
    changed = {**state, "loss": "standard"}
    params = links.encode("finetune", changed, links.view_defaults())
    assert params["loss"] == "standard" and "offact" not in params
    assert links.decode(params, "finetune").state == changed
