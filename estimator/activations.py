"""Activation memory: the inference transient peak, training's saved activations, and the loss head.

The accounting follows Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
Models", arXiv:2205.05198, section 4.1), adjusted to what a Hugging Face Llama-family layer really saves, as
measured tensor by tensor with fake tensors (docs/measurements.md; other families: validation/FINDINGS.md).
Notation: t = tokens in the step (batch x sequence), h hidden, I MLP width, A = bytes of a 16-bit activation,
V vocabulary.

Training, per layer (flash/sdpa attention, no dropout):
    each RMSNorm : fp32 copy of the input 4th + rsqrt 4t (+ normalized input and output 2At when trainable)
    attention    : q, k, v, output A t (2 q_width + 2 kv_width) + fp32 logsumexp 4 n_h t
    eager        : q, repeated k and v, output 4 A t q_width + fp32 softmax and its 16-bit copy (4 + A) n_h b s^2
    gated MLP    : gate, SiLU, up, product 4 A t I (3 when the down projection is frozen)
    gradient checkpointing: A t h per layer (the layer input) + one layer recomputed during backward
    LoRA (peft, fp32 adapters by default): an fp32 copy of each adapted layer's input + the rank-r output
Other families' code paths (validation/FINDINGS.md 19-27): LayerNorm saves its 16-bit input, mean and rstd; GeLU /
gelu_new / ReLU MLPs keep 2 / 5 / 1 tensors of width I; Falcon's multi-query attention runs SDPA's math kernel
(fp32 q, k, v and s^2 softmax); fused q/k/v projections keep their whole output (GPT-2) or copy q (Phi-3).
Loss head: HF `ForCausalLMLoss` upcasts logits to fp32 (transformers `src/transformers/loss/loss_utils.py`):
4 t V saved + 8 t V of temporaries when backward starts = 12 t V.
Inference (no autograd): the largest layer-phase working set, e.g. for the MLP
    embedding output, layer input, residual, normed input 4 A t h + gate/SiLU, up, product 3 A t I
Gated DeltaNet layers on transformers' torch fallback and DeepSeek-V3.2's indexer under eager attention have phases
of their own: fp32 chunk tensors, fp32 scores of every key (validation/FINDINGS.md 43, 45).
"""

from __future__ import annotations

import functools

from .architecture import Architecture
from .training import LORA_TARGET_PRESETS, SPLIT_DELTANET_TYPES, lora_modules, moe_targets
from .units import FP32_BYTES

LOSS_HEAD_BYTES_PER_LOGIT = 12  # fp32 log-softmax kept 4 B + two fp32 temporaries at backward start 8 B

# LayerNorm (GPT-2, Falcon, Phi, OPT): `torch.nn.functional.layer_norm` -> aten::native_layer_norm saves its input,
# weight and the per-token mean and rstd. The statistics are in the accumulation type: fp32 for 16-bit inputs on
# CUDA (aten/src/ATen/native/cuda/layer_norm_kernel.cu, `acc_type`); the CPU kernel keeps them in bf16, so CPU
# traces show 2 B where a GPU holds 4 B (validation/FINDINGS.md 19).
LAYER_NORM_STAT_BYTES = FP32_BYTES

# Expert-free MLPs `fc2(act(fc1(x)))`: activation-width (I) tensors autograd saves per token, (trainable, frozen).
# gelu_new (NewGELUActivation, transformers src/transformers/activations.py) is separate Python ops
# 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): fc1's output x, 0.5 x, tanh(.), 1 + tanh(.) and the product
# feeding fc2 (a frozen fc2 needs no input: 4). Exact GeLU (nn.GELU) saves its input and fc2 its output (frozen: 1).
# ReLU saves only its output, which is also fc2's input (1 either way).
# Squared ReLU (ReLUSquaredActivation: relu then square, transformers src/transformers/activations.py) saves the ReLU
# output for the square and the square for fc2 (frozen fc2: only the first).
MLP_ACTIVATION_TENSORS = {"gelu_new": (5, 4), "gelu": (2, 1), "relu": (1, 1), "relu2": (2, 1)}
FAMILY_MLP_ACTIVATION = {  # the activation each family's published configs use (transformers v5.24.0 modeling files)
    "gpt2": "gelu_new",  # GPT2MLP, activation_function "gelu_new"
    "phi": "gelu_new",  # PhiMLP, Phi-1/1.5/2 hidden_act "gelu_new"
    "falcon": "gelu", "RefinedWebModel": "gelu", "RefinedWeb": "gelu",  # FalconMLP: nn.GELU()
    "opt": "relu",  # OPTDecoderLayer, activation_function "relu"
    "nemotron": "relu2", "nemotron_h": "relu2",  # NemotronMLP / NemotronHMLP, hidden_act "relu2"
    "starcoder2": "gelu", "gpt_neox": "gelu",  # Starcoder2MLP gelu_pytorch_tanh, GPTNeoXMLP gelu: one nn.GELU
}
# The same MLPs without autograd: I-wide tensors live at once. gelu_new holds fc1's output x, x^3, 0.044715 x^3 and
# the growing sum (4, measured on GPT-2); exact GeLU and ReLU hold fc1's output and the activation (2).
MLP_INFERENCE_TENSORS = {"gelu_new": 4, "gelu": 2, "relu": 2, "relu2": 3}  # relu2: fc1 out, ReLU, square
# RMSNorms that multiply the weight in fp32 and save the fp32 normalized tensor, where the config reader does not
# set `fp32_norm_weight`: Olmo2RMSNorm returns (self.weight * hidden_states).to(input_dtype) (transformers v5.24.0
# src/transformers/models/olmo2/modeling_olmo2.py), for its post-attention / post-feedforward norms and q/k norms.
# Qwen3NextRMSNorm (also Qwen3.5's) computes x_fp32 normalized * (1 + weight.float()) like Gemma's. Olmo3RMSNorm is
# OLMo 2's code (models/olmo3/modeling_olmo3.py L56-59; its full-width q/k norms L162-163): traced OLMo 3 layers
# match these terms to the byte (validation/FINDINGS.md 32).
FP32_WEIGHT_NORM_FAMILIES = ("olmo2", "olmo3", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
# Cohere's LayerNorm without bias (CohereLayerNorm, Cohere2LayerNorm: transformers v5.24.0
# src/transformers/models/cohere/modeling_cohere.py L58-65, cohere2 alike) is plain torch in fp32 and subtracts the mean
# twice, once for the variance's pow and once for the product with rsqrt: each saves its fp32 centred copy, and the
# weight product saves the fp32 normalized tensor and the fp32 copy of the weight. Per norm of width w that is
# 3 * 4 t w + 4 t rows + 4 w (+ the 16-bit output the next linear saves), where an RMSNorm saves 4 t w + 4 t rows
# + 2 A t w; with a frozen weight the normalized tensor is not saved: 2 * 4 t w + 4 t rows + 4 w against 4 t w
# + 4 t rows. The same code runs on any device (validation/FINDINGS.md 42). Also its q/k LayerNorms (use_qk_norm).
COHERE_NORM_FAMILIES = ("cohere", "cohere2")


def _cohere_norm_extra(t: int, w: int, A: int, frozen: bool) -> int:
    """What one Cohere LayerNorm of width w saves beyond the RMSNorm terms the estimate counts for it."""
    return (FP32_BYTES * t * w if frozen else (2 * FP32_BYTES - A) * t * w) + FP32_BYTES * w
# Routers whose top-k weights stay fp32 (MiniMaxM2TopKRouter: sigmoid(router_logits.float()), transformers v5.24.0
# src/transformers/models/minimax_m2/modeling_minimax_m2.py; MixtralTopKRouter: softmax(..., dtype=torch.float)):
# the experts' `proj_out * sample_weights` (src/transformers/integrations/moe.py) is then an fp32 (S, h) tensor.
FP32_ROUTING_WEIGHTS = ("minimax_m2", "mixtral")
# fp32 routers whose routing weights are cast back to the activations' dtype before the experts use them
# (transformers v5.24.0 models/ernie4_5_moe/modeling_ernie4_5_moe.py L356, `routing_weights.to(hidden_states.dtype)`)
ROUTING_WEIGHTS_CAST_BACK = ("ernie4_5_moe",)
FALCON_TYPES = ("falcon", "RefinedWebModel", "RefinedWeb")
# MoE blocks that transformers runs densely: Llama4TextMoe repeats the hidden states for all E experts and
# Llama4TextExperts multiplies every one of them (a bmm over (E, t, h); transformers v5.24.0
# src/transformers/models/llama4/modeling_llama4.py), so training saves E x t rows, not the k routed ones. Inference
# keeps the routed-k working set that serving engines' fused MoE kernels have (HF's own generate holds E / k times
# more there: validation/FINDINGS.md 37)
DENSE_EXPERT_FAMILIES = ("llama4", "llama4_text")


def _kv_width(a: Architecture) -> int:
    """Width of K plus V for one token in one layer, as the attention kernel sees them."""
    if a.is_mla:
        return a.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim)
    return 2 * a.num_kv_heads * a.head_dim


def _attn_out_width(a: Architecture) -> int:
    return a.num_heads * a.v_head_dim if a.is_mla else a.q_width


def _mlp_widths(a: Architecture, layer: int) -> tuple[int, int]:
    """(token-weighted MLP width, input copies): routed tokens go through k experts of width I_e each."""
    if layer in a.moe_layers:
        return a.experts_per_token * a.moe_intermediate_size + a.shared_expert_intermediate_size, a.experts_per_token
    return a.intermediate_size, 0


def _dense_width(a: Architecture, layer: int) -> int:
    """The dense MLP width of this layer: Gemma 3n's per-layer `intermediate_size` list, else intermediate_size."""
    return a.layer_intermediate[layer] if a.layer_intermediate else a.intermediate_size


@functools.lru_cache(maxsize=1024)
def layer_kinds(a: Architecture) -> tuple[tuple[int, int], ...]:
    """(representative layer index, number of such layers) for each kind of layer: dense MLP or MoE, with attention
    or Gated DeltaNet linear attention, sliding-window or full attention. A windowed layer under sdpa saves more
    than a full one (k and v repeated to every head, the 16-bit mask: `_attention_saved`), so the two are separate
    kinds: with one kind, layer 0's window terms were counted for the full layers too (Command A, OLMo 3, Gemma 3:
    validation/FINDINGS.md 42). Layers that reuse another layer's K and V (Gemma 3n / 4), Gemma 3n's sparse-MLP
    layers and its per-layer MLP widths are kinds of their own too (validation/FINDINGS.md 39)."""
    moe, linear, mamba = set(a.moe_layers), set(a.linear_layers), set(a.mamba_layers)
    no_attention, no_mlp, sliding = set(a.attention_free_layers), set(a.mlp_free_layers), set(a.sliding_layers)
    shared, sparse = set(a.kv_shared_layers), set(a.sparse_mlp_layers)  # Gemma 3n: no own K and V; top-k MLP
    kinds: dict[tuple[bool, ...], list[int]] = {}
    for i in range(a.num_layers):
        kinds.setdefault((i in moe, i in linear, i in mamba, i in no_attention, i in no_mlp, i in sliding,
                          i in shared, i in sparse, _dense_width(a, i)), []).append(i)
    return tuple((layers[0], len(layers)) for _, layers in sorted(kinds.items()))


def _rope_bytes(a: Architecture, tokens: int, A: int) -> int:
    """RoPE cos and sin for every position of the step (none with learned absolute positions)."""
    return 0 if a.learned_positions else 2 * A * tokens * (a.qk_rope_head_dim if a.is_mla else a.head_dim)


def inference_layer_peak(a: Architecture, batch: int, query_len: int, context: int, *, act_bytes: int = 2,
                         flash_attention: bool = True, tp: int = 1, linear_attention_kernels: bool = False) -> int:
    """Largest working set of one decoder layer processing `batch` x `query_len` tokens without autograd,
    attending to `context` tokens, on one of `tp` tensor-parallel ranks (validation/FINDINGS.md 5, 9).
    Gated DeltaNet layers run transformers' torch fallback (`_linear_attention_inference`, FINDINGS 45) unless
    `linear_attention_kernels`: serving engines' flash-linear-attention kernels, costed as an attention layer."""
    A, t, h = act_bytes, batch * query_len, a.hidden_size
    if a.model_type in GEMMA3N_TYPES:
        return _gemma3n_inference(a, batch, query_len, context, A, flash_attention, tp)
    base = 3 * A * t * h + _rope_bytes(a, t, A)  # embedding output (held by the model), layer input, normed
    kernel, indexer = sdpa_kernel(a, flash_attention), 0
    if kernel == "math":  # Falcon MQA (validation/FINDINGS.md 19): fused qkv output, roped q, 16-bit mask; fp32 q,
        # scaled q, k and v (one head); fp32 scores and masked scores
        q_w, kv_w, heads = a.q_width // tp, a.num_kv_heads * a.head_dim, max(1, a.num_heads // tp)
        attn = (base + A * t * (2 * q_w + 2 * kv_w) + A * t * context
                + FP32_BYTES * t * 2 * (q_w + kv_w) + 2 * FP32_BYTES * heads * t * context)
    elif flash_attention:
        attn = base + A * t * (2 * a.q_width + _kv_width(a) + _attn_out_width(a)) // tp
    else:  # fp32 copy of the scores, fp32 softmax, 16-bit probabilities, additive mask
        heads = max(1, a.num_heads // tp)
        repeated_kv = 2 * A * t * a.q_width // tp if a.num_kv_heads < a.num_heads else 0
        attn = (base + A * t * a.q_width // tp + repeated_kv + A * t * context
                + (A + 2 * FP32_BYTES + (A if a.softcap_attention else 0)) * heads * t * context)
        if a.model_type in INDEXER_EAGER_FAMILIES and a.index_heads:  # the indexer's top-k as a dense mask
            attn += _indexer_mask_inference(a, batch, query_len, context, A)
            indexer = base + A * t * context + _indexer_inference(a, batch, query_len, context, A, tp)
    kinds = [layer for layer, _ in layer_kinds(a)]
    if not any(layer in a.attention_layers for layer in kinds):
        attn = 0  # attention-free (pure Mamba) stacks
    mamba = max((base + _mamba_inference(a, batch, query_len, A, tp) for layer in kinds if layer in a.mamba_layers),
                default=0)
    linear = 0 if linear_attention_kernels else max(
        (base + _linear_attention_inference(a, batch, query_len, A, tp) for layer in kinds if layer in a.linear_layers),
        default=0)
    mlp = 0
    for layer in kinds:
        if layer in a.mlp_free_layers:
            continue
        if layer in a.moe_layers:  # tokens gathered per expert, fused gate_up output, SiLU, product
            routed = a.experts_per_token * t
            # the down phase: gathered input, down output, its product with the routing weights and that product
            # unpermuted, both in the routing weights' dtype (fp32 for the families below)
            weight_bytes = FP32_BYTES if (a.router_fp32 and a.model_type not in ROUTING_WEIGHTS_CAST_BACK) \
                or a.model_type in FP32_ROUTING_WEIGHTS else A
            work = max(A * routed * (h + 4 * a.moe_intermediate_size // tp),
                       A * routed * 2 * h + 2 * weight_bytes * routed * h)
            work += 3 * A * t * a.shared_expert_intermediate_size // tp
        elif a.gated_mlp:  # gate, SiLU, up (the product replaces the first freed one)
            work = 3 * A * t * a.intermediate_size // tp
        else:
            tensors = MLP_INFERENCE_TENSORS[FAMILY_MLP_ACTIVATION.get(a.model_type, "gelu")]
            work = tensors * A * t * a.intermediate_size // tp
        mlp = max(mlp, base + A * t * h + work)  # + the residual after attention
    return max(attn, indexer, mamba, linear, mlp)


# DeepSeek-V3.2's lightning indexer as transformers runs it (DeepseekV32Indexer, v5.24.0
# src/transformers/models/deepseek_v32/modeling_deepseek_v32.py L147-242, "the bf16 equivalent of the reference
# Indexer" without its fp8 kernel): fp32 q.k scores for every key and index head, the top-k folded into a dense mask
# for eager and sdpa attention (L449-458). Followed for eager only, the path the estimate's eager attention stands
# for; its fused attention stands for serving engines, whose indexer kernels (vLLM's fp8 MQA logits) keep neither.
INDEXER_EAGER_FAMILIES = ("deepseek_v32",)


def _indexer_inference(a: Architecture, batch: int, seq: int, context: int, A: int, tp: int = 1) -> int:
    """The indexer's scoring moment in one MLA layer (validation/FINDINGS.md 43), beyond the layer input, its norm,
    the embedding output and the model's additive mask: `torch.matmul(q.float(), k.transpose(-1, -2).float()
    .unsqueeze(1))` (L228) broadcasts the (b, 1, d_I, T) keys over the s query positions, and matmul's expand +
    reshape copies them (aten/src/ATen/native/LinearAlgebra.cpp, _matmul_impl) before the (b s, H_I, T) product.
    Traced with distinct sizes (b 2, s = T = 300, 8 heads of 64 + 32 / 64, r_q 192, r_kv 128, H_I 6 x d_I 48),
    exact to the byte (45,427,200 B). T = context tokens:
        MLA so far (16-bit): q_resid A t r_q, q_b_proj's output and the concatenated query 2 A t a (d_n + d_r),
            kv_a's output A t (r_kv + d_r), the roped q A t a d_r, kv_b_proj's output over the cached latent
            A b T a (d_n + d_v) and the assembled keys A b T a (d_n + d_r)
        indexer (16-bit): wq_b's output and the roped q 2 A t H_I d_I, k_norm's output A t d_I, the roped halves
            A t H_I d_r + A t d_r
        indexer (fp32): q.float() 4 t H_I d_I, the keys transposed 4 b d_I T, their copy per query position
            4 t d_I T and the scores 4 t H_I T
    The cached indexer keys are KV cache (`kv_cache.indexer_bytes_per_token`). MLA heads split over tensor
    parallelism, the indexer's do not (one key per token)."""
    t, heads = batch * seq, max(1, a.num_heads // tp)
    qk, rope = a.qk_nope_head_dim + a.qk_rope_head_dim, a.qk_rope_head_dim
    n_i, d_i = a.index_heads, a.index_head_dim
    mla = (A * t * (a.q_lora_rank + 2 * heads * qk + a.kv_lora_rank + rope + heads * rope)
           + A * batch * context * heads * (a.qk_nope_head_dim + a.v_head_dim + qk))
    scoring = (A * t * (2 * n_i * d_i + d_i + n_i * rope + rope)
               + FP32_BYTES * (t * n_i * d_i + batch * d_i * context + t * d_i * context + t * n_i * context))
    return mla + scoring


def _indexer_mask_inference(a: Architecture, batch: int, seq: int, context: int, A: int) -> int:
    """What the indexer leaves alive during eager attention (L449-458): its int32 top-k indices 4 t min(k, T), the
    bool mask of the keys not selected b s T (`new_ones(...).scatter`) and the additive mask with them filled, a
    16-bit copy A b s T."""
    t = batch * seq
    return 4 * t * min(a.index_topk, context) + batch * seq * context + A * batch * seq * context


def _gemma3n_inference(a: Architecture, batch: int, query_len: int, context: int, A: int, flash_attention: bool,
                       tp: int) -> int:
    """Gemma 3n's prefill working set (transformers v5.24.0 models/gemma3n/modeling_gemma3n.py; traced:
    validation/FINDINGS.md 39). Held by Gemma3nTextModel.forward (L1630-1716) through every layer: the embedding
    output, the n - 1 rescaled AltUp copies in `temp_hidden_states` and the last projection's output (n + 1 tensors
    of A t h when n > 1), the per-layer inputs A t L p, the rotary tables (`_gemma3n_rope`), the sliding-window
    mask (q x ctx bool under sdpa, when the context exceeds the window), the position ids 8 s and the magnitudes A t
    (2 A t if n > 1).
    Each decoder layer (L1271-1323) holds its n-copy input and the n predictions (2 n A t h) and keeps every
    intermediate it names until it returns; the largest of:
        post_per_layer_input_norm: the n corrected copies, 10 named A t h tensors, the norm's fp32 copy and
            normalised tensor 8 t h and its two fp32 rows 8 t
        AltUp.correct's product: 9 named A t h tensors, the repeated innovation and the product 2 n A t h, the
            modalities and coefficients 2 A t n
        the MLP's down projection: 6 named tensors and its output 7 A t h, gate, activation, up and product 4 A t I
        q_norm: the normed input and the LAuReL output 2 A t h, q and its fp32 copy and normalised tensor
            (A + 8) t q_w, its two fp32 rows per head 8 t a (the largest when q_w is above about 5 h)
    Under eager the masks are additive and 16-bit, one per kind of layer, and the layer holds the attention
    probabilities A a t ctx after attention."""
    t, h, n, L = batch * query_len, a.hidden_size, max(1, a.altup_inputs), a.num_layers
    held = (n + 1 if n > 1 else 1) * A * t * h + A * t * L * a.per_layer_input_size + _gemma3n_rope(a, query_len, A)
    held += 8 * query_len + (2 if n > 1 else 1) * A * t
    if not flash_attention:  # eager: an additive 16-bit mask per kind of layer (full, sliding window)
        kinds = (1 if a.sliding_layers else 0) + (1 if len(a.sliding_layers) < L else 0)
        held += kinds * A * batch * query_len * context
    elif a.sliding_layers and context > a.sliding_window:  # the windowed layers' mask
        held += query_len * context
    layer_input = 2 * n * A * t * h
    norm = n * A * t * h + 10 * A * t * h + 2 * FP32_BYTES * t * h + 2 * FP32_BYTES * t
    correct = 9 * A * t * h + 2 * n * A * t * h + 2 * A * t * n  # + the modalities and the coefficients
    mlp = 7 * A * t * h + 4 * A * t * a.intermediate_size // tp
    heads = max(1, a.num_heads // tp)
    attention = 2 * A * t * h + (A + 2 * FP32_BYTES) * t * a.q_width // tp + 2 * FP32_BYTES * t * heads
    if not flash_attention:  # eager's fp32 scores, softmax and 16-bit probabilities (`inference_layer_peak`); the
        # layer keeps the probabilities, returned as attention weights (`attn, _ = self.self_attn(...)`, L1288)
        attention += (A + 2 * FP32_BYTES) * heads * t * context
        probabilities = A * heads * t * context
        norm, correct, mlp = norm + probabilities, correct + probabilities, mlp + probabilities
    return held + layer_input + max(norm, correct, mlp, attention)


MAMBA_CHUNK = 256  # tokens per chunk of the SSD scan (mamba_chunk_size of Granite 4 / Falcon-H1; Nemotron-H: 128)
MAMBA1_CHUNK = 2048  # selective_scan_cuda's chunk for its saved intermediates (mamba_ssm csrc/selective_scan)


def _mamba_inference(a: Architecture, batch: int, seq: int, A: int, tp: int) -> int:
    """Working set of a Mamba-2 mixer prefilling b x s tokens with the fused kernels vLLM and mamba_ssm use (not
    traced): in_proj's output zxbcdt, the convolved x, B, C, the per-chunk fp32 states (b, chunks, heads, head_dim, N)
    of the chunked scan (mamba_ssm/ops/triton/ssd_combined.py _mamba_chunk_scan_combined_fwd), the scan output and
    the gated norm's output; Mamba (1): xz, the convolved x, x_dbl and delta, and the scan output."""
    t, inner = batch * seq, a.mamba_inner // tp
    if a.mamba_version == 1:
        return A * t * (5 * inner + a.mamba_dt_rank + 2 * a.mamba_state_size)
    groups = 2 * a.mamba_groups * a.mamba_state_size // tp
    states = FP32_BYTES * batch * -(-seq // MAMBA_CHUNK) * max(1, a.mamba_heads // tp) * a.mamba_head_dim \
        * a.mamba_state_size
    return A * t * (2 * inner + groups + a.mamba_heads // tp) + A * t * (inner + groups) + states + 2 * A * t * inner


def _mamba_saved(a: Architecture, batch: int, seq: int, A: int) -> int:
    """What a Mamba mixer saves for backward with mamba_ssm's fused kernels, which transformers calls when they are
    installed (not traced: the CPU runs transformers' torch fallback instead). Mamba-2, MambaSplitConv1dScanCombinedFn
    (state-spaces/mamba mamba_ssm/ops/triton/ssd_combined.py, ctx.save_for_backward): zxbcdt (2 d_inner + 2 G N +
    heads), the scan output out_x (d_inner) and the gated RMSNorm's fp32 rstd per group; out_proj runs inside.
    Mamba (1), MambaInnerFn (mamba_ssm/ops/selective_scan_interface.py): xz (2 d_inner), the convolved x and delta
    (d_inner each), x_dbl (dt_rank + 2 N), the scan output (d_inner) and fp32 scan intermediates, 2 N per channel
    every 2,048 tokens."""
    t, inner = batch * seq, a.mamba_inner
    if a.mamba_version == 1:
        scan = FP32_BYTES * batch * inner * -(-seq // MAMBA1_CHUNK) * 2 * a.mamba_state_size
        return A * t * (5 * inner + a.mamba_dt_rank + 2 * a.mamba_state_size) + scan
    projection = 2 * inner + 2 * a.mamba_groups * a.mamba_state_size + a.mamba_heads
    return A * t * (projection + inner) + FP32_BYTES * t * a.mamba_groups


def sampling_logits_bytes(a: Architecture, sequences: int) -> int:
    """fp32 logits of the last position of every running sequence (HF `logits_to_keep=1`, vLLM sampler)."""
    return FP32_BYTES * sequences * a.vocab_size


def _norm_bytes(t: int, h: int, A: int, frozen: bool, layer_norm: bool = False) -> int:
    """Saved tensors of one norm in training. RMSNorm: fp32 input copy and rsqrt, plus 16-bit normalized input
    and output when its weight (and the next linear) are trained. LayerNorm (aten::native_layer_norm): its 16-bit
    input (the residual stream), mean and rstd, plus its output when the next linear is trained."""
    if layer_norm:
        return A * t * h + 2 * LAYER_NORM_STAT_BYTES * t + (0 if frozen else A * t * h)
    return FP32_BYTES * t * h + FP32_BYTES * t + (0 if frozen else 2 * A * t * h)


def _lora_inputs_bytes(a: Architecture, t: int, A: int, targets: tuple[str, ...], rank: int,
                       adapter_bytes: int) -> int:
    """What peft's LoRA layers save per decoder layer: each adapted Linear's input (an fp32 copy per module
    when adapters are fp32; with 16-bit adapters modules that share an input share one tensor, and o_proj's
    input is the attention output already saved) plus lora_A's output (t x r)."""
    targets = lora_modules(a, targets)  # a fused q/k/v (gate/up) module is one adapter on one input
    widths = lora_input_widths(a)
    total = adapter_bytes * t * rank * len(targets)
    if adapter_bytes != A:
        return total + sum(adapter_bytes * t * widths[name] for name in targets)
    shared_inputs = {LORA_INPUT_GROUP[name] for name in targets} - {"attn_out"}
    return total + sum(A * t * width for group, width in _group_widths(a).items() if group in shared_inputs)


LORA_INPUT_GROUP = {"q_proj": "attn_in", "k_proj": "attn_in", "v_proj": "attn_in", "o_proj": "attn_out",
                    "gate_proj": "mlp_in", "up_proj": "mlp_in", "down_proj": "mlp_mid", "router": "mlp_in",
                    "qkv_proj": "attn_in", "gate_up_proj": "mlp_in"}  # fused modules (training.lora_modules)
MOE_ONLY_TARGETS = ("experts", "router")  # exist only in MoE layers
MLP_TARGETS = ("gate_proj", "up_proj", "down_proj")  # absent from MoE layers without a shared expert
ATTENTION_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")  # absent from Mamba-only blocks


def _group_widths(a: Architecture) -> dict[str, int]:
    return {"attn_in": a.hidden_size, "attn_out": _attn_out_width(a), "mlp_in": a.hidden_size,
            "mlp_mid": a.intermediate_size or a.moe_intermediate_size}


def lora_input_widths(a: Architecture) -> dict[str, int]:
    """in_features of each LoRA-targetable projection."""
    groups = _group_widths(a)
    return {name: groups[group] for name, group in LORA_INPUT_GROUP.items()}


def sdpa_kernel(a: Architecture, flash_attention: bool) -> str:
    """The attention kernel a layer of this family runs: "eager", "flash" (a fused SDPA kernel: flash or
    memory-efficient) or "math" (SDPA's reference kernel).

    PyTorch picks a fused kernel only when query and key/value have the same number of heads, unless the caller
    passes enable_gqa=True (aten/src/ATen/native/transformers/sdp_utils_cpp.h, check_batch_size_and_num_heads_dense;
    the CUDA flash / efficient and the CPU flash checks all call it); otherwise it falls back to
    `_scaled_dot_product_attention_math` (aten/src/ATen/native/transformers/attention.cpp), which upcasts 16-bit q,
    k and v to fp32 and materialises the fp32 s x s softmax on any device. transformers' shared
    `sdpa_attention_forward` passes enable_gqa (or repeats k and v), but Falcon's own multi-query attention calls
    scaled_dot_product_attention with one K/V head and no enable_gqa (transformers v5.24.0
    src/transformers/models/falcon/modeling_falcon.py, FalconAttention.forward), so Falcon-7B runs the math kernel
    (validation/FINDINGS.md 19)."""
    if not flash_attention:
        return "eager"
    if a.model_type in FALCON_TYPES and a.num_kv_heads == 1 < a.num_heads:
        return "math"
    return "flash"


def _family_attention_extra(a: Architecture, t: int, A: int, frozen: bool) -> int:
    """Copies a family's attention code makes next to q, k, v and the output (validation/FINDINGS.md 6, 19):
    GPT-2's q is a view of the fused c_attn output, so the whole (q_w + 2 kv_w)-wide storage stays saved (+2 kv_w);
    Phi-3 copies the q slice of qkv_proj (+q_w); Phi and GPT-NeoX build q with torch.cat (partial RoPE), the
    kernel's output follows q's (b, heads, s, d) layout and `transpose(1, 2).contiguous()` copies it for `dense`
    (+q_w, FINDINGS 35). With a frozen base neither copy is kept (measured: phi3-lora-qv-sdpa, phi-lora-qv-sdpa,
    gpt_neox-lora-qv-sdpa)."""
    if a.model_type in ("gpt2", "qwen"):
        return A * t * 2 * a.num_kv_heads * a.head_dim
    if a.model_type in ("phi3", "phi", "gpt_neox") and not frozen:  # (not kept with a frozen qkv_proj / dense)
        return A * t * a.q_width
    return 0


def parallel_block(a: Architecture) -> bool:
    """Attention and MLP both read the normed layer input (Phi-1/2 PhiDecoderLayer; Falcon with parallel_attn or
    the new decoder architecture, FalconDecoderLayer; GPT-NeoX with use_parallel_residual, its published default,
    GPTNeoXLayer; Command R / A, CohereDecoderLayer and Cohere2DecoderLayer), so with a frozen base layer 0's MLP
    input needs no grad."""
    return a.model_type in ("phi", "gpt_neox", *COHERE_NORM_FAMILIES) or (a.model_type in FALCON_TYPES
                                                   and (a.norms_per_layer == 1 or a.num_kv_heads > 1))


def _attention_saved(a: Architecture, batch: int, seq: int, layer: int, A: int, flash_attention: bool,
                     frozen: bool = False) -> int:
    """What one attention block saves for backward (FINDINGS 3, 4, 7, 8, 9b, 11, 19)."""
    t, heads = batch * seq, a.num_heads
    kernel = sdpa_kernel(a, flash_attention)
    if kernel == "math":  # fp32 q, k and v, fp32 softmax; the 16-bit output copy for dense
        # torch.matmul folds the query heads into rows when the one-head k / v have no other batch dimension
        # (b = 1: `should_fold` in aten/src/ATen/native/LinearAlgebra.cpp); with b > 1 it expands k and v to
        # every head and bmm saves those copies
        kv_width = 2 * (a.q_width if batch > 1 else a.num_kv_heads * a.head_dim)
        return (FP32_BYTES * t * (a.q_width + kv_width) + FP32_BYTES * heads * t * seq
                + (0 if frozen else A * t * a.q_width))
    if a.is_mla:  # q and k expanded over heads, v, output; q_a/kv_a norms and the latent copy feeding kv_b
        qk, v = a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim
        saved = A * t * heads * (2 * qk + 2 * v) + (4 + A) * t * a.kv_lora_rank + 4 * t + A * t * a.kv_lora_rank
        if a.q_lora_rank:
            saved += (4 + 2 * A) * t * a.q_lora_rank + 4 * t
    elif flash_attention:
        # Falcon's new decoder architecture (40B) broadcasts k and v to every head before the kernel
        kv_width = 2 * a.q_width if a.model_type in FALCON_TYPES else _kv_width(a)
        saved = A * t * (2 * a.q_width + kv_width) + _family_attention_extra(a, t, A, frozen)
        if layer in a.sliding_layers and seq > a.sliding_window:
            # HF sdpa gets an explicit mask: k and v repeated to every head, and the 16-bit mask saved
            saved += A * t * (2 * a.q_width - _kv_width(a)) + A * batch * seq * seq
    else:
        saved = 4 * A * t * a.q_width  # q, repeated k and v, o_proj input (the copies above are sdpa's)
    if flash_attention:
        saved += FP32_BYTES * heads * t  # logsumexp
    elif a.attention_sinks:  # gpt-oss: softmax over s + 1 columns in 16-bit, int64 index of the max
        saved += A * heads * t * (seq + 1) + 8 * heads * t
    else:  # fp32 softmax and its 16-bit copy (+ the tanh of soft-capping)
        saved += (FP32_BYTES + A + (A if a.softcap_attention else 0)) * heads * t * seq
    if a.qk_norm_params and a.model_type in FP32_WEIGHT_NORM_FAMILIES and not frozen:
        # OLMo 2: RMSNorm over all q heads and over all k heads, weight multiplied in fp32: fp32 copy and fp32
        # normalized tensor each, one rsqrt per token each
        saved += 2 * FP32_BYTES * t * (a.q_width + a.num_kv_heads * a.head_dim) + 2 * FP32_BYTES * t
    elif a.qk_norm_params and a.model_type not in GEMMA3N_TYPES:  # (Gemma 3n: `_gemma3n_layer_saved`)
        # RMSNorm on q and k: fp32 copy, normalized 16-bit input (for the weight's gradient,
        # so not with a frozen base: validation/FINDINGS.md 19), rsqrt
        saved += ((FP32_BYTES + (0 if frozen else A)) * t * (a.q_width + a.num_kv_heads * a.head_dim)
                  + FP32_BYTES * t * (heads + a.num_kv_heads))
        if a.model_type in COHERE_NORM_FAMILIES:  # Command R+'s q/k LayerNorms over (heads, head_dim)
            saved += _cohere_norm_extra(t, a.q_width + a.num_kv_heads * a.head_dim, A, frozen)
    return saved


# Gemma 3n (transformers v5.24.0 src/transformers/models/gemma3n/modeling_gemma3n.py; validation/FINDINGS.md 39)
GEMMA3N_TYPES = ("gemma3n", "gemma3n_text")
# peft's all-linear also adapts these per-layer Linears of Gemma 3n: LAuReL's linear_left (input h) and linear_right
# (input r), per_layer_input_gate (h) and per_layer_projection (p), AltUp's modality_router (h, called by predict and
# by correct) and prediction_coefs (n). AltUp.correct multiplies by `correction_coefs.weight` directly in training
# (L1047-1049), so that adapter never runs.
GEMMA3N_ALL_LINEAR_CALLS = 7  # lora_A outputs per layer from those modules (the router twice)


def _gemma3n_norm(t: int, width: int, rows: int, weight: bool, trained: bool) -> int:
    """What one Gemma3nRMSNorm (L118-139) saves: `_norm(x.float())` keeps the fp32 copy of its input and the
    `mean(x^2) + eps` and `pow(., -0.5)` rows (not an rsqrt: two fp32 values per row); the product with
    `weight.float()` keeps that fp32 weight copy, and the fp32 normalised tensor when the weight trains. `rows`
    normalised rows per token (1, or the heads of q_norm / k_norm / v_norm); v_norm has no weight."""
    return (FP32_BYTES * t * width * (2 if weight and trained else 1) + 2 * FP32_BYTES * t * rows
            + (FP32_BYTES * width // rows if weight else 0))


def _gemma3n_lora(a: Architecture, t: int, rank: int, adapter_bytes: int) -> int:
    """all-linear adapters on Gemma 3n's own per-layer Linears (GEMMA3N_ALL_LINEAR_CALLS): an input copy each,
    in the adapters' dtype, and each lora_A output."""
    h, n = a.hidden_size, max(1, a.altup_inputs)
    inputs = h + a.laurel_rank + h + a.per_layer_input_size + 2 * h + n
    return adapter_bytes * t * (inputs + GEMMA3N_ALL_LINEAR_CALLS * rank)


def _gemma3n_rope(a: Architecture, seq: int, A: int) -> int:
    """cos and sin per layer type (L1696-1697: sliding and full layers have their own RoPE base), for one row of
    positions (1, s, d) whatever the batch."""
    types = (1 if a.sliding_layers else 0) + (1 if len(a.sliding_layers) < a.num_layers else 0)
    return types * 2 * A * seq * a.head_dim


def _gemma3n_layer_saved(a: Architecture, batch: int, seq: int, layer: int, A: int, frozen: bool,
                         targets: tuple[str, ...], all_linear: bool, input_grad: bool = True) -> int:
    """What a Gemma 3n decoder layer saves beyond its attention kernel's q, k, v, output (`_attention_saved`), its
    MLP (`_mlp_saved`) and the LoRA inputs of the q ... down projections (`_lora_inputs_bytes`), traced tensor by
    tensor (validation/FINDINGS.md 39). Per layer, t tokens, n AltUp copies, p per-layer input width, r LAuReL rank:
        8 RMSNorms of width h (`_gemma3n_norm`): AltUp's router_norm in predict and in correct, input_layernorm,
            post_laurel_norm, post_attention, pre_feedforward, post_feedforward, post_per_layer_input_norm
        q_norm, k_norm and v_norm over the heads (no k_norm / v_norm in a layer that reuses K and V)
        AltUp (L976-1073): the innovation repeated to n copies and the corrected output, n A t h each; the fp32 tanh
            of both router calls 2 x 4 t n; the prediction coefficients A t n^2, saved by the matmul; the correction
            coefficients + 1, A t n; the clamped correction weight A n^2
        per-layer input (L1308-1320): per_layer_input_gate's output A t p, saved by the activation
        trained weights add the 16-bit inputs of their Linears: router input (x2), input_layernorm's output,
            pre_feedforward's output, first_prediction's clone and its product with correct_output_scale: 6 A t h;
            the modalities for both coefficient Linears 2 A t n; linear_left's output A t r; the activation and the
            product with the per-layer input 2 A t p (the activation also when all-linear adapts the per-layer
            projection, which makes the per-layer inputs need a gradient)
    With a frozen base, layer 0's input needs no gradient unless all-linear adapts the model's AltUp and per-layer
    projections (`input_grad` False): its predict step, input_layernorm, post_laurel_norm and the norms of an
    unadapted k or v save nothing."""
    t, h, n, p = batch * seq, a.hidden_size, max(1, a.altup_inputs), a.per_layer_input_size
    trained, g = not frozen, input_grad
    norm_h = _gemma3n_norm(t, h, 1, True, trained)
    saved = 0
    if g:  # predict: router_norm, tanh, the coefficients; input_layernorm
        saved += 2 * norm_h + FP32_BYTES * t * n + A * t * n * n
        if trained:
            saved += 2 * A * t * h + A * t * n  # router input, modalities, input_layernorm's output
    if trained:
        saved += A * t * a.laurel_rank
    if g or all_linear:  # LAuReL's output needs a gradient
        saved += norm_h
    kv = a.num_kv_heads * a.head_dim
    if g or "q_proj" in targets:
        saved += _gemma3n_norm(t, a.q_width, a.num_heads, True, trained)
    if layer not in a.kv_shared_layers:
        if g or "k_proj" in targets:
            saved += _gemma3n_norm(t, kv, a.num_kv_heads, True, trained)
        if g or "v_proj" in targets:
            saved += _gemma3n_norm(t, kv, a.num_kv_heads, False, trained)
    saved += 3 * norm_h + (A * t * h if trained else 0)  # post_attention, pre_feedforward (+ MLP input), post_ff
    if layer in a.sparse_mlp_layers:  # _gaussian_topk (L959-974): relu(gate - cutoff) and the per-token std
        saved += A * t * _dense_width(a, layer) + A * t + A  # (+ std_multiplier cast to 16 bits)
    # correct: router_norm, tanh, coefficients + 1, clamped weight, the repeated innovation; the n corrected copies
    saved += norm_h + FP32_BYTES * t * n + A * t * n + A * n * n + 2 * n * A * t * h
    if trained:
        saved += A * t * h + A * t * n + 2 * A * t * h  # router input, modalities; clone and scaled clone
    saved += A * t * p * (1 + (1 if trained or all_linear else 0) + (1 if trained else 0)) + norm_h
    return saved


def _gemma3n_outside(a: Architecture, batch: int, seq: int, A: int, frozen: bool, all_linear: bool,
                     rank: int, adapter_bytes: int, checkpointing: bool = False) -> int:
    """What Gemma3nTextModel.forward (L1630-1736) saves outside its layers, k = n - 1 AltUp projections each way:
        always: the unembedding side (L1718-1730), each projection's output and its rescaled product 2 k A t h, the
            magnitudes (mean and root of hidden[0], mean and clamped root per projection) 2 n A t; the final norm
            (`_gemma3n_norm`), with its output A t h when the weights train; the scaled per-layer inputs A t L p
            (every layer's product with its slice saves them)
        when the projections' outputs need a gradient (trained weights, all-linear's adapters on them, or the
            embedding output needing one): the stacked n copies (layer 0's predict matmul) n A t h, the embedding
            side's outputs and products 2 k A t h, its magnitudes (2 n - 1) A t and per_layer_projection_norm over
            (L, p)
        when the embedding output needs a gradient (trained weights, or enable_input_require_grads under
            checkpointing with a frozen base): that output A t h and its mean square A t
        all-linear: an input copy and the lora_A output of each of the 2 k + 1 model-level projections
        trained weights: the per-layer embedding's clamped ids 8 t (get_per_layer_inputs, L1738-1745)"""
    t, h, n, p, L = batch * seq, a.hidden_size, max(1, a.altup_inputs), a.per_layer_input_size, a.num_layers
    trained, k = not frozen, n - 1
    embedding_grad = trained or checkpointing
    out = _gemma3n_norm(t, h, 1, True, trained) + (A * t * h if trained else 0)
    out += 2 * k * A * t * h + 2 * n * A * t + A * t * L * p
    if all_linear:
        out += (2 * k + (1 if p else 0)) * adapter_bytes * t * (h + rank)
    if embedding_grad or all_linear:
        out += n * A * t * h + 2 * k * A * t * h + (2 * n - 1) * A * t
        if p:
            out += _gemma3n_norm(t, L * p, L, True, trained)
    if embedding_grad:
        out += A * t * h + A * t
    if trained and p:
        out += 8 * t
    return out


def _gemma3n_checkpointed(a: Architecture, batch: int, seq: int, A: int, flash_attention: bool) -> int:
    """Gemma 3n under gradient checkpointing (traced: gemma3n_text-full-sdpa-gc), beyond each layer's n-copy output:
    the K and V that the last non-sharing layer of each type stores for the sharing layers (L1224-1225) stay
    referenced by the checkpointed layers' kwargs, 2 A t kv_w each; the position ids 8 s; the sliding-window
    mask, an input of every windowed layer, b s^2 bool under sdpa when s > W (eager: `decoder_layers_saved_bytes`).
    The fake-tensor trace also keeps a full-attention mask: `find_packed_sequence_indices` (transformers v5.24.0
    masking_utils.py L735-763) sees fake tensors as tracing and returns its tensor, so the causal skip is refused;
    on real tensors it returns None and full attention takes `is_causal`."""
    t = batch * seq
    producers = len({i in a.sliding_layers for i in a.kv_shared_layers})
    out = producers * 2 * A * t * a.num_kv_heads * a.head_dim + 8 * seq
    if flash_attention and a.sliding_layers and seq > a.sliding_window:
        out += batch * seq * seq
    return out


GDN_CHUNK = 64  # chunk_size of torch_chunk_gated_delta_rule (transformers v5.24.0 models/qwen3_next)


def _linear_attention_saved(a: Architecture, batch: int, seq: int, A: int) -> int:
    """What one Gated DeltaNet layer saves for backward in transformers' torch fallback (flash-linear-attention not
    installed): `Qwen3NextGatedDeltaNet.forward` + `torch_chunk_gated_delta_rule` (transformers v5.24.0
    src/transformers/models/qwen3_next/modeling_qwen3_next.py), traced with distinct dimensions
    (validation/FINDINGS.md 29). K = n_k d_k, V = n_v d_v, q and k repeated to the n_v value heads, C = 64,
    N = ceil(s / C) chunks, T = b N C padded tokens:
        mixed q/k/v and the causal conv's padded output   A t (2K + V) + A b (2K + V) (s + kernel - 1)
        q, k in fp32 (copies, l2norm, scaled q)            3 x 4 t n_v d_k
        padded q, k and the chunked k-side tensors          5 x 4 T n_v d_k
        v side: padded v, solved u, per-chunk v_new        3 x 4 T n_v d_v
        decay mask, attention and their products (C x C)  5 x 4 T n_v C
        recurrent state per chunk                          4 b n_v d_k d_v N
        gated RMSNorm: fp32 output, gate, SiLU; 16-bit copies and the out_proj input   3 x 4 t V + 3 A t V
        l2norm and norm rsqrt, g, beta, decay exponentials   4 t n_v x 9 + A t n_v"""
    t, n_v = batch * seq, a.linear_value_heads
    key, value = a.linear_key_heads * a.linear_key_head_dim, a.linear_value_heads * a.linear_value_head_dim
    chunks = -(-seq // GDN_CHUNK)
    padded = batch * chunks * GDN_CHUNK
    conv = A * t * (2 * key + value) + A * batch * (2 * key + value) * (seq + a.linear_conv_kernel - 1)
    k_side = FP32_BYTES * n_v * a.linear_key_head_dim * (3 * t + 5 * padded)
    v_side = 3 * FP32_BYTES * padded * value
    chunk_matrices = 5 * FP32_BYTES * padded * n_v * GDN_CHUNK
    states = FP32_BYTES * batch * n_v * a.linear_key_head_dim * a.linear_value_head_dim * chunks
    gated_norm = 3 * FP32_BYTES * t * value + 3 * A * t * value
    small = 9 * FP32_BYTES * t * n_v + A * t * n_v
    return conv + k_side + v_side + chunk_matrices + states + gated_norm + small


def _linear_attention_inference(a: Architecture, batch: int, seq: int, A: int, tp: int = 1) -> int:
    """Working set of one Gated DeltaNet layer prefilling b x s tokens without autograd in transformers' torch
    fallback (`torch_chunk_gated_delta_rule`, transformers v5.24.0 src/transformers/models/qwen3_next/
    modeling_qwen3_next.py L371-509; models/qwen3_5/modeling_qwen3_5.py L287-425), at its largest moment: the reshape
    of the chunked output after the chunk loop (L505). `torch.linalg.solve_triangular` returns column-major matrices,
    `zeros_like(new_values)` (L485) keeps that layout, so `core_attn_out.reshape` copies it while every chunk tensor
    is still a live local. Traced with distinct sizes (validation/FINDINGS.md 45), exact to the byte; the layer's
    input, its norm and the embedding output are `base`. K = n_k d_k, V = n_v d_v, C = 64, N = ceil(s / C) chunks,
    T = b N C padded tokens, U = 4 b n_v C d_v (one chunk of v):
        the caller's 16-bit tensors: conv output (q, k, v views) and z     A t (2K + 2V)
            b, a and beta (sigmoid) 3 A t n_v; g in fp32 4 t n_v
            Qwen3-Next also keeps its fused in_proj_qkvz / in_proj_ba outputs (the forward's locals, L678-679)
            while z, b and a are reshaped copies of them (L652-654): + A t (2K + 2V) + 2 A t n_v
        k side, fp32: k_beta, decayed k_beta, the solved k_cumdecay, decayed q and k       5 x 4 T n_v d_k
        v side, fp32: padded v, v_beta, the solved new_values, core_attn_out             4 x 4 T n_v d_v
        C x C, fp32: pairwise decays, the UT system, intra-chunk attention                  3 x 4 T n_v C
        padded beta and decay, cumulative decay 3 x 4 T n_v; chunk decay 4 b n_v N; the bool mask C^2
        the recurrent state 4 b n_v d_k d_v
        then the larger of: the reshape copy 4 T n_v d_v with the last chunk's v_new and state read (2 U), or the
        loop's own moment, v_new, the state read, the intra-chunk product and their sum (4 U; only for N = 1)
    q and k are repeated to the n_v value heads; heads split over tensor parallelism. The states the cache keeps
    are the `state` component (kv_cache.state_bytes), not counted here."""
    n_k, n_v = max(1, a.linear_key_heads // tp), max(1, a.linear_value_heads // tp)
    d_k, d_v, C = a.linear_key_head_dim, a.linear_value_head_dim, GDN_CHUNK
    t, key, value = batch * seq, n_k * d_k, n_v * d_v
    chunks = -(-seq // C)
    padded = batch * chunks * C
    caller = A * t * (2 * key + 2 * value) + 3 * A * t * n_v + FP32_BYTES * t * n_v
    if a.model_type not in SPLIT_DELTANET_TYPES:  # Qwen3-Next's fused projections stay alive beside their copies
        caller += A * t * (2 * key + 2 * value) + 2 * A * t * n_v
    chunk_tensors = FP32_BYTES * padded * n_v * (5 * d_k + 4 * d_v + 3 * C + 3)
    small = FP32_BYTES * batch * n_v * chunks + C * C + FP32_BYTES * batch * n_v * d_k * d_v
    one_chunk = FP32_BYTES * batch * n_v * C * d_v
    end = max(FP32_BYTES * padded * value + 2 * one_chunk, 4 * one_chunk)
    return caller + chunk_tensors + small + end


def _mlp_saved(a: Architecture, batch: int, seq: int, layer: int, A: int, frozen: bool,
               frozen_experts: bool) -> int:
    """What one MLP or MoE block saves for backward (FINDINGS 9, 11 for MoE with grouped experts). Frozen
    experts need neither their gathered inputs nor the product feeding down for weight gradients (measured
    within 5% on Qwen3-MoE with LoRA on q,v)."""
    t, h = batch * seq, a.hidden_size
    if a.gated_mlp:  # gate, SiLU/GeLU, up, product (a frozen down projection needs no product)
        gated = 3 if frozen else 4
    else:
        trainable, frozen_count = MLP_ACTIVATION_TENSORS[FAMILY_MLP_ACTIVATION.get(a.model_type, "gelu")]
        gated = frozen_count if frozen else trainable
    if layer not in a.moe_layers:
        return A * t * gated * _dense_width(a, layer)
    if a.model_type in DENSE_EXPERT_FAMILIES:  # every expert on every token (validation/FINDINGS.md 37): the repeated
        # input and its product with the router scores (E t h each), gate_up, SiLU and product (E t 4 I_e); the fp32
        # sigmoid scores, their 16-bit copy and the top-k indices
        inputs = 1 if frozen_experts else 2  # frozen experts need not keep the repeated input for weight gradients
        return (A * a.num_experts * t * (inputs * h + 4 * a.moe_intermediate_size)
                + (FP32_BYTES + A) * t * a.num_experts
                + 8 * t * a.experts_per_token + A * t * gated * a.shared_expert_intermediate_size)
    routed = t * a.experts_per_token
    expert_tensors = a.expert_saved_tensors - (1 if frozen_experts else 0)
    saved = (A * routed * ((1 if frozen_experts else 2) * h + expert_tensors * a.moe_intermediate_size)
             + 24 * routed + FP32_BYTES * routed  # inputs, expert tensors, down output; int64 indices; routing weights
             + FP32_BYTES * t * a.num_experts + 12 * t * a.experts_per_token  # router: softmax, top-k
             + FP32_BYTES * t)
    saved += A * t * gated * a.shared_expert_intermediate_size
    if a.router_fp32:
        saved += FP32_BYTES * t * h + FP32_BYTES * t * a.num_experts
    return saved


def training_layer_bytes(a: Architecture, batch: int, seq: int, layer: int = 0, *, act_bytes: int = 2,
                         flash_attention: bool = True, frozen_base: bool = False, lora_targets: tuple[str, ...] = (),
                         lora_rank: int = 0, adapter_bytes: int = FP32_BYTES) -> int:
    """Activations one decoder layer saves for backward (no checkpointing)."""
    A, t, h = act_bytes, batch * seq, a.hidden_size
    norms = a.norms_per_layer * _norm_bytes(t, h, A, frozen_base, a.norm_bias)
    if a.model_type == "gpt_neox" and parallel_block(a):
        norms -= A * t * h  # both LayerNorms read the same residual stream, saved once (FINDINGS 35; Falcon-40B's
        # two LayerNorms do too, but its trace keeps another h-wide tensor not yet named: FINDINGS 35)
    if (a.fp32_norm_weight or a.model_type in FP32_WEIGHT_NORM_FAMILIES) and not frozen_base:
        norms += 2 * A * t * h  # the fp32 x * w product and the 16-bit casts of the pre-norm outputs
    if a.model_type in COHERE_NORM_FAMILIES:
        norms += a.norms_per_layer * _cohere_norm_extra(t, h, A, frozen_base)
    if layer in a.moe_layers:
        absent = () if a.shared_expert_intermediate_size else MLP_TARGETS
    else:
        absent = MOE_ONLY_TARGETS + (() if a.gated_mlp else ("gate_proj",))  # fc1 / fc2 MLPs have no gate
    if layer in a.mlp_free_layers:  # Nemotron-H's mixer-only blocks
        absent = MOE_ONLY_TARGETS + MLP_TARGETS
    if layer in a.attention_free_layers:
        absent += ATTENTION_TARGETS
    if layer in a.kv_shared_layers and a.model_type in GEMMA3N_TYPES:  # no k_proj / v_proj to adapt (L1172-1182)
        absent += ("k_proj", "v_proj")
    targets = tuple(name for name in moe_targets(a, lora_targets) if name not in absent)
    linear_targets = tuple(name for name in targets if name != "experts")
    lora = _lora_inputs_bytes(a, t, A, linear_targets, lora_rank, adapter_bytes) if linear_targets else 0
    if "experts" in targets:  # peft's ParamWrapper keeps the merged W + delta-W of every expert for backward
        lora += A * a.num_experts * (3 if a.gated_mlp else 2) * h * a.moe_intermediate_size
    frozen_experts = frozen_base and "experts" not in targets
    mixer = (_linear_attention_saved(a, batch, seq, A) if layer in a.linear_layers
             else _attention_saved(a, batch, seq, layer, A, flash_attention, frozen_base)
             if layer not in a.attention_free_layers else 0)
    if layer in a.mamba_layers:  # alone (Nemotron-H, Granite 4, Jamba) or beside attention (Falcon-H1)
        mixer += _mamba_saved(a, batch, seq, A)
    mlp = 0 if layer in a.mlp_free_layers else _mlp_saved(a, batch, seq, layer, A, frozen_base, frozen_experts)
    if a.model_type in GEMMA3N_TYPES:  # its own norms, AltUp, LAuReL and per-layer input (FINDINGS 39)
        all_linear = set(LORA_TARGET_PRESETS["all-linear"]) <= set(lora_targets)
        if layer in a.kv_shared_layers and flash_attention and not (layer in a.sliding_layers
                                                                    and seq > a.sliding_window):
            mixer -= A * t * _kv_width(a)  # the kernel reads the storing layer's K and V, saved there
        if frozen_base and not flash_attention:  # eager: the frozen o_proj keeps no copy of its input
            mixer -= A * t * a.q_width
        if all_linear and lora_rank:
            lora += _gemma3n_lora(a, t, lora_rank, adapter_bytes)
        if "down_proj" in linear_targets:  # down_proj's input is this layer's MLP width
            lora -= adapter_bytes * t * (a.intermediate_size - _dense_width(a, layer))
        return mixer + mlp + lora + _gemma3n_layer_saved(a, batch, seq, layer, A, frozen_base, targets, all_linear)
    return norms + mixer + mlp + lora


def training_activation_bytes(a: Architecture, batch: int, seq: int, *, act_bytes: int = 2,
                              flash_attention: bool = True, gradient_checkpointing: bool = False,
                              frozen_base: bool = False, lora_targets: tuple[str, ...] = (), lora_rank: int = 0,
                              adapter_bytes: int = FP32_BYTES, residual_bytes: int | None = None) -> int:
    """Activations alive when backward starts (loss head excluded). With gradient checkpointing only the
    layer inputs are; `recompute_bytes` is the one layer rebuilt later in backward. `residual_bytes`: bytes of an
    element of the residual stream (the checkpointed layer inputs), the activations' own by default; 4 under
    peft's QLoRA cast (`residual_stream_bytes`)."""
    A, t, h = act_bytes, batch * seq, a.hidden_size
    R = A if residual_bytes is None else residual_bytes
    layers = decoder_layers_saved_bytes(a, batch, seq, act_bytes=A, flash_attention=flash_attention,
                                        gradient_checkpointing=gradient_checkpointing, frozen_base=frozen_base,
                                        lora_targets=lora_targets, lora_rank=lora_rank, adapter_bytes=adapter_bytes,
                                        residual_bytes=R)
    if a.model_type in GEMMA3N_TYPES:  # the AltUp and per-layer-input projections around the layers (FINDINGS 39)
        all_linear = set(LORA_TARGET_PRESETS["all-linear"]) <= set(lora_targets)
        outside = _gemma3n_outside(a, batch, seq, A, frozen_base, all_linear and lora_rank > 0, lora_rank,
                                   adapter_bytes, gradient_checkpointing)
        return layers + outside + _gemma3n_rope(a, seq, A)
    if a.norm_bias:  # LayerNorm saves its 16-bit input, which for layer 0's first norm is the embedding output
        final_norm, embedding = A * t * h + 2 * LAYER_NORM_STAT_BYTES * t, 0
    else:
        final_norm, embedding = FP32_BYTES * t * h + FP32_BYTES * t, A * t * h
    if gradient_checkpointing and a.norm_bias:
        embedding = 0  # the embedding output is layer 0's checkpoint input, already counted
    if not frozen_base:
        outside = embedding + final_norm + A * t * h  # embedding output; final norm's saved input and output
        if a.fp32_norm_weight or a.model_type in FP32_WEIGHT_NORM_FAMILIES:
            # the final norm keeps its fp32 normalized tensor for the weight's gradient instead of a 16-bit one
            outside += (FP32_BYTES - A) * t * h
        if a.model_type in COHERE_NORM_FAMILIES:
            outside += _cohere_norm_extra(t, h, A, False)
    elif gradient_checkpointing:
        outside = R * t * h + final_norm  # enable_input_require_grads keeps the embedding output
        if a.model_type in COHERE_NORM_FAMILIES:
            outside += _cohere_norm_extra(t, h, A, True)
    else:  # the frozen embedding saves nothing, and layer 0's input norm saves nothing (its input needs no
        outside = 0  # grad), which offsets the final norm's fp32 copy exactly
        if parallel_block(a) and "up_proj" not in lora_targets:  # layer 0's MLP reads the normed embedding,
            # which needs no grad, and no adapter on fc1 makes its output need one: the MLP saves nothing
            first = layer_kinds(a)[0][0]
            outside -= _mlp_saved(a, batch, seq, first, A, True, "experts" not in lora_targets)
    return layers + outside + _rope_bytes(a, t, A)


def decoder_layers_saved_bytes(a: Architecture, batch: int, seq: int, *, act_bytes: int = 2,
                               flash_attention: bool = True, gradient_checkpointing: bool = False,
                               frozen_base: bool = False, lora_targets: tuple[str, ...] = (), lora_rank: int = 0,
                               adapter_bytes: int = FP32_BYTES, residual_bytes: int | None = None) -> int:
    """What the decoder layers save for backward (`training_activation_bytes` without the embedding, final norm
    and rotary tables): the part activation offloading moves to host memory."""
    A, t, h = act_bytes, batch * seq, a.hidden_size
    R = A if residual_bytes is None else residual_bytes
    layer_options = dict(act_bytes=A, flash_attention=flash_attention, frozen_base=frozen_base,
                         lora_targets=lora_targets, lora_rank=lora_rank, adapter_bytes=adapter_bytes)
    if gradient_checkpointing:  # each layer's input: Gemma 3n's AltUp passes all n copies of the hidden state
        layers = R * t * h * a.num_layers * max(1, a.altup_inputs)
        if not flash_attention:  # eager's additive masks (one per mask kind: full, sliding window) are inputs of
            # every checkpointed layer, so they live until backward (validation/FINDINGS.md 27)
            kinds = (1 if a.sliding_layers else 0) + (1 if len(a.sliding_layers) < a.num_layers else 0)
            layers += kinds * A * batch * seq * seq
        if a.model_type in GEMMA3N_TYPES:
            layers += _gemma3n_checkpointed(a, batch, seq, A, flash_attention)
        return layers
    layers = sum(count * training_layer_bytes(a, batch, seq, layer, **layer_options)
                 for layer, count in layer_kinds(a))
    if a.model_type in GEMMA3N_TYPES and frozen_base and not set(LORA_TARGET_PRESETS["all-linear"]) <= set(
            lora_targets):  # layer 0's input needs no gradient (`_gemma3n_layer_saved`)
        targets = moe_targets(a, lora_targets)
        layers -= (_gemma3n_layer_saved(a, batch, seq, 0, A, True, targets, False)
                   - _gemma3n_layer_saved(a, batch, seq, 0, A, True, targets, False, input_grad=False))
        if not flash_attention and "k_proj" not in targets:  # eager's q @ k^T keeps q only for k's gradient
            layers -= A * batch * seq * a.q_width
    untouched = _layers_before_first_adapter(a, frozen_base, lora_targets)
    if untouched:  # nothing in them needs a gradient, so they save nothing (validation/FINDINGS.md 25)
        layers -= sum(training_layer_bytes(a, batch, seq, i, **layer_options) for i in range(untouched))
    return layers


def _layers_before_first_adapter(a: Architecture, frozen_base: bool, lora_targets: tuple[str, ...]) -> int:
    """Leading Gated DeltaNet layers without adapters (LoRA targets other than all-linear adapt only attention and
    MLP projections, and peft's all-linear conversion moves Qwen3-Next's MLP names to the experts): with a frozen
    base, the layers before the first full-attention layer compute without autograd. Hybrid models only."""
    if not (frozen_base and a.linear_layers) or {"gate_proj", "up_proj", "down_proj", "experts"} & set(lora_targets):
        return 0
    return next((i for i in range(a.num_layers) if i not in set(a.linear_layers)), 0)


def checkpointed_inputs_bytes(a: Architecture, batch: int, seq: int, *, act_bytes: int = 2,
                              flash_attention: bool = True, residual_bytes: int | None = None) -> int:
    """Gradient checkpointing: what stays alive while backward goes through the layers, every layer's checkpointed
    input and the rotary tables (inputs of every layer too). At the first layer rebuilt (the model's last) all of
    them are there; the final norm's and lm_head's saved tensors are gone (traced: validation/FINDINGS.md, recipes)."""
    return (decoder_layers_saved_bytes(a, batch, seq, act_bytes=act_bytes, flash_attention=flash_attention,
                                       gradient_checkpointing=True, residual_bytes=residual_bytes)
            + _rope_bytes(a, batch * seq, act_bytes))


def recompute_bytes(a: Architecture, batch: int, seq: int, **layer_options) -> int:
    """Gradient checkpointing: the largest layer's activations, rebuilt during backward."""
    return max(training_layer_bytes(a, batch, seq, layer, **layer_options) for layer, _ in layer_kinds(a))


def residual_stream_bytes(act_bytes: int, technique: str, peft_kbit_cast: bool) -> int:
    """Bytes of one element of the residual stream in training. peft's `prepare_model_for_kbit_training` casts every
    16-bit parameter that is not quantized to fp32, the input embedding among them (peft v0.20.0
    src/peft/utils/other.py L197-202), so the embedding output is fp32, and every layer's `residual + output` stays
    fp32 by type promotion whatever dtype the 4-bit / 8-bit linears return under autocast: the checkpointed layer
    inputs are 4 B per element (checked on transformers 5.24 under bf16 autocast: validation/FINDINGS.md, recipes).
    Frameworks without that cast (torchtune, Unsloth, LLaMA-Factory) keep the activations' dtype."""
    return FP32_BYTES if technique.startswith("qlora") and peft_kbit_cast else act_bytes


def loss_head_bytes(a: Architecture, batch: int, seq: int, act_bytes: int = 2) -> int:
    """fp32 logits buffers at the start of backward (HF ForCausalLMLoss upcasts to fp32): 12 x t x V, plus the
    saved tanh of final-logit soft-capping (Gemma 2)."""
    per_logit = LOSS_HEAD_BYTES_PER_LOGIT + (act_bytes if a.softcap_logits else 0)
    return per_logit * batch * seq * a.vocab_size


# Loss computations (`FinetuneScenario.loss`): how much of the b x s x V logits lives around the end of the forward.
LOSSES = ("standard", "chunked", "chunked-compiled", "fused", "shifted")
# torchtune `CEWithChunkedOutputLoss(num_output_chunks=8)` (torchtune/modules/loss/ce_chunked_output_loss.py): the
# output projection runs per chunk of tokens and each chunk is upcast to fp32 only while its loss is computed
CHUNKED_LOSS_CHUNKS = 8
CHUNK_BACKWARD_TEMPORARIES = LOSS_HEAD_BYTES_PER_LOGIT - FP32_BYTES  # two fp32 temporaries per logit (8 B)
CHUNK_UPCAST_BYTES = FP32_BYTES  # the fp32 copy of the chunk whose cross-entropy runs


def _next_power_of_2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def fused_loss_chunk_tokens(a: Architecture, tokens: int) -> int:
    """Tokens per chunk of Liger-Kernel's fused linear cross-entropy: chunks of next_power_of_2(BT / ceil(V / H))
    tokens bound the transient logits to about BT x H elements (src/liger_kernel/ops/fused_linear_cross_entropy.py,
    `_CHUNK_MEM_CONST = 1`)."""
    inc_factor = -(-a.vocab_size // a.hidden_size)
    return min(_next_power_of_2(-(-tokens // inc_factor)), tokens)


def loss_bytes(a: Architecture, batch: int, seq: int, act_bytes: int = 2, loss: str = "standard",
               lm_head_grad_bytes: int = 0) -> int:
    """The loss head's bytes at its largest, at the end of the forward or the start of backward (the rest of the
    activations are the same at both), t = b x s tokens, V vocabulary:
    standard  HF ForCausalLMLoss: 12 t V (`loss_head_bytes`)
    chunked   torchtune CEWithChunkedOutputLoss, eager: every chunk's `log_softmax` saves its fp32 output (4 t V in
              all). The larger moment is the last chunk's cross-entropy at the end of the forward, when the 16-bit
              logits of every chunk (A t V) are still alive with that chunk's fp32 copy (4 t V / chunks): 6.5 B per
              logit in bf16 with 8 chunks. Backward starts lower, after the recipes `del logits`: 4 t V + one chunk's
              two fp32 temporaries, 8 t V / chunks (traced: validation/FINDINGS.md 46)
    fused     fused linear cross-entropy (Liger-Kernel's; Unsloth's and Apple's Cut Cross-Entropy counted alike):
              the gradient of the hidden states A t h, one chunk of 16-bit logits (`fused_loss_chunk_tokens` x V),
              the fp32 per-token loss 4 t, and lm_head's gradient computed in the forward when lm_head trains.
    chunked-compiled   the same loss with torchtune's `compile: True`: `training.compile_loss` compiles each
              chunk's `compute_cross_entropy` (torchtune 0031bfb torchtune/training/_compile.py L80-83), and the
              compiled graph saves the chunk's 16-bit logits and two fp32 row statistics instead of the fp32
              log-probabilities, recomputing the softmax in backward (traced with saved-tensor hooks: tests/test_trace):
              A t V + 8 t kept; backward starts with one chunk's 16-bit gradient A t V / chunks and, when lm_head
              trains, its gradient, which the first chunk's backward allocates.
    shifted   transformers 4.46-4.47's ForCausalLMLoss (v4.47.1 src/transformers/loss/loss_utils.py L32-47): during
              the cross-entropy the model output's 16-bit logits A t V, their fp32 upcast 4 t V, the contiguous copy
              of the shifted slice 4 b (s - 1) V and its fp32 log-softmax 4 b (s - 1) V are alive: 14 B per logit in
              bf16, above the 12 of backward start. Later releases pad the labels instead of copying the logits."""
    if loss == "standard":
        return loss_head_bytes(a, batch, seq, act_bytes)
    t, V = batch * seq, a.vocab_size
    if loss == "shifted":
        return (act_bytes + FP32_BYTES) * t * V + 2 * FP32_BYTES * batch * (seq - 1) * V \
            + (act_bytes * t * V if a.softcap_logits else 0)
    if loss == "chunked-compiled":
        return (act_bytes * t * V + 2 * FP32_BYTES * t + -(-act_bytes * t * V // CHUNKED_LOSS_CHUNKS)
                + lm_head_grad_bytes + (act_bytes * t * V if a.softcap_logits else 0))
    if loss == "chunked":
        softcap = act_bytes * t * V if a.softcap_logits else 0  # each chunk's saved tanh (Gemma 2)
        forward_end = act_bytes * t * V + CHUNK_UPCAST_BYTES * t * V // CHUNKED_LOSS_CHUNKS
        backward_start = -(-CHUNK_BACKWARD_TEMPORARIES * t * V // CHUNKED_LOSS_CHUNKS)
        return FP32_BYTES * t * V + max(forward_end, backward_start) + softcap
    if loss == "fused":
        return (act_bytes * t * a.hidden_size + act_bytes * fused_loss_chunk_tokens(a, t) * V + FP32_BYTES * t
                + lm_head_grad_bytes)
    raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {loss!r}")
