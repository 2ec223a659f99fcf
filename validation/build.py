"""Build a Hugging Face causal LM from a config dict on the meta device and materialise it as fake tensors.

Nothing is downloaded: the config is a plain dict (a catalog entry's `config` or a user's `config.json`),
the weights are FakeTensors (shapes and dtypes, no memory, no compute). peft's LoRA wrapping happens on
the meta device, because peft's `.to(dtype)` cannot swap FakeTensor parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

# peft target names for the estimator's presets; fused projections (Phi-3) have their own module names
LORA_PRESETS = {
    "q,v": ("q_proj", "v_proj"),
    "attention": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "all-linear": "all-linear",
}


def hf_config(config: Mapping, num_layers: int | None = None):
    """A transformers config object from a config.json dict, optionally cut to `num_layers` layers
    (per-layer lists such as `layer_types` are cut too)."""
    from transformers import AutoConfig

    fields = {k: v for k, v in dict(config).items() if not k.startswith("_") and k not in ("architectures",)}
    model_type = fields.pop("model_type")
    if model_type in ("RefinedWebModel", "RefinedWeb"):
        model_type = "falcon"
    if num_layers is not None:
        fields["num_hidden_layers"] = num_layers
        if "n_layer" in fields:  # GPT-2 and Falcon-7B name it n_layer
            fields["n_layer"] = num_layers
        for key in ("layer_types", "mlp_layer_types"):
            if isinstance(fields.get(key), list):
                fields[key] = fields[key][:num_layers]
    fields.pop("quantization_config", None)  # fp8 / mxfp4 checkpoints: trace the bf16 model
    fields.pop("torch_dtype", None)
    fields.pop("dtype", None)
    return AutoConfig.for_model(model_type, **fields)


# fused q/k/v projections: Phi-3 qkv_proj, Falcon query_key_value (nn.Linear); GPT-2 c_attn is a Conv1D
FUSED_QKV_MODULES = ("qkv_proj", "query_key_value", "c_attn")
MLA_MODULES = {"q_proj": ("q_a_proj", "q_b_proj"), "k_proj": ("kv_a_proj_with_mqa",), "v_proj": ("kv_b_proj",)}


def lora_target_modules(model: torch.nn.Module, targets: str) -> object:
    """peft `target_modules` for an estimator preset ('q,v', 'attention', 'all-linear') or a comma list.
    Fused projections (Phi-3's qkv_proj / gate_up_proj) are adapted when any of their parts is named."""
    preset = LORA_PRESETS.get(targets.replace(" ", ""))
    if preset == "all-linear":
        return "all-linear"
    names = preset or tuple(n if n.endswith("_proj") else f"{n}_proj" for n in targets.split(",") if n)
    from transformers.pytorch_utils import Conv1D

    present = {name.rsplit(".", 1)[-1] for name, m in model.named_modules() if isinstance(m, (torch.nn.Linear, Conv1D))}
    chosen = [n for n in names if n in present]
    for fused in FUSED_QKV_MODULES:  # one adapter on the fused module when any of q, k, v is named
        if any(n in ("q_proj", "k_proj", "v_proj") for n in names) and fused in present:
            chosen.append(fused)
    if any(n in ("gate_proj", "up_proj") for n in names) and "gate_up_proj" in present:
        chosen.append("gate_up_proj")
    for name, mla in MLA_MODULES.items():  # DeepSeek MLA: the estimator's roles for q, k and v
        if name in names:
            chosen += [m for m in mla if m in present]
    if not chosen:
        raise ValueError(f"no Linear module of this model matches lora_targets {targets!r}")
    return chosen


def build_model(config: Mapping, *, fake_mode: FakeTensorMode, dtype: str = "bf16", attn_impl: str = "sdpa",
                num_layers: int | None = None, lora_rank: int = 0, lora_targets: str = "q,v",
                lora_dtype: str = "fp32", train: bool = False) -> torch.nn.Module:
    """The model of `config` with FakeTensor weights (random init skipped), in train or eval mode.

    lora_rank > 0 wraps it with peft LoRA (alpha = 2r, no dropout); lora_dtype 'fp32' is peft's default
    (`autocast_adapter_dtype=True`: adapters in fp32 on a 16-bit base), 'base' keeps them in `dtype`.
    """
    from transformers import AutoModelForCausalLM

    cfg = hf_config(config, num_layers)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=DTYPES[dtype], attn_implementation=attn_impl)
        if lora_rank:
            from peft import LoraConfig, get_peft_model

            lora = LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, lora_dropout=0.0,
                              target_modules=lora_target_modules(model, lora_targets))
            model = get_peft_model(model, lora, autocast_adapter_dtype=lora_dtype == "fp32")
            if lora_dtype != "fp32":  # peft skips its cast to the base dtype on the meta device: do it here
                for name, module in model.named_modules():
                    if name.rsplit(".", 1)[-1] in ("lora_A", "lora_B"):
                        module.to(DTYPES[dtype])
    with fake_mode:  # like to_empty(), through a factory call so every tensor is a FakeTensor on cpu
        model._apply(lambda t: torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device="cpu"))
    if getattr(cfg, "tie_word_embeddings", False) or getattr(cfg.get_text_config(), "tie_word_embeddings", False):
        model.tie_weights()
    model.train(train)
    return model


def base_model(model: torch.nn.Module) -> torch.nn.Module:
    """The transformers model under a peft wrapper (or the model itself)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The decoder's layers: `get_decoder()`, or the `model` attribute where that returns the causal LM itself
    (Llama4ForCausalLM); GPT-2 and Falcon name them `h`."""
    base = base_model(model)
    for decoder in (base.get_decoder(), getattr(base, "model", None)):
        for name in ("layers", "h"):
            if decoder is not None and hasattr(decoder, name):
                return getattr(decoder, name)
    raise AttributeError(f"no decoder layers found in {type(base).__name__}")
