"""Activation formulas against the bytes measured with fake tensors (docs/measurements.md: Hugging Face Llama
layers, bf16, sdpa/eager, with and without gradient checkpointing and LoRA)."""

from estimator.activations import (inference_layer_peak, loss_head_bytes, recompute_bytes,
                                   training_activation_bytes, training_layer_bytes)

MIB = 2**20
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def test_small_llama_sdpa_layer_saves_22_323_200_bytes(small_llama):
    """Measured (docs/measurements.md, small Llama): 21.29 MiB per layer, 22,323,200 B (b=2, s=512)."""
    assert training_layer_bytes(small_llama, 2, 512) == 22_323_200


def test_small_llama_eager_layer_matches_the_measured_46_76_mib(small_llama):
    """Eager keeps the fp32 softmax and its bf16 copy (6 a s^2 b). The measured 47.26 MiB includes 0.5 MiB of
    DynamicCache that is freed before backward starts (docs/measurements.md; validation/FINDINGS.md 3)."""
    assert round(training_layer_bytes(small_llama, 2, 512, flash_attention=False) / MIB, 2) == 46.76


def test_llama_2_7b_sdpa_layer_is_364_27_mib(llama2_7b):
    assert round(training_layer_bytes(llama2_7b, 1, 2048) / MIB, 2) == 364.27


def test_llama_2_7b_eager_layer_is_1132_02_mib(llama2_7b):
    assert round(training_layer_bytes(llama2_7b, 1, 2048, flash_attention=False) / MIB, 2) == 1132.02


def test_lora_with_fp32_adapters_saves_an_fp32_input_copy_per_module(small_llama):
    """Measured: LoRA r=16 all-linear, peft defaults: 32.41 MiB per layer (64.83 sbh), 1.5x full fine-tuning."""
    layer = training_layer_bytes(small_llama, 2, 512, frozen_base=True, lora_targets=ALL_LINEAR, lora_rank=16)
    assert round(layer / MIB, 2) == 32.41


def test_lora_with_bf16_adapters_shares_inputs(small_llama):
    """Measured: autocast_adapter_dtype=False gives 19.51 MiB per layer."""
    layer = training_layer_bytes(small_llama, 2, 512, frozen_base=True, lora_targets=ALL_LINEAR, lora_rank=16,
                                 adapter_bytes=2)
    assert round(layer / MIB, 2) == 19.51


def test_gradient_checkpointing_keeps_one_input_per_layer_when_backward_starts(llama2_7b):
    full = training_activation_bytes(llama2_7b, 1, 2048)
    checkpointed = training_activation_bytes(llama2_7b, 1, 2048, gradient_checkpointing=True)
    layer = training_layer_bytes(llama2_7b, 1, 2048)
    assert full - checkpointed == 32 * layer - 32 * 2 * 2048 * 4096
    assert recompute_bytes(llama2_7b, 1, 2048) == layer  # rebuilt one layer at a time later in backward


def test_small_llama_activations_after_forward_match_the_measured_214_29_mib(small_llama):
    """Saved activations + the fp32 log-softmax (4 t V) = 'act. after fwd' (RoPE cos/sin not modelled)."""
    after_forward = training_activation_bytes(small_llama, 2, 512) + 4 * 2 * 512 * 32000
    assert abs(after_forward / MIB - 214.29) < 0.2


def test_loss_head_is_twelve_bytes_per_logit(small_llama):
    assert loss_head_bytes(small_llama, 2, 512) == 12 * 1024 * 32000


def test_llama_2_7b_prefill_of_4096_tokens_peaks_near_the_measured_388_mib(llama2_7b):
    """Measured (docs/measurements.md): prefill peak minus weights and KV = 2436.03 - 2048 MiB, b=1, N=4096, sdpa."""
    peak = inference_layer_peak(llama2_7b, 1, 4096, 4096)
    assert abs(peak / MIB - 388.03) / 388.03 < 0.01


def test_eager_inference_adds_the_score_matrix(llama2_7b):
    flash = inference_layer_peak(llama2_7b, 1, 4096, 4096)
    eager = inference_layer_peak(llama2_7b, 1, 4096, 4096, flash_attention=False)
    assert eager > flash + 6 * 32 * 4096 * 4096 - 16 * 4096 * 11008


# Small configs of validation/matrix.py (b = 2, s = 512): layer bytes measured with fake tensors (results.csv)
_SMALL = dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, vocab_size=32000,
              max_position_embeddings=4096, tie_word_embeddings=False)


def _arch(**config):
    import estimator as est

    return est.architecture_from_config({**_SMALL, **config})


def test_cohere_layer_norms_save_two_fp32_centred_copies_and_the_fp32_normalized_tensor():
    """CohereLayerNorm subtracts the mean twice in fp32 (validation/FINDINGS.md 42): measured 29,180,416 B per
    Command R+ layer (with q/k LayerNorms), 23,894,016 B per windowed Command A layer."""
    command_r = _arch(model_type="cohere", intermediate_size=1376, use_qk_norm=True)
    assert training_layer_bytes(command_r, 2, 512, 2) == 29_180_416
    command_a = _arch(model_type="cohere2", intermediate_size=1376, sliding_window=256)
    assert training_layer_bytes(command_a, 2, 512, 2) == 23_894_016
    # whole forward: the layers, the final LayerNorm, and RoPE's cos / sin counted at b = 2 (131,072 B over)
    assert training_activation_bytes(command_r, 2, 512) == 124_198_912 + 131_072


def test_windowed_and_full_layers_are_separate_kinds():
    """Command A windows 3 of 4 layers; the full layer saves no repeated k / v and no mask (measured 21,272,576 B
    against 23,894,016 B), so the forward's total is 100,431,872 B measured, + RoPE's 131,072 B."""
    from estimator.activations import layer_kinds

    command_a = _arch(model_type="cohere2", intermediate_size=1376, sliding_window=256)
    assert sorted(count for _, count in layer_kinds(command_a)) == [1, 3]
    assert training_layer_bytes(command_a, 2, 512, 3) == 21_272_576
    assert training_activation_bytes(command_a, 2, 512) == 100_431_872 + 131_072


def test_olmo_3_norms_are_olmo_2_norms():
    """Olmo3RMSNorm multiplies the weight in fp32 as Olmo2RMSNorm does: 32,292,864 B per windowed layer measured."""
    olmo3 = _arch(model_type="olmo3", intermediate_size=1376, sliding_window=256)
    assert training_layer_bytes(olmo3, 2, 512, 2) == 32_292_864
