"""The validation matrix: architectures x scenarios, traced and compared with the detailed estimate.

Small cases use each family's real structure at small dimensions (hidden 512, 4 layers, vocabulary 32k):
about a second each, the `fast` ones run in CI. Real-width cases take a catalog model's own config, trace
two reduced layer counts and extrapolate to its depth (`trace.trace_scaled`).

Variants the estimator has no input for (AdamW foreach / single-tensor, bf16 LoRA adapters) are traced
too and compared with the estimator's assumption (fused AdamW, fp32 adapters): their rows show the gap.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import compare

RESULTS_CSV = Path(__file__).with_name("results.csv")
COLUMNS = ("case", "family", "scenario", "component", "estimate_bytes", "measured_bytes", "error_pct")

_SMALL = dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, vocab_size=32000,
              max_position_embeddings=4096, tie_word_embeddings=False)

# Each family's structure at small dimensions (field names and values as in the published config.json files).
SMALL_CONFIGS = {
    "llama": dict(_SMALL, model_type="llama", intermediate_size=1376),  # GQA 8:2
    "qwen2": dict(_SMALL, model_type="qwen2", intermediate_size=1376),  # q/k/v biases
    "mistral": dict(_SMALL, model_type="mistral", intermediate_size=1376, sliding_window=256),  # window < seq
    "gemma2": dict(_SMALL, model_type="gemma2", intermediate_size=1376, head_dim=64, num_key_value_heads=4,
                   sliding_window=256, query_pre_attn_scalar=64, attn_logit_softcapping=50.0,
                   final_logit_softcapping=30.0, hidden_activation="gelu_pytorch_tanh",
                   tie_word_embeddings=True),  # 4 norms, tied, alternating window, soft-capping
    "phi3": dict(_SMALL, model_type="phi3", intermediate_size=1376, vocab_size=32064),  # fused qkv / gate_up
    "mixtral": dict(_SMALL, model_type="mixtral", intermediate_size=768, num_local_experts=8, num_experts_per_tok=2),
    "qwen3_moe": dict(_SMALL, model_type="qwen3_moe", head_dim=64, intermediate_size=1376, moe_intermediate_size=256,
                      num_experts=16, num_experts_per_tok=4, decoder_sparse_step=1, norm_topk_prob=True,
                      mlp_only_layers=[]),
    "deepseek_v3": dict(_SMALL, model_type="deepseek_v3", num_key_value_heads=8, intermediate_size=1024,
                        moe_intermediate_size=256, n_routed_experts=16, num_experts_per_tok=4, n_shared_experts=1,
                        n_group=4, topk_group=2, first_k_dense_replace=1, q_lora_rank=192, kv_lora_rank=128,
                        qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64, rope_scaling=None),  # MLA + MoE
    "gpt_oss": dict(_SMALL, model_type="gpt_oss", head_dim=64, intermediate_size=512, num_local_experts=8,
                    num_experts_per_tok=2, experts_per_token=2, sliding_window=128, rope_scaling=None,
                    layer_types=["sliding_attention", "full_attention"] * 2),  # sinks, biases, alternating window
}
# Families added for issue 12 ("Every family traced"): the rest of estimator.hf_config.READERS, each with its
# own kernel paths (fused projections, LayerNorm, GeLU/ReLU MLPs, MQA, fp32 routers, Gated DeltaNet).
# Yi publishes model_type "llama" (traced as llama); Qwen 1 ("qwen") is remote code, absent from transformers.
NEW_FAMILY_CONFIGS = {
    "granite": dict(_SMALL, model_type="granite", intermediate_size=1376, embedding_multiplier=12.0,
                    attention_multiplier=0.0078125, residual_multiplier=0.22, logits_scaling=16.0,
                    tie_word_embeddings=True),  # Llama + scalar multipliers
    "smollm3": dict(_SMALL, model_type="smollm3", intermediate_size=1376, no_rope_layer_interval=4, pad_token_id=0,
                    bos_token_id=1, eos_token_id=2, tie_word_embeddings=True),  # every 4th layer without RoPE
    "qwen3": dict(_SMALL, model_type="qwen3", intermediate_size=1376, head_dim=64),  # q/k RMSNorm(head_dim)
    "olmo2": dict(_SMALL, model_type="olmo2", intermediate_size=1376),  # full-width q/k norms, post-norms
    "gemma": dict(_SMALL, model_type="gemma", intermediate_size=1376, head_dim=64, num_key_value_heads=1,
                  hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),  # MQA (2B), x(1+w) fp32 norm
    "gemma3_text": dict(_SMALL, model_type="gemma3_text", intermediate_size=1376, head_dim=64, num_key_value_heads=4,
                        sliding_window=256, sliding_window_pattern=2, query_pre_attn_scalar=64,
                        hidden_activation="gelu_pytorch_tanh", rope_scaling=None,
                        layer_types=["sliding_attention", "full_attention"] * 2,
                        tie_word_embeddings=True),  # 4 norms + q/k norms, local:global 1:1
    "gpt2": dict(model_type="gpt2", n_embd=512, n_layer=4, n_head=8, n_positions=1024, vocab_size=32000,
                 activation_function="gelu_new", attn_pdrop=0.0, embd_pdrop=0.0, resid_pdrop=0.0),  # Conv1D c_attn
    "falcon": dict(model_type="falcon", hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                   vocab_size=32000, multi_query=True, parallel_attn=True, bias=False, alibi=False,
                   new_decoder_architecture=False),  # Falcon-7B: MQA, one LayerNorm, parallel attention + MLP
    "phi": dict(_SMALL, model_type="phi", intermediate_size=2048, num_key_value_heads=8, hidden_act="gelu_new",
                partial_rotary_factor=0.5, resid_pdrop=0.0, embd_pdrop=0.0),  # Phi-2: parallel, LayerNorm
    "opt": dict(model_type="opt", hidden_size=512, num_hidden_layers=4, num_attention_heads=8, ffn_dim=2048,
                vocab_size=32000, max_position_embeddings=2048, activation_function="relu", dropout=0.0,
                attention_dropout=0.0, do_layer_norm_before=True, word_embed_proj_dim=512),  # ReLU MLP, LayerNorm
    "qwen2_moe": dict(_SMALL, model_type="qwen2_moe", intermediate_size=1376, moe_intermediate_size=256,
                      num_experts=16, num_experts_per_tok=4, shared_expert_intermediate_size=512,
                      decoder_sparse_step=1, norm_topk_prob=False, mlp_only_layers=[]),  # gated shared expert
    "minimax_m2": dict(_SMALL, model_type="minimax_m2", head_dim=64, intermediate_size=256, num_local_experts=16,
                       num_experts_per_tok=4, use_qk_norm=True, rotary_dim=32, use_routing_bias=True,
                       scoring_func="sigmoid"),  # full-width q/k norms, sigmoid router
    "deepseek_v2": dict(_SMALL, model_type="deepseek_v2", num_key_value_heads=8, intermediate_size=1024,
                        moe_intermediate_size=256, n_routed_experts=16, num_experts_per_tok=4, n_shared_experts=2,
                        first_k_dense_replace=1, q_lora_rank=None, kv_lora_rank=128, qk_nope_head_dim=64,
                        qk_rope_head_dim=32, v_head_dim=64, rope_scaling=None, topk_method="greedy",
                        n_group=1, topk_group=1),  # MLA without q compression (V2-Lite)
    "qwen3_next": dict(_SMALL, model_type="qwen3_next", head_dim=64, intermediate_size=1376,
                       moe_intermediate_size=256, num_experts=16, num_experts_per_tok=4,
                       shared_expert_intermediate_size=256, decoder_sparse_step=1, mlp_only_layers=[],
                       full_attention_interval=4, linear_conv_kernel_dim=4, linear_key_head_dim=64,
                       linear_num_key_heads=4, linear_num_value_heads=8, linear_value_head_dim=64,
                       partial_rotary_factor=0.25),  # 3 Gated DeltaNet layers : 1 gated attention
}
# Families read since (their readers equal transformers' builds: tests/test_hybrid_models.py); small configs traced
# the same way as the families above
LATER_FAMILY_CONFIGS = {
    "olmo3": dict(_SMALL, model_type="olmo3", intermediate_size=1376, sliding_window=256),  # 3 windowed : 1 full
    "starcoder2": dict(_SMALL, model_type="starcoder2", intermediate_size=2048),  # GeLU MLP, LayerNorm, biases
    "cohere2": dict(_SMALL, model_type="cohere2", intermediate_size=1376, sliding_window=256),  # parallel, 1 norm
    "nemotron": dict(_SMALL, model_type="nemotron", intermediate_size=2048),  # squared ReLU, LayerNorm1P
    "gpt_neox": dict(_SMALL, model_type="gpt_neox", intermediate_size=2048, num_key_value_heads=8),  # fused qkv
    "ernie4_5_moe": dict(_SMALL, model_type="ernie4_5_moe", intermediate_size=1376, moe_intermediate_size=256,
                         moe_num_experts=16, moe_k=4, moe_num_shared_experts=1, moe_layer_start_index=1),
    "seed_oss": dict(_SMALL, model_type="seed_oss", intermediate_size=1376, head_dim=64),  # q/k/v biases only
    "exaone4": dict(_SMALL, model_type="exaone4", intermediate_size=1376, head_dim=64, sliding_window=256),
    "llama4_text": dict(_SMALL, model_type="llama4_text", head_dim=64, intermediate_size=256,
                        intermediate_size_mlp=1376, num_local_experts=8, num_experts_per_tok=1,
                        interleave_moe_layer_step=2, attention_chunk_size=256),  # chunked attention, shared expert
    "gemma4_text": dict(_SMALL, model_type="gemma4_text", head_dim=64, global_head_dim=128, intermediate_size=1376,
                        sliding_window=256, hidden_size_per_layer_input=0, attention_k_eq_v=True,
                        num_global_key_value_heads=1, tie_word_embeddings=True,
                        layer_types=["sliding_attention", "sliding_attention", "sliding_attention",
                                     "full_attention"]),  # its own full-layer heads, K = V projection
    "ernie4_5": dict(_SMALL, model_type="ernie4_5", intermediate_size=1376, head_dim=64),  # Llama-shaped
    "hunyuan_v1_dense": dict(_SMALL, model_type="hunyuan_v1_dense", intermediate_size=1376, head_dim=64),  # q/k norms
    "gemma3n_text": dict(_SMALL, model_type="gemma3n_text", head_dim=64, intermediate_size=1376, sliding_window=256,
                         vocab_size_per_layer_input=32000, hidden_size_per_layer_input=64, num_kv_shared_layers=2,
                         altup_num_inputs=2, laurel_rank=16, activation_sparsity_pattern=[0.0] * 4,
                         layer_types=["sliding_attention", "full_attention"] * 2),  # AltUp, LAuReL, KV sharing
}
# The rest of the readers (issue 12, "Every family traced"): the Mamba hybrids, whose Mamba layers run transformers'
# torch fallback on the CPU (validation/FINDINGS.md 40), Command R, Qwen3.5's text models (Gated DeltaNet as in
# Qwen3-Next) and DeepSeek-V3.2 (MLA + its lightning indexer). In each hybrid the layer the rows compare per layer
# (L - 2) is a Mamba layer.
LAST_FAMILY_CONFIGS = {
    "nemotron_h": dict(_SMALL, model_type="nemotron_h", hybrid_override_pattern="M-*EM-", num_hidden_layers=6,
                       head_dim=64, intermediate_size=1376, mamba_num_heads=16, mamba_head_dim=64, ssm_state_size=64,
                       n_groups=2, conv_kernel=4, moe_intermediate_size=256, moe_shared_expert_intermediate_size=512,
                       n_routed_experts=16, num_experts_per_tok=4),  # Mamba-2, squared-ReLU MLP, attention, MoE blocks
    "granitemoehybrid": dict(_SMALL, model_type="granitemoehybrid", intermediate_size=256,
                             shared_intermediate_size=1024, num_local_experts=16, num_experts_per_tok=4,
                             mamba_n_heads=16, mamba_d_head=64, mamba_d_state=64, mamba_n_groups=1,
                             layer_types=["mamba", "attention", "mamba", "mamba"]),  # Granite 4.0-H: MoE + shared MLP
    "bamba": dict(_SMALL, model_type="bamba", intermediate_size=1376, mamba_n_heads=16, mamba_d_head=64,
                  mamba_d_state=64, mamba_n_groups=1, attn_layer_indices=[1]),  # Mamba-2 + gated MLP
    "falcon_h1": dict(_SMALL, model_type="falcon_h1", intermediate_size=1376, head_dim=64, mamba_d_ssm=1024,
                      mamba_n_heads=16, mamba_d_head=64, mamba_d_state=64, mamba_n_groups=1),  # attention + Mamba-2
    "jamba": dict(_SMALL, model_type="jamba", intermediate_size=1376, num_experts=8, num_experts_per_tok=2,
                  expert_layer_period=2, expert_layer_offset=1, attn_layer_period=4, attn_layer_offset=1,
                  mamba_d_state=16, mamba_d_conv=4, mamba_expand=2),  # Mamba (1), MoE every 2nd layer
    "cohere": dict(_SMALL, model_type="cohere", intermediate_size=1376, use_qk_norm=True),  # Command R+: parallel
    "qwen3_5_text": dict(_SMALL, model_type="qwen3_5_text", head_dim=64, intermediate_size=1376,
                         full_attention_interval=4, linear_conv_kernel_dim=4, linear_key_head_dim=64,
                         linear_num_key_heads=4, linear_num_value_heads=8, linear_value_head_dim=64,
                         partial_rotary_factor=0.25),  # 3 Gated DeltaNet layers : 1 gated attention, dense MLP
    "qwen3_5_moe_text": dict(_SMALL, model_type="qwen3_5_moe_text", head_dim=64, moe_intermediate_size=256,
                             num_experts=16, num_experts_per_tok=4, shared_expert_intermediate_size=256,
                             full_attention_interval=4, linear_conv_kernel_dim=4, linear_key_head_dim=64,
                             linear_num_key_heads=4, linear_num_value_heads=8, linear_value_head_dim=64,
                             partial_rotary_factor=0.25),
    "deepseek_v32": dict(_SMALL, model_type="deepseek_v32", num_key_value_heads=8, intermediate_size=1024,
                         moe_intermediate_size=256, n_routed_experts=16, num_experts_per_tok=4, n_shared_experts=1,
                         n_group=4, topk_group=2, first_k_dense_replace=1, q_lora_rank=192, kv_lora_rank=128,
                         qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64, rope_scaling=None,
                         index_n_heads=8, index_head_dim=64, index_topk=256),  # top-256 of 512 keys: sparse
}
LATER_FAMILY_CONFIGS.update(LAST_FAMILY_CONFIGS)
NEW_FAMILY_CONFIGS.update(LATER_FAMILY_CONFIGS)
SMALL_CONFIGS.update(NEW_FAMILY_CONFIGS)
EAGER_ONLY = {"gemma2", "gpt_oss"}  # transformers 5 refuses sdpa for these (soft-capping / sinks)
# CPU sdpa runs its math kernel when the value head dim differs from the query/key head dim (MLA: 96 vs 64
# here, 192 vs 128 in DeepSeek-V3): fp32 q, k and s x s softmax that CUDA's memory-efficient kernel never
# materialises. Eager is the device-neutral reference for these; their sdpa cases are flagged as variants.
CPU_MATH_SDPA = {"deepseek_v3", "deepseek_v2", "deepseek_v32"}
CPU_MATH_NOTE = "CPU sdpa falls back to its math kernel for MLA (v head dim != q/k head dim): fp32 s^2 softmax"
# Without mamba_ssm and causal-conv1d (CUDA only), transformers runs its Mamba layers' torch fallback
# (mamba2_chunk_scan / slow_forward): fp32 chunk x chunk decay, score and product tensors and fp32 copies of x, B
# and C that the fused kernels, which the estimate follows, never keep (validation/FINDINGS.md 40). Every case
# with a forward under autograd or a prefill is affected; gradient checkpointing keeps only the layer inputs.
MAMBA_FAMILIES = {"nemotron_h", "granitemoehybrid", "bamba", "falcon_h1", "jamba"}
# ... except in backward, which recomputes one layer at a time: Jamba's recomputed Mamba (1) layer in the fallback
# (282 MB here, its per-position loop saving every state) sets the backward peak, the others' stay below the loss head
MAMBA_GC_FALLBACK = {"jamba"}
MAMBA_FALLBACK_NOTE = ("transformers' torch Mamba fallback on the CPU (no mamba_ssm / causal-conv1d kernels): fp32 "
                       "chunked-scan tensors the fused kernels the estimate follows never keep")


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    kind: str  # "inference" or "training"
    params: dict = field(default_factory=dict)  # keyword arguments of trace_inference / trace_training
    model: str = ""  # catalog id for a real-width case ("" = the family's small config)
    layers: tuple[int, int] | None = None  # real width: the two layer counts traced
    fast: bool = False  # part of the CI subset
    variant: str = ""  # a setting the estimator has no input for (its rows show the gap)

    @property
    def config(self) -> dict:
        if not self.model:
            return dict(SMALL_CONFIGS[self.family])
        from estimator.catalog import raw_config

        return raw_config(self.model)

    @property
    def scenario(self) -> str:
        p = self.params
        if self.kind == "dpo":
            lora = p.get("technique") == "lora"
            technique = f"LoRA r={p.get('lora_rank', 16)} on {p.get('lora_targets', 'q,v')}" if lora else "full"
            text = (f"DPO {technique} b={p.get('batch', 1)} pairs (2b sequences) s={p.get('seq', 512)}, sdpa, "
                    f"reference {'= adapter disabled' if lora else 'copy'}, AdamW fused")
        elif self.kind == "inference":
            text = (f"inference b={p.get('batch', 1)} C={p.get('concurrency', 1)} prefill {p.get('prefill_len', 512)}"
                    f" + {p.get('decode_steps', 16)} decode, {p.get('attn_impl', 'sdpa')}")
        else:
            technique = p.get("technique", "full")
            if technique == "lora":
                technique = f"LoRA r={p.get('lora_rank', 16)} on {p.get('lora_targets', 'q,v')}"
            text = (f"training {technique} b={p.get('batch', 1)} s={p.get('seq', 512)}, {p.get('attn_impl', 'sdpa')}"
                    + (", grad ckpt" if p.get("gradient_checkpointing") else "")
                    + f", AdamW {p.get('optimizer_impl', 'fused')}")
            if p.get("lora_dtype") == "base":
                text += ", bf16 adapters"
            if p.get("loss", "standard") != "standard":
                text += f", {p['loss']} loss"
            if p.get("optimizer_in_backward"):
                text += ", optimizer step in backward"
        if self.layers:
            text += f" (traced {self.layers[0]} and {self.layers[1]} layers, extrapolated)"
        return text + (f" [variant: {self.variant}]" if self.variant else "")


# The CI subset's cases of the families added for issue 12: one or two per family whose code path differs from
# Llama's (about a second each)
NEW_FAST = {"gpt2-full-sdpa", "falcon-full-sdpa", "opt-full-sdpa", "phi-lora-qv-sdpa", "olmo2-full-sdpa",
            "gemma3_text-full-sdpa", "qwen2_moe-lora-all-sdpa", "deepseek_v2-full-eager",
            # the Mamba-2 hybrids' checkpointed training (their other cases are CPU-fallback variants) and Command R's
            # LayerNorm + parallel block (about 1-2 s each)
            "nemotron_h-full-sdpa-gc", "bamba-full-sdpa-gc", "cohere-lora-qv-sdpa"}


def _new_family_cases(train: dict) -> list[Case]:
    """Issue 12's families: inference prefill, full, full + gradient checkpointing, LoRA q,v and all-linear (and
    eager for MLA, whose CPU sdpa is the math kernel)."""
    cases: list[Case] = []
    for fam in NEW_FAMILY_CONFIGS:
        math = CPU_MATH_NOTE if fam in CPU_MATH_SDPA else MAMBA_FALLBACK_NOTE if fam in MAMBA_FAMILIES else ""
        infer = dict(batch=2, prefill_len=512, decode_steps=16, attn_impl="sdpa")
        cases.append(Case(f"{fam}-infer", fam, "inference", infer, variant=math))
        cases.append(Case(f"{fam}-full-sdpa", fam, "training", dict(train, attn_impl="sdpa"), variant=math))
        cases.append(Case(f"{fam}-full-sdpa-gc", fam, "training", dict(train, attn_impl="sdpa",
                                                                        gradient_checkpointing=True),
                          variant=MAMBA_FALLBACK_NOTE if fam in MAMBA_GC_FALLBACK else ""))
        cases.append(Case(f"{fam}-lora-qv-sdpa", fam, "training", dict(train, attn_impl="sdpa", technique="lora"),
                          variant=math))
        cases.append(Case(f"{fam}-lora-all-sdpa", fam, "training",
                          dict(train, attn_impl="sdpa", technique="lora", lora_targets="all-linear"), variant=math))
        if math and fam in CPU_MATH_SDPA:
            cases.append(Case(f"{fam}-infer-eager", fam, "inference", dict(infer, attn_impl="eager")))
            cases.append(Case(f"{fam}-full-eager", fam, "training", dict(train, attn_impl="eager")))
            cases.append(Case(f"{fam}-lora-all-eager", fam, "training",
                              dict(train, attn_impl="eager", technique="lora", lora_targets="all-linear")))
    return [Case(c.name, c.family, c.kind, c.params, fast=c.name in NEW_FAST,
                 variant=c.variant or (DROPOUT_VARIANTS.get(c.family, "") if c.kind == "training" else ""))
            for c in cases if c.name not in CANNOT_RUN]


# Cases the libraries cannot run, with the reason (validation/FINDINGS.md)
CANNOT_RUN = {"llama4_text-lora-all-sdpa": "peft 0.21.2's all-linear wraps Llama4Router, an nn.Linear whose forward "
                                           "returns a tuple, and the wrapped forward fails; name the targets instead",
              **{f"{fam}-lora-all-sdpa": "peft 0.21.2 refuses all-linear on this Mamba hybrid: it would wrap the Mamba "
                                        "mixer's out_proj, which _check_lora_target_modules_mamba rejects; name every "
                                        "other Linear instead (as tests/test_hybrid_models.py does)"
                 for fam in ("nemotron_h", "falcon_h1")}}


# Config classes whose defaults train with dropout (each nn.Dropout keeps a bool mask and its output); the estimator
# has no dropout input, so these training rows show the gap (validation/FINDINGS.md)
DROPOUT_VARIANTS = {"seed_oss": "SeedOssConfig's attention_dropout and residual_dropout 0.1; the estimator assumes "
                                "no dropout"}


def _small_cases() -> list[Case]:
    cases: list[Case] = []
    train = dict(batch=2, seq=512)
    for fam in SMALL_CONFIGS:
        if fam in NEW_FAMILY_CONFIGS:
            continue
        attn = "eager" if fam in EAGER_ONLY else "sdpa"
        math = CPU_MATH_NOTE if fam in CPU_MATH_SDPA else ""
        cases.append(Case(f"{fam}-infer", fam, "inference",
                          dict(batch=2, prefill_len=512, decode_steps=16, attn_impl=attn), fast=not math,
                          variant=math))
        cases.append(Case(f"{fam}-full-{attn}", fam, "training", dict(train, attn_impl=attn), fast=not math,
                          variant=math))
        cases.append(Case(f"{fam}-full-{attn}-gc", fam, "training", dict(train, attn_impl=attn,
                                                                          gradient_checkpointing=True),
                          fast=fam in ("llama", "mixtral")))
        cases.append(Case(f"{fam}-lora-qv-{attn}", fam, "training", dict(train, attn_impl=attn, technique="lora"),
                          fast=fam in ("llama", "qwen2", "mistral"), variant=math))
        cases.append(Case(f"{fam}-lora-all-{attn}", fam, "training",
                          dict(train, attn_impl=attn, technique="lora", lora_targets="all-linear"),
                          fast=fam in ("llama", "qwen3_moe"), variant=math))
        if attn == "sdpa":
            cases.append(Case(f"{fam}-full-eager", fam, "training", dict(train, attn_impl="eager"),
                              fast=fam in ("llama", "qwen2", "deepseek_v3")))
            cases.append(Case(f"{fam}-infer-eager", fam, "inference",
                              dict(batch=2, prefill_len=512, decode_steps=16, attn_impl="eager"),
                              fast=fam in ("llama", "deepseek_v3")))
    cases += [
        Case("llama-infer-c4", "llama", "inference", dict(batch=1, concurrency=4, prefill_len=256, decode_steps=16),
             fast=True),
        Case("llama-lora-qv-gc", "llama", "training", dict(train, technique="lora", gradient_checkpointing=True),
             fast=True),
        Case("llama-full-foreach", "llama", "training", dict(train, optimizer_impl="foreach"), fast=True,
             variant="foreach AdamW (CUDA default); the estimator assumes fused"),
        Case("llama-full-single", "llama", "training", dict(train, optimizer_impl="single-tensor"),
             variant="single-tensor AdamW (CPU default); the estimator assumes fused"),
        Case("llama-lora-all-bf16", "llama", "training",
             dict(train, technique="lora", lora_targets="all-linear", lora_dtype="base"), fast=True,
             variant="bf16 adapters (autocast_adapter_dtype=False); the estimator assumes fp32 adapters"),
        Case("llama-lora-qv-bf16", "llama", "training", dict(train, technique="lora", lora_dtype="base"),
             variant="bf16 adapters (autocast_adapter_dtype=False); the estimator assumes fp32 adapters"),
        # issue 15: torchtune's chunked output loss and optimizer step in backward (validation/FINDINGS.md 46)
        *[Case(f"{fam}-{kind}-chunked-loss", fam, "training", dict(train, technique=kind, loss="chunked"),
               fast=fam == "llama" and kind == "full")
          for fam in ("llama", "qwen2") for kind in ("full", "lora")],
        Case("llama-full-chunked-loss-gc", "llama", "training",
             dict(train, loss="chunked", gradient_checkpointing=True)),
        Case("llama-full-optim-in-bwd", "llama", "training", dict(train, optimizer_in_backward=True), fast=True),
        Case("llama-full-optim-in-bwd-foreach", "llama", "training",
             dict(train, optimizer_in_backward=True, optimizer_impl="foreach"),
             variant="foreach AdamW (CUDA default); the estimator assumes fused"),
        Case("qwen2-full-optim-in-bwd", "qwen2", "training", dict(train, optimizer_in_backward=True)),
        Case("llama-full-chunked-optim-in-bwd", "llama", "training",
             dict(train, loss="chunked", optimizer_in_backward=True)),
    ]
    return cases + _new_family_cases(train)


def _real_cases() -> list[Case]:
    """Catalog models at real width: 2-3 layers traced, extrapolated to the full depth."""
    t1 = dict(batch=1, seq=2048)
    return [
        Case("llama3-8b-infer", "llama", "inference", dict(batch=1, prefill_len=4096, decode_steps=8),
             model="meta-llama/Meta-Llama-3-8B", layers=(2, 3)),
        Case("llama3-8b-full", "llama", "training", t1, model="meta-llama/Meta-Llama-3-8B", layers=(2, 3)),
        Case("llama3-8b-full-gc", "llama", "training", dict(t1, gradient_checkpointing=True),
             model="meta-llama/Meta-Llama-3-8B", layers=(2, 3)),
        Case("llama3-8b-lora-qv", "llama", "training", dict(t1, technique="lora"),
             model="meta-llama/Meta-Llama-3-8B", layers=(2, 3)),
        Case("llama3-8b-lora-all", "llama", "training", dict(t1, technique="lora", lora_targets="all-linear"),
             model="meta-llama/Meta-Llama-3-8B", layers=(2, 3)),
        Case("llama3-8b-full-eager", "llama", "training", dict(t1, attn_impl="eager"),
             model="meta-llama/Meta-Llama-3-8B", layers=(2, 3)),
        Case("llama3-8b-full-foreach", "llama", "training", dict(t1, optimizer_impl="foreach"),
             model="meta-llama/Meta-Llama-3-8B", layers=(2, 3),
             variant="foreach AdamW (CUDA default); the estimator assumes fused"),
        Case("qwen2.5-7b-full", "qwen2", "training", t1, model="Qwen/Qwen2.5-7B", layers=(2, 3)),
        Case("qwen2.5-7b-infer-c8", "qwen2", "inference", dict(batch=1, concurrency=8, prefill_len=2048,
                                                               decode_steps=8),
             model="Qwen/Qwen2.5-7B", layers=(2, 3)),
        Case("mistral-7b-infer", "mistral", "inference", dict(batch=1, prefill_len=8192, decode_steps=8),
             model="mistralai/Mistral-7B-v0.1", layers=(2, 3)),
        Case("mistral-7b-full", "mistral", "training", t1, model="mistralai/Mistral-7B-v0.1", layers=(2, 3)),
        Case("gemma2-9b-full", "gemma2", "training", dict(t1, attn_impl="eager"), model="google/gemma-2-9b",
             layers=(2, 4)),
        Case("gemma2-9b-infer", "gemma2", "inference", dict(batch=1, prefill_len=4096, decode_steps=8,
                                                            attn_impl="eager"),
             model="google/gemma-2-9b", layers=(2, 4)),
        Case("phi3-mini-full", "phi3", "training", t1, model="microsoft/Phi-3-mini-4k-instruct", layers=(2, 3)),
        Case("mixtral-8x7b-full", "mixtral", "training", t1, model="mistralai/Mixtral-8x7B-v0.1", layers=(2, 3)),
        Case("qwen3-30b-a3b-full", "qwen3_moe", "training", t1, model="Qwen/Qwen3-30B-A3B", layers=(2, 3)),
        Case("qwen3-30b-a3b-lora-all", "qwen3_moe", "training", dict(t1, technique="lora", lora_targets="all-linear"),
             model="Qwen/Qwen3-30B-A3B", layers=(2, 3)),
        Case("qwen3-30b-a3b-infer", "qwen3_moe", "inference", dict(batch=1, prefill_len=4096, decode_steps=8),
             model="Qwen/Qwen3-30B-A3B", layers=(2, 3)),
        Case("deepseek-v3-infer", "deepseek_v3", "inference", dict(batch=1, prefill_len=2048, decode_steps=8,
                                                                   attn_impl="eager"),
             model="deepseek-ai/DeepSeek-V3", layers=(4, 5)),
        Case("deepseek-v3-infer-sdpa", "deepseek_v3", "inference", dict(batch=1, prefill_len=2048, decode_steps=8),
             model="deepseek-ai/DeepSeek-V3", layers=(4, 5), variant=CPU_MATH_NOTE),
        Case("deepseek-v3-full", "deepseek_v3", "training", dict(batch=1, seq=1024, attn_impl="eager"),
             model="deepseek-ai/DeepSeek-V3", layers=(4, 5)),
        Case("gpt-oss-20b-full", "gpt_oss", "training", dict(t1, attn_impl="eager"), model="openai/gpt-oss-20b",
             layers=(2, 4)),
        Case("gpt-oss-20b-infer", "gpt_oss", "inference", dict(batch=1, prefill_len=4096, decode_steps=8,
                                                               attn_impl="eager"),
             model="openai/gpt-oss-20b", layers=(2, 4)),
        # issue 12: families whose kernel paths differ from Llama's, at real width
        Case("falcon-7b-full", "falcon", "training", t1, model="tiiuae/falcon-7b-instruct", layers=(2, 3)),
        Case("falcon-7b-infer", "falcon", "inference", dict(batch=1, prefill_len=2048, decode_steps=8),
             model="tiiuae/falcon-7b-instruct", layers=(2, 3)),
        Case("opt-6.7b-full", "opt", "training", t1, model="facebook/opt-6.7b", layers=(2, 3),
             variant="the config's dropout 0.1 (a bool mask per nn.Dropout); the estimator assumes no dropout"),
        Case("qwen1.5-moe-lora-all", "qwen2_moe", "training", dict(t1, technique="lora", lora_targets="all-linear"),
             model="Qwen/Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4", layers=(2, 3)),
    ]


# Issue 15: TRL's DPO step (validation/objectives.py trace_dpo): a reference copy (full) or the adapter disabled (LoRA)
DPO_CASES = [
    Case("llama-dpo-full", "llama", "dpo", dict(batch=2, seq=512)),
    Case("llama-dpo-lora", "llama", "dpo", dict(batch=2, seq=512, technique="lora")),
    Case("llama3-8b-dpo-lora", "llama", "dpo", dict(batch=1, seq=1024, technique="lora"),
         model="meta-llama/Meta-Llama-3-8B", layers=(2, 3)),
]


def cases(fast: bool = False) -> list[Case]:
    """The whole matrix, or its CI subset."""
    small = _small_cases() + [c for c in DPO_CASES if not c.model]
    return [c for c in small if c.fast] if fast else small + _real_cases() + [c for c in DPO_CASES if c.model]


def measure(case: Case) -> dict:
    """Trace one case (needs torch, transformers, peft)."""
    from . import objectives, trace

    fn = {"inference": trace.trace_inference, "dpo": objectives.trace_dpo}.get(case.kind, trace.trace_training)
    if case.layers:
        return trace.trace_scaled(fn, case.config, case.layers, **case.params)
    return fn(case.config, **case.params)


def estimate(case: Case) -> dict:
    """The estimator's detailed estimate for one case (the estimator's own inputs: no variant)."""
    if case.kind == "dpo":
        from .objectives import estimate_dpo

        return estimate_dpo(case.config, **case.params)
    keys = {"inference": ("batch", "concurrency", "prefill_len", "decode_steps", "attn_impl"),
            "training": ("batch", "seq", "technique", "lora_rank", "lora_targets", "gradient_checkpointing",
                         "attn_impl", "loss", "optimizer_in_backward")}[case.kind]
    params = {k: v for k, v in case.params.items() if k in keys}
    fn = compare.estimate_inference if case.kind == "inference" else compare.estimate_training
    return fn(case.config, **params)


def run_case(case: Case) -> tuple[list[dict], dict]:
    """(rows, measurement) of one case."""
    measured = measure(case)
    if case.kind == "dpo":
        from .objectives import dpo_rows

        return dpo_rows(case, estimate(case), measured), measured
    return compare.rows(case.name, case.family, case.scenario, case.kind, estimate(case), measured), measured


def run_matrix(fast: bool = False, write: bool | str | Path | None = None,
               only: Iterable[str] = (), log=None) -> list[dict]:
    """Trace every case of the matrix (or its fast CI subset) and return the comparison rows.

    write: a path, True (validation/results.csv) or False; by default the full matrix writes results.csv
    and the fast subset writes nothing. `only`: case names to run. `log(text)` is called per case.
    """
    selected = [c for c in cases(fast) if not only or c.name in set(only)]
    out: list[dict] = []
    for case in selected:
        t0 = time.perf_counter()
        case_rows, _ = run_case(case)
        out += case_rows
        if log:
            log(f"{case.name}: {time.perf_counter() - t0:.1f} s")
    if write is None:
        write = not fast and not only
    if write:
        write_results(out, RESULTS_CSV if write is True else Path(write))
    return out


def write_results(result_rows: list[dict], path: Path = RESULTS_CSV) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in result_rows:
            w.writerow({k: r[k] for k in COLUMNS})
