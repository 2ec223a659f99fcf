"""Framework presets: the training inputs each fine-tuning stack really sets, with the source of every setting.

A preset is data, not a branch in the math: `preset_fields(framework, technique)` gives the scenario fields a
framework sets (`FinetuneScenario` field name -> value), and the estimate runs the same formulas on them as on
values a user types. The user's own values win over the preset's (`with_framework`), so every input stays
editable. `hf` (transformers + peft, the estimate's baseline, pinned to traces) sets nothing.

What a preset cannot express is said in its notes: a framework's own LoRA layers (torchtune, litgpt) or
kernels (Unsloth's fused LoRA MLP and attention) that save fewer tensors than peft's are not modelled, so the
estimate stays above them by the difference; torch.compile beyond torchtune's compiled chunked loss (loss
`chunked-compiled`; the configs' default is compile: False, which the preset keeps) and sequence packing are not
modelled either (Methodology page).
Sources are repository paths as of the commits read (November 2026) or documentation pages.
"""

from __future__ import annotations

from dataclasses import dataclass

ALL = ("full", "lora", "qlora-8bit", "qlora-4bit")
ADAPTERS = ("lora", "qlora-8bit", "qlora-4bit")


@dataclass(frozen=True)
class Setting:
    """One input a framework sets, for the techniques it applies to."""

    field: str  # the FinetuneScenario field
    value: object
    source: str  # where the framework sets it (repo path, config key, documentation URL)
    techniques: tuple[str, ...] = ALL


@dataclass(frozen=True)
class Framework:
    id: str
    label: str
    settings: tuple[Setting, ...]
    notes: tuple[str, ...] = ()  # what the preset cannot express


TORCHTUNE_CONFIGS = "pytorch/torchtune recipes/configs/llama3_1/8B_{}_single_device.yaml"

FRAMEWORK_PRESETS = {f.id: f for f in (
    Framework("hf", "Hugging Face transformers + peft", (), (
        "The estimate's baseline: Trainer defaults, peft LoRA with fp32 adapters, full fp32 logits in the loss.",)),
    Framework("trl", "TRL (SFTTrainer)", (
        Setting("gradient_checkpointing", True, "huggingface/trl trl/trainer/sft_config.py (commit 016013e): "
                "SFTConfig's gradient_checkpointing defaults to True instead of TrainingArguments' False"),
        Setting("loss", "chunked", "huggingface/trl trl/trainer/sft_config.py (commit 016013e): loss_type "
                "defaults to 'chunked_nll', the cross-entropy processed in chunks of tokens"),
    ), ("TRL's SFTTrainer runs the transformers Trainer and peft; use_liger_kernel and activation_offloading are "
        "off unless set. Its chunked_nll also drops the ignored tokens before lm_head, which torchtune's chunked "
        "loss (the formula used) does not: the estimate is an upper bound there. Releases before chunked_nll used "
        "the standard loss.",)),
    Framework("unsloth", "Unsloth", (
        Setting("loss", "fused", "unslothai/unsloth-zoo unsloth_zoo/fused_losses/cross_entropy_loss.py: the fused "
                "linear cross-entropy replaces the model's loss, the full logits are never materialised"),
        Setting("gradient_checkpointing", True, "unslothai/unsloth-zoo unsloth_zoo/training_utils.py (commit "
                "0355f6f): prepare_model_for_training(use_gradient_checkpointing='unsloth') by default"),
        Setting("offload_activations", True, "unslothai/unsloth-zoo unsloth_zoo/gradient_checkpointing.py: "
                "Unsloth_Offloaded_Gradient_Checkpointer moves each checkpointed layer input to the CPU "
                "(hidden_states.to('cpu', non_blocking=True)) and brings it back in backward ('unsloth' "
                "gradient checkpointing)"),
        Setting("adapter_bits", 16, "unslothai/unsloth unsloth/kernels/utils.py matmul_lora: "
                "(X @ A.to(dtype)) @ (s * B.to(dtype)), the LoRA matmuls run in the activations' 16-bit dtype, so no "
                "fp32 copy of the adapted inputs is saved", ADAPTERS),
        Setting("peft_kbit_cast", False, "unslothai/unsloth-zoo unsloth_zoo/training_utils.py (commit 0355f6f): "
                "prepare_model_for_training upcasts only lora_A / lora_B; the frozen embeddings, lm_head and norms "
                "keep their loaded 16-bit dtype", ("qlora-8bit", "qlora-4bit")),
        Setting("lora_targets", "q,k,v,o,gate,up,down", "unslothai/unsloth unsloth/models/llama.py: get_peft_model"
                "(target_modules=['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'])",
                ADAPTERS),
        Setting("optimizer", "adamw-8bit", "unslothai/notebooks nb/Llama3.1_(8B)-Alpaca.ipynb: "
                "TrainingArguments(optim='adamw_8bit')"),
    ), ("Unsloth's own LoRA MLP kernel (unsloth/kernels/fast_lora.py LoRA_MLP) saves the gate and up outputs "
        "instead of four I-wide tensors, and its backward's temporaries are not modelled either.",
        "Unsloth keeps the adapter weights themselves in fp32 (prepare_model_for_training upcasts lora_A / lora_B): "
        "the 16-bit adapter setting, chosen for the activations, undercounts their weights and gradients by 2 B "
        "each per adapter parameter.")),
    Framework("torchtune", "torchtune", (
        Setting("loss", "chunked", TORCHTUNE_CONFIGS.format("lora") + ": loss "
                "torchtune.modules.loss.CEWithChunkedOutputLoss (8 chunks)"),
        Setting("gradient_checkpointing", True, TORCHTUNE_CONFIGS.format("lora") +
                ": enable_activation_checkpointing: True"),
        Setting("adapter_bits", 16, "pytorch/torchtune torchtune/modules/peft/lora.py: LoRALinear is built in the "
                "model's dtype (dtype: bf16), no fp32 adapters", ADAPTERS),
        Setting("optimizer_state_bits", 16, "torch.optim.AdamW keeps its states in the parameters' dtype (bf16)"),
        Setting("peft_kbit_cast", False, "pytorch/torchtune torchtune/models/llama3_1/_model_builders.py: "
                "qlora_llama3_1_8b = lora_llama3_1_8b(quantize_base=True) quantizes the LoRALinear bases to NF4 "
                "and leaves the embeddings, output projection and norms in the model's bf16", ("qlora-4bit",)),
        Setting("optimizer_impl", "fused", TORCHTUNE_CONFIGS.format("lora") + ": torch.optim.AdamW fused: True",
                ADAPTERS),
        Setting("optimizer", "paged-adamw-8bit", TORCHTUNE_CONFIGS.format("full") +
                ": bitsandbytes.optim.PagedAdamW8bit", ("full",)),
        Setting("optimizer_in_backward", True, TORCHTUNE_CONFIGS.format("full") + ": optimizer_in_bwd: True",
                ("full",)),
    ), ("torchtune's own LoRALinear keeps no fp32 copy of the adapted inputs (peft's fp32 adapters do); modelled "
        "through the 16-bit adapters. Newer configs use LinearCrossEntropyLoss, also chunked.",
        "With compile: True (torchtune's README figures) the chunked loss's cross-entropy is compiled and keeps the "
        "16-bit logits instead of fp32 log-probabilities: set the loss to chunked-compiled.")),
    Framework("litgpt", "LitGPT", (
        Setting("loss", "chunked", "Lightning-AI/litgpt litgpt/utils.py: chunked_cross_entropy (chunk_size=128) "
                "over the lm_head_chunk_size=128 chunks of litgpt/finetune/lora.py"),
        Setting("adapter_bits", 16, "Lightning-AI/litgpt litgpt/finetune/lora.py: precision 'bf16-true' keeps "
                "the LoRA weights in bf16", ADAPTERS),
        Setting("optimizer_state_bits", 16, "litgpt/finetune/lora.py: torch AdamW on bf16-true parameters "
                "keeps bf16 states"),
    ), ("LitGPT's own LoRA layers and its fused q/k/v projection (one qkv Linear) are not modelled separately.",
        "LitGPT's chunked_cross_entropy runs on 128-token chunks without an fp32 upcast under bf16-true, so it holds "
        "less than torchtune's chunked loss counted here: the estimate is an upper bound.")),
    Framework("axolotl", "Axolotl", (
        Setting("gradient_checkpointing", True, "axolotl-ai-cloud/axolotl examples/llama-3/lora-1b.yml and "
                "qlora-1b.yml: gradient_checkpointing: true"),
        Setting("lora_targets", "q,k,v,o,gate,up,down", "axolotl examples/llama-3/lora-1b.yml: lora_target_modules "
                "gate_proj, down_proj, up_proj, q_proj, v_proj, k_proj, o_proj", ADAPTERS),
        Setting("optimizer", "adamw-8bit", "axolotl examples/llama-3/lora-1b.yml: optimizer: adamw_8bit",
                ADAPTERS),
    ), ("Axolotl runs the transformers Trainer and peft; its Liger and Cut Cross-Entropy plugins are off unless "
        "configured (set the loss to fused for them). Its examples pack samples (sample_packing: true): enter the "
        "packed length as the sequence length.",)),
    Framework("llama-factory", "LLaMA-Factory", (
        Setting("gradient_checkpointing", True, "hiyouga/LLaMA-Factory src/llamafactory/hparams/model_args.py: "
                "disable_gradient_checkpointing defaults to False (checkpointing on)"),
        Setting("lora_targets", "all-linear", "hiyouga/LLaMA-Factory src/llamafactory/hparams/finetuning_args.py: "
                "lora_target defaults to 'all' (every linear module but the output layer)", ADAPTERS),
        Setting("lora_rank", 8, "hiyouga/LLaMA-Factory src/llamafactory/hparams/finetuning_args.py: lora_rank "
                "defaults to 8", ADAPTERS),
        Setting("peft_kbit_cast", False, "hiyouga/LLaMA-Factory (commit ff6d4d1) never calls peft's "
                "prepare_model_for_kbit_training: src/llamafactory/model/adapter.py L310-312 casts only the "
                "trainable parameters to fp32, and model_utils/checkpointing.py L171-175 upcasts the norms only with "
                "upcast_layernorm (hparams/model_args.py L153-156: default False); the embeddings, lm_head and "
                "norms stay 16-bit (so does the residual stream). The same at the April 2024 wiki benchmarks "
                "(src/llmtuner/model/patcher.py, commit efa8080)", ("qlora-8bit", "qlora-4bit")),
    ), ("LLaMA-Factory casts trainable parameters to fp32 (src/llamafactory/model/adapter.py), as peft's defaults; "
        "enable_liger_kernel and use_unsloth are off unless set.",)),
    Framework("ms-swift", "ms-swift", (
        Setting("gradient_checkpointing", True, "modelscope/ms-swift swift/trainers/arguments.py (commit 0037257): "
                "TrainArgumentsMixin.gradient_checkpointing = True"),
        Setting("lora_targets", "all-linear", "modelscope/ms-swift swift/llm/argument/tuner_args.py (commit "
                "815aa28): target_modules defaults to ['all-linear']", ADAPTERS),
        Setting("lora_rank", 8, "modelscope/ms-swift swift/llm/argument/tuner_args.py (commit 815aa28): "
                "lora_rank = 8", ADAPTERS),
    ), ("ms-swift runs the transformers Trainer and peft. Its gradient accumulation defaults to ceil(16 / batch / "
        "GPUs) steps (swift/trainers/arguments.py), which a preset cannot set: enter it by hand.",)),
)}
FRAMEWORKS = tuple(FRAMEWORK_PRESETS)


def framework(framework_id: str) -> Framework:
    try:
        return FRAMEWORK_PRESETS[framework_id]
    except (KeyError, TypeError):
        raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}; got {framework_id!r}") from None


def preset_settings(framework_id: str, technique: str) -> tuple[Setting, ...]:
    """The settings a framework applies to a technique's run."""
    return tuple(s for s in framework(framework_id).settings if technique in s.techniques)


def preset_fields(framework_id: str, technique: str) -> dict[str, object]:
    """FinetuneScenario field -> value, as the framework sets them for this technique."""
    return {s.field: s.value for s in preset_settings(framework_id, technique)}


def with_framework(fields: dict[str, object]) -> dict[str, object]:
    """Scenario fields with the framework's preset under the ones given: `fields` names the framework (default
    hf) and the technique (default full); every field it gives itself wins over the preset."""
    preset = preset_fields(fields.get("framework", "hf"), fields.get("technique", "full"))
    return {**preset, **fields}


def preset_notes(s, technique: str) -> list[str]:
    """The assumptions' lines for a scenario's framework on a technique's row: each preset setting in effect,
    with its source."""
    if s.framework == "hf":
        return []
    f = framework(s.framework)
    applied = [st for st in preset_settings(s.framework, technique) if getattr(s, st.field) == st.value]
    lines = [f"{f.label} preset: " + (", ".join(f"{st.field} = {_shown(st.value)}" for st in applied)
                                       if applied else "no setting of it in effect (all changed by hand)")]
    lines += [f"{f.label}: {st.field} = {_shown(st.value)} ({st.source})" for st in applied]
    return lines + list(f.notes)


def _shown(value: object) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)
