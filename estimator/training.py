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


def _expert_adapter_shapes(a: Architecture, rank: int) -> list[tuple[int, int, int]]:
    """peft 0.21's ParamWrapper adapters on one MoE layer's fused experts, as measured (validation/FINDINGS.md
    10): gate_up A (2 E r x h), B (2 I_e x 2 E r); down A (E r x I_e), B (h x E r)."""
    er, h, width = a.num_experts * rank, a.hidden_size, a.moe_intermediate_size
    up = 2 if a.gated_mlp else 1
    return [(up * er, h, 1), (up * width, up * er, 1), (er, width, 1), (h, er, 1)]


def lora_adapter_shapes(a: Architecture, targets: tuple[str, ...], rank: int) -> list[tuple[int, int, int]]:
    """(rows, cols, copies) of every lora_A (r x d_in) and lora_B (d_out x r) matrix. Routed experts (fused
    3-D parameters in transformers 5) are adapted only by the "experts" target, which all-linear includes."""
    targets = moe_targets(a, targets)
    roles = {role for name in targets for role in LORA_ROLES[name]}
    shapes = []
    for t in tensors(a):
        if t.role in roles:
            shapes += [(rank, t.cols, t.copies), (t.rows, rank, t.copies)]
    if "experts" in targets:
        shapes += _expert_adapter_shapes(a, rank) * len(a.moe_layers)
    return shapes


def moe_targets(a: Architecture, targets: tuple[str, ...]) -> tuple[str, ...]:
    """The targets peft reaches. peft 0.21 remaps all-linear to the fused experts (`gate_up_proj`, `down_proj`
    as target_parameters) and the router only for the model types transformers 5 lists in its weight-conversion
    mapping (Mixtral, Qwen3-MoE, DeepSeek-V2/V3, ...: `utils/transformers_weight_conversion.py`). gpt-oss is
    not among them: its experts and router are custom modules that stay unadapted (measured,
    validation/results.csv), so "experts" and "router" drop out there."""
    if a.lora_reaches_experts:
        return targets
    return tuple(name for name in targets if name not in ("experts", "router"))


def lora_trainable_params(a: Architecture, targets: tuple[str, ...], rank: int) -> int:
    """Sum over adapted Linears of r x (d_in + d_out) (PEFT lora.Linear)."""
    return sum(rows * cols * copies for rows, cols, copies in lora_adapter_shapes(a, targets, rank))

