"""What every serving engine shares: the scenario (each engine's options, declared once) and the report.

A `ServeScenario` is one engine start-up: the model, the GPU it runs on and the engine's own options (vLLM's
`--gpu-memory-utilization`, SGLang's `--mem-fraction-static`, llama.cpp's `-ngl`...). Options another engine has
are ignored. An engine module (`vllm.py`, `sglang.py`, `llama_cpp.py`, `transformers.py`) turns it into a
`ServeReport`: the bytes on each GPU by component, host RAM, the KV-cache tokens, the maximum concurrency, the lines
the engine would log, and the engine's own error text when it would refuse to start.
"""

from __future__ import annotations

import functools
import json
import math
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import catalog
from ..architecture import Architecture, Tensor, tensors
from ..formats import CHECKPOINT, WEIGHT_FORMATS, tensor_bytes, weight_format
from ..inputs import Input, check_inputs, declare
from ..kv_cache import KV_DTYPE_BYTES
from ..scenarios import MAX_SEQ_LEN, TARGET_GPU, Model
from ..units import BF16_BYTES, GiB

ENGINES = ("vllm", "sglang", "llama.cpp", "ollama", "transformers")
MAX_GPUS_PER_STAGE = 512
MAX_SEQS = 65_536

# Bytes of one GPU by what holds them, in the order the report and the bar show them.
ENGINE_COMPONENTS = {
    "weights": "Model weights on this GPU (the engine's 'model loading took' / model buffer)",
    "vision": "Vision (and audio) encoder of a multimodal model",
    "lora": "LoRA adapter slots: vLLM's stacked A and B buffers for --max-loras adapters of --max-lora-rank",
    "activations": "Peak activations of the engine's profiling forward (vLLM, SGLang) or its compute buffers "
                   "(llama.cpp)",
    "non_torch": "Memory outside PyTorch's allocator that grew during start-up: NCCL and custom all-reduce "
                 "buffers, CUDA libraries' workspaces",
    "allreduce_buffers": "IPC all-reduce buffers allocated at distributed init (SGLang on ROCm: aiter's custom "
                         "all-reduce and quick reduce), before the engine measures its free memory",
    "cuda_graphs": "CUDA graphs' memory pool (vLLM 0.21+ budgets it before the KV cache; earlier releases capture "
                   "it on top of the budget)",
    "kv_cache": "The KV cache pool (and the recurrent state of linear-attention / Mamba layers)",
}


@functools.lru_cache(maxsize=256)
def parse_version(text: str) -> tuple[int, ...]:
    """'0.11.0' -> (0, 11, 0), 'v0.10.1.1' -> (0, 10, 1, 1), '' -> () (the newest); ValueError otherwise."""
    words = str(text).strip().lstrip("v").split(".") if str(text).strip() else []
    if len(words) > 4 or not all(w.isdigit() and len(w) <= 4 for w in words):
        raise ValueError(f"Engine version must look like 0.11.0, got {str(text)[:40]!r}")
    return tuple(int(w) for w in words)


def canonical_version(text: str) -> str:
    """A version as typed, checked: '0.11.0', 'v0.11' -> '0.11'... ('' stays '': the newest)."""
    return ".".join(map(str, parse_version(text)))


MAX_SPLIT_CHARS = 20 * MAX_GPUS_PER_STAGE  # a share of up to 19 characters per device


def canonical_split(text: str) -> str:
    """A llama.cpp --tensor-split as typed ('3,1', '24/12', '0.6, 0.4'): each device's share of the layers, joined by
    commas ('' stays '': equal shares); ValueError unless the shares are numbers >= 0, at least one above 0."""
    text = str(text).strip()
    if not text:
        return ""
    if len(text) > MAX_SPLIT_CHARS:
        raise ValueError(f"Tensor split must be at most {MAX_SPLIT_CHARS} characters")
    try:
        shares = [float(part) for part in text.replace("/", ",").split(",")]
    except ValueError:
        raise ValueError(f"Tensor split must be shares separated by commas, e.g. 3,1; got {text[:40]!r}") from None
    if len(shares) > MAX_GPUS_PER_STAGE or not all(0 <= x < 1e9 for x in shares) or not any(shares):
        raise ValueError(f"Tensor split must be 1 to {MAX_GPUS_PER_STAGE} shares of at least 0, one of them above 0; "
                         f"got {text[:40]!r}")
    return ",".join(f"{x:g}" for x in shares)


MAX_OVERRIDE_CHARS = 4000
# A buffer type of llama.cpp's -ot: "CPU", or a GPU backend's device buffer as ggml_backend_buft_name prints it
# (CUDA0, ROCm1, Vulkan0, SYCL0, MTL0...; the index is the device's)
BUFFER_DEVICE = re.compile(r"(?:CUDA|ROCm|Vulkan|SYCL|MTL|Metal|CANN|MUSA)(\d+)")


def canonical_overrides(text: str) -> str:
    r"""llama.cpp's -ot / --override-tensor as typed: `pattern=BUFFER` items separated by commas, each pattern a
    regular expression searched in the GGUF tensor names ('\.ffn_.*_exps\.=CPU'); several -ot options join with
    commas, as common/arg.cpp parse_tensor_buffer_overrides appends them ('' stays ''). ValueError unless every item
    has a pattern that compiles and a buffer CPU or a device's (CUDA0...)."""
    text = str(text).strip()
    if not text:
        return ""
    if len(text) > MAX_OVERRIDE_CHARS:
        raise ValueError(f"Tensor overrides must be at most {MAX_OVERRIDE_CHARS} characters")
    items = []
    for item in text.split(","):  # split on every comma, as string_split does (a pattern cannot hold one)
        pattern, eq, buffer = item.strip().partition("=")  # llama.cpp splits at the first '='
        if not eq or not pattern:
            raise ValueError(f"Tensor overrides must be pattern=BUFFER items (e.g. '\\.ffn_.*_exps\\.=CPU'), got "
                             f"{item.strip()[:40]!r}")
        if buffer != "CPU" and not BUFFER_DEVICE.fullmatch(buffer):
            raise ValueError(f"Tensor overrides: buffer type {buffer[:20]!r} is not CPU or a device's (CUDA0, "
                             "CUDA1...)")
        try:
            re.compile(pattern)
        except re.error as err:
            raise ValueError(f"Tensor overrides: {pattern[:40]!r} is not a regular expression ({err})") from None
        if _nested_repeat(pattern):
            raise ValueError(f"Tensor overrides: {pattern[:40]!r} repeats a group that repeats (e.g. '(a+)+'), which "
                             "can take exponential time to match; write it without the nesting")
        items.append(f"{pattern}={buffer}")
    return ",".join(items)


def _nested_repeat(pattern: str) -> bool:
    """Whether a regular expression repeats (*, +, {m,n}) a group that itself holds a repetition: the shape whose
    backtracking can grow exponentially with the name's length. Escapes and character classes are skipped."""
    repeats = "*+{"
    open_groups: list[bool] = []  # per open group: whether it holds a repetition so far
    i, closed = 0, False  # closed: the previous token closed a group holding a repetition
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i, closed = i + 2, False
            continue
        if ch == "[":  # a character class: skip to its closing bracket
            j = i + 2 if pattern[i + 1:i + 2] == "]" else i + 1
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i, closed = j + 1, False
            continue
        if ch in repeats:
            if closed:
                return True
            if open_groups:
                open_groups[-1] = True
        elif ch == "(":
            open_groups.append(False)
        elif ch == ")" and open_groups:
            held = open_groups.pop()
            if held and open_groups:
                open_groups[-1] = True
            i, closed = i + 1, held
            continue
        closed = False
        i += 1
    return False


@functools.lru_cache(maxsize=64)
def override_rules(text: str) -> tuple[tuple[re.Pattern, int], ...]:
    """The overrides of a canonical -ot text: (compiled pattern, device index or -1 for host memory), in order."""
    rules = []
    for item in text.split(",") if text else ():
        pattern, _, buffer = item.partition("=")
        rules.append((re.compile(pattern), -1 if buffer == "CPU" else int(BUFFER_DEVICE.fullmatch(buffer)[1])))
    return tuple(rules)


CPU_MOE_ALL = 10_000  # n_cpu_moe: llama.cpp's --cpu-moe (every layer's experts in host RAM)
AUTO_FIT = -1  # max_model_len: vLLM's `--max-model-len auto` (or -1), the longest length the KV cache holds
MAX_ROPE_CHARS = 1000
MAX_ROPE_FACTOR = 1024.0
ROPE_WRAPPERS = ("rope_scaling", "rope_parameters")  # the key of --hf-overrides / --json-model-override-args


def canonical_rope_scaling(text: str) -> str:
    """A RoPE-scaling override as the engines take it (vLLM --hf-overrides / --rope-scaling, SGLang
    --json-model-override-args): the JSON object '{"rope_type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 32768}', also inside {"rope_scaling": ...} or {"rope_parameters": ...}; kept as
    compact JSON with sorted keys, "type" read as "rope_type" as vLLM's patch_rope_parameters and transformers' configs
    do ('' stays '': the config's own). ValueError unless it names a rope_type, its factor is a number in (0, 1024]
    and its original_max_position_embeddings a whole number of positions."""
    text = str(text).strip()
    if not text:
        return ""
    if len(text) > MAX_ROPE_CHARS:
        raise ValueError(f"RoPE scaling must be at most {MAX_ROPE_CHARS} characters of JSON")
    try:
        rope = json.loads(text)
    except ValueError:
        raise ValueError('RoPE scaling must be JSON, e.g. {"rope_type": "yarn", "factor": 4.0, '
                         f'"original_max_position_embeddings": 32768}}; got {text[:40]!r}') from None
    if isinstance(rope, dict) and len(rope) == 1 and next(iter(rope)) in ROPE_WRAPPERS:
        rope = next(iter(rope.values()))
    if not isinstance(rope, dict) or not all(isinstance(v, (str, int, float, bool)) or v is None
                                             for v in rope.values()):
        raise ValueError("RoPE scaling must be one JSON object of plain values (rope_type, factor, "
                         "original_max_position_embeddings...)")
    if "type" in rope:
        rope.setdefault("rope_type", rope.pop("type"))
    kind, factor = rope.get("rope_type"), rope.get("factor", 1.0)
    positions = rope.get("original_max_position_embeddings", 1)
    if not isinstance(kind, str) or not kind or len(kind) > 40:
        raise ValueError('RoPE scaling must name its "rope_type" (yarn, linear, dynamic, llama3, longrope...)')
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                               or not 0 < factor <= MAX_ROPE_FACTOR):
        raise ValueError(f"RoPE scaling factor must be a number above 0 and at most {MAX_ROPE_FACTOR:g}, "
                         f"got {factor!r}")
    if isinstance(positions, bool) or not isinstance(positions, int) or not 1 <= positions <= MAX_SEQ_LEN:
        raise ValueError(f"original_max_position_embeddings must be a whole number from 1 to {MAX_SEQ_LEN:,}, "
                         f"got {positions!r}")
    return json.dumps(rope, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=64)
def rope_override(text: str) -> tuple[tuple[str, object], ...]:
    """The items of a canonical RoPE-scaling override (() when none): read by each engine's length rule."""
    return tuple(json.loads(text).items()) if text else ()


def split_shares(s: ServeScenario) -> tuple[float, ...]:
    """Each device's share of the layers: the scenario's --tensor-split, else equal shares over its devices."""
    if s.tensor_split:
        return tuple(float(x) for x in s.tensor_split.split(","))
    return (1.0,) * s.tensor_parallel


def at_least(s: ServeScenario, *version: int) -> bool:
    """Whether the scenario's engine version is `version` or newer (an unset version is the newest)."""
    own = parse_version(s.engine_version or "")
    return not own or own >= version


@dataclass(frozen=True)
class ServeScenario:
    """One engine start-up. Engine options default to 0 / None = the engine's own default."""

    model: Model
    engine: str = declare(Input("Engine", "vllm", link="engine", flag="--engine", choices=ENGINES,
                                help="The serving engine whose memory accounting is followed."))
    gpu: str = declare(TARGET_GPU, default="h100-sxm", help="The GPU every rank runs on.")
    weights: str = declare(Input(
        "Weight format", CHECKPOINT, link="w", flag="--weights", choices=(CHECKPOINT, *WEIGHT_FORMATS),
        help="'checkpoint': as the config stores them (its quantization_config, else 16-bit); or a format to load "
             "them in (--quantization, a GGUF type)."))
    kv_dtype: str = declare(Input("KV-cache dtype", "bf16", link="kv", flag="--kv-dtype",
                                  choices=tuple(KV_DTYPE_BYTES),
                                  help="vLLM / SGLang --kv-cache-dtype; llama.cpp -ctk / -ctv; "
                                       "Ollama OLLAMA_KV_CACHE_TYPE."))
    tensor_parallel: int = declare(Input("Tensor parallel", 1, link="tp", flag="--tp", low=1,
                                         high=MAX_GPUS_PER_STAGE, help="GPUs each layer is split over."))
    tensor_split: str = declare(Input(
        "Tensor split", "", link="ts", flag="--tensor-split", text=canonical_split,
        help="llama.cpp -ts: each device's share of the layers, e.g. 3,1 (as many shares as devices: Tensor "
             "parallel); empty = equal shares."))
    pipeline_parallel: int = declare(Input("Pipeline parallel", 1, link="pp", flag="--pp", low=1,
                                           high=MAX_GPUS_PER_STAGE, help="Stages the layers are split into."))
    data_parallel: int = declare(Input("Data parallel", 1, link="dp", flag="--dp", low=1, high=MAX_GPUS_PER_STAGE,
                                       help="Replicas (vLLM / SGLang), each on its own tensor-parallel GPUs."))
    expert_parallel: bool = declare(Input(
        "Expert parallel", False, link="ep", flag="--enable-expert-parallel",
        help="MoE models: each GPU of the tp x dp ranks holds whole experts instead of a slice of every expert."))
    gpu_memory_utilization: float = declare(Input(
        "GPU memory utilization", 0.9, link="util", flag="--gpu-memory-utilization", low=0.01, high=1.0,
        help="vLLM: the fraction of each GPU's memory the engine may use (weights, activations and KV cache)."))
    max_model_len: int = declare(Input(
        "Max model length", 0, link="mml", flag="--max-model-len", unit="tokens", low=AUTO_FIT, high=MAX_SEQ_LEN,
        help="Longest request (prompt + output); 0 = the model's own context length; -1 = vLLM's --max-model-len "
             "auto (the longest the KV cache holds, v0.14+). SGLang --context-length, llama.cpp -c (per server), "
             "Ollama num_ctx."))
    max_num_seqs: int = declare(Input(
        "Max running requests", 0, link="mns", flag="--max-num-seqs", low=0, high=MAX_SEQS,
        help="vLLM --max-num-seqs / SGLang --max-running-requests; llama.cpp -np / Ollama OLLAMA_NUM_PARALLEL "
             "(slots); 0 = the engine's default."))
    max_num_batched_tokens: int = declare(Input(
        "Max batched tokens", 0, link="mnbt", flag="--max-num-batched-tokens", unit="tokens", low=0,
        high=MAX_SEQ_LEN, help="Tokens per forward: vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size, "
                               "llama.cpp -ub; 0 = the engine's default."))
    block_size: int = declare(Input("KV block size", 0, link="block", flag="--block-size", unit="tokens", low=0,
                                    high=1024, help="vLLM --block-size / SGLang --page-size; 0 = the default."))
    cuda_graph_max_bs: int = declare(Input(
        "CUDA-graph max batch", 0, link="cgbs", flag="--cuda-graph-max-bs", low=0, high=8192,
        help="The largest batch captured as a CUDA graph: vLLM --max-cudagraph-capture-size, SGLang "
             "--cuda-graph-max-bs; 0 = the engine's default."))
    enforce_eager: bool = declare(Input("Enforce eager", False, link="eager", flag="--enforce-eager",
                                        help="No CUDA graphs (vLLM --enforce-eager, SGLang --disable-cuda-graph)."))
    cpu_offload_gb: float = declare(Input(
        "CPU offload (GiB)", 0.0, link="cpuoff", flag="--cpu-offload-gb", unit="GiB", low=0.0, high=1_000_000.0,
        help="vLLM / SGLang --cpu-offload-gb: GiB of each GPU's layer weights kept in pinned host memory and read "
             "over PCIe at every forward; 0 = none."))
    host_memory_gb_s: float = declare(Input(
        "Host memory bandwidth (GB/s)", 0.0, link="hostbw", flag="--host-memory-bandwidth", unit="GB/s", low=0.0,
        high=100_000.0,
        help="llama.cpp / Ollama: the peak bandwidth of the host's RAM, where weights left in host memory (-ngl below "
             "the layers, --n-cpu-moe, -ot ...=CPU) are read by the CPU at every token: channels x MT/s x 8 bytes "
             "(dual-channel DDR5-6000: 2 x 6,000 x 8 = 96 GB/s); 0 = not known (the speeds leave that time out)."))
    kv_cache_memory: int = declare(Input(
        "KV cache memory (bytes)", 0, link="kvmem", flag="--kv-cache-memory", unit="bytes", low=0, high=2**50,
        help="vLLM: KV-cache bytes per GPU, replacing the utilization budget; 0 = not set."))
    mem_fraction_static: float = declare(Input(
        "Static memory fraction", 0.0, link="mfs", flag="--mem-fraction-static", low=0.0, high=1.0,
        help="SGLang: the fraction for weights + KV pool; 0 = SGLang's default for the GPU and TP size."))
    n_gpu_layers: int = declare(Input(
        "GPU layers", -1, link="ngl", flag="--n-gpu-layers", low=-1, high=10_000,
        help="llama.cpp -ngl / Ollama num_gpu: the last N repeating layers go to the GPU, the output layer too "
             "when N exceeds them; -1 = all (llama.cpp's --fit: as many as fit)."))
    n_cpu_moe: int = declare(Input(
        "MoE layers on CPU", 0, link="ncmoe", flag="--n-cpu-moe", low=0, high=CPU_MOE_ALL,
        help=f"llama.cpp --n-cpu-moe: the experts of the first N layers stay in host RAM ({CPU_MOE_ALL:,} = "
             "--cpu-moe, every layer's)."))
    override_tensor: str = declare(Input(
        "Tensor overrides", "", link="ot", flag="--override-tensor", text=canonical_overrides,
        help="llama.cpp -ot: pattern=BUFFER items, each regular expression searched in the GGUF tensor names, the "
             "first match placing the tensor: '\\.ffn_.*_exps\\.=CPU' keeps every expert in host RAM, "
             "'blk\\.(4[0-9])\\.=CUDA1' puts layers 40-49 on the second GPU; empty = none."))
    flash_attention: bool = declare(Input(
        "Flash attention", True, link="fa", flag="--flash-attn",
        help="llama.cpp -fa (its compute buffer is smaller with it); the GPU engines always use it."))
    enable_lora: bool = declare(Input(
        "LoRA adapters", False, link="lora", flag="--enable-lora",
        help="vLLM / SGLang --enable-lora: every decoder linear gets buffers for Max LoRAs adapters of Max LoRA rank "
             "(vLLM with the weights, SGLang before its KV pool; SGLang also the embedding and lm_head)."))
    max_loras: int = declare(Input("Max LoRAs", 0, link="mloras", flag="--max-loras", low=0, high=1024,
                                   help="vLLM --max-loras / SGLang --max-loras-per-batch: LoRA adapters one batch can "
                                        "use (slots on the GPU); 0 = the engine's default (vLLM 1, SGLang 8)."))
    max_lora_rank: int = declare(Input("Max LoRA rank", 16, link="lrank", flag="--max-lora-rank",
                                       choices=(1, 8, 16, 32, 64, 128, 256, 320, 512),
                                       help="vLLM / SGLang --max-lora-rank: the rank every slot is sized for."))
    speculative_tokens: int = declare(Input(
        "MTP speculative tokens", 0, link="spec", flag="--num-speculative-tokens", low=0, high=16,
        help="vLLM speculative decoding with the checkpoint's own multi-token-prediction layers "
             "(--speculative-config '{\"method\": \"mtp\", ...}'): draft tokens per step; 0 = off."))
    sampler: str = declare(Input(
        "Top-k / top-p sampler", "auto", link="sampler", flag="--sampler", choices=("auto", "flashinfer", "pytorch"),
        help="vLLM: which top-k / top-p sampler ran (its start-up log says: 'Using FlashInfer for top-p & top-k "
             "sampling' or 'Falling back to the PyTorch-native implementation'); PyTorch's sorts the logits of its "
             "profiling run (from v0.17 only under 8 requests: a Triton filter above); auto = the release's usual "
             "one (FlashInfer before v0.11 and from v0.21)."))
    model_runner: str = declare(Input(
        "Model runner", "auto", link="runner", flag="--model-runner", choices=("auto", "v1", "v2"),
        help="vLLM: the model runner (VLLM_USE_V2_MODEL_RUNNER=1 / 0; the start-up log's 'Model loading took' line "
             "comes from model_runner.py on V2, gpu_model_runner.py on V1); V2 neither sorts the profiling run's "
             "logits nor budgets the CUDA graphs; auto = the release's usual one (V2 for dense models from 0.25)."))
    context_override: int = declare(Input(
        "Trained context override", 0, link="ctxov", flag="--max-position-embeddings", unit="tokens", low=0,
        high=MAX_SEQ_LEN,
        help="The model's trained context as the command overrides it: vLLM --hf-overrides / SGLang "
             "--json-model-override-args '{\"max_position_embeddings\": N}', llama.cpp --override-kv "
             "<arch>.context_length=int:N (llama-server caps each slot at it); 0 = the config's own."))
    rope_scaling: str = declare(Input(
        "RoPE scaling override", "", link="rope", flag="--rope-scaling", text=canonical_rope_scaling,
        help='vLLM / SGLang: a context extension the command sets, as JSON: {"rope_type": "yarn", "factor": 4.0, '
             '"original_max_position_embeddings": 32768} (vLLM --hf-overrides, SGLang --json-model-override-args); '
             "vLLM then accepts a max model length up to 32768 x 4; empty = the config's own."))
    allow_long_context: bool = declare(Input(
        "Allow a longer context", False, link="long", flag="--allow-long-context",
        help="VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 / SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1: a max model length above "
             "the one the engine derives from the config starts, with a warning, instead of being refused."))
    engine_version: str = declare(Input(
        "Engine version", "", link="ver", flag="--engine-version", text=canonical_version,
        help="The release whose accounting and defaults apply (e.g. 0.11.0); empty = the newest modelled."))
    model_id: str = ""  # the model's Hub id or file, for the launch command (the name when empty)

    def __post_init__(self) -> None:
        if not isinstance(self.model, Architecture):
            raise ValueError("serving engines need the architecture: choose a catalog model or a config.json")
        check_inputs(self)
        catalog.gpu(self.gpu)
        if not isinstance(self.model_id, str) or len(self.model_id) > 300:
            raise ValueError("model_id must be text of at most 300 characters")
        ranks = self.tensor_parallel * self.pipeline_parallel * self.data_parallel
        if ranks > 4096:
            raise ValueError(f"tp x pp x dp must be at most 4,096 GPUs, got {ranks:,}")
        object.__setattr__(self, "tensor_split", canonical_split(self.tensor_split))  # '24/8' -> '24,8'
        object.__setattr__(self, "rope_scaling", canonical_rope_scaling(self.rope_scaling))
        object.__setattr__(self, "override_tensor", canonical_overrides(self.override_tensor))
        named = max((device for _, device in override_rules(self.override_tensor)), default=-1)
        if named >= self.tensor_parallel:
            raise ValueError(f"Tensor overrides name device {named} (CUDA{named}); Tensor parallel (the devices) must "
                             f"be at least {named + 1}, got {self.tensor_parallel}")
        if self.tensor_split and len(self.tensor_split.split(",")) != self.tensor_parallel:
            raise ValueError(f"Tensor split names {len(self.tensor_split.split(','))} devices ({self.tensor_split}); "
                             f"Tensor parallel (the devices) must be the same, got {self.tensor_parallel}")
        if self.max_model_len == AUTO_FIT and self.engine != "vllm":
            raise ValueError(f"Max model length must be from 0 to {MAX_SEQ_LEN:,} tokens for {self.engine} (0 = the "
                             "model's own context length); -1 (auto-fit) is vLLM's")
        if self.pipeline_parallel > self.model.num_layers:
            raise ValueError(f"pipeline_parallel must be between 1 and {self.model.num_layers} (the model's "
                             f"layers), got {self.pipeline_parallel}")

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel * self.data_parallel

    @property
    def context_length(self) -> int:
        """The model's own context length (max_position_embeddings, or the command's override of it), 8,192 when the
        config does not say."""
        return self.context_override or self.model.max_position_embeddings or DEFAULT_CONTEXT


DEFAULT_CONTEXT = 8192


@dataclass(frozen=True)
class ServeReport:
    """One engine start-up, on its most loaded GPU. `per_gpu` sums to the bytes the engine holds on that GPU."""

    engine: str
    gpus: int  # GPUs the deployment uses (tp x pp x dp; llama.cpp: the devices of --tensor-split)
    gpu_bytes: int  # one GPU's memory as the engine sees it (cudaMemGetInfo total)
    budget_bytes: int  # what the engine allows itself on one GPU (vLLM: utilization x total)
    per_gpu: tuple[tuple[str, int], ...]  # ENGINE_COMPONENTS names -> bytes
    kv_cache_tokens: int  # tokens the KV pool holds ("GPU KV cache size", max_total_num_tokens, n_ctx)
    max_concurrency: float  # requests of max_model_len tokens the pool holds at once
    max_model_len: int  # the request length the engine was started with
    max_model_len_that_fits: int  # the longest request the pool holds (0 when nothing fits)
    host_bytes: int = 0  # host RAM the engine uses for weights / KV kept off the GPU
    settings: tuple[tuple[str, object], ...] = ()  # the defaults the engine resolved (max_num_seqs...)
    log: tuple[str, ...] = ()  # the start-up lines the engine would print
    warnings: tuple[str, ...] = ()  # the engine's own error text when it would refuse to start, and risks
    assumptions: tuple[str, ...] = ()
    command: str = ""

    @property
    def total(self) -> int:
        return sum(size for _, size in self.per_gpu)

    def component(self, name: str) -> int:
        return dict(self.per_gpu).get(name, 0)

    @property
    def starts(self) -> bool:
        """Whether the engine would start: no refusal among the warnings."""
        return not any(w.startswith(REFUSAL) for w in self.warnings)

    def to_dict(self, inputs: dict) -> dict:
        """The CLI's JSON object (keys kept stable)."""
        return {"engine": self.engine, "inputs": inputs, "gpus": self.gpus, "gpu_bytes": self.gpu_bytes,
                "budget_bytes": self.budget_bytes, "per_gpu": dict(self.per_gpu), "total_per_gpu": self.total,
                "host_bytes": self.host_bytes, "kv_cache_tokens": self.kv_cache_tokens,
                "max_concurrency": round(self.max_concurrency, 4), "max_model_len": self.max_model_len,
                "max_model_len_that_fits": self.max_model_len_that_fits, "starts": self.starts,
                "settings": dict(self.settings), "command": self.command, "log": list(self.log),
                "warnings": list(self.warnings), "assumptions": list(self.assumptions)}


REFUSAL = "The engine refuses to start: "  # the prefix of a warning that says the engine would not start


def make_report(engine: str, components: dict[str, int], **fields) -> ServeReport:
    """A report with its components in the canonical order (unknown names are a programming error)."""
    unknown = set(components) - set(ENGINE_COMPONENTS)
    if unknown:
        raise ValueError(f"unknown engine component(s): {', '.join(sorted(unknown))}")
    ordered = tuple((name, int(components[name])) for name in ENGINE_COMPONENTS if name in components)
    return ServeReport(engine=engine, per_gpu=ordered, **fields)


@dataclass(frozen=True)
class WeightSplit:
    """A model's weight bytes in one format, split by how engines shard them."""

    experts: int  # routed-expert matrices: sliced over TP, or whole experts over tp x dp with expert parallelism
    embeddings: int  # token embedding and lm_head: vocabulary-parallel over TP, on the first / last stage
    layers: int  # every other 2-D weight of the decoder blocks: split over TP and over the pipeline stages
    vectors: int  # norms, biases: replicated over TP
    towers: int = field(default=0)  # vision / audio towers, 16-bit


def weight_split(s: ServeScenario) -> WeightSplit:
    """The scenario's weights in its format (the checkpoint's own unless overridden), by how they shard."""
    return _weight_split(s.model, s.weights)


def tensor_size(a: Architecture, weights: str) -> Callable[[Tensor], int]:
    """Bytes of one tensor of `a` in the scenario's weight format (the checkpoint's own layout for CHECKPOINT)."""
    checkpoint = a.checkpoint if weights == CHECKPOINT and a.checkpoint is not None \
        and a.checkpoint.format_id is not None else None
    if checkpoint is not None:
        return functools.partial(checkpoint.tensor_bytes, a)
    fmt = weight_format("bf16" if weights == CHECKPOINT else weights)
    return lambda t: tensor_bytes(fmt, t, a)


@functools.lru_cache(maxsize=1024)
def _weight_split(a: Architecture, weights: str) -> WeightSplit:
    size_of = tensor_size(a, weights)
    experts = embeddings = layers = vectors = 0
    for t in tensors(a):
        size = size_of(t)
        if not t.is_matrix:
            vectors += size
        elif t.is_expert:
            experts += size
        elif t.layer < 0:
            embeddings += size
        else:
            layers += size
    return WeightSplit(experts=experts, embeddings=embeddings, layers=layers, vectors=vectors,
                       towers=a.tower_parameters * BF16_BYTES)


FUSED_PARAMETERS = {"attn_k": "attn_q", "attn_v": "attn_q", "ffn_up": "ffn_gate", "expert_up": "expert_gate",
                    "shared_up": "shared_gate"}  # roles the engines store in the parameter of another (qkv, gate_up)


def offloaded_bytes(s: ServeScenario, first_layer: int, end_layer: int, expert_ranks: int) -> int:
    """Bytes of one GPU's layer weights --cpu-offload-gb moves to pinned host memory: vLLM's UVAOffloader
    (vllm/model_executor/offloader/uva.py in the v0.22.0 wheel) and SGLang's OffloaderV1 (sglang/srt/utils/
    offloader.py, v0.5.23 wheel) wrap the decoder layers of the GPU's stage in order and move their parameters one
    at a time until cpu_offload_gb x 2^30 bytes are offloaded ("we use per-parameter offloading": the last one may
    overshoot). Parameters in the order the estimator lists a layer's tensors, q / k / v and gate / up fused as the
    engines store them, each sliced over TP (experts over `expert_ranks`), vectors whole."""
    budget = int(s.cpu_offload_gb * 2**30)
    if budget <= 0:
        return 0
    a: Architecture = s.model
    size_of, tp = tensor_size(a, s.weights), s.tensor_parallel
    offloaded, previous = 0, None
    for t in tensors(a):
        if not first_layer <= t.layer < end_layer:
            continue
        size = size_of(t) / (expert_ranks if t.is_expert else tp) if t.is_matrix else size_of(t)
        fused = previous is not None and previous.layer == t.layer and t.role in FUSED_PARAMETERS and \
            FUSED_PARAMETERS[t.role] in (previous.role, FUSED_PARAMETERS.get(previous.role))
        if offloaded >= budget and not fused:
            break
        offloaded += math.ceil(size)
        previous = t
    return offloaded


def model_ref(s: ServeScenario) -> str:
    """How the launch command names the model: its Hub id, else its name, quoted for a shell when needed."""
    return shlex.quote(s.model_id or s.model.name or "MODEL")


def gib(num_bytes: float) -> str:
    """GiB with two decimals, as the engines print them."""
    return f"{num_bytes / GiB:.2f}"
