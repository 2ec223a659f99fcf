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


_DELTANET = dict(head_dim=64, intermediate_size=1376, full_attention_interval=4, linear_conv_kernel_dim=4,
                 linear_key_head_dim=32, linear_num_key_heads=2, linear_num_value_heads=6, linear_value_head_dim=48,
                 partial_rotary_factor=0.25)


def test_gated_deltanet_prefill_keeps_the_fallbacks_fp32_chunk_tensors():
    """Traced layer 2 of a distinct-size Qwen3.5 (b 2, s 300; validation/FINDINGS.md 45): 10,392,976 B beside its
    input, by shape. K = 2 x 32, V = 6 x 48, C = 64, N = 5 chunks, T = 2 x 5 x 64 = 640 padded tokens."""
    from estimator.activations import _linear_attention_inference

    t, T, n_v = 600, 640, 6
    caller = 2 * t * (2 * 64 + 2 * 288) + 3 * 2 * t * n_v + 4 * t * n_v  # conv output, z; b, a, beta; fp32 g
    k_side = 5 * 4 * T * n_v * 32  # k_beta, decayed k_beta, k_cumdecay, decayed q and k
    v_side = 4 * 4 * T * n_v * 48  # padded v, v_beta, new_values, core_attn_out
    chunk_matrices = 3 * 4 * T * n_v * 64  # pairwise decays, UT system, intra-chunk attention
    gates = 3 * 4 * T * n_v + 4 * 2 * n_v * 5 + 64 * 64  # padded beta, decay, cumsum; chunk decay; bool mask
    state = 4 * 2 * n_v * 32 * 48
    end = 4 * T * n_v * 48 + 2 * 4 * 2 * n_v * 64 * 48  # the reshape copy, the last v_new and state read
    assert caller + k_side + v_side + chunk_matrices + gates + state + end == 10_392_976
    qwen3_5 = _arch(model_type="qwen3_5_text", **_DELTANET)
    assert _linear_attention_inference(qwen3_5, 2, 300, 2) == 10_392_976
    # Qwen3-Next keeps in_proj_qkvz's and in_proj_ba's outputs beside the reshaped copies (traced: 11,252,176 B)
    qwen3_next = _arch(model_type="qwen3_next", moe_intermediate_size=256, num_experts=16, num_experts_per_tok=4,
                       shared_expert_intermediate_size=256, decoder_sparse_step=1, mlp_only_layers=[], **_DELTANET)
    assert _linear_attention_inference(qwen3_next, 2, 300, 2) == 10_392_976 + 2 * t * (128 + 576) + 2 * 2 * t * n_v
    assert 10_392_976 + 2 * t * (128 + 576) + 2 * 2 * t * n_v == 11_252_176


def test_gated_deltanet_prefill_sets_the_inference_peak_and_engines_keep_the_kernels():
    """validation/results.csv, qwen3_5_text-infer (b 2, s 512): 35,168,768 B measured, which holds HF's fp32 states
    of layers 0-1 and layer 2's conv state (FINDINGS 41: 2 x (16,384 + 262,144) + 16,384) and 4 x 16 rotary dims of
    cos / sin where the estimate counts the head's 64 (+196,608), less the int64 positions (4,096)."""
    from estimator.activations import _linear_attention_inference

    qwen3_5 = _arch(model_type="qwen3_5_text", head_dim=64, intermediate_size=1376, full_attention_interval=4,
                    linear_conv_kernel_dim=4, linear_key_head_dim=64, linear_num_key_heads=4,
                    linear_num_value_heads=8, linear_value_head_dim=64, partial_rotary_factor=0.25)
    peak = inference_layer_peak(qwen3_5, 2, 512, 512)
    assert peak == 35_168_768 - (2 * (16_384 + 262_144) + 16_384) + 196_608 - 4_096
    assert peak == 3 * 2 * 1024 * 512 + 2 * 2 * 1024 * 64 + _linear_attention_inference(qwen3_5, 2, 512, 2)
    # vLLM and SGLang run flash-linear-attention's kernels: the layer is costed as before (an attention layer)
    assert inference_layer_peak(qwen3_5, 2, 512, 528, linear_attention_kernels=True) == 12_910_592


_DSV32 = dict(model_type="deepseek_v32", num_key_value_heads=8, intermediate_size=1024, moe_intermediate_size=256,
              n_routed_experts=16, num_experts_per_tok=4, n_shared_experts=1, n_group=4, topk_group=2,
              first_k_dense_replace=1, q_lora_rank=192, kv_lora_rank=128, qk_nope_head_dim=64, qk_rope_head_dim=32,
              v_head_dim=64, rope_scaling=None, index_topk=256)


def test_deepseek_v32_indexer_scores_every_key_in_fp32_under_eager():
    """Traced layer 1 of a distinct-size DeepSeek-V3.2 (b 2, s = T = 300, 8 heads of 64 + 32 / 64, index heads 6 x 48;
    validation/FINDINGS.md 43): 45,427,200 B at the indexer's scoring beside the layer input, by shape."""
    from estimator.activations import _indexer_inference, _indexer_mask_inference

    a = _arch(**_DSV32, index_n_heads=6, index_head_dim=48)
    t, b, T = 600, 2, 300
    mla = (2 * t * 192 + 2 * 2 * t * 8 * 96 + 2 * t * 160 + 2 * t * 8 * 32  # q_resid, q_b out + query, kv_a, roped q
           + 2 * b * T * 8 * 128 + 2 * b * T * 8 * 96)  # kv_b_proj's output, the assembled keys
    indexer = 2 * 2 * t * 6 * 48 + 2 * t * 48 + 2 * t * 6 * 32 + 2 * t * 32  # wq_b out, q; k_norm; roped halves
    fp32 = 4 * t * 6 * 48 + 4 * b * 48 * T + 4 * t * 48 * T + 4 * t * 6 * T  # q, k^T, k per query, scores
    assert mla + indexer + fp32 == _indexer_inference(a, 2, 300, 300, 2) == 45_427_200
    # during attention: int32 top-256, the bool mask of unselected keys, the filled 16-bit mask
    assert _indexer_mask_inference(a, 2, 300, 300, 2) == 4 * t * 256 + b * 300 * T + 2 * b * 300 * T == 1_154_400


def test_deepseek_v32_indexer_terms_only_under_eager():
    """validation/results.csv, deepseek_v32-infer-eager (b 2, s 512, index heads 8 x 64): 168,497,152 B measured at
    the prefill peak; the estimate at T = 512 is that + RoPE's cos / sin at b = 2 (65,536) - the positions (4,096).
    The fused-attention estimate stands for serving engines, whose indexer kernels keep neither term."""
    a = _arch(**_DSV32, index_n_heads=8, index_head_dim=64)
    assert a.index_topk == 256
    assert inference_layer_peak(a, 2, 512, 512, flash_attention=False) == 168_497_152 + 65_536 - 4_096
    assert inference_layer_peak(a, 2, 512, 528) == 31_064_064  # unchanged (results.csv, deepseek_v32-infer)
