"""The Fine-tuning page, driven through Streamlit's AppTest: the reference table, inputs, models, configs."""

import json

import pytest
from app_helpers import LLAMA3_8B, assert_clean, errors, gb, segmented, start, table, texts, totals

import estimator as est

SEVEN_B = est.ParamCount.from_billions(7)
LLAMA_31_8B = "meta-llama/Llama-3.1-8B"


def detailed(model_id=LLAMA_31_8B, **fields):
    return est.FinetuneScenario(est.model(model_id).architecture, **fields)


def test_default_render_is_the_reference_documents_table():
    at = start(page="finetune")
    assert at.title[0].value == "Fine-tuning memory"
    assert list(table(at)["Scenario"]) == ["Full-parameter", "LoRA", "QLoRA (8-bit)", "QLoRA (4-bit)"]
    assert totals(at) == [87.4, 18.1, 11.1, 7.6]
    assert at.query_params == {"v": "1", "p": "finetune", "gc": "auto"}  # a link without gc means off (older links)


@pytest.mark.parametrize("key, value, field", [
    ("finetune.optimizer", "sgd", "optimizer"), ("finetune.optimizer", "sgd-momentum", "optimizer"),
    ("finetune.optimizer", "rmsprop", "optimizer"), ("finetune.param_bits", 32, "param_bits"),
])
def test_the_reference_forms_choices_give_the_estimators_numbers(key, value, field):
    at = start(page="finetune")
    at.selectbox(key=key).set_value(value).run()
    assert_clean(at)
    assert totals(at) == gb(est.finetune_table(est.FinetuneScenario(SEVEN_B, **{field: value})))


def test_batch_and_sequence_length_scale_activations():
    at = start(page="finetune")
    at.number_input(key="finetune.batch_size").set_value(4)
    at.number_input(key="finetune.seq_len").set_value(4096).run()
    assert totals(at) == gb(est.finetune_table(est.FinetuneScenario(SEVEN_B, batch_size=4, seq_len=4096)))


def test_a_catalog_model_uses_the_detailed_method_with_its_peak_phase():
    at = start(page="finetune")
    segmented(at, "finetune.src").set_value("catalog").run()
    at.selectbox(key="finetune.model").set_value(LLAMA_31_8B).run()
    assert_clean(at)
    expected = est.finetune_table(detailed())
    assert totals(at) == gb(expected)
    phases = {b.peak_phase for b in expected}
    assert phases == {"backward start"} and "Peak phase" not in table(at).columns  # one phase: the line says it
    assert "Peak phase: backward start: activations alive, no gradients yet (0)." in texts(at)
    assert "Detailed method" in texts(at)


def test_advanced_training_settings_reach_the_estimate():
    at = start({"model": LLAMA_31_8B}, page="finetune")
    at.selectbox(key="finetune.regime").set_value("mixed")
    at.number_input(key="finetune.lora_rank").set_value(64)
    segmented(at, "finetune.lora_preset").set_value("custom").run()
    at.multiselect(key="finetune.lora_targets").set_value(["q", "k", "v", "o", "gate", "up", "down"])
    at.radio(key="finetune.gradient_checkpointing").set_value(True)
    at.number_input(key="finetune.num_gpus").set_value(8)
    at.selectbox(key="finetune.zero_stage").set_value(3)
    at.toggle(key="finetune.offload_optimizer").set_value(True).run()
    assert_clean(at)
    s = detailed(regime="mixed", lora_rank=64, lora_targets="all-linear", gradient_checkpointing=True, num_gpus=8,
                 zero_stage=3, offload_optimizer=True)
    expected = est.finetune_table(s)
    assert totals(at) == gb(expected)
    assert list(table(at)["CPU memory (GB)"]) == [round(b.host_bytes / 1e9, 1) for b in expected]
    assert at.query_params["targets"] == "q,k,v,o,gate,up,down"


def test_the_quick_methods_precision_is_disabled_for_the_detailed_method():
    at = start({"model": LLAMA_31_8B}, page="finetune")
    assert at.selectbox(key="finetune.param_bits").disabled and not at.selectbox(key="finetune.regime").disabled
    at = start(page="finetune")
    assert not at.selectbox(key="finetune.param_bits").disabled and at.selectbox(key="finetune.regime").disabled


def test_a_lora_rank_wider_than_the_model_is_an_error_naming_the_field():
    at = start({"model": "meta-llama/Llama-3.2-1B"}, page="finetune")
    at.number_input(key="finetune.lora_rank").set_value(5000).run()
    assert not at.exception
    assert "lora_rank must be between 1 and 2,048" in errors(at)[0]
    assert at.number_input(key="finetune.lora_rank").value == 5000


def test_no_lora_target_is_an_error():
    at = start({"model": LLAMA_31_8B}, page="finetune")
    segmented(at, "finetune.lora_preset").set_value("custom").run()
    at.multiselect(key="finetune.lora_targets").set_value([]).run()
    assert not at.exception and "lora_targets" in errors(at)[0]


def test_a_pasted_config_gives_the_detailed_estimate():
    at = start(page="finetune")
    segmented(at, "finetune.src").set_value("config").run()
    at.text_area(key="finetune.cfg").input(json.dumps(LLAMA3_8B)).run()
    assert_clean(at)
    s = est.FinetuneScenario(est.architecture_from_config(LLAMA3_8B))
    assert totals(at) == gb(est.finetune_table(s))


def test_a_bad_config_shows_an_error():
    at = start(page="finetune")
    segmented(at, "finetune.src").set_value("config").run()
    at.text_area(key="finetune.cfg").input(json.dumps({"model_type": "llama", "hidden_size": 4096})).run()
    assert not at.exception and "config.json is missing" in errors(at)[0]


def test_gpu_fit_uses_the_pages_own_sharding_and_offers_zero_3():
    """Issue 14 item 9: without ZeRO, full fine-tuning of 7B (87.4 GB per GPU) fits no number of RTX 4090; ZeRO-3
    on 4 is a suggestion, and with ZeRO-3 chosen the fit counts 4 and the longest sequence."""
    at = start(page="finetune")
    assert {m.label: m.value for m in at.metric}["RTX 4090 needed"] == "does not fit"
    assert "ZeRO-3: 4 GPUs" in at.dataframe[0].value["Note"].tolist()
    assert "None" not in at.dataframe[0].value["GPUs needed"].tolist()
    assert "LoRA instead of Full\\-parameter: 18.1 GB per GPU" in at.warning[0].value  # the mildest change
    assert "- 4 GPUs with ZeRO-3 (FSDP FULL_SHARD): **24.4 GB** per GPU, fits on 4 GPUs" in texts(at)
    at = start({"zero": "3"}, page="finetune")
    s = est.FinetuneScenario(SEVEN_B, zero_stage=3)
    row = est.finetune.finetune_rows(s)[0][1]
    placed = est.fit(s, row, est.gpu("rtx-4090"))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["RTX 4090 needed"] == f"{placed.count} GPUs" == "4 GPUs"
    spread = est.hardware.with_gpus(s, placed.count)
    assert metrics["Longest sequence"] == f"{est.max_seq_len(spread, row, est.gpu('rtx-4090').memory_bytes):,} tokens"
    assert "(ZeRO-3)" in texts(at) and not at.warning


def test_a_mac_that_cannot_hold_a_fine_tune_says_fine_tuning_runs_on_one_mac():
    """7B full fine-tuning with ZeRO-3, which 4 RTX 4090s hold, on an M4 Max 64 GB (48 GiB wired): one Mac or none,
    and the page says why rather than only that no count fits."""
    at = start({"zero": "3", "gpu": "m4-max-40c-64gb"}, page="finetune")
    assert {m.label: m.value for m in at.metric}["Apple M4 Max needed"] == "does not fit"
    assert ("No number of Apple M4 Max that the estimator tries holds the selected row (fine-tuning runs on one "
            "Mac).") in texts(at)


def test_every_widget_offers_the_browser_its_current_value_as_default():
    """A widget the browser mounts after a later run has sent its element (a slow first load, a click before
    the form is drawn) starts from the element's default and sends it back on the next change: every default
    must be the value the session holds, or that change silently resets it (ui/state.py `bind`)."""
    at = start(page="finetune")
    segmented(at, "finetune.src").set_value("catalog").run()
    at.selectbox(key="finetune.model").set_value(LLAMA_31_8B).run()
    at.selectbox(key="finetune.optimizer").set_value("sgd").run()
    at.selectbox(key="finetune.gpu").set_value("h100-sxm").run()
    segmented(at, "finetune.lora_preset").set_value("custom").run()
    at.multiselect(key="finetune.lora_targets").set_value(["q", "k", "v", "o"]).run()
    at.radio(key="finetune.gradient_checkpointing").set_value(True).run()
    at.number_input(key="finetune.seq_len").set_value(8192).run()
    at.radio(key="finetune.adapter_bits").set_value(16).run()
    assert_clean(at)
    for w in [*at.number_input, *at.toggle]:
        assert w.proto.default == w.value, w.key
    for w in [*at.selectbox, *at.radio]:
        assert w.proto.default == w.index, w.key
    assert list(at.multiselect(key="finetune.lora_targets").proto.default) == [0, 1, 2, 3]
    assert list(segmented(at, "finetune.lora_preset").proto.default) == [3]  # Custom
    assert list(segmented(at, "finetune.src").proto.default) == [1]  # Catalog model
    assert len(at.number_input) >= 5 and len(at.toggle) >= 2 and len(at.selectbox) >= 5  # the whole form drawn


def test_qlora_checkpoints_by_default_and_a_row_that_does_not_fit_says_what_would():
    """Issue 14 item 2: Qwen2.5 7B, QLoRA 4-bit, r16, all-linear, batch 4, 2048 tokens was 98.8 GB and 'does not fit
    on any number of RTX 4090'; gradient checkpointing is now on for QLoRA, and the mildest change that fits the
    RTX 4090 (micro-batch 1 with 4 accumulation steps, 15.0 GB) is named with its memory. The checkpointed layer
    inputs are fp32 under peft's kbit cast (28.7 GB at batch 4; 27.0 when they were counted in 16-bit)."""
    at = start({"model": "Qwen/Qwen2.5-7B", "batch": "4", "targets": "q,k,v,o,gate,up,down", "row": "qlora-4bit"},
               page="finetune")
    assert at.radio(key="finetune.gradient_checkpointing").value == "auto"
    assert totals(at)[3] == 28.7
    [warning] = at.warning
    shown = warning.value.replace("\\", "")  # Markdown escapes
    # usable: the RTX 4090's CUDA total, 25,386,352,640 bytes = 25.4 GB (catalog cuda_visible_bytes)
    assert "does not fit on RTX 4090" in shown and "28.7 GB per GPU, 25.4 GB usable" in shown
    # 14.8 GB at micro-batch 1, + the adapters' fp32 gradients accumulated beside the next micro-batch
    assert "Micro-batch 1 with 4 gradient-accumulation steps" in shown and "15.0 GB per GPU" in shown
    at.number_input(key="finetune.batch_size").set_value(1).run()
    assert not at.warning and totals(at)[3] == 14.8


def test_a_link_without_gc_keeps_its_meaning():
    at = start({"v": "1", "p": "finetune", "model": "Qwen/Qwen2.5-7B", "batch": "4", "targets": "q,k,v,o,gate,up,down",
                "row": "qlora-4bit"})
    assert at.radio(key="finetune.gradient_checkpointing").value is False
    assert totals(at)[3] == 98.8
