"""Training state: techniques, optimizers and their states, precision regimes, LoRA, ZeRO/FSDP sharding.

Sources:
- Reference document (Alibaba Cloud PAI): gradients 2 B per trainable parameter; optimizer states = states x 4 B.
- ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054, section 3.1 and Figure 1): mixed precision Adam =
  2 + 2 + 12 = 16 B/param, and the per-GPU model states of stages 1-3: 4P + 12P/N, 2P + 14P/N, 16P/N.
- torch.optim (https://pytorch.org/docs/stable/optim.html): SGD momentum_buffer, RMSprop square_avg, Adagrad
  sum, Adam/AdamW exp_avg + exp_avg_sq, each shaped and typed like its parameter (bf16 parameters get bf16
  states, docs/measurements.md).
- bitsandbytes 8-bit optimizers (bitsandbytes-foundation/bitsandbytes `bitsandbytes/optim/optimizer.py`,
  Optimizer2State): uint8 states + one fp32 absmax per block of 256 values; paged optimizers put the states in
  CUDA unified memory (same bytes, evicted to CPU under pressure; QLoRA, arXiv:2305.14314, section 3).
- transformers Adafactor (`src/transformers/optimization.py`): factored second moment `exp_avg_sq_row` +
  `exp_avg_sq_col`, (rows + cols) per matrix, no first moment with the default beta1=None.
- Lion (Chen et al. 2023, arXiv:2302.06675): one momentum buffer.
- PEFT LoRA (huggingface/peft v0.21.2 `src/peft/tuners/lora/layer.py`): lora_A = Linear(d_in, r),
  lora_B = Linear(r, d_out): r (d_in + d_out) per adapted Linear. `all-linear` selects every nn.Linear / Conv1D
  but the output layer (`tuners/tuners_utils.py::_maybe_include_all_linear_layers`); on the MoE types that
  transformers 5 converts (Mixtral, Qwen3-MoE, DeepSeek-V2/V3, ...) it also targets the fused 3-D experts and
  the router (`utils/transformers_weight_conversion.py`, see `moe_targets`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .architecture import Architecture, tensors
from .units import FP32_BYTES

TECHNIQUES = ("full", "lora", "qlora-8bit", "qlora-4bit")
TECHNIQUE_LABELS = {"full": "Full-parameter", "lora": "LoRA", "qlora-8bit": "QLoRA (8-bit)",
                    "qlora-4bit": "QLoRA (4-bit)"}
QLORA_BASE_FORMAT = {"qlora-8bit": "int8", "qlora-4bit": "nf4-dq"}  # QLoRA recipe: NF4 + double quantization
QUICK_LORA_TRAINABLE_FRACTION = Fraction(1, 100)  # reference document: LoRA trains about 1% of the parameters


@dataclass(frozen=True)
class Optimizer:
    """An optimizer's state per trainable parameter."""

    id: str
    label: str
    states: int  # full-size state tensors per parameter (reference document: Adam 2, momentum 1, SGD 0)
    state_bytes: Fraction | None = None  # fixed bytes per state element (8-bit optimizers), else the state dtype
    factored: bool = False  # Adafactor: (rows + cols) second-moment elements per matrix
    paged: bool = False  # states in CUDA unified memory, evicted to CPU under memory pressure
    source: str = ""


EIGHT_BIT_STATE = 1 + Fraction(FP32_BYTES, 256)  # uint8 + fp32 absmax per 256 (bitsandbytes blocksize)

OPTIMIZERS = {o.id: o for o in (
    Optimizer("sgd", "SGD", 0, source="torch.optim.SGD without momentum keeps no state"),
    Optimizer("sgd-momentum", "SGD + momentum", 1, source="torch.optim.SGD momentum_buffer"),
    Optimizer("rmsprop", "RMSProp", 1, source="torch.optim.RMSprop square_avg"),
    Optimizer("adagrad", "Adagrad", 1, source="torch.optim.Adagrad sum"),
    Optimizer("adamw", "Adam / AdamW", 2, source="torch.optim.AdamW exp_avg, exp_avg_sq"),
    Optimizer("adamw-8bit", "AdamW 8-bit (bitsandbytes)", 2, state_bytes=EIGHT_BIT_STATE,
              source="bitsandbytes Optimizer2State: uint8 state1/state2 + fp32 absmax per 256"),
    Optimizer("paged-adamw-8bit", "Paged AdamW 8-bit (bitsandbytes)", 2, state_bytes=EIGHT_BIT_STATE, paged=True,
              source="bitsandbytes PagedAdamW8bit (QLoRA)"),
    Optimizer("adafactor", "Adafactor", 0, factored=True,
              source="transformers Adafactor: exp_avg_sq_row + exp_avg_sq_col, beta1=None"),
    Optimizer("lion", "Lion", 1, source="Lion (Chen et al. 2023): one momentum buffer"),
)}
QUICK_OPTIMIZERS = ("sgd", "sgd-momentum", "rmsprop", "adamw")  # the reference document's four
# torch.optim step implementations and the temporaries their step allocates (validation/FINDINGS.md 16)
OPTIMIZER_IMPLS = ("fused", "foreach", "single-tensor")


def step_temporary_bytes(impl: str, trainable_bytes: int, largest_tensor_bytes: int) -> int:
    """Extra bytes during optimizer.step(): fused 0; foreach (the CUDA default) one copy of every trainable
    parameter; single-tensor (the CPU default) two copies of the largest parameter tensor."""
    return {"fused": 0, "foreach": trainable_bytes, "single-tensor": 2 * largest_tensor_bytes}[impl]


@dataclass(frozen=True)
class Regime:
    """Bytes per trainable parameter of the weights, gradients and master copy."""

    id: str
    label: str
    weight_bytes: int
    grad_bytes: int
    master_bytes: int  # fp32 master weights kept next to 16-bit weights


REGIMES = {r.id: r for r in (
    Regime("pure-16bit", "Pure 16-bit (bf16 weights and gradients)", 2, 2, 0),
    Regime("mixed", "Mixed precision (16-bit + fp32 master weights)", 2, 2, FP32_BYTES),
    Regime("fp32", "FP32", FP32_BYTES, FP32_BYTES, 0),
)}


def optimizer(optimizer_id: str) -> Optimizer:
    try:
        return OPTIMIZERS[optimizer_id]
    except (KeyError, TypeError):
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {optimizer_id!r}") from None


def optimizer_notes(opt: Optimizer) -> list[str]:
    """What the user should know about an optimizer beyond its bytes."""
    if opt.paged:
        return ["Paged optimizer: its states live in CUDA unified memory and are evicted to CPU RAM under "
                "memory pressure, which absorbs spikes; the states still count here"]
    return []


def quick_optimizer_bytes_per_param(opt: Optimizer) -> Fraction:
    """Reference document: states x 4 B (fp32); 8-bit states at their packed size; Adafactor's factored
    states are below 0.1% of the parameters and count as 0 without the architecture."""
    return opt.states * (opt.state_bytes if opt.state_bytes is not None else FP32_BYTES)


def optimizer_state_bytes(opt: Optimizer, shapes: list[tuple[int, int, int]], state_bits: int) -> int:
    """Optimizer state bytes for trainable tensors given as (rows, cols, copies); vectors have rows = 1."""
    element = opt.state_bytes if opt.state_bytes is not None else Fraction(state_bits, 8)
    total = Fraction(0)
    for rows, cols, copies in shapes:
        if opt.factored:
            total += copies * (rows + cols if rows > 1 else cols) * Fraction(state_bits, 8)
        else:
            total += copies * rows * cols * opt.states * element
    return -(-total // 1)


# LoRA target presets (PEFT names); the HF projection names map to our tensor roles
LORA_TARGET_PRESETS = {
    "q,v": ("q_proj", "v_proj"),  # PEFT's default for Llama, Mistral, Qwen, Gemma
    "attention": ("q_proj", "k_proj", "v_proj", "o_proj"),
    # PEFT's all-linear: every Linear, and (peft 0.21 on transformers 5) the router and fused 3-D expert weights
    "all-linear": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "experts", "router"),
}
# nn.Linear modules outside the named projections that peft's all-linear also adapts (every Linear but the output
# layer, peft tuners/tuners_utils.py::_maybe_include_all_linear_layers): Mamba's in_proj / out_proj (and Mamba-1's
# x_proj / dt_proj), Nemotron 3's latent MoE projections, Gemma 3n / 4's per-layer-input projections, LAuReL, AltUp
ALL_LINEAR_OTHER_ROLES = {"ssm_in", "ssm_out", "ssm_x", "ssm_dt", "latent_in", "latent_out", "per_layer_gate",
                          "per_layer_proj", "per_layer_model_proj", "laurel_left", "laurel_right", "altup_router",
                          "altup_coefs", "altup_proj"}
# peft 0.21.2 refuses LoRA on a Mamba mixer's out_proj for these model types (tuners_utils.py
# _check_lora_target_modules_mamba, which also stops all-linear): the estimate leaves it out, as users must
PEFT_MAMBA_TYPES = ("falcon_h1", "mamba", "mamba2", "falcon_mamba", "nemotron_h")
# Jamba's mixer reads dt_proj.weight directly (transformers v5.24.0 models/jamba/modeling_jamba.py L580; the module
# is called only for quantized models): peft wraps it, but its adapter is never used, gets no gradient and no
# optimizer state. The estimate leaves it out: its r x (dt_rank + d_inner) fp32 weights are not counted either.
UNTRAINED_DT_PROJ_TYPES = ("jamba",)
LORA_ROLES = {  # projection name -> tensor roles it adapts (MLA: q_a/q_b, kv_a/kv_b; MoE: shared expert)
    "q_proj": ("attn_q", "attn_q_a", "attn_q_b"), "k_proj": ("attn_k", "attn_kv_a"),
    "v_proj": ("attn_v", "attn_kv_b"), "o_proj": ("attn_output",),
    "gate_proj": ("ffn_gate", "shared_gate"), "up_proj": ("ffn_up", "shared_up"),
    "down_proj": ("ffn_down", "shared_down"),
    "experts": (),  # routed experts: peft's ParamWrapper adapters, shaped by `_expert_adapter_shapes`
    "router": ("router",),
}
_SHORT_NAMES = {name.split("_")[0]: name for name in LORA_ROLES}


def parse_lora_targets(text: str) -> tuple[str, ...]:
    """'q,v' | 'attention' | 'all-linear' | 'q_proj,k_proj,...' (or short 'q,k,...') -> projection names."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("lora_targets must be q,v, attention, all-linear or a comma-separated list of "
                         f"{', '.join(LORA_ROLES)}")
    key = text.strip().lower().replace(" ", "")
    if key in LORA_TARGET_PRESETS:
        return LORA_TARGET_PRESETS[key]
    names = []
    for part in filter(None, key.split(",")):
        name = _SHORT_NAMES.get(part, part)
        if name not in LORA_ROLES:
            raise ValueError(f"lora_targets: unknown projection {part[:40]!r}; use q,v, attention, all-linear "
                             f"or names from {', '.join(LORA_ROLES)}")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("lora_targets lists no projection")
    return tuple(names)


# Fused projections peft adapts as one module (huggingface/peft v0.21.2 wraps whole nn.Linear / Conv1D modules):
# naming any of q, k, v adapts the fused q/k/v projection once, r x h + (q_w + 2 kv_w) x r, on one input.
FUSED_QKV_FAMILIES = {  # model_type -> fused module (transformers v5.24.0 src/transformers/models/<family>/)
    "phi3": "qkv_proj",  # Phi3Attention.qkv_proj
    "gpt2": "c_attn",  # GPT2Attention.c_attn (Conv1D)
    "falcon": "query_key_value", "RefinedWebModel": "query_key_value", "RefinedWeb": "query_key_value",
    "gpt_neox": "query_key_value",  # GPTNeoXAttention.query_key_value
    "qwen": "c_attn",  # Qwen (1) remote code QWenAttention.c_attn
}
FUSED_GATE_UP_FAMILIES = {"phi3": "gate_up_proj",  # Phi3MLP.gate_up_proj: gate and up in one Linear(h, 2 I)
                          "granitemoehybrid": "input_linear"}  # GraniteMoeHybridMLP.input_linear (the shared MLP)
FUSED_MODULE_ROLES = {"qkv_proj": ("attn_q", "attn_k", "attn_v"),
                      "gate_up_proj": ("ffn_gate", "ffn_up", "shared_gate", "shared_up")}

# peft 0.21.2 `utils/transformers_weight_conversion.py::_convert_peft_config_moe`: for the model types it maps to the
# "qwen2_moe" pattern, every target named gate_proj / up_proj / down_proj (and the router `gate`) is moved from
# target_modules to target_parameters (the fused 3-D experts), so all-linear leaves the dense MLPs and the shared
# experts, nn.Linear modules of the same names, without adapters. The "mixtral" pattern (w1/w2/w3) has no dense
# MLPs to lose. Model types absent from its `_MODEL_TO_CONVERSION_PATTERN` (qwen2_moe itself, gpt_oss) are not
# converted: all-linear adapts only nn.Linear modules, so neither the 3-D experts nor the custom router module.
# ERNIE 4.5 MoE follows the qwen2_moe pattern too (measured: validation/FINDINGS.md 34).
PEFT_QWEN2_MOE_PATTERN = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "qwen3_moe", "qwen3_next", "ernie4_5_moe")
PEFT_UNCONVERTED_MOE = ("qwen2_moe", "gpt_oss", "qwen3_5_moe_text")


def lora_modules(a: Architecture, targets: tuple[str, ...]) -> tuple[str, ...]:
    """The modules peft adapts in one layer for these projection names: the family's fused q/k/v (and gate/up)
    module replaces its parts (validation/FINDINGS.md 6b, 19)."""
    fused = {}
    if a.model_type in FUSED_QKV_FAMILIES:
        fused.update(q_proj="qkv_proj", k_proj="qkv_proj", v_proj="qkv_proj")
    if a.model_type in FUSED_GATE_UP_FAMILIES:
        fused.update(gate_proj="gate_up_proj", up_proj="gate_up_proj")
    out: list[str] = []
    for name in targets:
        module = fused.get(name, name)
        if module not in out:
            out.append(module)
    return tuple(out)


def _expert_adapter_shapes(a: Architecture, rank: int) -> list[tuple[int, int, int]]:
    """peft 0.21's ParamWrapper adapters on one MoE layer's fused experts, as measured (validation/FINDINGS.md
    10): gate_up A (2 E r x h), B (2 I_e x 2 E r); down A (E r x I_e), B (h x E r)."""
    er, h, width = a.num_experts * rank, a.hidden_size, a.moe_intermediate_size
    up = 2 if a.gated_mlp else 1
    return [(up * er, h, 1), (up * width, up * er, 1), (er, width, 1), (h, er, 1)]


SPLIT_DELTANET_TYPES = ("qwen3_5_text", "qwen3_5_moe_text")  # separate q/k/v, z, b and a input projections


def _linear_attention_adapter_shapes(a: Architecture, rank: int) -> list[tuple[int, int, int]]:
    """all-linear on a Gated DeltaNet layer adapts its nn.Linear modules (transformers v5.24.0): Qwen3-Next's
    `Qwen3NextGatedDeltaNet` fuses them into in_proj_qkvz (h -> 2 n_k d_k + 2 n_v d_v) and in_proj_ba (h -> 2 n_v);
    Qwen3.5's `Qwen3_5GatedDeltaNet` (models/qwen3_5/modeling_qwen3_5.py) has in_proj_qkv (h -> 2 n_k d_k + n_v d_v),
    in_proj_z (h -> n_v d_v), in_proj_b and in_proj_a (h -> n_v each), one adapter each; both end in out_proj
    (n_v d_v -> h). Measured with peft 0.21.2 (validation/FINDINGS.md 44)."""
    key, value = a.linear_key_heads * a.linear_key_head_dim, a.linear_value_heads * a.linear_value_head_dim
    h, heads = a.hidden_size, a.linear_value_heads
    outputs = (2 * key + value, value, heads, heads) if a.model_type in SPLIT_DELTANET_TYPES else \
        (2 * key + 2 * value, 2 * heads)
    inputs = [shape for width in outputs for shape in ((rank, h, 1), (width, rank, 1))]
    return inputs + [(rank, value, 1), (h, rank, 1)]  # out_proj


def lora_adapter_shapes(a: Architecture, targets: tuple[str, ...], rank: int) -> list[tuple[int, int, int]]:
    """(rows, cols, copies) of every lora_A (r x d_in) and lora_B (d_out x r) matrix. Routed experts (fused
    3-D parameters in transformers 5) are adapted only by the "experts" target, which all-linear includes."""
    all_linear = set(LORA_TARGET_PRESETS["all-linear"]) <= set(targets)
    targets = moe_targets(a, targets)
    roles = {role for name in targets for role in LORA_ROLES[name]}
    fused = {module: FUSED_MODULE_ROLES[module] for module in lora_modules(a, targets) if module in FUSED_MODULE_ROLES}
    fused_roles = {role for parts in fused.values() for role in parts}
    shapes = []
    by_layer: dict[tuple[str, int], int] = {}  # (fused module, layer) -> summed out_features of its parts
    for t in tensors(a):
        if t.role == "router" and t.rows == a.num_experts and a.model_type in PEFT_UNCONVERTED_MOE:
            continue  # the top-k router is a custom module there; only the shared expert's Linear(h, 1) gate is
        if t.role in fused_roles:
            module = next(m for m, parts in fused.items() if t.role in parts)
            by_layer[(module, t.layer)] = by_layer.get((module, t.layer), 0) + t.rows
        elif t.role in roles:
            shapes += [(rank, t.cols, t.copies), (t.rows, rank, t.copies)]
    for (_module, _layer), rows in by_layer.items():  # one adapter on the fused module: r x h and rows x r
        shapes += [(rank, a.hidden_size, 1), (rows, rank, 1)]
    if a.linear_layers and all_linear:
        shapes += _linear_attention_adapter_shapes(a, rank) * len(a.linear_layers)
    if all_linear:  # the other nn.Linear modules of newer families: Mamba's projections, latent MoE, per-layer inputs
        skip = {"ssm_out"} if a.model_type in PEFT_MAMBA_TYPES else set()
        if a.model_type in UNTRAINED_DT_PROJ_TYPES:
            skip.add("ssm_dt")
        shapes += [shape for t in tensors(a) if t.role in ALL_LINEAR_OTHER_ROLES - skip
                   for shape in ((rank, t.cols, t.copies), (t.rows, rank, t.copies))]
    if "experts" in targets:
        shapes += _expert_adapter_shapes(a, rank) * len(a.moe_layers)
    return shapes


def lora_target_text(a: Architecture, targets: tuple[str, ...]) -> str:
    """The LoRA targets as the assumptions name them: only roles the model has ('all-linear' on a dense model is
    q_proj ... down_proj, without experts and router)."""
    own = [name for name in targets if a.is_moe or name not in ("experts", "router")]
    return ", ".join(own) or "no projection of this model"


def moe_targets(a: Architecture, targets: tuple[str, ...]) -> tuple[str, ...]:
    """The targets peft reaches. peft 0.21 remaps all-linear to the fused experts (`gate_up_proj`, `down_proj`
    as target_parameters) and the router only for the model types transformers 5 lists in its weight-conversion
    mapping (Mixtral, Qwen3-MoE, DeepSeek-V2/V3, ...: `utils/transformers_weight_conversion.py`). gpt-oss is
    not among them: its experts and router are custom modules that stay unadapted (measured,
    validation/results.csv), so "experts" and "router" drop out there."""
    if not a.lora_reaches_experts or a.model_type in PEFT_UNCONVERTED_MOE:
        return tuple(name for name in targets if name != "experts"
                     and (name != "router" or a.shared_expert_gate))  # the shared expert's gate is a Linear
    if "experts" in targets and a.model_type in PEFT_QWEN2_MOE_PATTERN:
        return tuple(name for name in targets if name not in ("gate_proj", "up_proj", "down_proj"))
    return targets


def lora_trainable_params(a: Architecture, targets: tuple[str, ...], rank: int) -> int:
    """Sum over adapted Linears of r x (d_in + d_out) (PEFT lora.Linear)."""
    return sum(rows * cols * copies for rows, cols, copies in lora_adapter_shapes(a, targets, rank))

