"""The `Architecture` of a decoder-only transformer, its tensors, and its parameter counts.

One type describes every model source (catalog entry, parsed `config.json`). Parameter counts follow the
Hugging Face `transformers` modules tensor by tensor:

    attention  = q, k, v, o projections (GQA: k and v have n_kv heads) [+ biases, q/k norms, sinks]
                 MLA (DeepSeek-V2/V3): q_a, q_a_norm, q_b (or plain q), kv_a_with_mqa, kv_a_norm, kv_b, o
    dense MLP  = gate, up, down (SwiGLU/GeGLU) or up, down (GeLU)   [+ biases]
    MoE layer  = router (E x h) + E experts (gate, up, down of width I_e) [+ shared expert(s), shared gate]
    norms      = norms_per_layer x h per layer (x2 with LayerNorm bias) + the final norm
    embeddings = V x h (+ lm_head V x h unless tied) (+ learned positions) (+ per-layer embeddings, Gemma 3n / 4)
A layer's sequence mixer is attention (its own head size and KV heads on Gemma 4's full layers; no k/v projections
on KV-sharing layers), Gated DeltaNet linear attention, a Mamba-2 or Mamba (1) mixer, or attention beside Mamba
(Falcon-H1); its MLP is dense, MoE or absent (Nemotron-H's mixer-only blocks). A multimodal model's vision and audio
towers are counted apart (`vision_parameters`, estimator/vision.py), and a quantized checkpoint's storage travels
with it (`checkpoint`, estimator/checkpoint.py).

Sources: huggingface/transformers v5.24.0 `src/transformers/models/{llama,qwen2,qwen3,qwen2_moe,qwen3_moe,
mixtral,gemma2,gemma3,gemma3n,gemma4,phi3,deepseek_v2,deepseek_v3,gpt_oss,gpt2,opt,falcon,nemotron_h,granitemoehybrid,
falcon_h1,jamba,llama4}/modeling_*.py`; routed experts are
fused 3-D parameters there (`gate_up_proj [E, 2 I_e, h]`, `down_proj [E, h, I_e]`). The catalog tests check the
totals against published counts (tests/test_catalog.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields

from .checks import require_bool, require_int

MAX_WIDTH = 1_000_000  # largest hidden/intermediate/vocab size accepted (sanity bound for user configs)
MAX_LAYERS = 2_000
MAX_HEADS = 16_384
MAX_EXPERTS = 16_384
MAX_VOCAB = 10_000_000


@dataclass(frozen=True)
class Tensor:
    """A group of identical weight tensors in one layer, e.g. the 128 expert down-projections of layer 3.

    `rows x cols` is the matrix shape in PyTorch's Linear convention (out_features x in_features);
    vectors (norms, biases) have rows = 1.
    """

    role: str  # what the tensor does: "attn_q", "ffn_down", "expert_down", "token_embd", "norm", ...
    layer: int  # decoder layer index, or -1 for tensors outside the blocks
    rows: int  # out_features (or 1 for a vector)
    cols: int  # in_features (or the vector length)
    copies: int = 1  # identical tensors (routed experts)

    @property
    def numel(self) -> int:
        return self.rows * self.cols * self.copies

    @property
    def is_matrix(self) -> bool:
        """A 2-D weight (linear, embedding or lm_head); vectors stay unquantized in every format."""
        return self.rows > 1

    @property
    def is_block_linear(self) -> bool:
        """A linear layer inside a decoder block: what GPTQ/AWQ/bitsandbytes quantize."""
        return self.layer >= 0 and self.is_matrix and self.role != "router"

    @property
    def is_expert(self) -> bool:
        """A routed-expert weight: counted k/E times in the active parameters."""
        return self.role.startswith("expert_")


@dataclass(frozen=True)
class Architecture:
    """Everything about a model that its memory depends on. Field names follow HF `config.json`."""

    name: str  # display name
    model_type: str  # HF model_type, e.g. "llama", "qwen3_moe", "deepseek_v3"
    hidden_size: int  # h
    num_layers: int  # L
    vocab_size: int  # V
    num_heads: int  # n_h, query heads
    num_kv_heads: int  # n_kv: = n_h for MHA, 1 for MQA, in between for GQA
    head_dim: int  # d, size of one q/k/v head (config `head_dim`, else h / n_h)
    intermediate_size: int  # I, width of the dense MLP (0 if every layer is MoE)
    gated_mlp: bool = True  # SwiGLU/GeGLU (gate, up, down) vs GeLU MLP (up, down)
    qkv_bias: bool = False  # biases on q, k, v (Qwen2, gpt-oss, GPT-2, Falcon with bias)
    o_bias: bool = False  # bias on the output projection
    mlp_bias: bool = False  # biases on the MLP projections
    qk_norm_params: int = 0  # q/k norm weights per layer: 2 x head_dim (Qwen3, Gemma 3), full width (OLMo 2)
    norms_per_layer: int = 2  # 2 (pre-attention, pre-MLP); 4 in Gemma 2/3; 1 in Falcon-7B (parallel)
    norm_bias: bool = False  # LayerNorm with bias (GPT-2, Falcon) instead of RMSNorm
    tie_word_embeddings: bool = False  # lm_head shares the input embedding matrix
    lm_head_bias: bool = False  # the output projection has a bias (Phi-2)
    learned_positions: int = 0  # rows of a learned absolute position table (GPT-2 n_positions)
    attention_sinks: bool = False  # one learned logit per head per layer (gpt-oss)
    # Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank = 0 means ordinary (GQA) attention
    kv_lora_rank: int = 0  # r_kv, width of the cached latent
    q_lora_rank: int = 0  # r_q, 0 = q is a plain projection
    qk_nope_head_dim: int = 0  # d_n
    qk_rope_head_dim: int = 0  # d_r, the decoupled RoPE key (cached next to the latent)
    v_head_dim: int = 0  # d_v
    index_heads: int = 0  # DeepSeek-V3.2's lightning indexer: query heads (0 = no indexer)
    index_head_dim: int = 0  # width of the indexer's one cached key per token and layer
    index_topk: int = 0  # keys the indexer selects for each query (DeepSeek-V3.2: 2048)
    shared_index_layers: tuple[int, ...] = ()  # layers reusing the previous indexer's top-k (GLM-5.x): no indexer
    # Mixture of experts; num_experts = 0 means dense
    num_experts: int = 0  # E, routed experts per MoE layer
    experts_per_token: int = 0  # k, experts each token is routed to
    moe_intermediate_size: int = 0  # I_e, width of one expert
    shared_expert_intermediate_size: int = 0  # total width of the always-on shared expert(s)
    shared_expert_gate: bool = False  # sigmoid gate Linear(h, 1) on the shared expert (Qwen2-MoE)
    router_bias: bool = False  # router Linear has a bias (gpt-oss)
    expert_bias: bool = False  # expert projections have biases (gpt-oss)
    moe_layers: tuple[int, ...] = ()  # indices of the layers whose MLP is a MoE block
    # Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5): a fixed-size state per sequence instead of a KV cache
    linear_layers: tuple[int, ...] = ()  # indices of the linear-attention layers
    linear_key_heads: int = 0  # n_k, key heads of a linear layer (queries have as many)
    linear_value_heads: int = 0  # n_v
    linear_key_head_dim: int = 0  # d_k
    linear_value_head_dim: int = 0  # d_v
    linear_conv_kernel: int = 0  # width of the causal depthwise convolution over q, k, v
    attn_output_gate: bool = False  # q_proj also emits a per-head output gate: 2 x n_h x d rows (Qwen3-Next)
    # Mamba-2 (SSD) mixers (Nemotron-H, Granite 4 hybrid, Falcon-H1): a fixed-size state per sequence, no KV cache
    mamba_layers: tuple[int, ...] = ()  # indices of the layers with a Mamba-2 mixer
    mamba_inner: int = 0  # d_inner, the width the SSM runs at (= mamba heads x head dim)
    mamba_heads: int = 0  # SSM heads, each with its own decay A, step dt and skip D
    mamba_head_dim: int = 0  # P, channels per SSM head
    mamba_state_size: int = 0  # N (d_state), state channels per head channel
    mamba_groups: int = 0  # G, groups of heads sharing the input-dependent B and C
    mamba_conv_kernel: int = 0  # width of the causal depthwise convolution over x, B and C
    mamba_proj_bias: bool = False  # in_proj and out_proj have biases
    mamba_conv_bias: bool = True  # the convolution has a bias
    mamba_norm: bool = True  # a gated RMSNorm over d_inner before out_proj (Falcon-H1 can turn it off)
    mamba_version: int = 2  # 1: the original Mamba mixer (Jamba): x_proj, dt_proj and a state per channel
    mamba_dt_rank: int = 0  # Mamba-1: width of the low-rank step projection
    ssm_state_bytes: int = 2  # bytes of a recurrent (SSM / delta-rule) state element: 4 when the config asks fp32
    attention_free_layers: tuple[int, ...] = ()  # layers without attention: Mamba-only or MLP-only blocks
    mlp_free_layers: tuple[int, ...] = ()  # layers without an MLP (Nemotron-H's mixer-only blocks)
    moe_latent_size: int = 0  # routed experts run between two projections to this width (Nemotron 3 Super)
    # Full-attention layers shaped unlike the windowed ones (Gemma 4), KV sharing and per-layer inputs (Gemma 3n / 4)
    global_head_dim: int = 0  # head size of the full-attention layers when it differs from head_dim (0 = same)
    global_kv_heads: int = 0  # their KV heads when they differ (0 = num_kv_heads)
    global_k_eq_v: bool = False  # their V comes from k_proj's output (no v_proj; K and V still both cached)
    kv_shared_layers: tuple[int, ...] = ()  # layers reusing an earlier layer's K and V: no k/v projection, no cache
    wide_mlp_layers: tuple[int, ...] = ()  # layers whose dense MLP is twice intermediate_size (use_double_wide_mlp)
    per_layer_input_size: int = 0  # p, the per-layer embedding width (0 = none)
    per_layer_vocab: int = 0  # rows of the per-layer embedding table
    router_scale: bool = False  # the router scales each hidden channel and each expert (Gemma 4: h + E parameters)
    layer_intermediate: tuple[int, ...] = ()  # each layer's MLP width when they differ (Gemma 3n); () = uniform
    altup_inputs: int = 0  # Gemma 3n AltUp: parallel copies of the hidden state (0 = none)
    laurel_rank: int = 0  # Gemma 3n LAuReL: rank of the learned low-rank residual (0 = none)
    sparse_mlp_layers: tuple[int, ...] = ()  # Gemma 3n activation sparsity: layers whose MLP keeps a gaussian top-k
    # Sliding-window attention
    sliding_window: int = 0  # W, tokens a windowed layer attends to (0 = none)
    sliding_layers: tuple[int, ...] = ()  # indices of the windowed layers
    chunked_attention: bool = False  # the window is a chunk (Llama 4): a token sees its own chunk of W tokens only
    max_position_embeddings: int = 0  # the context length the model was trained for (0 = unknown)
    mtp_layers: int = 0  # multi-token-prediction modules in the checkpoint (loaded only for speculative decoding)
    # Implementation details that change the saved activations (validation/FINDINGS.md)
    softcap_attention: bool = False  # tanh soft-capping of attention scores (Gemma 2)
    softcap_logits: bool = False  # tanh soft-capping of the final logits (Gemma 2)
    fp32_norm_weight: bool = False  # RMSNorm multiplies its weight in fp32 and saves that product (Gemma, gpt-oss)
    router_fp32: bool = False  # the MoE router runs in fp32 (DeepSeek)
    expert_saved_tensors: int = 4  # expert-width tensors each routed token saves (7 for gpt-oss' clamped SwiGLU)
    lora_reaches_experts: bool = True  # peft's all-linear adapts the routed experts and router (False: gpt-oss)
    # Multimodal models: the towers beside the language model (estimator/vision.py counts them)
    vision_parameters: int = 0  # vision encoder + projector (0 = text-only, or a tower not counted)
    audio_parameters: int = 0  # audio encoder + projector
    vision_tower: object = None  # its estimator.vision.VisionTower: how many context tokens an image becomes
    # How the published checkpoint stores the weights, from its quantization_config (estimator/checkpoint.py's
    # CheckpointFormat; None = not quantized)
    checkpoint: object = None
    source: str = field(default="", compare=False)  # where the numbers come from
    notes: tuple[str, ...] = field(default=(), compare=False)  # what the config reader assumed, in words

    def __post_init__(self) -> None:
        require_int("hidden_size", self.hidden_size, 1, MAX_WIDTH)
        require_int("num_hidden_layers", self.num_layers, 1, MAX_LAYERS)
        require_int("vocab_size", self.vocab_size, 1, MAX_VOCAB)
        require_int("num_attention_heads", self.num_heads, 1, MAX_HEADS)
        require_int("num_key_value_heads", self.num_kv_heads, 1, self.num_heads)
        require_int("head_dim", self.head_dim, 1, MAX_WIDTH)
        require_int("intermediate_size", self.intermediate_size, 0, MAX_WIDTH)
        require_int("norms_per_layer", self.norms_per_layer, 0, 8)
        require_int("learned_positions", self.learned_positions, 0, MAX_VOCAB)
        require_int("qk_norm_params", self.qk_norm_params, 0, 4 * MAX_WIDTH)
        for name in ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                     "moe_intermediate_size", "shared_expert_intermediate_size", "sliding_window",
                     "max_position_embeddings"):
            require_int(name, getattr(self, name), 0, MAX_WIDTH if name != "max_position_embeddings" else 10**9)
        require_int("num_experts", self.num_experts, 0, MAX_EXPERTS)
        require_int("num_nextn_predict_layers", self.mtp_layers, 0, 64)
        require_int("expert_saved_tensors", self.expert_saved_tensors, 1, 16)
        require_int("experts_per_token", self.experts_per_token, 0, max(self.num_experts, 0))
        for name in ("gated_mlp", "qkv_bias", "o_bias", "mlp_bias", "norm_bias", "tie_word_embeddings", "lm_head_bias",
                     "softcap_attention", "softcap_logits", "fp32_norm_weight", "router_fp32", "lora_reaches_experts",
                     "attention_sinks", "shared_expert_gate", "router_bias", "expert_bias", "attn_output_gate"):
            require_bool(name, getattr(self, name))
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_attention_heads ({self.num_heads}) must be a multiple of "
                             f"num_key_value_heads ({self.num_kv_heads})")
        if self.is_mla and (self.qk_rope_head_dim + self.qk_nope_head_dim < 1 or self.v_head_dim < 1):
            raise ValueError("MLA attention needs qk_nope_head_dim + qk_rope_head_dim >= 1 and v_head_dim >= 1")
        if self.num_experts:
            if self.experts_per_token < 1 or self.moe_intermediate_size < 1:
                raise ValueError("a mixture-of-experts model needs num_experts_per_tok >= 1 and an expert width >= 1")
        elif self.moe_layers:
            raise ValueError("moe_layers given but num_experts is 0")
        require_int("index_heads", self.index_heads, 0, MAX_HEADS)
        require_int("index_head_dim", self.index_head_dim, 1 if self.index_heads else 0, MAX_WIDTH)
        require_int("index_topk", self.index_topk, 0, MAX_WIDTH)
        if self.index_heads and not (self.is_mla and self.q_lora_rank):
            raise ValueError("a lightning indexer (index_n_heads) needs MLA attention with q_lora_rank")
        for name in ("linear_key_heads", "linear_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                     "linear_conv_kernel"):
            require_int(name, getattr(self, name), 1 if self.linear_layers else 0, MAX_WIDTH)
        require_int("ssm_state_bytes", self.ssm_state_bytes, 1, 4)
        require_int("mamba_version", self.mamba_version, 1, 2)
        v2 = self.mamba_layers and self.mamba_version == 2
        for name in ("mamba_inner", "mamba_state_size", "mamba_conv_kernel"):
            require_int(name, getattr(self, name), 1 if self.mamba_layers else 0, MAX_WIDTH)
        for name in ("mamba_heads", "mamba_head_dim", "mamba_groups"):
            require_int(name, getattr(self, name), 1 if v2 else 0, MAX_WIDTH)
        require_int("mamba_dt_rank", self.mamba_dt_rank, 1 if self.mamba_layers and not v2 else 0, MAX_WIDTH)
        if v2 and (self.mamba_heads % self.mamba_groups or self.mamba_inner % self.mamba_groups):
            raise ValueError(f"mamba heads ({self.mamba_heads}) and width ({self.mamba_inner}) must be multiples "
                             f"of mamba_n_groups ({self.mamba_groups})")
        require_int("moe_latent_size", self.moe_latent_size, 0, MAX_WIDTH)
        if self.layer_intermediate and len(self.layer_intermediate) != self.num_layers:
            raise ValueError(f"intermediate_size lists {len(self.layer_intermediate)} widths for "
                             f"{self.num_layers} layers")
        for width in self.layer_intermediate:
            require_int("intermediate_size", width, 1, MAX_WIDTH)
        require_int("altup_num_inputs", self.altup_inputs, 0, 64)
        require_int("vision_parameters", self.vision_parameters, 0, 10**13)
        require_int("audio_parameters", self.audio_parameters, 0, 10**13)
        for name in ("global_head_dim", "per_layer_input_size", "laurel_rank"):
            require_int(name, getattr(self, name), 0, MAX_WIDTH)
        require_int("global_kv_heads", self.global_kv_heads, 0, self.num_heads)
        require_int("per_layer_vocab", self.per_layer_vocab, 1 if self.per_layer_input_size else 0, MAX_VOCAB)
        if self.global_kv_heads and self.num_heads % self.global_kv_heads:
            raise ValueError(f"num_attention_heads ({self.num_heads}) must be a multiple of the full-attention layers' "
                             f"KV heads ({self.global_kv_heads})")
        for name in ("global_k_eq_v", "router_scale"):
            require_bool(name, getattr(self, name))
        for name in ("mamba_proj_bias", "mamba_conv_bias", "mamba_norm", "chunked_attention"):
            require_bool(name, getattr(self, name))
        for name in ("moe_layers", "sliding_layers", "linear_layers", "mamba_layers", "attention_free_layers",
                     "mlp_free_layers", "kv_shared_layers", "wide_mlp_layers", "shared_index_layers",
                     "sparse_mlp_layers"):
            layers = getattr(self, name)
            if any(not 0 <= i < self.num_layers for i in layers) or len(set(layers)) != len(layers):
                raise ValueError(f"{name} must list distinct layer indices in 0..{self.num_layers - 1}")
        if self.sliding_layers and not self.sliding_window:
            raise ValueError("sliding_layers given but sliding_window is 0")
        if set(self.linear_layers) & set(self.mamba_layers):
            raise ValueError("a layer cannot have both a Gated DeltaNet and a Mamba mixer")
        if set(self.sliding_layers) - set(self.attention_layers):
            raise ValueError("sliding_layers must be attention layers")
        if set(self.moe_layers) & set(self.mlp_free_layers):
            raise ValueError("a layer without an MLP cannot be a MoE layer")
        dense_layers = self.num_layers - len(self.moe_layers) - len(self.mlp_free_layers)
        if dense_layers and self.intermediate_size < 1:
            raise ValueError("intermediate_size must be at least 1 when some layers have a dense MLP")

    def __hash__(self) -> int:
        """Hash once: architectures key the per-model caches, and hashing 40 fields on every lookup is slow."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, f.name) for f in fields(self) if f.compare))
            object.__setattr__(self, "_hash", cached)
        return cached

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0 and bool(self.moe_layers)

    @property
    def tower_parameters(self) -> int:
        """Parameters of the vision and audio towers beside the language model."""
        return self.vision_parameters + self.audio_parameters

    @functools.cached_property  # read by every estimate (activations, KV cache): computed once per architecture
    def attention_layers(self) -> tuple[int, ...]:
        """Indices of the layers with softmax attention: the layers that keep a KV cache."""
        free = set(self.linear_layers) | set(self.attention_free_layers)
        return tuple(i for i in range(self.num_layers) if i not in free)

    @functools.cached_property
    def cached_layers(self) -> tuple[int, ...]:
        """Indices of the attention layers that keep a KV cache of their own."""
        shared = set(self.kv_shared_layers)
        return tuple(i for i in self.attention_layers if i not in shared)

    def attention_shape(self, layer: int) -> tuple[int, int]:
        """(KV heads, head size) of an attention layer: the full-attention layers' own when the config gives them."""
        if self.global_head_dim and layer not in self.sliding_layers:
            return self.global_kv_heads or self.num_kv_heads, self.global_head_dim
        return self.num_kv_heads, self.head_dim

    @property
    def q_width(self) -> int:
        """Width of all query heads together (n_h x head size)."""
        if self.is_mla:
            return self.num_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.num_heads * self.head_dim


def _attention_tensors(a: Architecture, i: int) -> list[Tensor]:
    h = a.hidden_size
    if a.is_mla:
        # DeepseekV3Attention: q_a_proj/q_a_layernorm/q_b_proj (or q_proj), kv_a_proj_with_mqa,
        # kv_a_layernorm, kv_b_proj, o_proj (modeling_deepseek_v3.py)
        qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            q = [Tensor("attn_q_a", i, a.q_lora_rank, h), Tensor("norm", i, 1, a.q_lora_rank),
                 Tensor("attn_q_b", i, a.num_heads * qk_head, a.q_lora_rank)]
        else:
            q = [Tensor("attn_q", i, a.num_heads * qk_head, h)]
        kv = [Tensor("attn_kv_a", i, a.kv_lora_rank + a.qk_rope_head_dim, h), Tensor("norm", i, 1, a.kv_lora_rank),
              Tensor("attn_kv_b", i, a.num_heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank)]
        out = [Tensor("attn_output", i, h, a.num_heads * a.v_head_dim)]
        biases = (a.q_width + a.kv_lora_rank + a.qk_rope_head_dim if a.qkv_bias else 0) + (h if a.o_bias else 0)
        tensors = q + kv + out
        if a.index_heads and i not in a.shared_index_layers:
            # DeepseekV32Indexer: wq_b (q latent -> heads x d_i), wk (h -> d_i), k_norm (LayerNorm weight and bias),
            # weights_proj (h -> heads); transformers models/deepseek_v32/modeling_deepseek_v32.py
            d = a.index_head_dim
            tensors += [Tensor("attn_index_q", i, a.index_heads * d, a.q_lora_rank), Tensor("attn_index_k", i, d, h),
                        Tensor("norm", i, 1, 2 * d), Tensor("attn_index_weights", i, a.index_heads, h)]
    else:
        kv_heads, head_dim = a.attention_shape(i)
        q_width, kv_width = a.num_heads * head_dim, kv_heads * head_dim
        q_rows = 2 * q_width if a.attn_output_gate else q_width  # the gate rides along in q_proj
        shared = i in a.kv_shared_layers  # Gemma4TextAttention: no k/v projections or norms on KV-sharing layers
        no_v = shared or a.global_k_eq_v and i not in a.sliding_layers
        tensors = [Tensor("attn_q", i, q_rows, h)] + ([] if shared else [Tensor("attn_k", i, kv_width, h)]) + \
                  ([] if no_v else [Tensor("attn_v", i, kv_width, h)]) + [Tensor("attn_output", i, h, q_width)]
        kv_biases = (0 if shared else kv_width) + (0 if no_v else kv_width)
        biases = (q_width + kv_biases if a.qkv_bias else 0) + (h if a.o_bias else 0)
        if a.qk_norm_params and (a.global_head_dim or a.kv_shared_layers):  # q_norm and k_norm of this layer's heads
            tensors.append(Tensor("norm", i, 1, head_dim * (1 if shared else 2)))
        elif a.qk_norm_params:
            tensors.append(Tensor("norm", i, 1, a.qk_norm_params))
    if biases:
        tensors.append(Tensor("bias", i, 1, biases))
    if a.attention_sinks:
        tensors.append(Tensor("sinks", i, 1, a.num_heads))
    return tensors


def _mlp_tensors(a: Architecture, i: int, width: int, prefix: str, copies: int = 1, bias: bool = False,
                 width_in: int = 0) -> list[Tensor]:
    """Gate/up/down (gated) or up/down (plain) projections of `width`, `copies` times, from and back to `width_in`
    (the hidden size unless the experts run in a latent space)."""
    h = width_in or a.hidden_size
    tensors = [Tensor(f"{prefix}_up", i, width, h, copies), Tensor(f"{prefix}_down", i, h, width, copies)]
    if a.gated_mlp:
        tensors.insert(0, Tensor(f"{prefix}_gate", i, width, h, copies))
    if bias:
        up_biases = 2 * width if a.gated_mlp else width
        tensors.append(Tensor(f"{prefix}_bias", i, 1, up_biases + h, copies))
    return tensors


def _linear_attention_tensors(a: Architecture, i: int) -> list[Tensor]:
    """Gated DeltaNet (transformers `models/qwen3_next/modeling_qwen3_next.py` Qwen3NextGatedDeltaNet; Qwen3.5 splits
    in_proj_qkvz into in_proj_qkv and in_proj_z, same sizes): in_proj_qkvz (h -> 2 n_k d_k + 2 n_v d_v), in_proj_ba
    (h -> 2 n_v), a depthwise conv1d over q, k, v (conv_dim x kernel), dt_bias and A_log (n_v each), a gated
    RMSNorm (d_v) and out_proj (n_v d_v -> h)."""
    h = a.hidden_size
    key, value = a.linear_key_heads * a.linear_key_head_dim, a.linear_value_heads * a.linear_value_head_dim
    return [Tensor("linear_in", i, 2 * key + 2 * value + 2 * a.linear_value_heads, h),
            Tensor("linear_conv", i, 1, (2 * key + value) * a.linear_conv_kernel),
            Tensor("linear_decay", i, 1, 2 * a.linear_value_heads), Tensor("norm", i, 1, a.linear_value_head_dim),
            Tensor("linear_out", i, h, value)]


def _mamba_tensors(a: Architecture, i: int) -> list[Tensor]:
    """A Mamba-2 mixer (transformers `models/nemotron_h/modeling_nemotron_h.py` NemotronHMamba2Mixer; the same
    tensors in `granitemoehybrid` GraniteMoeHybridMambaLayer and `falcon_h1` FalconH1Mixer): in_proj (h -> the gate z
    of d_inner, x of d_inner, B and C of G x N each, dt of one per head), a depthwise conv1d over x, B and C
    (conv_dim = d_inner + 2 G N channels of `kernel` taps, + bias), dt_bias, A_log and D (one per head), a gated
    RMSNorm over d_inner and out_proj (d_inner -> h)."""
    h, inner = a.hidden_size, a.mamba_inner
    if a.mamba_version == 1:
        return _mamba1_tensors(a, i)
    conv_dim = inner + 2 * a.mamba_groups * a.mamba_state_size
    tensors = [Tensor("ssm_in", i, inner + conv_dim + a.mamba_heads, h),
               Tensor("ssm_conv", i, 1, conv_dim * (a.mamba_conv_kernel + (1 if a.mamba_conv_bias else 0))),
               Tensor("ssm_decay", i, 1, 3 * a.mamba_heads), Tensor("ssm_out", i, h, inner)]
    if a.mamba_norm:
        tensors.append(Tensor("norm", i, 1, inner))
    if a.mamba_proj_bias:
        tensors.append(Tensor("bias", i, 1, inner + conv_dim + a.mamba_heads + h))
    return tensors


def _mamba1_tensors(a: Architecture, i: int) -> list[Tensor]:
    """A Mamba (1) mixer as Jamba has it (transformers `models/jamba/modeling_jamba.py` JambaMambaMixer): in_proj
    (h -> x and gate z, 2 d_inner), a depthwise conv1d over x (d_inner x kernel, + bias), x_proj (d_inner -> dt_rank +
    2 N), dt_proj (dt_rank -> d_inner, with bias), A_log (d_inner x N) and D (d_inner), RMSNorms on dt, B and C, and
    out_proj (d_inner -> h)."""
    h, inner, n, rank = a.hidden_size, a.mamba_inner, a.mamba_state_size, a.mamba_dt_rank
    tensors = [Tensor("ssm_in", i, 2 * inner, h),
               Tensor("ssm_conv", i, 1, inner * (a.mamba_conv_kernel + (1 if a.mamba_conv_bias else 0))),
               Tensor("ssm_x", i, rank + 2 * n, inner), Tensor("ssm_dt", i, inner, rank),
               Tensor("ssm_decay", i, 1, inner * n + inner + inner),  # A_log, D, dt_proj's bias
               Tensor("norm", i, 1, rank + 2 * n), Tensor("ssm_out", i, h, inner)]
    if a.mamba_proj_bias:
        tensors.append(Tensor("bias", i, 1, 2 * inner + h))
    return tensors


def _layer_tensors(a: Architecture, i: int) -> list[Tensor]:
    h = a.hidden_size
    if i in a.linear_layers:
        tensors = _linear_attention_tensors(a, i)
    elif i in a.attention_free_layers:
        tensors = []
    else:
        tensors = _attention_tensors(a, i)
    if i in a.mamba_layers:  # alone (Nemotron-H, Granite 4) or next to attention (Falcon-H1)
        tensors += _mamba_tensors(a, i)
    if i in a.mlp_free_layers:
        pass
    elif i in a.moe_layers:
        tensors.append(Tensor("router", i, a.num_experts, h))
        if a.router_bias:
            tensors.append(Tensor("bias", i, 1, a.num_experts))
        if a.router_scale:  # Gemma4TextRouter: scale (h) and per_expert_scale (E)
            tensors.append(Tensor("norm", i, 1, h + a.num_experts))
        if a.moe_latent_size:  # NemotronHMoE fc1_latent_proj / fc2_latent_proj around the experts
            latent = a.moe_latent_size
            tensors += [Tensor("latent_in", i, latent, h), Tensor("latent_out", i, h, latent)]
            tensors += _mlp_tensors(a, i, a.moe_intermediate_size, "expert", a.num_experts, a.expert_bias,
                                    width_in=latent)
        else:
            tensors += _mlp_tensors(a, i, a.moe_intermediate_size, "expert", a.num_experts, a.expert_bias)
        if a.shared_expert_intermediate_size:
            tensors += _mlp_tensors(a, i, a.shared_expert_intermediate_size, "shared", bias=a.mlp_bias)
        if a.shared_expert_gate:
            tensors.append(Tensor("router", i, 1, h))  # Qwen2-MoE shared_expert_gate = Linear(h, 1)
    else:
        width = (a.layer_intermediate[i] if a.layer_intermediate else a.intermediate_size) * \
            (2 if i in a.wide_mlp_layers else 1)
        tensors += _mlp_tensors(a, i, width, "ffn", bias=a.mlp_bias)
    if a.per_layer_input_size:  # per_layer_input_gate (h -> p), per_layer_projection (p -> h), their norm (h)
        p = a.per_layer_input_size
        tensors += [Tensor("per_layer_gate", i, p, h), Tensor("per_layer_proj", i, h, p), Tensor("norm", i, 1, h)]
    if a.laurel_rank:  # Gemma3nTextLaurelBlock: linear_left (h -> r), linear_right (r -> h), post_laurel_norm
        tensors += [Tensor("laurel_left", i, a.laurel_rank, h), Tensor("laurel_right", i, h, a.laurel_rank),
                    Tensor("norm", i, 1, h)]
    if a.altup_inputs:  # Gemma3nTextAltUp: modality_router (h -> n), correction (n x n) and prediction (n x n^2)
        n = a.altup_inputs  # coefficients (Linear(n, n), Linear(n, n^2)), correct_output_scale and router_norm
        tensors += [Tensor("altup_router", i, n, h), Tensor("altup_coefs", i, n, n), Tensor("altup_coefs", i, n * n, n),
                    Tensor("norm", i, 1, 2 * h)]
    if a.norms_per_layer:
        tensors.append(Tensor("norm", i, 1, a.norms_per_layer * h * (2 if a.norm_bias else 1)))
    return tensors


@functools.lru_cache(maxsize=512)
def tensors(a: Architecture) -> tuple[Tensor, ...]:
    """Every weight tensor of the model, layer by layer (cached: an Architecture is immutable)."""
    h = a.hidden_size
    out = [Tensor("token_embd", -1, a.vocab_size, h)]
    if a.learned_positions:
        out.append(Tensor("position_embd", -1, a.learned_positions, h))
    if a.per_layer_input_size:  # Gemma 4 / 3n embed_tokens_per_layer, per_layer_model_projection and its norm
        width = a.num_layers * a.per_layer_input_size
        out += [Tensor("per_layer_embd", -1, a.per_layer_vocab, width), Tensor("per_layer_model_proj", -1, width, h),
                Tensor("norm", -1, 1, a.per_layer_input_size)]
    if a.altup_inputs > 1:  # Gemma3nTextModel altup_projections and altup_unembed_projections, n - 1 of each
        out.append(Tensor("altup_proj", -1, h, h, 2 * (a.altup_inputs - 1)))
    for i in range(a.num_layers):
        out += _layer_tensors(a, i)
    out.append(Tensor("norm", -1, 1, h * (2 if a.norm_bias else 1)))
    if not a.tie_word_embeddings:
        out.append(Tensor("output", -1, a.vocab_size, h))
    if a.lm_head_bias:
        out.append(Tensor("bias", -1, 1, a.vocab_size))
    return tuple(out)


@dataclass(frozen=True)
class ParameterCounts:
    """Parameter totals of an architecture."""

    total: int  # every parameter, each tied matrix once
    active: int  # parameters used per token: routed experts counted k/E, input embedding included
    embedding: int  # the input embedding (token table + learned positions)
    lm_head: int  # the output projection (0 when tied to the embedding)
    routed_experts: int  # all routed-expert weights (incl. their biases)
    towers: int = 0  # vision and audio towers of a multimodal model, not in `total` (the language model)

    @property
    def with_towers(self) -> int:
        """Every parameter of the checkpoint's model: the language model plus its vision and audio towers."""
        return self.total + self.towers


@functools.lru_cache(maxsize=512)
def parameter_counts(a: Architecture) -> ParameterCounts:
    """Total and active parameters. Active follows Mistral's and Qwen's convention, embedding included
    (Mixtral 8x7B's 12.9B, mistral.ai/news/mixtral-of-experts; Qwen1.5-MoE-A2.7B's 2.7B); subtract `embedding`
    for OpenAI's and DeepSeek's convention (gpt-oss-120b's 5.1B, gpt-oss model card arXiv:2508.10925;
    DeepSeek-V2-Lite's 2.4B, arXiv:2405.04434)."""
    all_tensors = tensors(a)
    total = sum(t.numel for t in all_tensors)
    routed = sum(t.numel for t in all_tensors if t.is_expert)
    inactive = routed - routed * a.experts_per_token // a.num_experts if a.num_experts else 0
    embedding = sum(t.numel for t in all_tensors if t.role in ("token_embd", "position_embd", "per_layer_embd"))
    lm_head = sum(t.numel for t in all_tensors if t.role == "output")
    return ParameterCounts(total=total, active=total - inactive, embedding=embedding, lm_head=lm_head,
                           routed_experts=routed, towers=a.tower_parameters)


def mtp_parameters(a: Architecture, layers: int) -> int:
    """Parameters of `layers` multi-token-prediction modules as DeepSeek-V3's checkpoint stores them (model.layers.61,
    deepseek-ai/DeepSeek-V3 `inference/model.py` MTP layout): a copy of the last decoder layer, eh_proj (h x 2h),
    enorm and hnorm, and copies of the embedding, the final norm and the output head. DeepSeek-V3's README: "685B,
    which includes 671B of the Main Model weights and 14B of the Multi-Token Prediction (MTP) Module weights"."""
    last = sum(t.numel for t in tensors(a) if t.layer == a.num_layers - 1)
    h, v = a.hidden_size, a.vocab_size
    return layers * (last + 2 * h * h + 2 * h + h + 2 * v * h)
