"""The inputs of an estimate: frozen dataclasses, validated on construction.

Everything a user can set is a field here, declared once with its `Input` (label, help, bounds or choices, link
key, CLI flag; see `inputs.py`): the scenarios check themselves with it, and the CLI, the share links and the
widgets are derived from it, so "same inputs -> same numbers" holds by construction. The model itself comes from
a parameter count (`PARAMS`, `ACTIVE_PARAMS`), a catalog id (`CATALOG_MODEL`) or a config.json.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Union

from . import catalog, hub
from .activations import LOSSES
from .architecture import Architecture
from .checks import require_int
from .formats import CHECKPOINT, WEIGHT_FORMATS
from .frameworks import FRAMEWORKS
from .inputs import INPUT, Input, check_inputs, declare
from .kv_cache import KV_DTYPE_BYTES
from .objectives import (GRPO_BETA, GRPO_MAX_COMPLETION_LENGTH, GRPO_NUM_GENERATIONS, OBJECTIVES,
                         VLLM_GPU_MEMORY_UTILIZATION, check_objective)
from .training import LORA_ROLES, OPTIMIZER_IMPLS, OPTIMIZERS, REGIMES, TECHNIQUES, parse_lora_targets
from .vision import MAX_IMAGE_SIDE, image_tokens

BILLION = 10**9
MAX_PARAMS_B = 20_000  # 20 trillion parameters: larger than any model, small enough to catch typos
MIN_PARAMS_B = 0.001  # a million parameters: smaller than any model worth a GPU estimate
MAX_SEQ_LEN = 10_000_000  # 10M tokens (the longest advertised contexts)
MAX_BATCH = 65_536
MAX_CONCURRENCY = 65_536
MAX_TENSOR_PARALLEL = 512
MAX_GPUS = 4_096
MAX_LORA_RANK = 65_536  # the model's layer width bounds it further (FinetuneScenario)
MAX_OVERHEAD_GB = 1_000
MAX_IMAGES = 1_000  # images in one sequence's prompt
MAX_GRAD_ACCUM = 65_536
MAX_DATASET_TOKENS = 10**15  # a quadrillion tokens: above any training set (Llama 3: 15.6T, arXiv:2407.21783)
METHODS = ("auto", "quick", "detailed")
DEFAULT_OVERHEAD_GB = 2.0  # reference document: "1-2 GB" of framework overhead; we take the upper end
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"  # the catalog model offered first
LORA_SHORT_NAMES = tuple(name.split("_")[0] for name in LORA_ROLES)  # q, k, v, o, gate, up, down, experts, router


def canonical_lora_targets(text: str) -> str:
    """Any accepted spelling of the LoRA targets ('all-linear', 'q_proj,v_proj', 'Q, V') as its short list,
    e.g. 'q,v' or 'q,k,v,o,gate,up,down,experts,router'; ValueError naming the valid names otherwise."""
    names = parse_lora_targets(text)
    return ",".join(short for short, name in zip(LORA_SHORT_NAMES, LORA_ROLES) if name in names)


# The model, when it is given as a parameter count or a catalog id (a config.json is a file or pasted text)
PARAMS = Input("Total parameters (B)", 7.0, link="params", flag="--params", unit="B",
               low=MIN_PARAMS_B, high=MAX_PARAMS_B, help="All parameters, in billions (7 for a 7B model).")
ACTIVE_PARAMS = Input("Active parameters (B)", None, link="active", flag="--active-params", unit="B",
                      low=MIN_PARAMS_B, high=MAX_PARAMS_B, optional=True,
                      help="Parameters used per token, in billions (13 for Mixtral 8x7B). Empty = total.")
CATALOG_MODEL = Input("Catalog model", DEFAULT_MODEL, link="model", flag="--model", text=hub.model_id,
                      help="A catalog model id (case-insensitive; values are read from its published config.json) "
                           "or a Hugging Face Hub id: org/name, org/name@revision, org/repo:Q4_K_M (a GGUF quant).")
TARGET_GPU = Input("Target GPU", "rtx-4090", link="gpu", flag="--gpu", text=lambda text: catalog.gpu(text).id,
                   help="The catalog GPU the fit is computed for: its id, or the name nvidia-smi, rocm-smi or macOS "
                        "prints (case-insensitive); memory is what frameworks can allocate.")

# Inputs both kinds of scenario have
SEQ_LEN = Input("Sequence length", 2048, link="seq", flag="--seq-len", unit="tokens", low=1, high=MAX_SEQ_LEN,
                help="Tokens per sequence: prompt plus generated tokens.")
BATCH_SIZE = Input("Batch size", 1, link="batch", flag="--batch", low=1, high=MAX_BATCH,
                   help="Sequences per request (e.g. n > 1 samples).")
FLASH_ATTENTION = Input("FlashAttention", True, link="fa", flag="--flash-attention",
                        help="Off: eager attention materialises the s x s score matrix.")
OVERHEAD_GB = Input("Overhead per GPU (GB)", DEFAULT_OVERHEAD_GB, link="oh", flag="--overhead-gb", unit="GB",
                    low=0, high=MAX_OVERHEAD_GB,
                    help="CUDA context, allocator caching, workspaces: the reference document says 1-2 GB.")
ACTIVATION_BITS = Input("Activation precision (bits)", 16, link="act", flag="--activation-bits", choices=(16, 32),
                        help="Precision of activations (the quick method scales by bits / 16).")
METHOD = Input("Method", "auto", link="method", flag="--method", choices=METHODS,
               help="quick (the reference document's rule of thumb) or detailed (from the architecture); "
                    "auto: detailed when the architecture is known.")


AUTO = "auto"  # gradient checkpointing as the usual tool sets it: on for QLoRA (and TRL's objectives), off otherwise


@dataclass(frozen=True)
class _AutoFlag(Input):
    """A flag that may also be 'auto' (True, False or AUTO); links spell them 1, 0 and auto."""

    def parse(self, text: str) -> object:
        return AUTO if text == AUTO else super().parse(text)


# Its default is what a share link without `gc` means (off: every link made before 'auto' existed omitted it as
# the default); the scenario's own default, for the API, the CLI and a fresh page, is AUTO (`FinetuneScenario`).
GRADIENT_CHECKPOINTING = _AutoFlag(
    "Gradient checkpointing", False, link="gc", flag="--grad-checkpointing", choices=(AUTO, True, False),
    help="Keep only each layer's input and recompute the rest during backward. Default (auto): on for QLoRA, "
         "as peft's prepare_model_for_kbit_training turns it on, off for full fine-tuning and LoRA; on for the "
         "DPO, ORPO, KTO and GRPO objectives, as TRL's configs default it.")


def gradient_checkpointing(value: bool | str, technique: str) -> bool:
    """Whether a row of `technique` checkpoints: AUTO is on for QLoRA (peft's prepare_model_for_kbit_training
    calls gradient_checkpointing_enable unless told not to), off for full fine-tuning and LoRA."""
    return technique.startswith("qlora") if value == AUTO else bool(value)


@dataclass(frozen=True)
class ParamCount:
    """A model known only by its parameter counts (the quick method's input)."""

    total_params: int  # all parameters
    active_params: int  # parameters used per token (= total for a dense model)
    name: str = ""

    def __post_init__(self) -> None:
        require_int("total_params", self.total_params, 1, MAX_PARAMS_B * BILLION)
        require_int("active_params", self.active_params, 1, MAX_PARAMS_B * BILLION)
        if self.active_params > self.total_params:
            raise ValueError(f"active parameters ({self.active_params / BILLION:g} B) cannot exceed total "
                             f"parameters ({self.total_params / BILLION:g} B)")

    @classmethod
    def from_billions(cls, total_b: float, active_b: float | None = None, name: str = "") -> ParamCount:
        """Build from counts in billions, as the forms take them; active defaults to total (dense)."""
        PARAMS.check("total parameters (B)", total_b)
        if active_b is not None:
            ACTIVE_PARAMS.check("active parameters (B)", active_b)
        total = round(total_b * BILLION)
        return cls(total, total if active_b is None else round(active_b * BILLION), name)

    @property
    def is_moe(self) -> bool:
        return self.active_params < self.total_params


Model = Union[Architecture, ParamCount]


def _check_model(s: InferenceScenario | FinetuneScenario) -> None:
    if not isinstance(s.model, (Architecture, ParamCount)):
        raise ValueError("model must be an Architecture or a ParamCount")
    check_inputs(s)
    if s.method == "detailed" and not isinstance(s.model, Architecture):
        raise ValueError("method 'detailed' needs the architecture: choose a catalog model or a config.json")


@dataclass(frozen=True)
class InferenceScenario:
    """Serving a model: C concurrent requests, each a batch of b sequences of s tokens."""

    model: Model
    weights: str = declare(Input(  # the table rows override it
        "Extra weight format", "bf16", link="w", flag="--weights", choices=(*WEIGHT_FORMATS, CHECKPOINT),
        optional=True,
        help="A storage format (GGUF, GPTQ, AWQ, bitsandbytes, FP8...) to estimate besides the 16/8/4-bit rows "
             "(the CLI then prints that row only); 'checkpoint': as the config's quantization_config stores them, "
             "the first row of the table when there is one."))
    kv_dtype: str = declare(Input("KV-cache dtype", "bf16", link="kv", flag="--kv-dtype", choices=tuple(KV_DTYPE_BYTES),
                                  help="Precision of the cached keys and values."))
    batch_size: int = declare(BATCH_SIZE)  # b, sequences per request
    concurrency: int = declare(Input(  # C, requests served at the same time (each keeps its KV cache)
        "Inference concurrency", 1, link="conc", flag="--concurrency", low=1, high=MAX_CONCURRENCY,
        help="Requests served at the same time; each keeps its own KV cache."))
    seq_len: int = declare(SEQ_LEN)  # s, tokens per sequence (prompt + generated)
    flash_attention: bool = declare(FLASH_ATTENTION)  # False: eager attention materialises the s x s scores
    tensor_parallel: int = declare(Input("Tensor parallel GPUs", 1, link="tp", flag="--tp", low=1,
                                         high=MAX_TENSOR_PARALLEL,
                                         help="GPUs the model is split over; sizes are per GPU."))
    overhead_gb: float = declare(OVERHEAD_GB)  # runtime overhead per GPU
    activation_bits: int = declare(ACTIVATION_BITS)  # activation precision (quick method scales by it / 16)
    mla_latent_cache: bool = declare(Input(  # MLA: cache the latent or full K/V
        "Cache the MLA latent", True, link="mla", flag="--mla-latent-cache",
        help="DeepSeek MLA models: vLLM, SGLang, llama.cpp and transformers 5 cache the compressed latent; engines "
             "without MLA support cache full K and V."))
    prefill_chunk: int = declare(Input(  # tokens per prefill forward; 0 = the whole sequence
        "Prefill chunk (tokens)", 0, link="chunk", flag="--prefill-chunk", unit="tokens", low=0, high=MAX_SEQ_LEN,
        help="Tokens per prefill forward (vLLM's max_num_batched_tokens, e.g. 8192); 0 = the whole sequence in "
             "one forward, as HF generate() does."))
    images: int = declare(Input(  # multimodal prompts: images in each sequence, each a width x height picture
        "Images per sequence", 0, link="img", flag="--images", low=0, high=MAX_IMAGES,
        help="Multimodal models: images in each sequence's prompt; each adds the tokens its image processor makes "
             "of a picture of the size below to the sequence length."))
    image_width: int = declare(Input("Image width (px)", 1024, link="imgw", flag="--image-width", unit="px", low=1,
                                     high=MAX_IMAGE_SIDE, help="Width of each image in pixels, before the "
                                                               "processor resizes it."))
    image_height: int = declare(Input("Image height (px)", 1024, link="imgh", flag="--image-height", unit="px",
                                      low=1, high=MAX_IMAGE_SIDE, help="Height of each image in pixels."))
    method: str = declare(METHOD)  # "auto" = detailed when the architecture is known

    def __post_init__(self) -> None:
        _check_model(self)

    @property
    def resolved_method(self) -> str:
        return resolve_method(self)

    @property
    def tokens_per_image(self) -> int:
        """Context tokens one image_width x image_height image becomes (the model's processor, vision.py)."""
        tower = getattr(self.model, "vision_tower", None)
        return image_tokens(tower, self.image_width, self.image_height) if tower is not None else 0


def with_image_tokens(s: InferenceScenario) -> tuple[InferenceScenario, str]:
    """The scenario whose sequences also hold their images' tokens (images folded into seq_len), and the
    assumption that says so ('' without images; images on a text-only model are said to add nothing). The cache
    and the prefill see image tokens as any other token; the vision tower's own forward over the patches is not
    counted."""
    if not s.images:
        return s, ""
    if getattr(s.model, "vision_tower", None) is None:  # kept, as the page keeps it when the model changes
        return s, (f"Images ({s.images} per sequence) add nothing: this model has no vision tower whose image "
                   "processor the estimator knows (Qwen-VL, Gemma 3/4, Llama 4, Mistral 3, Kimi K2.5, LLaVA)")
    per_image = s.tokens_per_image
    extra = s.images * per_image
    if s.seq_len + extra > MAX_SEQ_LEN:
        raise ValueError(f"sequence length with the images' tokens ({s.seq_len:,} + {extra:,}) must be at most "
                         f"{MAX_SEQ_LEN:,} tokens")
    note = (f"Images: {s.images} per sequence of {s.image_width} x {s.image_height} px, {per_image:,} tokens each "
            f"(the model's image processor): sequences of {s.seq_len:,} text + {extra:,} image tokens; the vision "
            "tower's own forward over the image patches is not counted")
    return dataclasses.replace(s, seq_len=s.seq_len + extra, images=0), note


@dataclass(frozen=True)
class FinetuneScenario:
    """Fine-tuning a model: one training step on a micro-batch of b sequences of s tokens."""

    model: Model
    technique: str = declare(Input("Technique", "full", link="row", flag="--technique", choices=TECHNIQUES,
                                   help="full, lora, qlora-8bit or qlora-4bit: one row instead of the table."))
    # Post-training objective and its inputs (estimator/objectives.py; defaults are TRL's config defaults)
    objective: str = declare(Input(
        "Objective", "sft", link="obj", flag="--objective", choices=OBJECTIVES,
        help="Detailed method, as TRL runs it: sft (supervised), dpo (chosen + rejected in one forward, a reference "
             "model), orpo (pairs, no reference), kto (a reference model), grpo (generation, then training on prompt "
             "+ completion)."))
    precompute_ref_log_probs: bool = declare(Input(
        "Precompute reference log-probs", False, link="precref", flag="--precompute-ref-log-probs",
        help="DPO / KTO: score the data set with the reference model once before training (TRL's "
             "precompute_ref_log_probs): no reference model and no reference forward in the step."))
    num_generations: int = declare(Input(
        "Generations per prompt", GRPO_NUM_GENERATIONS, link="ngen", flag="--num-generations", low=1, high=MAX_BATCH,
        help="GRPO's num_generations (G). The batch size counts completions, so G sets the prompts per batch, "
             "not the memory of a step."))
    max_completion_length: int = declare(Input(
        "Max completion length", GRPO_MAX_COMPLETION_LENGTH, link="clen", flag="--max-completion-length",
        unit="tokens", low=1, high=MAX_SEQ_LEN,
        help="GRPO: tokens generated per completion; the sequence length is prompt + completion, and only the "
             "completion's logits are computed."))
    beta: float = declare(Input(
        "KL coefficient (beta)", GRPO_BETA, link="beta", flag="--beta", low=0, high=1_000,
        help="GRPO: above 0 a reference model scores the completions (TRL's default 0.0 loads none)."))
    vllm_gpu_memory_utilization: float = declare(Input(
        "Colocated vLLM share", 0.0, link="vllm", flag="--vllm-gpu-memory-utilization", low=0, high=1,
        help=f"GRPO with use_vllm and vllm_mode='colocate': the share of GPU memory vLLM reserves (TRL's default "
             f"{VLLM_GPU_MEMORY_UTILIZATION}); 0 = generate with transformers in the trainer."))
    vllm_gpu_gb: float = declare(Input(
        "GPU memory for the vLLM share (GB)", 80.0, link="vllmgb", flag="--vllm-gpu-gb", unit="GB", low=1,
        high=MAX_OVERHEAD_GB, help="GRPO with colocated vLLM: the GPU memory the share is taken of."))
    optimizer: str = declare(Input("Optimizer", "adamw", link="opt", flag="--optimizer", choices=tuple(OPTIMIZERS),
                                   help="States per parameter: SGD 0, momentum and RMSProp 1, Adam/AdamW 2."))
    param_bits: int = declare(Input(  # precision of the trained weights (quick method; 16 = bf16)
        "Parameter precision (bits)", 16, link="bits", flag="--param-bits", choices=(32, 16, 8, 4),
        help="Precision of the trained weights (quick method; the detailed method uses the training regime)."))
    regime: str = declare(Input(  # detailed: pure-16bit (12 B/param with Adam), mixed (16 B/param), fp32
        "Training regime", "pure-16bit", link="regime", flag="--regime", choices=tuple(REGIMES),
        help="Detailed method: bytes of weights, gradients and master weights per parameter."))
    optimizer_state_bits: int = declare(Input(  # fp32 states (reference document, DeepSpeed) or 16 (torch AdamW)
        "Optimizer state precision (bits)", 32, link="osb", flag="--optimizer-state-bits", choices=(32, 16),
        help="fp32 states (the reference document, DeepSpeed) or 16-bit (torch AdamW on bf16 weights)."))
    optimizer_impl: str = declare(Input(
        "Optimizer step", "fused", link="impl", flag="--optimizer-impl", choices=OPTIMIZER_IMPLS,
        help="torch's optimizer step: fused adds nothing, foreach (the CUDA default) a copy of every trained "
             "parameter, single-tensor two copies of the largest tensor."))
    batch_size: int = declare(BATCH_SIZE, help="Sequences per micro-batch on each GPU.")
    seq_len: int = declare(SEQ_LEN, help="Tokens per training sequence.")
    lora_rank: int = declare(Input("LoRA rank", 16, link="rank", flag="--lora-rank", low=1, high=MAX_LORA_RANK,
                                   help="r of each LoRA adapter (detailed method)."))
    lora_targets: str = declare(Input(
        "LoRA targets", "q,v", link="targets", flag="--lora-targets", text=canonical_lora_targets,
        help="q,v | attention | all-linear | comma-separated projections (q, k, v, o, gate, up, down, experts, "
             "router)."))
    adapter_bits: int = declare(Input(
        "LoRA adapter precision (bits)", 32, link="abits", flag="--adapter-bits", choices=(32, 16),
        help="LoRA weights in fp32 (peft's default; they also save an fp32 copy of each adapted layer's input) "
             "or 16-bit."))
    gradient_checkpointing: bool | str = dataclasses.field(default=AUTO, metadata={INPUT: GRADIENT_CHECKPOINTING})
    flash_attention: bool = declare(FLASH_ATTENTION, help="Off: eager attention saves the s x s attention "
                                                          "probabilities.")
    num_gpus: int = declare(Input("Number of GPUs", 1, link="gpus", flag="--gpus", low=1, high=MAX_GPUS,
                                  help="Data-parallel GPUs; ZeRO / FSDP shard the states over them."))
    zero_stage: int = declare(Input("ZeRO stage", 0, link="zero", flag="--zero", choices=(0, 1, 2, 3),
                                    help="What each GPU keeps a shard of (ZeRO paper, Figure 1); FSDP: NO_SHARD = "
                                         "0, SHARD_GRAD_OP = 2, FULL_SHARD = 3."))
    offload_optimizer: bool = declare(Input(
        "Optimizer offload", False, link="offload", flag="--offload-optimizer",
        help="ZeRO-Offload: optimizer states (and sharded gradients) in CPU memory."))
    # Memory savers and the framework whose defaults set them (estimator/frameworks.py; detailed method)
    framework: str = declare(Input(
        "Framework", "hf", link="fw", flag="--framework", choices=FRAMEWORKS,
        help="The training stack: its preset sets the inputs below as it really does (Methodology lists each "
             "setting with its source); every input can still be changed. hf = transformers + peft."))
    loss: str = declare(Input(
        "Loss computation", "standard", link="loss", flag="--loss", choices=LOSSES,
        help="standard: full logits upcast to fp32 (transformers); chunked: torchtune's chunked output loss "
             "(chunked-compiled: with torchtune's compile: True); "
             "fused: fused linear cross-entropy (Liger-Kernel, Unsloth, Cut Cross-Entropy), no full logits; "
             "shifted: transformers 4.46-4.47's loss, which also copies the shifted fp32 logits."))
    optimizer_in_backward: bool = declare(Input(
        "Optimizer step in backward", False, link="oib", flag="--optimizer-in-backward",
        help="torchtune's optimizer_in_bwd: each parameter steps as soon as its gradient is ready, so gradients "
             "never all coexist (no gradient accumulation)."))
    offload_activations: bool = declare(Input(
        "Activation offloading", False, link="offact", flag="--offload-activations",
        help="Saved activations of the decoder layers go to pinned CPU memory (torchtune, TRL, Unsloth's "
             "offloaded gradient checkpointing); the GPU keeps the layer in flight."))
    offload_params: bool = declare(Input(
        "Parameter offload", False, link="offparam", flag="--offload-params",
        help="ZeRO-3 offload_param / FSDP CPUOffload: parameters and gradients (and so the optimizer step) in "
             "CPU memory; the GPU keeps the layers being gathered. Needs ZeRO stage 3."))
    grad_accum: int = declare(Input(
        "Gradient accumulation steps", 1, link="ga", flag="--grad-accum", low=1, high=MAX_GRAD_ACCUM,
        help="Micro-batches per optimizer step: effective batch = batch x steps x GPUs. From the second "
             "micro-batch on, the accumulated gradients live beside the activations."))
    peft_kbit_cast: bool = declare(Input(
        "QLoRA: fp32 non-quantized weights", True, link="kcast", flag="--peft-kbit-cast",
        help="peft's prepare_model_for_kbit_training casts the embeddings, lm_head and norms of a QLoRA model to "
             "fp32, and with them the residual stream (checkpointed layer inputs 4 B per element); torchtune, "
             "Unsloth and LLaMA-Factory keep them in 16-bit."))
    overhead_gb: float = declare(OVERHEAD_GB, help="CUDA context, allocator caching, workspaces.")
    activation_bits: int = declare(ACTIVATION_BITS)
    dataset_tokens: int = declare(Input(  # speed only: the time of one epoch (memory does not depend on it)
        "Dataset tokens", 0, link="dtok", flag="--dataset-tokens", unit="tokens", low=0, high=MAX_DATASET_TOKENS,
        help="Tokens in the training set, for the time per epoch (speed); 0 = not given."))
    method: str = declare(METHOD)

    def __post_init__(self) -> None:
        _check_model(self)
        check_objective(self)
        if self.optimizer_in_backward and self.grad_accum > 1:
            # torchtune refuses the same (recipes/full_finetune_single_device.py, `optimizer_in_bwd`)
            raise ValueError("grad_accum must be 1 with optimizer_in_backward: each step runs during backward, "
                             f"so gradients cannot accumulate (got {self.grad_accum})")
        if self.offload_params and self.zero_stage != 3:
            raise ValueError("offload_params needs zero_stage 3 (ZeRO-3 offload_param / FSDP FULL_SHARD with "
                             f"CPUOffload), got zero_stage {self.zero_stage}")
        if isinstance(self.model, Architecture):  # whatever the technique: the table always has LoRA rows
            largest = max(self.model.hidden_size, self.model.q_width)
            if self.lora_rank > largest:
                raise ValueError(f"lora_rank must be between 1 and {largest:,} (the model's layer width), "
                                 f"got {self.lora_rank:,}")

    @property
    def resolved_method(self) -> str:
        return resolve_method(self)


def resolve_method(s: InferenceScenario | FinetuneScenario) -> str:
    """'auto' means detailed when the architecture is known, quick for a bare parameter count."""
    if s.method != "auto":
        return s.method
    return "detailed" if isinstance(s.model, Architecture) else "quick"

