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


# Gemma 3n at sizes that tell every tensor apart (validation/FINDINGS.md 39): h 320, 4 query heads and 2 KV heads of
# 48, I 704, per-layer inputs p 40, LAuReL r 24, n 3 AltUp copies, 6 layers alternating sliding (W 96) and full, the
# last 2 reusing K and V, activation sparsity on layers 0 and 1; traced with validation.trace (transformers 5.24.0,
# peft 0.21.2, bf16) at b 2, s 144 (t 288)
GEMMA_3N = dict(model_type="gemma3n_text", hidden_size=320, num_hidden_layers=6, num_attention_heads=4,
                num_key_value_heads=2, head_dim=48, vocab_size=1000, max_position_embeddings=4096,
                tie_word_embeddings=False, intermediate_size=704, sliding_window=96, vocab_size_per_layer_input=500,
                hidden_size_per_layer_input=40, num_kv_shared_layers=2, altup_num_inputs=3, laurel_rank=24,
                activation_sparsity_pattern=[0.95, 0.95, 0.0, 0.0, 0.0, 0.0],
                layer_types=["sliding_attention", "full_attention"] * 3)
QV = ("q_proj", "v_proj")
ALL_LINEAR_PRESET = ALL_LINEAR + ("experts", "router")  # training.LORA_TARGET_PRESETS["all-linear"]


def test_gemma_3n_layers_save_what_the_trace_saves():
    import estimator as est

    a = est.architecture_from_config(GEMMA_3N)
    assert a.sparse_mlp_layers == (0, 1) and a.kv_shared_layers == (4, 5)
    traced = [11_589_972, 11_396_436, 11_183_890, 10_990_354, 10_842_706, 10_538_578]  # bytes each layer created
    assert [training_layer_bytes(a, 2, 144, i) for i in range(6)] == traced
    # layer 3 (full attention, own K and V, dense MLP) by hand, t = 288:
    t, h, n, A = 288, 320, 3, 2
    norm_h = 4 * t * h * 2 + 2 * 4 * t + 4 * h  # fp32 copy and normalized tensor, mean and pow rows, fp32 weight
    layer_3 = (8 * norm_h  # router x2, input, post_laurel, post_attention, pre_ff, post_ff, post_per_layer_input
               + (4 * t * 192 * 2 + 2 * 4 * t * 4 + 4 * 48)  # q_norm over 4 heads of 48
               + (4 * t * 96 * 2 + 2 * 4 * t * 2 + 4 * 48) + (4 * t * 96 + 2 * 4 * t * 2)  # k_norm, v_norm
               + A * t * (192 + 192 + 96 + 96) + 4 * 4 * t  # roped q, output, k and v; logsumexp
               + 4 * A * t * 704  # gate, GeLU, up, product
               + 2 * n * A * t * h + 2 * 4 * t * n + A * t * n * n + 3 * A * t * n + A * n * n  # AltUp
               + 6 * A * t * h + A * t * 24 + 3 * A * t * 40)  # Linear inputs, LAuReL, per-layer input gate
    assert layer_3 == traced[3]
    # layer 1 adds the sparse MLP's relu output, std and multiplier; layer 5 reuses layer 3's K and V and norms
    assert traced[1] - traced[3] == A * t * 704 + A * t + A
    k_and_v, kv_norms = A * t * 2 * 96, (4 * t * 96 * 2 + 2 * 4 * t * 2 + 4 * 48) + (4 * t * 96 + 2 * 4 * t * 2)
    assert traced[3] - traced[5] == k_and_v + kv_norms


def test_gemma_3n_forward_saves_the_traced_bytes_in_every_training_mode():
    import estimator as est

    a = est.architecture_from_config(GEMMA_3N)
    assert training_activation_bytes(a, 2, 144) == 70_448_656  # the layers + 3,906,720 B around them
    assert training_activation_bytes(a, 2, 144, frozen_base=True, lora_targets=QV, lora_rank=16) == 41_565_552
    assert training_activation_bytes(a, 2, 144, frozen_base=True, lora_targets=ALL_LINEAR_PRESET,
                                     lora_rank=16) == 69_155_536
    assert training_activation_bytes(a, 2, 144, flash_attention=False) == 76_586_512
    assert training_activation_bytes(a, 2, 144, flash_attention=False, frozen_base=True, lora_targets=QV,
                                     lora_rank=16) == 46_929_264
    assert training_activation_bytes(a, 2, 144, flash_attention=False, gradient_checkpointing=True) == 7_612_704
    # under sdpa the fake-tensor trace also builds a full-attention mask b s^2 that real tensors skip (FINDINGS 39)
    assert training_activation_bytes(a, 2, 144, gradient_checkpointing=True) == 7_529_760 - 2 * 144 * 144
    # with a frozen base enable_input_require_grads makes the embedding output, and so the AltUp projections, need
    # a gradient: the embedding side is kept as in full fine-tuning
    for targets, traced in ((QV, 6_698_016), (ALL_LINEAR_PRESET, 8_633_376)):
        assert training_activation_bytes(a, 2, 144, gradient_checkpointing=True, frozen_base=True,
                                         lora_targets=targets, lora_rank=16) == traced - 2 * 144 * 144
    # around the layers (full fine-tuning), by hand: stacked copies, embedding output, AltUp projections both ways
    # and their products, final norm and its output; magnitudes; per-layer inputs, their norm, ids; RoPE
    t, h, n, A, L, p = 288, 320, 3, 2, 6, 40
    outside = ((n + 1 + 4 * (n - 1) + 1) * A * t * h + (4 * t * h * 2 + 2 * 4 * t + 4 * h) + 4 * n * A * t
               + A * t * L * p + (4 * t * L * p * 2 + 2 * 4 * t * L + 4 * p) + 8 * t + 4 * A * 144 * 48)
    assert outside == 3_906_720 == 70_448_656 - sum([11_589_972, 11_396_436, 11_183_890, 10_990_354, 10_842_706,
                                                        10_538_578])


def test_gemma_3n_layers_follow_their_own_mlp_widths():
    """intermediate_size as a list (MatFormer slices): each layer saves its own width, traced 70,190,608 B (full)
    and 68,786,896 B (all-linear, down_proj's input copy at the layer's width)."""
    import estimator as est

    a = est.architecture_from_config({**GEMMA_3N, "intermediate_size": [704, 1024, 704, 512, 704, 384]})
    assert training_activation_bytes(a, 2, 144) == 70_190_608
    assert training_activation_bytes(a, 2, 144, frozen_base=True, lora_targets=ALL_LINEAR_PRESET,
                                     lora_rank=16) == 68_786_896
    # against the uniform 704: layers 1, 3 and 5 save (1024 - 704), (512 - 704), (384 - 704) x 4 A t, layer 1 also
    # its sparse relu output
    t, A = 288, 2
    assert 70_448_656 - 70_190_608 == A * t * (-(1024 - 704) * (4 + 1) - (512 - 704) * 4 - (384 - 704) * 4)


def test_gemma_3n_prefill_holds_the_traced_working_set():
    """Traced prefill peaks (b 2, 144 tokens); the estimate leaves out two int64 scalars (16 B). Each variant makes
    another moment the largest: post_per_layer_input_norm, the MLP (I 4096), q_norm (40 heads), AltUp.correct (n 6)."""
    import estimator as est

    def peak(**changes):
        a = est.architecture_from_config({**GEMMA_3N, **changes})
        return inference_layer_peak(a, 2, 144, 144) + 16

    assert peak() == 5_195_536
    assert peak(intermediate_size=4096) == 12_787_216
    assert peak(num_attention_heads=40) == 8_050_192
    assert peak(altup_num_inputs=6) == 7_596_304
    a = est.architecture_from_config(GEMMA_3N)
    assert inference_layer_peak(a, 2, 144, 144, flash_attention=False) + 16 == 5_672_464
    # by hand at the norm: model (embedding, 2 rescaled copies, the last projection; per-layer inputs; mask; RoPE;
    # position ids; magnitudes) + the layer's input, predictions, corrected copies, 10 tensors and the fp32 norm
    t, h, A = 288, 320, 2
    assert (4 * A * t * h + A * t * 6 * 40 + 144 * 144 + 4 * A * 144 * 48 + 8 * 144 + 2 * A * t
            + 9 * A * t * h + 10 * A * t * h + 2 * 4 * t * h + 2 * 4 * t) + 16 == 5_195_536


def test_gemma_3n_reads_the_activation_sparsity_pattern():
    import pytest

    import estimator as est

    assert est.architecture_from_config({"model_type": "gemma3n_text"}).sparse_mlp_layers == tuple(range(10))
    small = {k: v for k, v in GEMMA_3N.items() if k != "activation_sparsity_pattern"}
    assert est.architecture_from_config(small).sparse_mlp_layers == ()  # 10 layers or fewer: none by default
    assert est.architecture_from_config({**small, "activation_sparsity_pattern": 0.5}).sparse_mlp_layers == tuple(
        range(6))
    for bad in ([0.95] * 5, [1.5] * 6, ["x"] * 6, True):
        with pytest.raises(ValueError, match="activation_sparsity_pattern"):
            est.architecture_from_config({**small, "activation_sparsity_pattern": bad})


def test_gemma_3n_at_real_width_saves_the_traced_bytes():
    """Gemma3nTextConfig's defaults (h 2048, 8 heads x 256, 2 KV heads, I 16,384, n 4, r 64, p 256, window 512) with
    5 layers (sliding, sliding, full, sliding, full; the last 2 reuse K and V; sparsity 0.95 on the first 2), b 1,
    s 1024, traced: two RoPE tables (sliding and full bases) of one row of positions each."""
    import estimator as est

    a = est.architecture_from_config(dict(
        model_type="gemma3n_text", num_hidden_layers=5, num_kv_shared_layers=2,
        layer_types=["sliding_attention"] * 2 + ["full_attention", "sliding_attention", "full_attention"],
        activation_sparsity_pattern=[0.95, 0.95, 0.0, 0.0, 0.0]))
    assert [training_layer_bytes(a, 1, 1024, i) for i in range(5)] == [404_713_506, 404_713_506, 362_768_416,
                                                                         364_831_776, 354_346_016]
    assert training_activation_bytes(a, 1, 1024) == 1_998_951_588
    assert training_activation_bytes(a, 1, 1024, frozen_base=True, lora_targets=QV, lora_rank=16) == 1_286_573_220
    assert inference_layer_peak(a, 1, 1024, 1024) + 16 == 223_883_280
