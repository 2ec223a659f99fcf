"""Framework presets: data with a source per setting, applied under the user's own inputs."""

import pytest

import estimator as est
from estimator.finetune import detailed_finetune
from estimator.frameworks import FRAMEWORK_PRESETS, FRAMEWORKS, preset_fields, preset_notes, with_framework
from estimator.inputs import inputs


@pytest.mark.parametrize("framework_id", FRAMEWORKS)
@pytest.mark.parametrize("technique", est.TECHNIQUES)
def test_every_preset_sets_declared_inputs_to_valid_values_with_a_source(framework_id, technique, llama3_8b):
    declared = inputs(est.FinetuneScenario)
    for setting in FRAMEWORK_PRESETS[framework_id].settings:
        assert setting.field in declared and setting.source.strip()
    s = est.FinetuneScenario(llama3_8b, **with_framework({"framework": framework_id, "technique": technique}))
    for field, value in preset_fields(framework_id, technique).items():
        assert getattr(s, field) == value


def test_the_hf_preset_sets_nothing_so_todays_numbers_stay(llama3_8b):
    assert preset_fields("hf", "qlora-4bit") == {}
    s = est.FinetuneScenario(llama3_8b, technique="qlora-4bit")
    assert est.FinetuneScenario(llama3_8b, **with_framework({"technique": "qlora-4bit"})) == s
    assert preset_notes(s, "qlora-4bit") == []


def test_inputs_given_win_over_the_preset():
    fields = with_framework({"framework": "unsloth", "technique": "qlora-4bit", "loss": "standard"})
    assert fields["loss"] == "standard" and fields["offload_activations"] is True


def test_torchtune_full_fine_tune_steps_in_backward_with_paged_8_bit_adam():
    assert preset_fields("torchtune", "full") == {
        "loss": "chunked", "gradient_checkpointing": True, "optimizer_state_bits": 16,
        "optimizer": "paged-adamw-8bit", "optimizer_in_backward": True}
    assert preset_fields("torchtune", "lora")["adapter_bits"] == 16


def test_unsloth_preset_lowers_a_qlora_run_and_lists_why(llama3_8b):
    """Llama 3 8B QLoRA, b = 2, s = 2,048: the fused loss replaces the 12 B x t x V fp32 logits (6.3 GB) by
    2 B x t x h + one 128-token chunk of logits + the fp32 loss, and the offloaded checkpoints keep one layer
    input of the 32 on the GPU; the peak moves to the recompute of one layer."""
    base = dict(technique="qlora-4bit", batch_size=2, seq_len=2048)
    hf = detailed_finetune(est.FinetuneScenario(llama3_8b, **base), "qlora-4bit")
    unsloth = detailed_finetune(est.FinetuneScenario(llama3_8b, **with_framework({"framework": "unsloth", **base})),
                                "qlora-4bit")
    t, V, h = 4096, 128_256, 4096
    assert hf.peak_phase == "backward start" and hf.component("logits") == 12 * t * V
    fields = with_framework({"framework": "unsloth", **base})
    no_savers = detailed_finetune(est.FinetuneScenario(llama3_8b, **{**fields, "loss": "standard",
                                                                      "offload_activations": False}), "qlora-4bit")
    start = "backward start"
    assert dict(no_savers.phases)[start] - dict(unsloth.phases)[start] == \
        12 * t * V - (2 * t * h + 2 * 128 * V + 4 * t) + 2 * t * h * (32 - 1)
    assert hf.total - unsloth.total > 5 * 10**9
    assert unsloth.host_bytes == 2 * 4096 * 4096 * 32  # the checkpointed layer inputs, 2 B x t x h x layers
    notes = "\n".join(unsloth.assumptions)
    assert "Unsloth preset: loss = fused, gradient_checkpointing = on, offload_activations = on" in notes
    assert "unsloth_zoo/fused_losses/cross_entropy_loss.py" in notes


def test_a_preset_setting_changed_by_hand_is_not_listed(llama3_8b):
    s = est.FinetuneScenario(llama3_8b, **with_framework({"framework": "unsloth", "technique": "qlora-4bit",
                                                          "loss": "standard"}))
    notes = preset_notes(s, "qlora-4bit")
    assert not any("loss = fused" in line for line in notes)
    assert any("offload_activations = on" in line for line in notes)


def test_unknown_framework_is_refused_naming_the_choices(llama3_8b):
    with pytest.raises(ValueError, match="framework must be one of hf, trl, unsloth, torchtune"):
        est.FinetuneScenario(llama3_8b, framework="megatron")


def test_torchtune_qlora_keeps_the_embeddings_in_16_bit(llama3_8b):
    """peft's prepare_model_for_kbit_training casts embeddings, lm_head and norms to fp32; torchtune's QLoRA
    leaves them in bf16: 2 B less for each of Llama 3 8B's 2 x 128,256 x 4,096 + 65 x 4,096 parameters."""
    peft = detailed_finetune(est.FinetuneScenario(llama3_8b, technique="qlora-4bit"), "qlora-4bit")
    own = detailed_finetune(est.FinetuneScenario(llama3_8b, technique="qlora-4bit", peft_kbit_cast=False),
                            "qlora-4bit")
    assert peft.component("weights") - own.component("weights") == 2 * (2 * 128_256 * 4096 + 65 * 4096)


def test_peft_kbit_cast_keeps_the_checkpointed_residual_stream_in_fp32(llama3_8b):
    """prepare_model_for_kbit_training casts the embedding to fp32, so the embedding output and every layer's
    `residual + output` are fp32 (type promotion): with gradient checkpointing (on for QLoRA) the 32 layer inputs
    and the embedding output kept by enable_input_require_grads are 4 B per element, not 2:
    2 B x 2,048 tokens x 4,096 x 33 = 553,648,128 B more activations. Without the cast (torchtune, Unsloth,
    LLaMA-Factory) they stay 16-bit; LoRA on a 16-bit base is unchanged."""
    def row(technique, **fields):
        return detailed_finetune(est.FinetuneScenario(llama3_8b, technique=technique, seq_len=2048, **fields),
                                 technique)
    cast, own = row("qlora-4bit"), row("qlora-4bit", peft_kbit_cast=False)
    assert cast.peak_phase == own.peak_phase == "backward start"
    assert cast.component("activations") - own.component("activations") == 2 * 2048 * 4096 * 33
    assert any("in fp32: prepare_model_for_kbit_training" in note for note in cast.assumptions)
    assert row("lora").component("activations") == row("lora", peft_kbit_cast=False).component("activations")
    # activation offloading keeps the fp32 layer input in flight: 4 B x 2,048 x 4,096
    offloaded = row("qlora-4bit", offload_activations=True)
    assert any(note.endswith(f"({4 * 2048 * 4096:,} B)") for note in offloaded.assumptions)


def test_llama_factory_qlora_does_not_cast_the_frozen_weights_to_fp32(llama3_8b):
    """LLaMA-Factory never calls prepare_model_for_kbit_training: only its trainable parameters are cast to fp32."""
    assert preset_fields("llama-factory", "qlora-4bit")["peft_kbit_cast"] is False
    assert "peft_kbit_cast" not in preset_fields("llama-factory", "lora")
    s = est.FinetuneScenario(llama3_8b, **with_framework({"framework": "llama-factory", "technique": "qlora-4bit"}))
    assert not s.peft_kbit_cast
