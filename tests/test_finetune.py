"""Detailed fine-tuning: trainable parameters, regimes, optimizers, phases, QLoRA bases and ZeRO."""

import pytest

import estimator as est
from estimator.finetune import detailed_finetune
from estimator.training import lora_trainable_params, parse_lora_targets

MIB = 2**20


def test_llama_3_8b_lora_r16_all_linear_trains_41_943_040_parameters(llama3_8b):
    """PEFT lora.Linear: r (d_in + d_out) per target; q, k, v, o, gate, up, down sum to 81,920 per layer:
    16 x 81,920 x 32 layers."""
    assert lora_trainable_params(llama3_8b, parse_lora_targets("all-linear"), 16) == 41_943_040


def test_llama_2_7b_lora_r16_all_linear_trains_39_976_960_parameters(llama2_7b):
    """Measured with peft (docs/measurements.md): 39,976,960 trainable."""
    assert lora_trainable_params(llama2_7b, parse_lora_targets("all-linear"), 16) == 39_976_960


def test_default_lora_targets_are_q_and_v(llama3_8b):
    assert lora_trainable_params(llama3_8b, parse_lora_targets("q,v"), 8) == 32 * 8 * ((4096 + 4096) + (4096 + 1024))


@pytest.mark.parametrize("regime, per_param", [("pure-16bit", 12), ("mixed", 16), ("fp32", 16)])
def test_adam_model_states_per_parameter(llama3_8b, regime, per_param):
    row = detailed_finetune(est.FinetuneScenario(llama3_8b, regime=regime), "full")
    total = est.parameter_counts(llama3_8b).total
    states = sum(b for phase, b in row.phases if phase == "optimizer step") - row.component("overhead")
    assert states == per_param * total


def test_torch_adamw_on_bf16_keeps_16_bit_states(llama3_8b):
    row = detailed_finetune(est.FinetuneScenario(llama3_8b, optimizer_state_bits=16), "full")
    assert row.component("optimizer_states") == 4 * est.parameter_counts(llama3_8b).total


def test_eight_bit_adam_stores_2_03_bytes_per_parameter(llama3_8b):
    row = detailed_finetune(est.FinetuneScenario(llama3_8b, optimizer="adamw-8bit"), "full")
    assert row.component("optimizer_states") == pytest.approx(2.03125 * est.parameter_counts(llama3_8b).total, abs=1)


def test_adafactor_factors_the_second_moment(llama3_8b):
    row = detailed_finetune(est.FinetuneScenario(llama3_8b, optimizer="adafactor", optimizer_state_bits=32), "full")
    assert row.component("optimizer_states") < 0.001 * 4 * est.parameter_counts(llama3_8b).total


def test_small_llama_full_step_peak_matches_the_measured_715_19_mib(small_llama):
    """docs/measurements.md: full sdpa, torch AdamW (bf16 states), peak at the start of backward."""
    row = detailed_finetune(est.FinetuneScenario(small_llama, batch_size=2, seq_len=512, optimizer_state_bits=16,
                                                 overhead_gb=0), "full")
    assert row.peak_phase == "backward start"
    assert abs(row.total / MIB - 715.19) / 715.19 < 0.001


def test_llama_2_7b_lora_step_peak_matches_the_measured_31_218_mib(llama2_7b):
    """docs/measurements.md: LoRA r=16 all-linear sdpa, fp32 adapters and states, peak 31,217.53 MiB."""
    s = est.FinetuneScenario(llama2_7b, technique="lora", lora_targets="all-linear", overhead_gb=0)
    row = detailed_finetune(s, "lora")
    assert abs(row.total / MIB - 31_217.53) / 31_217.53 < 0.005


def test_llama_2_7b_full_step_peaks_at_the_optimizer_step(llama2_7b):
    """docs/measurements.md: 51,410 MiB of params + grads + bf16 states; a fused AdamW step adds no temporaries."""
    row = detailed_finetune(est.FinetuneScenario(llama2_7b, optimizer_state_bits=16, overhead_gb=0), "full")
    assert row.peak_phase == "optimizer step"
    assert row.component("activations") == 0
    assert abs(row.total / MIB - 51_410.04) < 0.02  # the measurements round each component to 0.01 MiB


def test_breakdown_components_sum_to_the_reported_peak(llama3_8b):
    for row in est.finetune_table(est.FinetuneScenario(llama3_8b)):
        assert row.total == max(total for _, total in row.phases)


def test_qlora_casts_unquantized_tensors_to_fp32(llama3_8b):
    """prepare_model_for_kbit_training: embeddings and lm_head (2 x 525M params) become fp32."""
    row = detailed_finetune(est.FinetuneScenario(llama3_8b, overhead_gb=0), "qlora-4bit")
    adapters = lora_trainable_params(llama3_8b, ("q_proj", "v_proj"), 16)
    base = row.component("weights") - 4 * adapters
    nf4_dq = est.weight_bytes(llama3_8b, "nf4-dq").total
    non_linear = 2 * 128256 * 4096 + 65 * 4096
    assert base == nf4_dq + 2 * non_linear


def test_zero_stages_shard_more_and_more(llama3_8b):
    totals = [detailed_finetune(est.FinetuneScenario(llama3_8b, num_gpus=8, zero_stage=z), "full").total
              for z in range(4)]
    assert totals[0] > totals[1] >= totals[2] > totals[3]  # stage 2 only helps when gradients are the peak


def test_zero_3_on_8_gpus_holds_an_eighth_of_the_model_states(llama3_8b):
    row = detailed_finetune(est.FinetuneScenario(llama3_8b, num_gpus=8, zero_stage=3, overhead_gb=0), "full")
    total = est.parameter_counts(llama3_8b).total
    assert row.component("optimizer_states") == -(-8 * total // 8)


def test_optimizer_offload_moves_states_to_cpu(llama3_8b):
    s = est.FinetuneScenario(llama3_8b, num_gpus=4, zero_stage=2, offload_optimizer=True)
    row = detailed_finetune(s, "full")
    assert row.component("optimizer_states") == 0
    assert row.host_bytes == -(-8 * est.parameter_counts(llama3_8b).total // 4) + \
        -(-2 * est.parameter_counts(llama3_8b).total // 4)


def test_lora_rank_larger_than_the_layer_is_rejected(small_llama):
    with pytest.raises(ValueError, match="lora_rank must be between 1 and 512"):
        est.FinetuneScenario(small_llama, technique="lora", lora_rank=1024)


def test_unknown_lora_target_is_rejected(small_llama):
    with pytest.raises(ValueError, match="unknown projection 'w9'"):
        est.FinetuneScenario(small_llama, lora_targets="q,w9")


@pytest.mark.parametrize("impl, extra", [("fused", 0), ("foreach", 1), ("single-tensor", None)])
def test_optimizer_step_temporaries_follow_the_implementation(llama3_8b, impl, extra):
    """validation/FINDINGS.md 16: fused +0, foreach + every trainable byte, single-tensor + 2 x largest tensor."""
    row = detailed_finetune(est.FinetuneScenario(llama3_8b, optimizer_impl=impl), "full")
    step = dict(row.phases)["optimizer step"] - dict(detailed_finetune(
        est.FinetuneScenario(llama3_8b), "full").phases)["optimizer step"]
    weights = 2 * est.parameter_counts(llama3_8b).total
    expected = {0: 0, 1: weights, None: 2 * 2 * 128256 * 4096}[extra]
    assert step == expected


def test_sixteen_bit_adapters_halve_the_adapter_states_and_share_inputs(llama3_8b):
    fp32 = detailed_finetune(est.FinetuneScenario(llama3_8b, lora_targets="all-linear"), "lora")
    bf16 = detailed_finetune(est.FinetuneScenario(llama3_8b, lora_targets="all-linear", adapter_bits=16), "lora")
    assert bf16.component("optimizer_states") * 2 == fp32.component("optimizer_states")
    assert bf16.component("activations") < 0.75 * fp32.component("activations")


def test_tied_embeddings_add_two_gradient_buffers_at_the_end_of_backward():
    """Measured on Llama 3.2 1B: the backward peak is the optimizer-step total + 2 x V x h x 2 B."""
    a = est.model("meta-llama/Llama-3.2-1B").architecture
    row = detailed_finetune(est.FinetuneScenario(a, seq_len=256, optimizer_state_bits=16, overhead_gb=0), "full")
    phases = dict(row.phases)
    assert phases["backward end"] - phases["optimizer step"] == 2 * 128256 * 2048 * 2
    assert row.peak_phase == "backward end" and row.total == phases["backward end"]


def test_gradient_checkpointing_rebuilds_one_layer_in_a_later_phase(llama3_8b):
    row = detailed_finetune(est.FinetuneScenario(llama3_8b, gradient_checkpointing=True, seq_len=8192,
                                                 batch_size=8), "lora")
    assert "backward recompute" in dict(row.phases)


def test_all_linear_on_moe_adapts_experts_and_router_as_peft_0_21_does():
    """validation/FINDINGS.md 10 (measured shapes): gate_up A 2Er x h, B 2I_e x 2Er; down A Er x I_e, B h x Er;
    the router r (h + E); q, k, v, o as usual. Routed experts stay frozen under any other target list."""
    a = est.model("Qwen/Qwen3-30B-A3B").architecture
    r, E, h, width = 16, 128, 2048, 768
    attention = r * ((h + 32 * 128) + 2 * (h + 4 * 128) + (32 * 128 + h))
    experts = 2 * E * r * h + 2 * width * 2 * E * r + E * r * width + h * E * r
    per_layer = attention + r * (h + E) + experts
    assert lora_trainable_params(a, parse_lora_targets("all-linear"), r) == 48 * per_layer
    assert lora_trainable_params(a, parse_lora_targets("q,k,v,o,gate,up,down"), r) == 48 * attention


def test_lora_assumptions_name_only_roles_the_model_has():
    """Issue 14 item 3: all-linear on a dense model names q_proj ... down_proj, not experts and router."""
    dense = est.model("meta-llama/Llama-3.1-8B").architecture
    moe = est.model("Qwen/Qwen3-30B-A3B").architecture
    row = lambda a: est.estimate_finetune(est.FinetuneScenario(a, technique="lora", lora_targets="all-linear"))  # noqa: E731
    assert "on q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj = " in row(dense).assumptions[0]
    assert "experts, router" in row(moe).assumptions[0]
