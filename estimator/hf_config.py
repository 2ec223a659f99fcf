"""Hugging Face `config.json` -> `Architecture`, one small reader per model family.

Each reader follows the family's `transformers` config class and modeling code (huggingface/transformers v5.24.0
`src/transformers/models/<family>/configuration_*.py` and `modeling_*.py`):
which fields exist, their defaults, which layers are MoE or sliding-window. Nothing is downloaded and no
code from the config is executed; the JSON text is size- and depth-limited before it is parsed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from .architecture import MAX_EXPERTS, MAX_HEADS, MAX_LAYERS, MAX_VOCAB, MAX_WIDTH, Architecture, mtp_parameters
from .checkpoint import checkpoint_format
from .checks import printable_text
from .vision import image_tokens, vision_tower

MAX_CONFIG_CHARS = 1_000_000  # a config.json is a few KB; larger text is refused before parsing
MAX_CONFIG_DEPTH = 20  # nesting deeper than any published config
MAX_FIELD_VALUE = 10**9  # largest integer any other config field may hold
MAX_MODEL_NAME_CHARS = 80
# Fields bounded by the Architecture's own limits as soon as they are read: a reader builds one entry per
# layer (MoE and sliding-window layer lists), so a count must be checked before anything is sized by it.
FIELD_LIMITS = {
    **dict.fromkeys(("num_hidden_layers", "n_layer"), MAX_LAYERS),
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok",
                     "experts_per_token", "n_shared_experts"), MAX_EXPERTS),
    **dict.fromkeys(("num_attention_heads", "n_head", "num_key_value_heads", "num_kv_heads", "n_head_kv",
                     "index_n_heads"),
                    MAX_HEADS),
    **dict.fromkeys(("hidden_size", "n_embd", "intermediate_size", "moe_intermediate_size", "head_dim", "n_inner",
                     "ffn_dim", "ffn_hidden_size", "shared_expert_intermediate_size", "kv_lora_rank",
                     "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "sliding_window",
                     "index_head_dim", "index_topk"),
                    MAX_WIDTH),
    **dict.fromkeys(("vocab_size", "n_positions"), MAX_VOCAB),
    **dict.fromkeys(("mamba_num_heads", "mamba_n_heads", "n_groups", "mamba_n_groups"), MAX_HEADS),
    **dict.fromkeys(("mamba_head_dim", "mamba_d_head", "mamba_dt_rank", "attn_layer_period", "expert_layer_period",
                     "ssm_state_size", "mamba_d_state", "conv_kernel",
                     "mamba_d_conv", "mamba_d_ssm", "mamba_expand", "moe_latent_size", "intermediate_size_mlp",
                     "moe_shared_expert_intermediate_size", "shared_intermediate_size", "attention_chunk_size",
                     "interleave_moe_layer_step", "no_rope_layer_interval", "global_head_dim",
                     "hidden_size_per_layer_input", "expert_intermediate_size"), MAX_WIDTH),
    **dict.fromkeys(("num_global_key_value_heads", "top_k_experts", "moe_num_experts", "moe_k",
                     "moe_num_shared_experts"), MAX_EXPERTS),
    "vocab_size_per_layer_input": MAX_VOCAB, "num_kv_shared_layers": MAX_LAYERS, "laurel_rank": MAX_WIDTH,
    "index_topk_freq": MAX_LAYERS, "index_skip_topk_offset": MAX_LAYERS,
    "altup_num_inputs": 64,
}

Config = Mapping[str, Any]


def parse_config_text(text: str | bytes) -> dict:
    """Parse pasted or uploaded JSON text into a config dict, with clear errors."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError("config.json must be UTF-8 text") from err
    text = text.removeprefix("\ufeff")  # the byte-order mark that editors on Windows write
    if len(text) > MAX_CONFIG_CHARS:
        raise ValueError(f"config.json is too large ({len(text):,} characters; the limit is {MAX_CONFIG_CHARS:,})")
    if not text.strip():
        raise ValueError("config.json is empty")
    try:
        config = json.loads(text)  # NaN and Infinity parse as floats: a field the estimate reads refuses them
    except RecursionError as err:
        raise ValueError("config.json is nested too deeply") from err
    except json.JSONDecodeError as err:
        raise ValueError(f"config.json is not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from err
    except ValueError as err:  # an integer longer than Python's 4,300-digit limit
        raise ValueError("config.json contains a number with too many digits") from err
    if not isinstance(config, dict):
        raise ValueError(f"config.json must be a JSON object ({{...}}), not a {type(config).__name__}")
    if _depth(config) > MAX_CONFIG_DEPTH:
        raise ValueError(f"config.json is nested more than {MAX_CONFIG_DEPTH} levels deep")
    return config


def _shown(value: Any) -> str:
    """A config value as an error message quotes it: at most about 40 characters, whatever was pasted."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if abs(value) < 10**24 else f"a {len(str(abs(value)))}-digit number"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value, iteratively (no recursion limit to hit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


class _Fields:
    """Typed access to config fields: `need` raises "missing <field>", `get` applies the class default."""

    def __init__(self, config: Config):
        self.config = config

    def need(self, *names: str) -> int:
        """The first of `names` present (aliases, e.g. n_embd / hidden_size), as a positive integer."""
        for name in names:
            if self.config.get(name) is not None:
                return self.integer(name, low=1)
        raise ValueError(f"config.json is missing {names[-1]}")

    def get(self, name: str, default: int) -> int:
        return default if self.config.get(name) is None else self.integer(name)

    def integer(self, name: str, low: int = 0) -> int:
        """The field as a whole number in low..its limit (FIELD_LIMITS, else MAX_FIELD_VALUE)."""
        value, high = self.config[name], FIELD_LIMITS.get(name, MAX_FIELD_VALUE)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be a whole number between {low} and {high:,}, got {_shown(value)}")
        if not low <= value <= high:
            raise ValueError(f"{name} must be between {low} and {high:,}, got {_shown(value)}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self.config.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {_shown(value)}")
        return value

    def layer_list(self, name: str, kind: type) -> list:
        """A per-layer list (`layer_types` strings, `mlp_only_layers` indices); [] when absent."""
        value = self.config.get(name) or []
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, kind) for v in value):
            raise ValueError(f"{name} must be a list of {'layer indices' if kind is int else 'strings'}")
        if len(value) > MAX_LAYERS:
            raise ValueError(f"{name} has {len(value):,} entries; a model has at most {MAX_LAYERS:,} layers")
        return value


def _common(f: _Fields, name: str, model_type: str) -> dict:
    """Fields every decoder shares, under their HF names."""
    hidden = f.need("hidden_size")
    heads = f.need("num_attention_heads")
    head_dim = f.get("head_dim", hidden // heads if hidden % heads == 0 else 0)
    if not head_dim:
        raise ValueError(f"hidden_size ({hidden}) is not divisible by num_attention_heads ({heads}) "
                         "and head_dim is not given")
    kv_heads = f.get("num_key_value_heads", heads)
    if kv_heads > heads:
        raise ValueError(f"num_key_value_heads ({kv_heads}) cannot exceed num_attention_heads ({heads})")
    return dict(name=name, model_type=model_type, hidden_size=hidden, num_layers=f.need("num_hidden_layers"),
                vocab_size=f.need("vocab_size"), num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
                max_position_embeddings=f.get("max_position_embeddings", 0))


def _window_layers(f: _Fields, num_layers: int, default: Callable[[int], bool]) -> tuple[tuple[int, ...], int]:
    """Sliding-window layers: from `layer_types` when the config has it, else the family's rule."""
    window = f.get("sliding_window", 0)
    if not window:
        return (), 0
    types = f.layer_list("layer_types", str)
    if types:
        if len(types) != num_layers:
            raise ValueError(f"layer_types has {len(types)} entries but num_hidden_layers is {num_layers}")
        layers = tuple(i for i, kind in enumerate(types) if kind == "sliding_attention")
    else:
        layers = tuple(i for i in range(num_layers) if default(i))
    return (layers, window) if layers else ((), 0)


def _llama_like(f: _Fields, name: str, model_type: str, *, qkv_bias: bool | None = None, qk_norm: str = "",
                norms: int = 2, tie: bool = False, window_rule: Callable[[int], bool] = lambda i: True,
                **quirks: bool) -> Architecture:
    """Llama, Mistral, Qwen2/3, Gemma 1/2/3, Phi-3, Granite, Yi, SmolLM, OLMo 2: gated MLP, RMSNorm, GQA.
    `qk_norm`: "head" = RMSNorm(head_dim) on q and k, "full" = RMSNorm over all q (and all k) heads."""
    base = _common(f, name, model_type)
    qk_norm_params = {"": 0, "head": 2 * base["head_dim"],
                      "full": (base["num_heads"] + base["num_kv_heads"]) * base["head_dim"]}[qk_norm]
    attention_bias = f.flag("attention_bias", False)
    sliding_layers, window = _window_layers(f, base["num_layers"], window_rule)
    return Architecture(**base, intermediate_size=f.need("intermediate_size"),
                        qkv_bias=attention_bias if qkv_bias is None else qkv_bias,
                        o_bias=attention_bias, mlp_bias=f.flag("mlp_bias", False), qk_norm_params=qk_norm_params,
                        norms_per_layer=norms, tie_word_embeddings=f.flag("tie_word_embeddings", tie),
                        sliding_window=window, sliding_layers=sliding_layers, **quirks)


def _llama(f: _Fields, name: str, model_type: str) -> Architecture:
    # also Mistral: sliding_window applies to every layer when set (4096 on v0.1, null from v0.2)
    return _llama_like(f, name, model_type)


def _smollm3(f: _Fields, name: str, model_type: str) -> Architecture:
    # SmolLM3Config: a Llama decoder whose embeddings are tied by default (tie_word_embeddings: bool = True);
    # no_rope_layer_interval only skips RoPE on some layers, which changes no tensor
    return _llama_like(f, name, model_type, tie=True)


def _qwen1(f: _Fields, name: str, model_type: str) -> Architecture:
    # Qwen (1), remote code modeling_qwen.py (Qwen/Qwen-7B-Chat at HF commit 04df5dd): c_attn = Linear(h, 3 x
    # kv_channels x n_h) with a bias, attention c_proj without one (no_bias), SwiGLU w1 and w2 of ffn_hidden_size / 2
    # and c_proj back, RMSNorm ln_1 / ln_2 / ln_f, untied lm_head. Early configs use n_embd / n_layer / n_head /
    # ffn_hidden_size, later ones the standard names. (LoRA on the fused c_attn is modelled as separate q, k, v.)
    hidden, heads = f.need("n_embd", "hidden_size"), f.need("n_head", "num_attention_heads")
    bias = not f.flag("no_bias", True)
    return Architecture(name=name, model_type=model_type, hidden_size=hidden, num_layers=f.need("n_layer",
                        "num_hidden_layers"), vocab_size=f.need("vocab_size"), num_heads=heads, num_kv_heads=heads,
                        head_dim=f.get("kv_channels", hidden // heads),
                        intermediate_size=f.need("ffn_hidden_size", "intermediate_size") // 2, qkv_bias=True,
                        o_bias=bias, mlp_bias=bias, tie_word_embeddings=f.flag("tie_word_embeddings", False),
                        max_position_embeddings=f.get("seq_length", 0))


def _qwen2(f: _Fields, name: str, model_type: str) -> Architecture:
    # Qwen2Attention: q/k/v bias=True hard-coded, o_proj bias=False; window only with use_sliding_window,
    # on layers i >= max_window_layers
    return _llama_like(f, name, model_type, qkv_bias=True, window_rule=_qwen_window(f))


def _qwen2_vl(f: _Fields, name: str, model_type: str) -> Architecture:
    # Qwen2-VL and Qwen2.5-VL: a Qwen2 language model, its fields at the top level (the published configs) or under
    # text_config (transformers 5's layout); the vision tower is counted apart (estimator/vision.py)
    text = f.config.get("text_config")
    if isinstance(text, Mapping):
        f = _Fields({"tie_word_embeddings": f.config.get("tie_word_embeddings"), **text})
    return _qwen2(f, name, model_type)


def _qwen3(f: _Fields, name: str, model_type: str) -> Architecture:
    # Qwen3Attention: bias = attention_bias, q_norm/k_norm = RMSNorm(head_dim)
    return _llama_like(f, name, model_type, qk_norm="head", window_rule=_qwen_window(f))


def _qwen_window(f: _Fields) -> Callable[[int], bool]:
    if not f.flag("use_sliding_window", False):
        return lambda i: False
    first = f.get("max_window_layers", 0)
    return lambda i: i >= first


def _olmo2(f: _Fields, name: str, model_type: str) -> Architecture:
    # Olmo2: q_norm = RMSNorm(n_h d), k_norm = RMSNorm(n_kv d); post-attention and post-feedforward norms
    return _llama_like(f, name, model_type, qk_norm="full")


def _olmo3(f: _Fields, name: str, model_type: str) -> Architecture:
    # Olmo3 (transformers models/olmo3): OLMo 2's layers with sliding windows (class default 4,096) on 3 of every 4
    # layers unless layer_types says otherwise
    g = _Fields({"sliding_window": 4096, **f.config})
    return _llama_like(g, name, model_type, qk_norm="full", window_rule=lambda i: (i + 1) % 4 != 0)


def _starcoder2(f: _Fields, name: str, model_type: str) -> Architecture:
    # StarCoder2 (transformers models/starcoder2): plain GeLU MLP c_fc / c_proj, biases everywhere with use_bias
    # (default true), LayerNorms with bias, tied embeddings by default; sliding_window, when set, on every layer
    f = _Fields({"num_key_value_heads": 2, **f.config})  # Starcoder2Config's default
    base = _common(f, name, model_type)
    bias = f.flag("use_bias", True)
    sliding_layers, window = _window_layers(f, base["num_layers"], lambda i: True)
    return Architecture(**base, intermediate_size=f.need("intermediate_size"), gated_mlp=False, qkv_bias=bias,
                        o_bias=bias, mlp_bias=bias, norm_bias=True,
                        tie_word_embeddings=f.flag("tie_word_embeddings", True),
                        sliding_window=window, sliding_layers=sliding_layers)


def _cohere(f: _Fields, name: str, model_type: str) -> Architecture:
    # Cohere Command R (cohere) and Command R7B / A (cohere2), transformers models/cohere*: attention and the gated MLP
    # in parallel after one LayerNorm without bias per layer, tied embeddings; Command R+'s q/k LayerNorms over
    # (heads, head_dim) with use_qk_norm; cohere2 windows 3 of every 4 layers (layer_types) at sliding_window 4096
    g = _Fields({"sliding_window": 4096, **f.config}) if model_type == "cohere2" else f
    base = _common(g, name, model_type)
    qk = (base["num_heads"] + base["num_kv_heads"]) * base["head_dim"] if g.flag("use_qk_norm", False) else 0
    sliding_layers, window = (_window_layers(g, base["num_layers"], lambda i: (i + 1) % 4 != 0)
                              if model_type == "cohere2" else ((), 0))
    return Architecture(**base, intermediate_size=g.need("intermediate_size"), qkv_bias=g.flag("attention_bias", False),
                        o_bias=g.flag("attention_bias", False), norms_per_layer=1, qk_norm_params=qk,
                        tie_word_embeddings=g.flag("tie_word_embeddings", True), sliding_window=window,
                        sliding_layers=sliding_layers)


def _nemotron(f: _Fields, name: str, model_type: str) -> Architecture:
    # NVIDIA Nemotron-4 / Minitron (transformers models/nemotron): squared-ReLU MLP up / down, LayerNorm1P with bias
    base = _common(f, name, model_type)
    return Architecture(**base, intermediate_size=f.need("intermediate_size"), gated_mlp=False,
                        qkv_bias=f.flag("attention_bias", False), o_bias=f.flag("attention_bias", False),
                        mlp_bias=f.flag("mlp_bias", False), norm_bias=True,
                        tie_word_embeddings=f.flag("tie_word_embeddings", False))


def _gpt_neox(f: _Fields, name: str, model_type: str) -> Architecture:
    # GPT-NeoX / Pythia (transformers models/gpt_neox): fused query_key_value and dense with attention_bias (default
    # true), GeLU MLP dense_h_to_4h / dense_4h_to_h with biases always, LayerNorms with bias, untied embed_out
    hidden, heads = _hidden_and_heads(f, ("hidden_size",), ("num_attention_heads",))
    bias = f.flag("attention_bias", True)
    return Architecture(name=name, model_type=model_type, hidden_size=hidden, num_layers=f.need("num_hidden_layers"),
                        vocab_size=f.need("vocab_size"), num_heads=heads, num_kv_heads=heads, head_dim=hidden // heads,
                        intermediate_size=f.need("intermediate_size"), gated_mlp=False, qkv_bias=bias, o_bias=bias,
                        mlp_bias=True, norm_bias=True, tie_word_embeddings=f.flag("tie_word_embeddings", False),
                        max_position_embeddings=f.get("max_position_embeddings", 0))


def _seed_oss(f: _Fields, name: str, model_type: str) -> Architecture:
    # ByteDance Seed-OSS (transformers models/seed_oss): a Llama decoder with q/k/v biases (attention_bias, default
    # true) and a separate o_proj bias switch (attention_out_bias, default false)
    base = _common(f, name, model_type)
    return Architecture(**base, intermediate_size=f.need("intermediate_size"), qkv_bias=f.flag("attention_bias", True),
                        o_bias=f.flag("attention_out_bias", False), mlp_bias=f.flag("mlp_bias", False),
                        tie_word_embeddings=f.flag("tie_word_embeddings", False))


def _exaone4(f: _Fields, name: str, model_type: str) -> Architecture:
    # LG EXAONE 4.0 (transformers models/exaone4): q/k RMSNorms over head_dim, norms after attention and after the MLP
    # only (2 per layer), windows (class default 4,096) on the layers layer_types or sliding_window_pattern names:
    # an int p windows every layer but each p-th, a string such as "LLLG" repeats from layer 0
    g = _Fields({"sliding_window": 4096, **f.config})
    pattern = g.config.get("sliding_window_pattern", 4)
    if isinstance(pattern, str) and pattern and not g.config.get("layer_types"):
        if len(pattern) > MAX_LAYERS or set(pattern) - {"L", "G"}:
            raise ValueError("sliding_window_pattern must be a number or a string of L (local) and G (global)")
        rule = lambda i: pattern[i % len(pattern)] == "L"  # noqa: E731
    else:
        every = g.get("sliding_window_pattern", 0) if "sliding_window_pattern" in g.config else 4
        rule = (lambda i: (i + 1) % every != 0) if every else (lambda i: False)
    return _llama_like(g, name, model_type, qk_norm="head", window_rule=rule)


def _hunyuan_dense(f: _Fields, name: str, model_type: str) -> Architecture:
    # Tencent Hunyuan dense (transformers models/hunyuan_v1_dense): a Llama decoder with q/k RMSNorms over head_dim
    # (query_layernorm, key_layernorm)
    return _llama_like(f, name, model_type, qk_norm="head")


def _gemma(f: _Fields, name: str, model_type: str) -> Architecture:
    # Gemma RMSNorm computes x * (1 + w) in fp32
    return _llama_like(f, name, model_type, tie=True, fp32_norm_weight=True)


def _gemma2(f: _Fields, name: str, model_type: str) -> Architecture:
    # Gemma2: 4 norms per layer; even layers (i+1) % 2 use the window
    return _llama_like(f, name, model_type, norms=4, tie=True, window_rule=lambda i: (i + 1) % 2 == 1,
                       fp32_norm_weight=True, softcap_attention=_softcap(f, "attn_logit_softcapping", True),
                       softcap_logits=_softcap(f, "final_logit_softcapping", True))


def _softcap(f: _Fields, name: str, default: bool) -> bool:
    """Whether a soft-capping value is on: a positive number; null turns it off; absent = the class default
    (Gemma2Config: 50.0 and 30.0; Gemma3TextConfig: None)."""
    if name not in f.config:
        return default
    value = f.config[name]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number or null, got {value}")
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


GEMMA3_TEXT_DEFAULTS = {  # Gemma3TextConfig class defaults, which published text_configs rely on
    "vocab_size": 262_208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "sliding_window": 4096, "sliding_window_pattern": 6, "max_position_embeddings": 131_072,
}


def _gemma3(f: _Fields, name: str, model_type: str) -> Architecture:
    # Gemma3: 4 norms + q/k norms; (i+1) % pattern != 0 layers are local (5 local : 1 global)
    config = f.config.get("text_config", f.config)
    if not isinstance(config, Mapping):
        raise ValueError("text_config must be a JSON object")
    text = _Fields({**GEMMA3_TEXT_DEFAULTS, **config})
    pattern = text.get("sliding_window_pattern", 6) or 1
    return _llama_like(text, name, model_type, qk_norm="head", norms=4, tie=True,
                       window_rule=lambda i: (i + 1) % pattern != 0, fp32_norm_weight=True,
                       softcap_attention=_softcap(text, "attn_logit_softcapping", False),
                       softcap_logits=_softcap(text, "final_logit_softcapping", False))


GEMMA4_TEXT_DEFAULTS = {  # Gemma4TextConfig class defaults (transformers models/gemma4/configuration_gemma4.py)
    "vocab_size": 262_144, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 30,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 512,
    "max_position_embeddings": 131_072, "vocab_size_per_layer_input": 262_144, "hidden_size_per_layer_input": 256,
    "global_head_dim": 512,
}


def _gemma4(f: _Fields, name: str, model_type: str) -> Architecture:
    # Gemma 4 text model (transformers models/gemma4/modeling_gemma4.py): 5 sliding : 1 full attention
    # (layer_types, the last layer always full), the full layers with their own head size (global_head_dim) and, with
    # attention_k_eq_v, their own KV heads (num_global_key_value_heads) and no v_proj (V from k_proj's output); q, k
    # norms of the layer's head size (v_norm has no weight); the last num_kv_shared_layers layers reuse K and V of the
    # last earlier layer of their type (no k/v projections, no cache) and, with use_double_wide_mlp, have a
    # 2 x intermediate_size MLP; per-layer embeddings (hidden_size_per_layer_input); with enable_moe_block, routed
    # experts next to the dense MLP (a router with a scale per channel and per expert, three more norms); 4 norms
    config = f.config.get("text_config", f.config)
    if not isinstance(config, Mapping):
        raise ValueError("text_config must be a JSON object")
    t = _Fields({**GEMMA4_TEXT_DEFAULTS, **{k: v for k, v in config.items() if v is not None}})
    base = _common(t, name, model_type)
    layers = base["num_layers"]
    types = t.layer_list("layer_types", str) or [("sliding_attention" if (i + 1) % 6 else "full_attention")
                                                  for i in range(layers)]
    if len(types) != layers or set(types) - STANDARD_LAYER_TYPES:
        raise ValueError(f"layer_types must list {layers} entries, each sliding_attention or full_attention")
    types[-1] = "full_attention"  # Gemma4TextConfig forces the last layer to full attention
    sliding = tuple(i for i, kind in enumerate(types) if kind == "sliding_attention")
    k_eq_v = t.flag("attention_k_eq_v", False)
    shared = t.get("num_kv_shared_layers", 0)
    if shared > layers:
        raise ValueError(f"num_kv_shared_layers ({shared}) cannot exceed num_hidden_layers ({layers})")
    shared_layers = tuple(range(layers - shared, layers))
    if shared and shared < layers and set(types[layers - shared:]) - set(types[:layers - shared]):
        raise ValueError("num_kv_shared_layers: every layer type that reuses K and V needs an earlier layer of that "
                         "type to produce them")
    moe = {}
    if t.flag("enable_moe_block", False):
        width = t.need("moe_intermediate_size", "expert_intermediate_size")
        moe = dict(num_experts=t.need("num_experts"), experts_per_token=t.need("top_k_experts"),
                   moe_intermediate_size=width, shared_expert_intermediate_size=t.need("intermediate_size"),
                   moe_layers=tuple(range(layers)), router_scale=True)
    per_layer = t.get("hidden_size_per_layer_input", 0)
    return Architecture(**base, intermediate_size=t.need("intermediate_size"), qk_norm_params=2 * base["head_dim"],
                        qkv_bias=t.flag("attention_bias", False), o_bias=t.flag("attention_bias", False),
                        norms_per_layer=7 if moe else 4, tie_word_embeddings=t.flag("tie_word_embeddings", True),
                        sliding_window=t.need("sliding_window") if sliding else 0, sliding_layers=sliding,
                        global_head_dim=t.need("global_head_dim"),
                        global_kv_heads=t.get("num_global_key_value_heads", 0) if k_eq_v else 0,
                        global_k_eq_v=k_eq_v, kv_shared_layers=shared_layers,
                        wide_mlp_layers=shared_layers if t.flag("use_double_wide_mlp", False) else (),
                        per_layer_input_size=per_layer,
                        per_layer_vocab=t.need("vocab_size_per_layer_input") if per_layer else 0,
                        fp32_norm_weight=True, softcap_logits=_softcap(t, "final_logit_softcapping", False), **moe,
                        notes=("Gemma 4: the full-attention layers' own head size and KV heads are counted in the "
                               "weights and KV cache; activations are estimated with the sliding layers' shape",))


GEMMA3N_TEXT_DEFAULTS = {  # Gemma3nTextConfig class defaults (transformers models/gemma3n/configuration_gemma3n.py)
    "vocab_size": 262_400, "hidden_size": 2048, "intermediate_size": 16_384, "num_hidden_layers": 35,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "sliding_window": 512,
    "max_position_embeddings": 32_768, "vocab_size_per_layer_input": 262_144, "hidden_size_per_layer_input": 256,
    "altup_num_inputs": 4, "num_kv_shared_layers": 15, "laurel_rank": 64, "final_logit_softcapping": 30.0,
}


def _gemma3n(f: _Fields, name: str, model_type: str) -> Architecture:
    # Gemma 3n text model (transformers models/gemma3n/modeling_gemma3n.py): 4 sliding : 1 full attention, q/k norms,
    # the last num_kv_shared_layers layers reuse K and V (no projections, no cache), per-layer MLP widths
    # (intermediate_size may be a list), per-layer embeddings, and in every layer an AltUp block (altup_num_inputs
    # copies of the hidden state) and a LAuReL low-rank residual (laurel_rank); 4 norms per layer
    config = f.config.get("text_config", f.config)
    if not isinstance(config, Mapping):
        raise ValueError("text_config must be a JSON object")
    raw = {**GEMMA3N_TEXT_DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    widths = raw["intermediate_size"]
    if isinstance(widths, list):
        if not widths or len(widths) > MAX_LAYERS:
            raise ValueError(f"intermediate_size must be a width or a list of at most {MAX_LAYERS:,} widths")
        per_layer = tuple(_Fields({"intermediate_size": w}).need("intermediate_size") for w in widths)
        raw["intermediate_size"] = max(per_layer)
    else:
        per_layer = ()
    t = _Fields(raw)
    base = _common(t, name, model_type)
    layers = base["num_layers"]
    if per_layer and len(per_layer) != layers:
        raise ValueError(f"intermediate_size lists {len(per_layer)} widths but num_hidden_layers is {layers}")
    types = t.layer_list("layer_types", str) or [("full_attention" if (i + 1) % 5 == 0 else "sliding_attention")
                                                  for i in range(layers)]
    if len(types) != layers or set(types) - STANDARD_LAYER_TYPES:
        raise ValueError(f"layer_types must list {layers} entries, each sliding_attention or full_attention")
    shared = t.get("num_kv_shared_layers", 0)
    if shared > layers or shared and shared < layers and set(types[layers - shared:]) - set(types[:layers - shared]):
        raise ValueError("num_kv_shared_layers: every layer type that reuses K and V needs an earlier layer of that "
                         "type to produce them")
    sliding = tuple(i for i, kind in enumerate(types) if kind == "sliding_attention")
    per_input = t.get("hidden_size_per_layer_input", 0)
    sparsity = raw.get("activation_sparsity_pattern")  # None: 0.95 on the first 10 layers when there are more than 10
    if sparsity is None:  # (Gemma3nTextConfig.__post_init__)
        sparsity = [0.95] * 10 + [0.0] * (layers - 10) if layers > 10 else []
    if isinstance(sparsity, (int, float)) and not isinstance(sparsity, bool):
        sparsity = [sparsity] * layers
    if not isinstance(sparsity, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1
                                             for v in sparsity) or sparsity and len(sparsity) != layers:
        raise ValueError(f"activation_sparsity_pattern must list {layers} numbers in 0..1, one per layer")
    return Architecture(**base, intermediate_size=t.need("intermediate_size"), layer_intermediate=per_layer,
                        qk_norm_params=2 * base["head_dim"], qkv_bias=t.flag("attention_bias", False),
                        o_bias=t.flag("attention_bias", False), norms_per_layer=4,
                        tie_word_embeddings=t.flag("tie_word_embeddings", True),
                        sliding_window=t.need("sliding_window") if sliding else 0, sliding_layers=sliding,
                        kv_shared_layers=tuple(range(layers - shared, layers)), per_layer_input_size=per_input,
                        per_layer_vocab=t.need("vocab_size_per_layer_input") if per_input else 0,
                        altup_inputs=t.get("altup_num_inputs", 0), laurel_rank=t.get("laurel_rank", 0),
                        sparse_mlp_layers=tuple(i for i, v in enumerate(sparsity) if v > 0),
                        fp32_norm_weight=True, softcap_logits=_softcap(t, "final_logit_softcapping", True),
                        notes=(f"Gemma 3n: the last {shared} layers reuse earlier layers' K and V and cache nothing",))


def _qwen3_next(f: _Fields, name: str, model_type: str) -> Architecture:
    # Qwen3-Next and Qwen3.5's language model (transformers models/qwen3_next, qwen3_5, qwen3_5_moe): Gated DeltaNet
    # layers (layer_types "linear_attention", else all but every full_attention_interval-th) mixed with full
    # attention that has q/k norms and an output gate in q_proj; dense MLPs or MoE with a sigmoid-gated shared expert
    base = _common(f, name, model_type)
    layers = base["num_layers"]
    types = f.layer_list("layer_types", str)
    if types and len(types) != layers:
        raise ValueError(f"layer_types has {len(types)} entries but num_hidden_layers is {layers}")
    interval = f.get("full_attention_interval", 4) or 1
    linear = tuple(i for i, kind in enumerate(types) if kind == "linear_attention") if types else \
        tuple(i for i in range(layers) if (i + 1) % interval)
    moe = {}
    if f.get("num_experts", 0):
        shared = f.get("shared_expert_intermediate_size", 0)
        moe = dict(num_experts=f.need("num_experts"), experts_per_token=f.need("num_experts_per_tok"),
                   moe_intermediate_size=f.need("moe_intermediate_size"), shared_expert_intermediate_size=shared,
                   shared_expert_gate=bool(shared), moe_layers=_moe_layers(f, layers))
    return _with_mtp_note(Architecture(
                        **base, intermediate_size=f.get("intermediate_size", 0), qk_norm_params=2 * base["head_dim"],
                        attn_output_gate=f.flag("attn_output_gate", True),
                        tie_word_embeddings=f.flag("tie_word_embeddings", False), linear_layers=linear,
                        linear_key_heads=f.need("linear_num_key_heads"),
                        linear_value_heads=f.need("linear_num_value_heads"),
                        linear_key_head_dim=f.need("linear_key_head_dim"),
                        linear_value_head_dim=f.need("linear_value_head_dim"),
                        linear_conv_kernel=f.need("linear_conv_kernel_dim"),
                        ssm_state_bytes=4 if f.config.get("mamba_ssm_dtype") == "float32" else 2, **moe,
                        notes=(f"{len(linear)} of {layers} layers are Gated DeltaNet linear attention: a fixed state "
                               "per sequence instead of a KV cache; their activations are estimated as an attention "
                               "layer's (not traced yet) and LoRA all-linear leaves their projections out",)),
                         f, counted=False)


def _moe_layers(f: _Fields, num_layers: int) -> tuple[int, ...]:
    """Qwen2-MoE / Qwen3-MoE: sparse iff i not in mlp_only_layers and (i+1) % decoder_sparse_step == 0."""
    step = f.get("decoder_sparse_step", 1) or 1
    dense_only = set(f.layer_list("mlp_only_layers", int))
    return tuple(i for i in range(num_layers) if i not in dense_only and (i + 1) % step == 0)


def _mixtral(f: _Fields, name: str, model_type: str) -> Architecture:
    base = _common(f, name, model_type)
    sliding_layers, window = _window_layers(f, base["num_layers"], lambda i: True)
    return Architecture(**base, intermediate_size=0, tie_word_embeddings=f.flag("tie_word_embeddings", False),
                        num_experts=f.need("num_local_experts"), experts_per_token=f.need("num_experts_per_tok"),
                        moe_intermediate_size=f.need("intermediate_size"),
                        moe_layers=tuple(range(base["num_layers"])), sliding_window=window,
                        sliding_layers=sliding_layers)


def _minimax_m2(f: _Fields, name: str, model_type: str) -> Architecture:
    # MiniMax-M2 (transformers models/minimax_m2/modeling_minimax_m2.py): Mixtral-style experts (num_local_experts
    # of intermediate_size) with RMSNorms over all query heads and all key heads (qk_norm_type "per_layer")
    a = _mixtral(f, name, model_type)
    return dataclasses.replace(a, qk_norm_params=(a.num_heads + a.num_kv_heads) * a.head_dim
                               if f.flag("use_qk_norm", True) else 0)


def _qwen_moe(f: _Fields, name: str, model_type: str) -> Architecture:
    base = _common(f, name, model_type)
    is_qwen2 = model_type == "qwen2_moe"
    shared = f.get("shared_expert_intermediate_size", 0) if is_qwen2 else 0
    return Architecture(**base, intermediate_size=f.get("intermediate_size", 0),
                        qkv_bias=f.flag("qkv_bias", True) if is_qwen2 else f.flag("attention_bias", False),
                        o_bias=False if is_qwen2 else f.flag("attention_bias", False),
                        qk_norm_params=0 if is_qwen2 else 2 * base["head_dim"],
                        tie_word_embeddings=f.flag("tie_word_embeddings", False),
                        # transformers 5 writes num_local_experts (Qwen3MoeConfig.attribute_map), older configs
                        num_experts=f.need("num_local_experts", "num_experts"),  # num_experts
                        experts_per_token=f.need("num_experts_per_tok"),
                        moe_intermediate_size=f.need("moe_intermediate_size"),
                        shared_expert_intermediate_size=shared, shared_expert_gate=bool(shared),
                        moe_layers=_moe_layers(f, base["num_layers"]))


def _deepseek(f: _Fields, name: str, model_type: str) -> Architecture:
    # DeepseekV2/V3: MLA attention; layer i is MoE iff i >= first_k_dense_replace and i % moe_layer_freq == 0
    base = _common(f, name, model_type)
    rope, nope = f.need("qk_rope_head_dim"), f.need("qk_nope_head_dim")
    base.update(num_kv_heads=base["num_heads"], head_dim=rope + nope)
    first_dense, freq = f.get("first_k_dense_replace", 0), f.get("moe_layer_freq", 1) or 1
    experts = f.get("n_routed_experts", 0)
    moe_layers = tuple(i for i in range(base["num_layers"]) if i >= first_dense and i % freq == 0) if experts else ()
    a = Architecture(**base, intermediate_size=f.need("intermediate_size"),
                        qkv_bias=f.flag("attention_bias", False), o_bias=f.flag("attention_bias", False),
                        tie_word_embeddings=f.flag("tie_word_embeddings", False),
                        kv_lora_rank=f.need("kv_lora_rank"), q_lora_rank=f.get("q_lora_rank", 0),
                        qk_nope_head_dim=nope, qk_rope_head_dim=rope, v_head_dim=f.need("v_head_dim"),
                        index_heads=f.get("index_n_heads", 0), index_head_dim=f.get("index_head_dim", 0),
                        index_topk=f.get("index_topk", 2048) if f.get("index_n_heads", 0) else 0,  # its config default
                        shared_index_layers=_shared_index_layers(f, base["num_layers"]) if f.get("index_n_heads", 0)
                        else (), num_experts=experts,
                        experts_per_token=f.get("num_experts_per_tok", 0) if experts else 0,
                        moe_intermediate_size=f.get("moe_intermediate_size", 0) if experts else 0,
                        shared_expert_intermediate_size=f.get("n_shared_experts", 0) * f.get("moe_intermediate_size", 0)
                        if experts else 0, moe_layers=moe_layers, router_fp32=bool(experts))
    return _with_mtp_note(a, f)


def _shared_index_layers(f: _Fields, layers: int) -> tuple[int, ...]:
    """Layers that reuse the previous full layer's top-k selection instead of running a lightning indexer of their
    own (GLM-5.x, transformers models/glm_moe_dsa: indexer_types "shared", else index_topk_pattern "F"/"S", else
    full on layers (i - index_skip_topk_offset + 1) % index_topk_freq == 0); DeepSeek-V3.2 indexes every layer."""
    types = f.layer_list("indexer_types", str)
    pattern = f.config.get("index_topk_pattern")
    if not types and isinstance(pattern, str) and pattern:
        if len(pattern) > MAX_LAYERS or set(pattern) - {"F", "S"}:
            raise ValueError(f"index_topk_pattern must be at most {MAX_LAYERS:,} of the letters F and S")
        types = ["full" if c == "F" else "shared" for c in pattern]
    if not types:
        freq, offset = max(f.get("index_topk_freq", 1), 1), f.get("index_skip_topk_offset", 2)
        types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(layers)]
    if len(types) != layers or set(types) - {"full", "shared"}:
        raise ValueError(f"indexer_types must list {layers} entries, each full or shared")
    return tuple(i for i, kind in enumerate(types) if kind == "shared")


def _with_mtp_note(a: Architecture, f: _Fields, counted: bool = True) -> Architecture:
    """Say what the checkpoint's multi-token-prediction layers (num_nextn_predict_layers) hold: inference engines
    load them only for speculative decoding (vLLM's MTP), so the estimate leaves them out. `counted`: their size
    follows DeepSeek-V3's layout (`mtp_parameters`); other layouts are only named."""
    layers = f.get("num_nextn_predict_layers", 0) or f.get("mtp_num_hidden_layers", 0)
    if not layers:
        return a
    size = f" ({mtp_parameters(a, layers):,} parameters)" if counted else ""
    note = (f"The checkpoint also holds {layers} multi-token-prediction layer{'s' if layers > 1 else ''}{size}, "
            "loaded only for speculative decoding (e.g. vLLM's MTP); not counted")
    return dataclasses.replace(a, mtp_layers=layers, notes=(*a.notes, note))


MAMBA_LAYER_TYPES = {"mamba", "linear_attention"}  # transformers remaps the legacy "mamba" (configuration_utils.py)
ATTENTION_LAYER_TYPES = {"attention", "full_attention"}


# The Mamba-2 fields of Granite 4, Bamba and Falcon-H1 (mamba_n_heads, mamba_d_state, ...) and their config classes'
# shared defaults
MAMBA_N_NAMES = dict(heads="mamba_n_heads", head_dim="mamba_d_head", state="mamba_d_state", groups="mamba_n_groups",
                     kernel="mamba_d_conv", proj_bias="mamba_proj_bias", conv_bias="mamba_conv_bias")
MAMBA_N_DEFAULTS = dict(state=256, groups=1, kernel=4, proj_bias=False, conv_bias=True)


def _mamba_fields(f: _Fields, names: dict[str, str], defaults: dict[str, Any], inner: int) -> dict:
    """The Mamba-2 mixer's fields, under the family's names (`names` maps ours to the config's) and with its config
    class defaults (`defaults`), which published configs rely on."""
    g = _Fields({**{names[k]: v for k, v in defaults.items()}, **f.config})
    heads = g.need(names["heads"])
    head_dim = inner // heads if g.config.get(names["head_dim"]) in (None, "auto") else g.need(names["head_dim"])
    if heads * head_dim != inner:
        raise ValueError(f"{names['heads']} ({heads}) x {names['head_dim']} ({head_dim}) must equal the Mamba width "
                         f"({inner})")
    return dict(mamba_inner=inner, mamba_heads=heads, mamba_head_dim=head_dim, mamba_state_size=g.need(names["state"]),
                mamba_groups=g.need(names["groups"]), mamba_conv_kernel=g.need(names["kernel"]),
                mamba_proj_bias=g.flag(names["proj_bias"], defaults["proj_bias"]),
                mamba_conv_bias=g.flag(names["conv_bias"], defaults["conv_bias"]))


def _mamba_note(mamba: int, layers: int, extra: str = "") -> str:
    return (f"{mamba} of {layers} layers have a Mamba-2 mixer, which keeps a fixed state per sequence (conv + SSM "
            f"state, vLLM's mamba2_state_shape) instead of a KV cache{extra}. Activations: each layer's own mixer and "
            "MLP, a Mamba mixer's as mamba_ssm's fused kernels keep them (not traced)")


def _ssm_cache_bytes(f: _Fields, *names: str) -> int:
    """4 when the config asks for an fp32 SSM state cache (vLLM follows mamba_ssm_cache_dtype), else 2."""
    return 4 if any(f.config.get(name) == "float32" for name in names) else 2


NEMOTRON_H_BLOCKS = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
NEMOTRON_H_DEFAULTS = {"head_dim": 128, "num_attention_heads": 32, "num_key_value_heads": 8, "mamba_num_heads": 128,
                       "mamba_head_dim": 64, "vocab_size": 131_072, "hidden_size": 4096}  # NemotronHConfig defaults


def _nemotron_h(f: _Fields, name: str, model_type: str) -> Architecture:
    # NVIDIA Nemotron-H and Nemotron 3 (transformers models/nemotron_h): one mixer per block, named by
    # hybrid_override_pattern (M Mamba-2, * attention, E MoE, - MLP) or layers_block_type; one RMSNorm per block;
    # squared-ReLU MLPs (up, down) and experts with a sigmoid fp32 router and one shared expert, optionally run in a
    # latent space (moe_latent_size). num_hidden_layers is ignored: the pattern's length is the depth.
    pattern = f.config.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        if len(pattern) > MAX_LAYERS or set(pattern) - set(NEMOTRON_H_BLOCKS):
            raise ValueError(f"hybrid_override_pattern must be at most {MAX_LAYERS:,} of the letters M, E, * and -")
        blocks = [NEMOTRON_H_BLOCKS[c] for c in pattern]
    else:
        blocks = [{"mamba": "linear_attention", "attention": "full_attention"}.get(b, b)
                  for b in f.layer_list("layers_block_type", str) or f.layer_list("layer_types", str)]
        if not blocks or set(blocks) - set(NEMOTRON_H_BLOCKS.values()):
            raise ValueError("config.json needs hybrid_override_pattern (or layers_block_type with the block types "
                             "linear_attention, full_attention, moe, mlp)")
    layers = len(blocks)
    f = _Fields({**NEMOTRON_H_DEFAULTS, **f.config, "num_hidden_layers": layers})
    base = _common(f, name, model_type)
    of = {kind: tuple(i for i, b in enumerate(blocks) if b == kind) for kind in NEMOTRON_H_BLOCKS.values()}
    heads, head_dim = f.need("mamba_num_heads"), f.need("mamba_head_dim")
    mamba = _mamba_fields(f, dict(heads="mamba_num_heads", head_dim="mamba_head_dim", state="ssm_state_size",
                                  groups="n_groups", kernel="conv_kernel", proj_bias="use_bias",
                                  conv_bias="use_conv_bias"),
                          dict(state=128, groups=8, kernel=4, proj_bias=False, conv_bias=True), heads * head_dim)
    moe = {}
    if of["moe"]:
        moe = dict(num_experts=f.need("n_routed_experts", "num_local_experts"),
                   experts_per_token=f.need("num_experts_per_tok"),
                   moe_intermediate_size=f.need("moe_intermediate_size"),
                   shared_expert_intermediate_size=f.get("moe_shared_expert_intermediate_size", 0)
                   if f.get("n_shared_experts", 1) else 0,
                   moe_layers=of["moe"], moe_latent_size=f.get("moe_latent_size", 0), router_fp32=True,
                   lora_reaches_experts=False)  # NemotronHExperts / TopkRouter: custom modules peft leaves alone
    a = Architecture(**base, intermediate_size=f.get("intermediate_size", 0) if not of["mlp"] else
                     f.need("intermediate_size"), gated_mlp=False, mlp_bias=f.flag("mlp_bias", False),
                     qkv_bias=f.flag("attention_bias", False), o_bias=f.flag("attention_bias", False),
                     norms_per_layer=1, tie_word_embeddings=f.flag("tie_word_embeddings", False),
                     mamba_layers=of["linear_attention"], **mamba,
                     attention_free_layers=tuple(i for i, b in enumerate(blocks) if b != "full_attention"),
                     mlp_free_layers=tuple(i for i, b in enumerate(blocks)
                                           if b in ("linear_attention", "full_attention")),
                     ssm_state_bytes=_ssm_cache_bytes(f, "mamba_ssm_cache_dtype"), **moe,
                     notes=(_mamba_note(len(of["linear_attention"]), layers,
                                        f"; only the {len(of['full_attention'])} attention blocks keep a KV cache"),))
    return _with_mtp_note(a, f, counted=False)


def _granite_hybrid(f: _Fields, name: str, model_type: str) -> Architecture:
    # IBM Granite 4 hybrid (transformers models/granitemoehybrid): layer_types "mamba" / "attention", each layer with
    # a Mamba-2 mixer or attention, then a gated shared MLP (shared_intermediate_size) plus, when num_local_experts >
    # 0, routed gated experts of intermediate_size (GraniteMoeHybridDecoderLayer); two RMSNorms per layer
    defaults = {"num_local_experts": 8, "num_experts_per_tok": 2, "shared_intermediate_size": 1024,
                "mamba_expand": 2, "mamba_n_heads": 128}  # GraniteMoeHybridConfig class defaults
    f = _Fields({**defaults, **f.config})
    base = _common(f, name, model_type)
    layers = base["num_layers"]
    types = f.layer_list("layer_types", str) or f.layer_list("layers_block_type", str) or ["mamba"] * layers
    if len(types) != layers or set(types) - MAMBA_LAYER_TYPES - ATTENTION_LAYER_TYPES:
        raise ValueError(f"layer_types must list {layers} entries, each mamba or attention")
    mamba_layers = tuple(i for i, t in enumerate(types) if t in MAMBA_LAYER_TYPES)
    mamba = _mamba_fields(f, MAMBA_N_NAMES, MAMBA_N_DEFAULTS, f.need("mamba_expand") * base["hidden_size"])
    experts, shared = f.get("num_local_experts", 0), f.need("shared_intermediate_size")
    moe = dict(num_experts=experts, experts_per_token=f.need("num_experts_per_tok"),
               moe_intermediate_size=f.need("intermediate_size"), shared_expert_intermediate_size=shared,
               moe_layers=tuple(range(layers)), lora_reaches_experts=False) if experts else {}  # not peft-converted
    return Architecture(**base, intermediate_size=0 if experts else shared,
                        qkv_bias=f.flag("attention_bias", False), o_bias=f.flag("attention_bias", False),
                        tie_word_embeddings=f.flag("tie_word_embeddings", False), mamba_layers=mamba_layers, **mamba,
                        attention_free_layers=mamba_layers,
                        ssm_state_bytes=_ssm_cache_bytes(f, "mamba_ssm_cache_dtype"), **moe,
                        notes=(_mamba_note(len(mamba_layers), layers),))


def _bamba(f: _Fields, name: str, model_type: str) -> Architecture:
    # IBM Bamba (transformers models/bamba): Mamba-2 mixers except on attn_layer_indices, each layer then a gated MLP of
    # intermediate_size; two RMSNorms per layer (input_layernorm, pre_ff_layernorm)
    g = _Fields({"mamba_n_heads": 128, "mamba_expand": 2, **f.config})  # BambaConfig class defaults
    base = _common(g, name, model_type)
    layers = base["num_layers"]
    attention = set(g.layer_list("attn_layer_indices", int))
    mamba_layers = tuple(i for i in range(layers) if i not in attention)
    mamba = _mamba_fields(g, MAMBA_N_NAMES, MAMBA_N_DEFAULTS, g.need("mamba_expand") * base["hidden_size"])
    return Architecture(**base, intermediate_size=g.need("intermediate_size"), qkv_bias=g.flag("attention_bias", False),
                        o_bias=g.flag("attention_bias", False), mlp_bias=g.flag("mlp_bias", False),
                        tie_word_embeddings=g.flag("tie_word_embeddings", False), mamba_layers=mamba_layers, **mamba,
                        attention_free_layers=mamba_layers,
                        ssm_state_bytes=_ssm_cache_bytes(g, "mamba_ssm_cache_dtype"),
                        notes=(_mamba_note(len(mamba_layers), layers),))


def _jamba(f: _Fields, name: str, model_type: str) -> Architecture:
    # AI21 Jamba (transformers models/jamba): Mamba (1) mixers except every attn_layer_period-th layer from
    # attn_layer_offset; MoE (gated experts, router without bias) every expert_layer_period-th layer from
    # expert_layer_offset, gated dense MLPs elsewhere; two RMSNorms per layer; mamba_dt_rank "auto" = ceil(h / 16)
    g = _Fields({"num_experts": 16, "num_experts_per_tok": 2, "expert_layer_period": 2, "expert_layer_offset": 1,
                 "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4,
                 "mamba_expand": 2, **f.config})  # JambaConfig class defaults
    base = _common(g, name, model_type)
    layers, h = base["num_layers"], base["hidden_size"]
    attn_period, expert_period = g.need("attn_layer_period"), g.need("expert_layer_period")
    attn_offset, expert_offset = g.get("attn_layer_offset", 4), g.get("expert_layer_offset", 1)
    mamba_layers = tuple(i for i in range(layers) if i % attn_period != attn_offset)
    experts = g.need("num_experts")
    moe_layers = tuple(i for i in range(layers) if i % expert_period == expert_offset) if experts > 1 else ()
    rank = -(-h // 16) if g.config.get("mamba_dt_rank") in (None, "auto") else g.need("mamba_dt_rank")
    return Architecture(**base, intermediate_size=g.need("intermediate_size"),
                        tie_word_embeddings=g.flag("tie_word_embeddings", False), mamba_layers=mamba_layers,
                        mamba_version=1, mamba_inner=g.need("mamba_expand") * h,
                        mamba_state_size=g.need("mamba_d_state"), mamba_conv_kernel=g.need("mamba_d_conv"),
                        mamba_dt_rank=rank, mamba_proj_bias=g.flag("mamba_proj_bias", False),
                        mamba_conv_bias=g.flag("mamba_conv_bias", True), attention_free_layers=mamba_layers,
                        ssm_state_bytes=_ssm_cache_bytes(g, "mamba_ssm_cache_dtype"),
                        **(dict(num_experts=experts, experts_per_token=g.need("num_experts_per_tok"),
                                moe_intermediate_size=g.need("intermediate_size"), moe_layers=moe_layers,
                                # JambaExperts' 3-D parameters: jamba is not among peft's converted MoE types
                                # (validation/FINDINGS.md 44), so all-linear leaves them alone
                                lora_reaches_experts=False)
                           if moe_layers else {}),
                        notes=(f"{len(mamba_layers)} of {layers} layers have a Mamba mixer, which keeps a fixed state "
                               "per sequence (conv + SSM state, vLLM's mamba1_state_shape) instead of a KV cache. "
                               "Activations: a Mamba mixer's as mamba_ssm's fused kernels keep them (not traced)",))


def _falcon_h1(f: _Fields, name: str, model_type: str) -> Architecture:
    # TII Falcon-H1 (transformers models/falcon_h1): every layer runs attention and a Mamba-2 mixer side by side on the
    # same normed input, then a gated MLP; the Mamba width is mamba_d_ssm (class default 1024) or mamba_expand x h;
    # its gated RMSNorm only with mamba_rms_norm (default off)
    defaults = {"mamba_d_ssm": 1024, "mamba_n_heads": 128, "mamba_expand": 2}  # FalconH1Config class defaults
    g = _Fields({**defaults, **f.config})
    base = _common(g, name, model_type)
    inner = g.need("mamba_d_ssm") if g.config.get("mamba_d_ssm") is not None else g.need("mamba_expand") * base[
        "hidden_size"]
    mamba = _mamba_fields(g, MAMBA_N_NAMES, MAMBA_N_DEFAULTS, inner)
    mamba["mamba_proj_bias"] = g.flag("projectors_bias", False)  # FalconH1Mixer: in_proj mamba_proj_bias, out_proj
    if g.flag("mamba_proj_bias", False) != mamba["mamba_proj_bias"]:  # projectors_bias; equal in published configs
        raise ValueError("Falcon-H1 configs with mamba_proj_bias != projectors_bias are not supported")
    layers = base["num_layers"]
    return Architecture(**base, intermediate_size=g.need("intermediate_size"), qkv_bias=g.flag("attention_bias", False),
                        o_bias=g.flag("attention_bias", False), mlp_bias=g.flag("mlp_bias", False),
                        tie_word_embeddings=g.flag("tie_word_embeddings", False), mamba_layers=tuple(range(layers)),
                        mamba_norm=g.flag("mamba_rms_norm", False), **mamba,
                        ssm_state_bytes=_ssm_cache_bytes(g, "mamba_ssm_cache_dtype"),
                        notes=(_mamba_note(layers, layers, ", next to each layer's attention (which keeps a KV "
                                                            "cache)"),))


def _llama4(f: _Fields, name: str, model_type: str) -> Architecture:
    # Llama 4 text model (transformers models/llama4): MoE layers (moe_layers, else every interleave_moe_layer_step-th)
    # with top-k routed gated experts of intermediate_size, one shared expert of the same width and a router without
    # bias; the other layers a dense MLP of intermediate_size_mlp; chunked local attention of attention_chunk_size on
    # the layers that use RoPE (all but every no_rope_layer_interval-th), global attention on the others; q/k L2 norms
    # have no weights. The vision tower of Llama4ForConditionalGeneration is separate.
    config = f.config.get("text_config", f.config)
    if not isinstance(config, Mapping):
        raise ValueError("text_config must be a JSON object")
    t = _Fields({"interleave_moe_layer_step": 1, "attention_chunk_size": 8192, "no_rope_layer_interval": 4,
                 "intermediate_size": 8192, "intermediate_size_mlp": 16384, **config})  # Llama4TextConfig defaults
    base = _common(t, name, model_type)
    layers = base["num_layers"]
    step = t.need("interleave_moe_layer_step")
    moe_layers = (tuple(t.layer_list("moe_layers", int)) if t.config.get("moe_layers") is not None
                  else tuple(range(step - 1, layers, step)))
    interval = t.need("no_rope_layer_interval")
    rope = [bool(x) for x in t.layer_list("no_rope_layers", int)] or [(i + 1) % interval != 0 for i in range(layers)]
    if len(rope) != layers:
        raise ValueError(f"no_rope_layers has {len(rope)} entries but num_hidden_layers is {layers}")
    chunk = t.get("attention_chunk_size", 0) if t.config.get("attention_chunk_size") is not None else 0
    chunked = tuple(i for i in range(layers) if rope[i]) if chunk else ()
    experts = t.need("num_local_experts")
    return Architecture(**base, intermediate_size=t.need("intermediate_size_mlp"),
                        qkv_bias=t.flag("attention_bias", False), o_bias=t.flag("attention_bias", False),
                        tie_word_embeddings=t.flag("tie_word_embeddings", False), num_experts=experts,
                        experts_per_token=t.need("num_experts_per_tok"),
                        moe_intermediate_size=t.need("intermediate_size"),
                        shared_expert_intermediate_size=t.need("intermediate_size"), moe_layers=moe_layers,
                        sliding_window=chunk if chunked else 0, sliding_layers=chunked, chunked_attention=bool(chunked))


def _ernie45(f: _Fields, name: str, model_type: str) -> Architecture:
    # Baidu ERNIE 4.5 (transformers models/ernie4_5, ernie4_5_moe): a Llama decoder whose q/k/v/o, MLP and lm_head
    # carry biases when use_bias; the MoE variant routes layers (i + 1) % moe_layer_interval == 0 between
    # moe_layer_start_index and moe_layer_end_index through moe_num_experts gated experts (moe_k per token) with a
    # fp32 router, a learned e_score_correction_bias (a parameter here) and moe_num_shared_experts shared experts
    moe_type = model_type == "ernie4_5_moe"
    defaults = ({"num_key_value_heads": 4, "moe_num_experts": 64, "moe_k": 6, "moe_intermediate_size": 1536,
                 "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_interval": 1} if moe_type
                else {"num_key_value_heads": 2, "head_dim": 128})  # the config classes' defaults
    g = _Fields({**defaults, **f.config})
    base = _common(g, name, model_type)
    layers, bias = base["num_layers"], g.flag("use_bias", False)
    moe = {}
    if moe_type and g.get("moe_num_experts", 0):
        end = g.config.get("moe_layer_end_index")
        last = layers - 1 if end in (None, -1) else g.integer("moe_layer_end_index")
        first, step = g.get("moe_layer_start_index", 1), g.need("moe_layer_interval")
        width = g.need("moe_intermediate_size")
        moe = dict(num_experts=g.need("moe_num_experts"), experts_per_token=g.need("moe_k"),
                   moe_intermediate_size=width,
                   shared_expert_intermediate_size=width * g.get("moe_num_shared_experts", 0),
                   moe_layers=tuple(i for i in range(layers) if (i + 1) % step == 0 and first <= i <= last),
                   router_bias=True, router_fp32=True)
    return Architecture(**base, intermediate_size=g.need("intermediate_size"), qkv_bias=bias, o_bias=bias,
                        mlp_bias=bias, lm_head_bias=bias and moe_type,  # Ernie4_5ForCausalLM: lm_head bias=False
                        tie_word_embeddings=g.flag("tie_word_embeddings", True), **moe)


def _gpt_oss(f: _Fields, name: str, model_type: str) -> Architecture:
    # GptOss: biased q/k/v/o, per-head sinks, router with bias, experts with biases, alternating window
    base = _common(f, name, model_type)
    sliding_layers, window = _window_layers(f, base["num_layers"], lambda i: (i + 1) % 2 == 1)
    return Architecture(**base, intermediate_size=0, qkv_bias=f.flag("attention_bias", True),
                        o_bias=f.flag("attention_bias", True), attention_sinks=True,
                        tie_word_embeddings=f.flag("tie_word_embeddings", False),
                        num_experts=f.need("num_local_experts"),
                        experts_per_token=f.need("num_experts_per_tok", "experts_per_token"),
                        moe_intermediate_size=f.need("intermediate_size"), router_bias=True, expert_bias=True,
                        moe_layers=tuple(range(base["num_layers"])), sliding_window=window,
                        sliding_layers=sliding_layers, fp32_norm_weight=True, expert_saved_tensors=7,
                        lora_reaches_experts=False)


def _hidden_and_heads(f: _Fields, hidden_names: tuple[str, ...], head_names: tuple[str, ...]) -> tuple[int, int]:
    """Width and head count of a family without `head_dim`, which must divide evenly."""
    hidden, heads = f.need(*hidden_names), f.need(*head_names)
    if hidden % heads:
        raise ValueError(f"{hidden_names[-1]} ({hidden}) is not divisible by {head_names[-1]} ({heads})")
    return hidden, heads


def _gpt2(f: _Fields, name: str, model_type: str) -> Architecture:
    # GPT2: Conv1D c_attn (h -> 3h) and c_proj with biases, GeLU MLP of n_inner (default 4h), LayerNorms, tied
    hidden, heads = _hidden_and_heads(f, ("n_embd", "hidden_size"), ("n_head", "num_attention_heads"))
    positions = f.need("n_positions", "max_position_embeddings")
    return Architecture(name=name, model_type=model_type, hidden_size=hidden, num_layers=f.need("n_layer"),
                        vocab_size=f.need("vocab_size"), num_heads=heads, num_kv_heads=heads,
                        head_dim=hidden // heads, intermediate_size=f.get("n_inner", 4 * hidden), gated_mlp=False,
                        qkv_bias=True, o_bias=True, mlp_bias=True, norm_bias=True,
                        tie_word_embeddings=f.flag("tie_word_embeddings", True), learned_positions=positions,
                        max_position_embeddings=positions)


def _falcon(f: _Fields, name: str, model_type: str) -> Architecture:
    # Falcon: fused qkv of (2 n_kv + n_h) d (new arch), h + 2d (multi_query) or 3h; GeLU MLP; LayerNorm;
    # 1 norm per layer with parallel attention (7B), 2 (ln_attn, ln_mlp) in the new architecture (40B)
    hidden, heads = _hidden_and_heads(f, ("n_embd", "hidden_size"), ("n_head", "num_attention_heads"))
    new_arch = f.flag("new_decoder_architecture", False)
    if new_arch:
        kv_heads = f.need("num_kv_heads", "n_head_kv")
        norms = f.get("num_ln_in_parallel_attn", 2) or 2
    else:
        kv_heads = 1 if f.flag("multi_query", True) else heads
        norms = 1 if f.flag("parallel_attn", True) else 2
    bias = f.flag("bias", False)
    return Architecture(name=name, model_type=model_type, hidden_size=hidden,
                        num_layers=f.need("num_hidden_layers", "n_layer"), vocab_size=f.need("vocab_size"),
                        num_heads=heads, num_kv_heads=kv_heads, head_dim=hidden // heads,
                        intermediate_size=f.get("ffn_hidden_size", 4 * hidden), gated_mlp=False, qkv_bias=bias,
                        o_bias=bias, mlp_bias=bias, norms_per_layer=norms, norm_bias=True,
                        tie_word_embeddings=f.flag("tie_word_embeddings", True),
                        max_position_embeddings=f.get("max_position_embeddings", 2048))


def _phi(f: _Fields, name: str, model_type: str) -> Architecture:
    # Phi (Phi-1/1.5/2): biased q/k/v/dense, GeLU MLP fc1/fc2 with biases, one LayerNorm per layer (parallel
    # attention and MLP), final LayerNorm, untied lm_head with a bias (modeling_phi.py)
    base = _common(f, name, model_type)
    head_dim = base["head_dim"]
    return Architecture(**base, intermediate_size=f.need("intermediate_size"), gated_mlp=False, qkv_bias=True,
                        o_bias=True, mlp_bias=True, norms_per_layer=1, norm_bias=True,
                        qk_norm_params=2 * 2 * head_dim if f.flag("qk_layernorm", False) else 0,
                        tie_word_embeddings=f.flag("tie_word_embeddings", False), lm_head_bias=True)


def _opt(f: _Fields, name: str, model_type: str) -> Architecture:
    # OPT: learned positions with an offset of 2, biased projections, ReLU MLP of ffn_dim, 2 LayerNorms per
    # layer and a final one, lm_head tied (modeling_opt.py). project_in/out (word_embed_proj_dim != hidden)
    # are not modelled: the reader refuses such configs (OPT-350m).
    hidden = f.need("hidden_size")
    if f.get("word_embed_proj_dim", hidden) != hidden:
        raise ValueError("OPT configs with word_embed_proj_dim != hidden_size (OPT-350m) are not supported")
    _, heads = _hidden_and_heads(f, ("hidden_size",), ("num_attention_heads",))
    positions = f.need("max_position_embeddings")
    return Architecture(name=name, model_type=model_type, hidden_size=hidden, num_layers=f.need("num_hidden_layers"),
                        vocab_size=f.need("vocab_size"), num_heads=heads, num_kv_heads=heads, head_dim=hidden // heads,
                        intermediate_size=f.need("ffn_dim"), gated_mlp=False,
                        qkv_bias=f.flag("enable_bias", True), o_bias=f.flag("enable_bias", True),
                        mlp_bias=f.flag("enable_bias", True), norm_bias=True,
                        tie_word_embeddings=f.flag("tie_word_embeddings", True), learned_positions=positions + 2,
                        max_position_embeddings=positions)


NESTED_TEXT_CONFIGS = ("text_config", "llm_config", "language_config")  # multimodal models' language model
# Language models of multimodal families that are another family's decoder (transformers models/qwen3_vl,
# qwen3_vl_moe, qwen2_5_vl, qwen2_vl: Qwen3 attention with q/k norms, Qwen3-MoE experts, Qwen2 q/k/v biases)
NESTED_TEXT_TYPES = {"qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe", "qwen2_5_vl_text": "qwen2",
                     "qwen2_vl_text": "qwen2"}
# Signs of layers that are not attention + MLP (state-space, linear attention), or of a layer plan the standard
# fields do not describe (Llama 4's interleaved MoE layers with a separate dense width): a standard decoder would
# misread them, so the generic reader refuses them by name
NON_STANDARD_LAYER_FIELDS = ("hybrid_override_pattern", "layers_block_type", "attn_layer_indices", "mamba_d_state",
                             "ssm_state_size", "linear_num_key_heads", "linear_key_head_dim", "full_attention_interval",
                             "interleave_moe_layer_step", "intermediate_size_mlp")
STANDARD_LAYER_TYPES = {"full_attention", "sliding_attention"}


def _generic(f: _Fields, name: str, model_type: str) -> Architecture:
    """Any decoder-only config with the standard field names, for a model_type without a reader of its own: a
    Llama-like decoder (gated MLP, RMSNorm, grouped-query attention), with routed (and shared) experts when the
    config names them, dense-first layers, and `layer_types` sliding windows. The language model of a multimodal
    config is read from its nested text config (its towers are counted apart: `_with_towers`)."""
    nested = next((key for key in NESTED_TEXT_CONFIGS if isinstance(f.config.get(key), Mapping)), "")
    text = _Fields(f.config[nested]) if nested else f
    inner = text.config.get("model_type")
    inner = NESTED_TEXT_TYPES.get(inner, inner) if isinstance(inner, str) else inner
    if nested and isinstance(inner, str) and inner in READERS:  # e.g. Mistral 3's text_config is a "mistral"
        if "tie_word_embeddings" not in text.config and "tie_word_embeddings" in f.config:  # Qwen3-VL keeps it
            text = _Fields({**text.config, "tie_word_embeddings": f.config["tie_word_embeddings"]})  # at the top
        a = READERS[inner](text, name, inner)
        return dataclasses.replace(a, notes=(f"The language model of {model_type!r} is read from its {nested} "
                                             f"({inner!r})", *a.notes))
    found = [key for key in NON_STANDARD_LAYER_FIELDS if key in text.config]
    types = set(text.layer_list("layer_types", str))
    if found or types - STANDARD_LAYER_TYPES:
        shown = found[0] if found else sorted(types - STANDARD_LAYER_TYPES)[0]
        raise ValueError(f"model_type {model_type!r} has layers the estimator cannot read yet ({shown}: not a "
                         "standard attention + MLP decoder); estimate it from its parameter count instead")
    if text.config.get("kv_lora_rank"):  # multi-head latent attention: DeepSeek's reader, noted as such
        a = _deepseek(text, name, model_type)
        return dataclasses.replace(a, notes=(f"Generic reader: model_type {model_type!r} has no reader of its own; "
                                             "read as DeepSeek-V3 (multi-head latent attention"
                                             + (", routed experts" if a.num_experts else "") + ") from its fields"
                                             + (f" in {nested}" if nested else ""), *a.notes))
    try:
        base = _common(text, name, model_type)
        experts = next((text.integer(key, low=1) for key in ("num_experts", "num_local_experts", "n_routed_experts")
                        if text.config.get(key)), 0)
        moe = _generic_moe(text, base["num_layers"], experts) if experts else {}
        dense = base["num_layers"] - len(moe.get("moe_layers", ()))
        width = text.need("intermediate_size") if dense else text.get("intermediate_size", 0)
    except ValueError as err:
        raise ValueError(f"{err}; model_type {model_type!r} has no reader of its own, and the generic reader needs "
                         "hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and vocab_size "
                         "(and num_experts_per_tok with experts); or estimate it from its parameter count") from None
    sliding_layers, window = _window_layers(text, base["num_layers"], lambda i: False)
    notes = (f"Generic reader: model_type {model_type!r} has no reader of its own; standard decoder assumed (gated "
             "MLP, RMSNorm, grouped-query attention" + (", routed experts" if experts else "") + ") from its "
             "standard fields" + (f"; the language model is read from {nested}" if nested else ""),)
    a = Architecture(**base, intermediate_size=width, qkv_bias=text.flag("attention_bias", False),
                     o_bias=text.flag("attention_bias", False), mlp_bias=text.flag("mlp_bias", False),
                     tie_word_embeddings=text.flag("tie_word_embeddings", False), sliding_window=window,
                     sliding_layers=sliding_layers, notes=notes, **moe)
    return _with_mtp_note(a, text)


def _generic_moe(text: _Fields, num_layers: int, experts: int) -> dict:
    """Routed experts of a generic config: every layer from first_k_dense_replace on (DeepSeek's field), except
    mlp_only_layers, every decoder_sparse_step-th (Qwen's rule, i+1 divisible), or every moe_layer_freq-th
    (DeepSeek's rule, i divisible); shared experts from shared_expert_intermediate_size or n_shared_experts."""
    first, step = text.get("first_k_dense_replace", 0), text.get("decoder_sparse_step", 1) or 1
    freq, dense_only = text.get("moe_layer_freq", 1) or 1, set(text.layer_list("mlp_only_layers", int))
    layers = tuple(i for i in range(num_layers) if i >= first and i not in dense_only and (i + 1) % step == 0
                   and i % freq == 0)
    width = text.get("moe_intermediate_size", 0) or text.need("intermediate_size")
    shared = text.get("shared_expert_intermediate_size", 0) or text.get("n_shared_experts", 0) * width
    return dict(num_experts=experts, experts_per_token=text.need("num_experts_per_tok", "experts_per_token"),
                moe_intermediate_size=width, shared_expert_intermediate_size=shared, moe_layers=layers)


READERS: dict[str, Callable[[_Fields, str, str], Architecture]] = {
    # Llama-shaped decoders
    "llama": _llama, "mistral": _llama, "granite": _llama, "yi": _llama, "phi3": _llama, "smollm3": _smollm3,
    "olmo2": _olmo2, "olmo3": _olmo3, "seed_oss": _seed_oss, "exaone4": _exaone4, "hunyuan_v1_dense": _hunyuan_dense,
    "cohere": _cohere, "cohere2": _cohere, "ernie4_5": _ernie45,
    # Qwen
    "qwen": _qwen1, "qwen2": _qwen2, "qwen2_vl": _qwen2_vl, "qwen2_5_vl": _qwen2_vl, "qwen3": _qwen3,
    "qwen2_moe": _qwen_moe, "qwen3_moe": _qwen_moe, "qwen3_next": _qwen3_next, "qwen3_5_text": _qwen3_next,
    "qwen3_5_moe_text": _qwen3_next,
    # Gemma
    "gemma": _gemma, "gemma2": _gemma2, "gemma3": _gemma3, "gemma3_text": _gemma3, "gemma3n": _gemma3n,
    "gemma3n_text": _gemma3n, "gemma4": _gemma4, "gemma4_text": _gemma4,
    # mixtures of experts and latent attention
    "mixtral": _mixtral, "minimax_m2": _minimax_m2, "deepseek_v2": _deepseek, "deepseek_v3": _deepseek,
    "deepseek_v32": _deepseek, "gpt_oss": _gpt_oss, "ernie4_5_moe": _ernie45, "llama4": _llama4,
    "llama4_text": _llama4,
    # Mamba hybrids
    "nemotron_h": _nemotron_h, "granitemoehybrid": _granite_hybrid, "bamba": _bamba, "falcon_h1": _falcon_h1,
    "jamba": _jamba,
    # LayerNorm / GeLU families
    "gpt2": _gpt2, "falcon": _falcon, "RefinedWebModel": _falcon, "RefinedWeb": _falcon, "phi": _phi, "opt": _opt,
    "starcoder2": _starcoder2, "nemotron": _nemotron, "gpt_neox": _gpt_neox,
}
SUPPORTED_MODEL_TYPES = tuple(sorted(READERS))


def architecture_from_config(config: Config, name: str = "") -> Architecture:
    """Read an `Architecture` from a parsed `config.json` (see `parse_config_text`).

    A model_type without a reader of its own is read by the generic reader (`_generic`). Raises ValueError naming
    the problem: a missing or malformed field, or layers the estimator cannot read.
    """
    if not isinstance(config, Mapping):
        raise ValueError("config.json must be a JSON object")
    model_type = config.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ValueError(f"model_type must be a string, got {_shown(model_type)}")
    if not model_type:
        raise ValueError("config.json is missing model_type")
    if len(model_type) > 100:
        raise ValueError(f"model_type is not a model type name: {_shown(model_type)}")
    reader = READERS.get(model_type, _generic)
    name = printable_text(name, MAX_MODEL_NAME_CHARS) or _default_name(config, model_type)
    a = _with_towers(reader(_Fields(config), name, model_type), config)
    checkpoint = checkpoint_format(config)
    return dataclasses.replace(a, checkpoint=checkpoint) if checkpoint is not None else a


def _with_towers(a: Architecture, config: Config) -> Architecture:
    """The language model plus its vision and audio towers (estimator/vision.py), said in the assumptions."""
    tower = vision_tower(config)
    if tower is None:
        return a
    if not tower.parameters and not tower.audio_parameters:
        return dataclasses.replace(a, notes=(*a.notes, *tower.notes))
    parts = [f"a vision tower of {tower.parameters:,} parameters"] if tower.parameters else []
    parts += [f"an audio tower of {tower.audio_parameters:,}"] if tower.audio_parameters else []
    try:
        size = image_tokens(tower, 1024, 1024) if tower.token_rule else 0
    except ValueError:  # a tower whose processor numbers the config leaves unusable: say nothing about images
        size = 0
    note = (f"Multimodal ({tower.family}): {' and '.join(parts)} (encoder + projector, transformers' modules), "
            "loaded with the language model in 16-bit" + (f"; a 1024 x 1024 image takes {size:,} tokens of the "
                                                            "context" if size else ""))
    return dataclasses.replace(a, vision_parameters=tower.parameters, audio_parameters=tower.audio_parameters,
                               vision_tower=tower if size else None,
                               notes=(*a.notes, note, *(f"Towers: {line}" for line in tower.notes)))


def _default_name(config: Config, model_type: str) -> str:
    path = config.get("_name_or_path")
    return (printable_text(path, MAX_MODEL_NAME_CHARS) if isinstance(path, str) else "") or f"custom {model_type}"
