"""SGLang (`python -m sglang.launch_server`): how a start-up divides each GPU, from SGLang's source.

Read in sgl-project/sglang:
  python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py at 001ccef0072a4537d4ec6bdd50a73e6feb2c907d
      (get_cell_size_per_token, profile_max_num_token, handle_max_mamba_cache, set_num_tokens_hybrid_swa,
      init_memory: the max_num_reqs default, page alignment and the "Not enough memory" refusal);
  python/sglang/srt/server_args.py, ServerArgs._handle_gpu_memory_settings (the v0.5 rule of PR #10975,
      https://github.com/sgl-project/sglang/pull/10975, "General heuristics for --mem-fraction-static"; the stored
      copy read has no commit attached, so the PR is the reference) and _generate_cuda_graph_batch_sizes;
  python/sglang/srt/model_executor/pool_configurator.py at 003fca8027387a3d6565b2c08e497e3020ac6211 (the newer
      home of the same arithmetic: DefaultPoolConfigurator, HybridSWAPoolConfigurator, the refusal text);
  python/sglang/srt/utils (get_available_gpu_memory returns free bytes / 2**30: every "GB" SGLang logs is a GiB;
      get_nvgpu_memory_capacity reads nvidia-smi's memory.total in MiB); mem_cache/memory_pool.py (each layer's
      K and V buffers hold size + page_size rows; "KV Cache is allocated. #tokens: ..."); configs/model_config.py
      (get_num_kv_heads = max(1, kv_heads // tp); is_hybrid_swa_model; the context-length refusal);
  managers/tp_worker.py (max_running_requests = min(max_total_num_tokens // 2 or the option, req_to_token pool
      size); max_req_len = min(context_len - 1, max_total_num_tokens - 1)).

The accounting, per GPU, in bytes (SGLang computes in GiB floats; the arithmetic is the same):

    total_gpu_memory  = free memory after CUDA and torch.distributed start ("Load weight begin. avail mem")
    available         = free memory after the weights are loaded ("Load weight end. avail mem")
    rest              = available - total_gpu_memory x (1 - mem_fraction_static)
    max_total_num_tokens = rest // cell_size, rounded down to whole pages
    cell_size (MHA)   = kv_heads_per_rank x (head_dim + v_head_dim) x layers x dtype bytes
    cell_size (MLA)   = (kv_lora_rank + qk_rope_head_dim) x layers x dtype bytes (replicated on every TP rank)

So mem_fraction_static x the pre-load free memory is the static pool (weights + KV pool) and the other
(1 - mem_fraction_static) share is left for activations and CUDA graphs: SGLang does not profile a forward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import catalog
from ..activations import inference_layer_peak
from ..architecture import Architecture, tensors
from ..kv_cache import indexer_bytes_per_token, kv_dtype_bytes, layer_elements, state_bytes
from ..units import BF16_BYTES, GiB
from .base import (REFUSAL, ServeReport, ServeScenario, at_least, gib, make_report, model_ref, offloaded_bytes,
                   rope_override, weight_split)
from .command import choice_of, human_int
from .vllm import CUDA_CONTEXT_BYTES, config_overrides, rope_of_overrides

MiB = 2**20

# server_args.py _handle_gpu_memory_settings: (GPU memory below, in MiB) -> (chunked_prefill_size,
# cuda_graph_max_bs below TP 4, cuda_graph_max_bs at TP 4 and more). B200 / MI300 and larger: 16384 and 512.
GPU_TIERS = ((20 * 1024, 2048, 8, 8), (35 * 1024, 2048, 24, 80), (60 * 1024, 4096, 32, 160),
             (90 * 1024, 8192, 256, 512), (160 * 1024, 8192, 256, 512))
LARGEST_TIER = (16384, 512)
# The reserve SGLang sizes for activations and CUDA graphs when --mem-fraction-static is not given (MiB):
RESERVE_CONSTANT_MIB = 512  # "Constant meta data (e.g., from attention backend)"
RESERVE_PER_PREFILL_TOKEN_MIB = 1.5  # x max(chunked_prefill_size, 2048): "For activation during large prefill"
RESERVE_PER_GRAPH_BATCH_MIB = 2  # x cuda_graph_max_bs: "For cuda graphs"
RESERVE_PER_8_RANKS_MIB = 1024  # x tp x pp / 8: "Some adjustments for large parallel size"
RESERVE_FLOOR_MIB = 10 * 1024  # on GPUs of more than 60 GiB the reserve is at least 10 GiB
RESERVE_FLOOR_ABOVE_MIB = 60 * 1024
# Before v0.5 (server_args.py ServerArgs.__post_init__ as released in v0.4.x, replaced by PR #10975's reserve rule):
# a fixed mem_fraction_static by TP size, chunked_prefill_size 2048 below 25,000 MiB else 8192, cuda_graph_max_bs 8
# (TP < 4) / 80 (TP >= 4) below 25,000 MiB else 160. Read in the stored copies of that function (find_string
# "self.mem_fraction_static = 0.81": the v0.4 releases carry the same table).
V04_FRACTION_BY_TP = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))  # (tp at least, mem_fraction_static)
V04_SMALL_GPU_MIB = 25_000
V04_SMALL = (2048, 8, 80)  # chunked_prefill_size, cuda_graph_max_bs below TP 4, at TP 4 and more
V04_LARGE = (8192, 160)
DEFAULT_PAGE_SIZE = 1  # ServerArgs.page_size None -> 1 for the default CUDA attention backends
MAX_PREFILL_TOKENS = 16384  # ServerArgs.max_prefill_tokens
# init_memory: max_num_reqs = min(max(int(max_total_num_tokens / context_len x 512), 2048), 4096)
REQS_PER_CONTEXT = 512
MIN_REQS, MAX_REQS = 2048, 4096
# Hybrid sliding-window pools (model_config.is_hybrid_swa_model): the SWA layers keep swa_full_tokens_ratio (0.8)
# tokens per full-attention token. Other windowed models (Gemma 2 / 3, Mistral) keep every token in every layer.
HYBRID_SWA_TYPES = frozenset({"llama4", "gpt_oss", "mimo_v2_flash", "step3p5", "gemma4", "gemma4_text"})
SWA_FULL_TOKENS_RATIO = 0.8
# Mamba / linear-attention hybrids (handle_max_mamba_cache): the state pool takes mamba_full_memory_ratio / (1 +
# ratio) of the rest; each running request needs MAMBA_SLOTS_PER_REQUEST state slots with the radix cache on.
MAMBA_FULL_MEMORY_RATIO = 0.9
MAMBA_SLOTS_PER_REQUEST = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
KV_DTYPES = ("bf16", "fp8", "fp32")  # auto / bfloat16, fp8_e4m3 / fp8_e5m2, float32 (model dtype fp32)
# With tensor or pipeline parallelism, torch.distributed starts before the weights load and pynccl runs a warm-up
# all-reduce (distributed/device_communicators/pynccl.py), so NCCL's channel buffers are already taken from the
# "Load weight begin" free memory: NCCL_BUFFSIZE (4 MiB) per channel, send and receive, to both ring neighbours, over
# up to 32 channels (NCCL docs, NCCL_BUFFSIZE / NCCL_MAX_NCHANNELS), plus the custom all-reduce buffer (8 MiB).
# PCIe GPUs open fewer channels, so this is an upper figure there.
NCCL_START_BYTES = 4 * MiB * 2 * 2 * 32 + 8 * MiB
# On ROCm the TP group also builds two IPC all-reduces inside the same "Init torch distributed" step
# (python/sglang/srt/distributed/parallel_state.py at 0005973a84f7a02787e270b6be5970d3022d07fe, GroupCoordinator:
# when use_custom_allreduce and world_size > 1, ca_comm = dispatch_custom_allreduce(...)(group, device), then on HIP
# qr_comm = QuickAllReduce(group, device)); the logs read print one "[AR] Using AiterCustomAllreduce" line per rank,
# so the TP group is the only group that builds them. Both are uncached hipMalloc / torch allocations held for the
# server's life, so they leave the "Load weight begin" free memory, and SGLang's
# (1 - mem_fraction_static) share shrinks with it. Only the Instinct MI300 / MI350 parts (gfx942, gfx950: SGLang's
# ROCm images and qr_rocm_arch_available's "gfx94" / "gfx95") and SGLang v0.5.8+ (the releases traced) are counted.
ROCM_IPC_ALLREDUCE_GPUS = frozenset({"mi300x", "mi325x", "mi350x", "mi355x"})
# 1. aiter's CustomAllreduce, SGLang's AMD default (device_communicators/custom_all_reduce.py,
#    dispatch_custom_allreduce, logging "[AR] Using AiterCustomAllreduce (AMD default)" once per rank in the logs
#    read; the stored copies of that function carry no commit), constructed without max_size, for world sizes
#    2, 4, 6, 8. ROCm/aiter aiter/dist/device_communicators/custom_all_reduce.py at v0.1.12.post1
#    (7b570738c85c0b5033a615004cbf12624a0e6fe2; the layout since #2607, 2026-04-05): max_size = 1 GiB, an uncached
#    "meta" buffer of meta_size() + 2 x max_size, a torch "input" buffer of max_size and an 8 MiB rank_data tensor.
#    meta_size() is sizeof(aiter::Signal) (csrc/include/custom_all_reduce.cuh: start and end [80][8] uint32 and
#    _flag[80] uint32, each 128-byte aligned = 5,504 bytes). SGLang's v0.5.10+ ROCm images carry these aiter
#    releases (amd-aiter 0.1.12.post1 in the 2026-04-30 image, per the bisect in Jacob0226/SGLang-benchmarks
#    results/_pr25742_matrix/README.md). At v0.1.10.post3 (6a0e7b26ccf33164785531212cc2ec2cde0b9243, 2026-02-12;
#    v0.1.10.post2 to v0.1.11 alike), the aiter of the v0.5.8 / v0.5.9 images' weeks (their pins were not read),
#    max_size was 128 MiB, with a meta_size() + max_size meta buffer, an input and an output buffer.
AITER_CA_WORLD_SIZES = (2, 4, 6, 8)
AITER_SIGNAL_BYTES = 5504
AITER_CA_BYTES = AITER_SIGNAL_BYTES + 2 * 2**30 + 2**30 + 8 * MiB  # v0.5.10+: meta, input, rank_data
AITER_CA_BYTES_V058 = AITER_SIGNAL_BYTES + 128 * MiB + 128 * MiB + 128 * MiB + 8 * MiB  # meta, input, output, rank_data
# 2. Quick reduce (device_communicators/quick_all_reduce.py at 054be181dbb611d6f60d142bb606bbb5fe9f04cd): world
#    sizes 2, 4, 8 on gfx94x / gfx95x, enabled when ROCM_QUICK_REDUCE_QUANTIZATION is not NONE, which SGLang's ROCm
#    image sets (docker/rocm.Dockerfile at 004ae46fa39b5524a7f96575ec3c3f52e9c4aee0: ENV
#    ROCM_QUICK_REDUCE_QUANTIZATION=INT8). Without ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB, sgl-kernel's
#    DeviceComms::init (sgl-kernel/csrc/allreduce/quick_all_reduce.h at fb334d3bf3a79b4f2bbb074661ee0ba3c97184ab)
#    allocates 2 x kMaxProblemSize (2 GiB) of data plus 2 x world_size x kMaxNumBlocks (304 x 4, quick_all_reduce_base.h
#    at 4775f3f03b23ed4493a9329a4dbc54ee17677476) uint32 flags, and a world_size-pointer list. Counted from v0.5.9:
#    the v0.5.8.post1 ROCm image has no amdsmi module and every start-up read logs "Failed to initialize
#    QuickAllReduce: name 'amdsmi_shut_down' is not defined" (ajith-sirra-amd/Issues at 561754ca and c40b7809; its
#    v0.5.9 image's logs have no such line and 4.00 GiB more taken at init on every rank).
QUICK_REDUCE_WORLD_SIZES = (2, 4, 8)
QUICK_REDUCE_MAX_PROBLEM_BYTES = 2**31
QUICK_REDUCE_MAX_BLOCKS = 304 * 4


# LoRA (--enable-lora, or --lora-paths): LoRAMemoryPool (sglang/srt/lora/mem_pool.py init_buffers, v0.5.23 wheel)
# allocates zeroed A and B buffers in the model's dtype after the weights and before the KV pool is sized
# (model_runner.initialize: load_model, then maybe_init_lora_manager; the pool takes the free memory left), for
# --max-loras-per-batch slots (default 8, srt/arg_groups/fields/lora.py; one of them serves base-only requests) of
# --max-lora-rank: per target module of every decoder layer (num_hidden_layers of the config, every pipeline stage
# alike) A [slots, rank x stacked, input shard] and B [slots, output shard, rank] (qkv_proj stacks q, k, v and
# gate_up_proj gate, up: as vLLM's slices), a MoE layer's [slots, experts, ...] per expert; with
# --lora-target-modules all (auto_detect_lora_target_modules: every LinearBase, FusedMoE, the vocabulary embedding and
# ParallelLMHead) also the embedding's A [slots, rank, vocabulary] and B [slots, hidden, rank], unsharded, and the
# lm_head's A [slots, rank, hidden] and B [slots, vocabulary shard, rank]. Adapters given with --lora-paths set the
# targets and the rank themselves; the estimate counts every module, an upper bound. Counted: attention q / k / v / o,
# the MLP, shared and routed experts; not counted: MLA's and linear attention's own projections.
DEFAULT_MAX_LORAS_PER_BATCH = 8
LORA_ROLES = {"attn_q": "column", "attn_k": "column", "attn_v": "column", "attn_output": "row",
              "ffn_gate": "column", "ffn_up": "column", "ffn_down": "row", "shared_gate": "column",
              "shared_up": "column", "shared_down": "row", "expert_gate": "column", "expert_up": "column",
              "expert_down": "row"}


def lora_bytes(s: ServeScenario) -> int:
    """Bytes of SGLang's LoRA memory pool on one GPU (the comment above)."""
    if not s.enable_lora:
        return 0
    a: Architecture = s.model
    tp = s.tensor_parallel
    expert_ranks = tp * s.data_parallel if s.expert_parallel else 0
    per_slot = 0.0
    for t in tensors(a):
        kind = LORA_ROLES.get(t.role)
        if kind is None or not t.is_matrix or t.layer < 0:
            continue
        split = 1 if t.is_expert and expert_ranks else tp  # expert parallelism: whole experts, unsliced
        copies = t.copies / expert_ranks if t.is_expert and expert_ranks else t.copies
        inputs, outputs = (t.cols / split, t.rows) if kind == "row" else (t.cols, t.rows / split)
        per_slot += copies * (inputs + outputs)
    per_slot += (a.vocab_size + a.hidden_size) + (a.hidden_size + a.vocab_size / tp)  # embedding, lm_head
    return math.ceil((s.max_loras or DEFAULT_MAX_LORAS_PER_BATCH) * s.max_lora_rank * per_slot * BF16_BYTES)


def rocm_allreduce_bytes(s: ServeScenario) -> tuple[int, int]:
    """(aiter custom all-reduce, quick reduce) bytes each rank of the TP group allocates at distributed init on an
    Instinct MI300 / MI350 GPU (0, 0 elsewhere, on one GPU, or before SGLang v0.5.8; no quick reduce in v0.5.8)."""
    tp = s.tensor_parallel
    if catalog.gpu(s.gpu).id not in ROCM_IPC_ALLREDUCE_GPUS or not at_least(s, 0, 5, 8):
        return 0, 0
    custom = (AITER_CA_BYTES if at_least(s, 0, 5, 10) else AITER_CA_BYTES_V058) if tp in AITER_CA_WORLD_SIZES else 0
    quick = 2 * QUICK_REDUCE_MAX_PROBLEM_BYTES + 2 * tp * QUICK_REDUCE_MAX_BLOCKS * 4 + tp * 8 \
        if tp in QUICK_REDUCE_WORLD_SIZES and at_least(s, 0, 5, 9) else 0
    return custom, quick


@dataclass(frozen=True)
class Defaults:
    """What SGLang resolves when an option is not given."""

    gpu_mem_mib: int  # nvidia-smi memory.total, the figure the rule reads
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    mem_fraction_static: float
    reserved_mib: float  # the reserve the default mem_fraction_static leaves (0 when the option was given)
    page_size: int


def gpu_mem_mib(gpu_id: str) -> int:
    """The GPU's memory as SGLang's rule reads it: nvidia-smi memory.total in MiB (get_nvgpu_memory_capacity),
    which the catalog keeps as memory_bytes (the CUDA-visible total the engine allocates from is a few hundred
    MiB less)."""
    raw = next(g for g in catalog._read("gpus.json")["gpus"] if g["id"] == catalog.gpu(gpu_id).id)
    return int(raw["memory_bytes"]) // MiB


def resolve_defaults(s: ServeScenario) -> Defaults:
    """server_args._handle_gpu_memory_settings, no DP attention, no speculative decoding, no piecewise graphs."""
    mem = gpu_mem_mib(s.gpu)
    if not at_least(s, 0, 5):
        return _v04_defaults(s, mem)
    chunk, graph_bs = LARGEST_TIER
    for below, tier_chunk, small_tp, large_tp in GPU_TIERS:
        if mem < below:
            chunk, graph_bs = tier_chunk, (small_tp if s.tensor_parallel < 4 else large_tp)
            break
    chunk, graph_bs = s.max_num_batched_tokens or chunk, s.cuda_graph_max_bs or graph_bs
    mfs, reserved = s.mem_fraction_static, 0.0
    if not mfs:
        reserved = (RESERVE_CONSTANT_MIB + max(chunk, 2048) * RESERVE_PER_PREFILL_TOKEN_MIB
                    + graph_bs * RESERVE_PER_GRAPH_BATCH_MIB
                    + s.tensor_parallel * s.pipeline_parallel / 8 * RESERVE_PER_8_RANKS_MIB)
        if mem > RESERVE_FLOOR_ABOVE_MIB:
            reserved = max(reserved, RESERVE_FLOOR_MIB)
        mfs = round((mem - reserved) / mem, 3)
    return Defaults(gpu_mem_mib=mem, chunked_prefill_size=chunk, cuda_graph_max_bs=graph_bs,
                    mem_fraction_static=mfs, reserved_mib=reserved, page_size=s.block_size or DEFAULT_PAGE_SIZE)


def _v04_defaults(s: ServeScenario, mem: int) -> Defaults:
    """SGLang before v0.5: mem_fraction_static from the TP size alone (V04_FRACTION_BY_TP), no reserve rule."""
    if mem < V04_SMALL_GPU_MIB:
        chunk, graph_bs = V04_SMALL[0], V04_SMALL[1] if s.tensor_parallel < 4 else V04_SMALL[2]
    else:
        chunk, graph_bs = V04_LARGE
    graph_bs = s.cuda_graph_max_bs or graph_bs
    mfs = s.mem_fraction_static or next(f for tp, f in V04_FRACTION_BY_TP if s.tensor_parallel >= tp)
    return Defaults(gpu_mem_mib=mem, chunked_prefill_size=s.max_num_batched_tokens or chunk,
                    cuda_graph_max_bs=graph_bs, mem_fraction_static=mfs, reserved_mib=0.0,
                    page_size=s.block_size or DEFAULT_PAGE_SIZE)


def capture_batch_sizes(max_bs: int) -> tuple[int, ...]:
    """server_args._generate_cuda_graph_batch_sizes without speculative decoding."""
    sizes = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 512, 16)) + list(range(512, max_bs + 1, 32))
    return tuple(n for n in sizes if n <= max_bs)


def _weights_per_gpu(s: ServeScenario) -> tuple[int, int]:
    """(language-model weights, towers) on the most loaded GPU. SGLang's --ep-size splits the experts inside the
    tensor-parallel group (ep_size divides tp_size), so a GPU holds 1/tp of the experts with or without it;
    --dp without DP attention starts whole replicas."""
    w = weight_split(s)
    tp, pp = s.tensor_parallel, s.pipeline_parallel
    embeddings = w.embeddings / tp
    if pp > 1 and not s.model.tie_word_embeddings:
        embeddings /= 2  # the input embedding on the first stage, the lm_head on the last
    layers = (w.layers / tp + w.experts / tp + w.vectors) / pp
    return math.ceil(layers + embeddings), math.ceil(w.towers / tp)


@dataclass(frozen=True)
class Cells:
    """Bytes per token of the pools on one rank of the most loaded pipeline stage."""

    full: int  # per max_total_num_tokens token, every layer that keeps all tokens
    swa: int  # hybrid SWA layers (0 for other models)
    k_share: float  # K's share of the full layers' bytes (for the K / V log line)
    mamba_per_request: int  # recurrent state of one request (0 without Mamba / linear-attention layers)


def cells(a: Architecture, s: ServeScenario) -> Cells:
    """get_cell_size_per_token: the layers SGLang counts (every layer, only the attention layers of a Mamba /
    linear-attention hybrid), on the most loaded of `pp` stages (layers split evenly, the first stages one more)."""
    tp, pp = s.tensor_parallel, s.pipeline_parallel
    dtype = kv_dtype_bytes(s.kv_dtype if s.kv_dtype in KV_DTYPES else "bf16")
    hybrid_state = bool(a.linear_layers or a.mamba_layers)
    layers = a.attention_layers if hybrid_state else tuple(range(a.num_layers))
    stage = math.ceil(len(layers) / pp)
    layers = layers[:stage]
    sliding = set(a.sliding_layers) if a.model_type in HYBRID_SWA_TYPES else set()
    full = swa = k = 0
    for layer in layers:
        if a.is_mla:
            size = a.kv_lora_rank + a.qk_rope_head_dim
        else:
            size = layer_elements(a, layer if layer in a.attention_layers else 0, tp, True)
        if layer in sliding:
            swa += size
        else:
            full += size
            k += size if a.is_mla else size // 2
    full_bytes = math.ceil(full * dtype)
    if a.is_mla and a.index_heads:  # DSA indexer keys: uint8 values + a 4-byte scale per 128, every layer
        full_bytes += math.ceil(indexer_bytes_per_token(a) / pp)
    mamba = math.ceil(state_bytes(a, 1, tp) / pp) if hybrid_state else 0
    return Cells(full=full_bytes, swa=math.ceil(swa * dtype), k_share=k / full if full else 1.0,
                 mamba_per_request=mamba)


def derived_context_len(s: ServeScenario) -> int:
    """The longest --context-length SGLang accepts (get_context_length, sglang/srt/utils/hf_transformers/common.py in
    the v0.5.23 wheel; ModelConfig._derive_context_length refuses more unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN
    is set): max_position_embeddings x the RoPE override's factor, except that a factor stated with
    original_max_position_embeddings (YaRN's usual form) or of rope_type llama3 counts as 1: unlike vLLM's, Qwen3's
    documented YaRN override leaves it at the config's 40,960 positions."""
    rope = dict(rope_override(s.rope_scaling))
    if not rope or "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
        return s.context_length
    return int((rope.get("factor") or 1) * s.context_length)


def estimate(s: ServeScenario) -> ServeReport:
    a: Architecture = s.model
    g = catalog.gpu(s.gpu)
    tp = s.tensor_parallel
    d = resolve_defaults(s)
    mfs, page = d.mem_fraction_static, d.page_size
    derived = derived_context_len(s)
    length = s.max_model_len or derived
    warnings, notes = [], []
    if s.kv_dtype not in KV_DTYPES:
        warnings.append(f"{REFUSAL}--kv-cache-dtype {s.kv_dtype} is not an SGLang choice (auto, bf16, bfloat16, "
                        "fp8_e4m3, fp8_e5m2, fp4_e2m1); counted as 16-bit")
    if a.num_heads % tp:
        warnings.append(f"{REFUSAL}the attention layers assert that the {a.num_heads} attention heads divide by "
                        f"--tp {tp} (AssertionError while building the model)")
    if length > derived:
        too_long = (f"User-specified context_length ({length}) is greater than the derived context_length "
                    f"({derived}). This may lead to incorrect model outputs or CUDA errors. Note that the derived "
                    "context_length may differ from max_position_embeddings in the model's config.")
        warnings.append(f"Warning: {too_long}" if s.allow_long_context else
                        f"{REFUSAL}{too_long} To allow overriding this maximum, set the env var "
                        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")

    # Free memory before the weights: the catalog's CUDA-visible total less the CUDA context (vllm.py's constant)
    # and, with tensor or pipeline parallelism, NCCL's buffers and (ROCm) the IPC all-reduce buffers.
    pre_load = CUDA_CONTEXT_BYTES + (NCCL_START_BYTES if tp * s.pipeline_parallel > 1 else 0)
    custom_ar, quick_ar = rocm_allreduce_bytes(s)
    before = g.memory_bytes - pre_load - custom_ar - quick_ar
    weights, vision = _weights_per_gpu(s)
    offloaded = min(weights, offloaded_bytes(s, 0, -(-a.num_layers // s.pipeline_parallel), tp))
    weights -= offloaded  # --cpu-offload-gb: pinned host memory, outside "Load weight end ... mem usage"
    after = before - weights - vision
    lora = lora_bytes(s)
    reserve = int(before * (1 - mfs))
    rest = after - lora - reserve

    c = cells(a, s)
    mamba_slots = 0
    if c.mamba_per_request:  # handle_max_mamba_cache, ratio path (radix cache on, no --max-mamba-cache-size)
        mamba_share = rest * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)
        mamba_slots = max(0, int(mamba_share // c.mamba_per_request))
        rest -= mamba_slots * c.mamba_per_request
    cell = c.full + c.swa
    tokens = rest // cell if cell else 0  # floor division, as int(rest * 2**30) // cell_size (negative when short)
    max_reqs_pool = s.max_num_seqs or min(max(int(tokens / length * REQS_PER_CONTEXT), MIN_REQS), MAX_REQS)
    if mamba_slots:
        max_reqs_pool = min(max_reqs_pool, mamba_slots // MAMBA_SLOTS_PER_REQUEST)
    tokens = tokens // page * page
    full_tokens, swa_tokens = tokens, 0
    if c.swa and tokens > 0:  # set_num_tokens_hybrid_swa: the same bytes, swa tokens = 0.8 x full tokens
        full_tokens = int(tokens * cell / (c.full + SWA_FULL_TOKENS_RATIO * c.swa)) // page * page
        swa_tokens = int(full_tokens * SWA_FULL_TOKENS_RATIO) // page * page
        tokens = full_tokens
    starts = tokens > 0
    if not starts:
        warnings.append(f"{REFUSAL}Not enough memory. Please try to increase --mem-fraction-static. "
                        f"Current value: self.server_args.mem_fraction_static={mfs}")
    # Each layer's buffers hold size + page_size rows (row 0 takes padded tokens' dummy writes).
    kv = ((full_tokens + page) * c.full + (swa_tokens + page) * c.swa + mamba_slots * c.mamba_per_request) \
        if starts else 0
    max_running = min(tokens // 2 if not s.max_num_seqs else s.max_num_seqs, max_reqs_pool) if starts else 0
    longest = max(0, min((max(derived, length) if s.allow_long_context else derived) - 1, tokens - 1))
    by_pool = tokens / length if length else 0.0
    concurrency = min(by_pool, max_running) if starts else 0.0

    graphs = 0 if s.enforce_eager else d.cuda_graph_max_bs * RESERVE_PER_GRAPH_BATCH_MIB * MiB
    activations = max(0, reserve - graphs)
    prefill = inference_layer_peak(a, 1, d.chunked_prefill_size, d.chunked_prefill_size, flash_attention=True, tp=tp,
                                   linear_attention_kernels=True)
    if starts and prefill + graphs > reserve:
        warnings.append(
            f"The (1 - mem_fraction_static) reserve ({gib(reserve)} GiB) is smaller than a prefill chunk of "
            f"{d.chunked_prefill_size:,} tokens ({gib(prefill)} GiB) plus the CUDA graphs ({gib(graphs)} GiB): "
            "SGLang may run out of memory at the first long prompt; lower --mem-fraction-static or "
            "--chunked-prefill-size.")

    gb = GiB
    log = [f"Load weight begin. avail mem={before / gb:.2f} GB",
           f"Load weight end. avail mem={after / gb:.2f} GB, mem usage={(weights + vision) / gb:.2f} GB."]
    if starts:
        pool_line = f"KV Cache is allocated. #tokens: {tokens}, "
        if a.is_mla:
            log.append(pool_line + f"KV size: {(full_tokens + page) * c.full / gb:.2f} GB")
        else:
            k_bytes = (full_tokens + page) * c.full * c.k_share + (swa_tokens + page) * c.swa / 2
            v_bytes = (full_tokens + page) * c.full + (swa_tokens + page) * c.swa - k_bytes
            log.append(pool_line + f"K size: {k_bytes / gb:.2f} GB, V size: {v_bytes / gb:.2f} GB")
        if swa_tokens:
            log.insert(-1, f"Use sliding window memory pool. full_layer_tokens={full_tokens}, "
                           f"swa_layer_tokens={swa_tokens}")
        log.append(f"Memory pool end. avail mem={(after - lora - kv) / gb:.2f} GB")
        if graphs:
            log.append(f"Capture cuda graph end. avail mem={(after - lora - kv - graphs) / gb:.2f} GB. "
                       f"mem usage={graphs / gb:.2f} GB.")
        log.append(f"max_total_num_tokens={tokens}, chunked_prefill_size={d.chunked_prefill_size}, "
                   f"max_prefill_tokens={MAX_PREFILL_TOKENS}, max_running_requests={max_running}, "
                   f"context_len={length}, available_gpu_mem={(after - lora - kv - graphs) / gb:.2f} GB")

    if s.mem_fraction_static:
        notes.append(f"--mem-fraction-static {mfs:g} as given")
    elif not at_least(s, 0, 5):
        notes.append(f"SGLang {s.engine_version}'s default --mem-fraction-static at TP {tp}: {mfs:g} (before v0.5: "
                     "0.88 / 0.87 / 0.85 / 0.81 / 0.79 by TP 1 / 2 / 4 / 8 / 16, ServerArgs.__post_init__)")
    else:
        notes.append(
            f"SGLang's default --mem-fraction-static for {d.gpu_mem_mib:,} MiB (nvidia-smi) at TP {tp}: reserve "
            f"512 + 1.5 x max({d.chunked_prefill_size}, 2048) + 2 x {d.cuda_graph_max_bs} + {tp * s.pipeline_parallel}"
            f"/8 x 1024" + (", at least 10240" if d.gpu_mem_mib > RESERVE_FLOOR_ABOVE_MIB else "")
            + f" = {d.reserved_mib:,.0f} MiB -> {mfs:g} (v0.5 rule, server_args._handle_gpu_memory_settings; "
            "v0.4 used 0.88 / 0.87 / 0.85 / 0.81 / 0.79 by TP 1 / 2 / 4 / 8 / 16)")
    notes += [
        f"Free before the weights: {gib(g.memory_bytes)} GiB less the CUDA context ({gib(CUDA_CONTEXT_BYTES)} GiB)"
        + (f" and torch.distributed's NCCL / all-reduce buffers ({gib(NCCL_START_BYTES)} GiB)"
           if pre_load > CUDA_CONTEXT_BYTES else "")
        + (f", aiter's custom all-reduce buffers ({gib(custom_ar)} GiB)" if custom_ar else "")
        + (f", quick reduce's buffer ({gib(quick_ar)} GiB: ROCM_QUICK_REDUCE_QUANTIZATION=INT8 as SGLang's ROCm image "
           "sets it; 0 without it)" if quick_ar else "") + f" = {gib(before)} GiB; the static pool is {mfs:g} x that = "
        f"{gib(before * mfs)} GiB (weights + KV pool), the rest ({gib(reserve)} GiB) is left for activations and "
        "CUDA graphs",
        f"Defaults: chunked_prefill_size {d.chunked_prefill_size}, cuda_graph_max_bs {d.cuda_graph_max_bs} (an "
        "SGLang option this scenario does not carry: its default for the GPU and TP size), page_size "
        f"{page}, max_prefill_tokens {MAX_PREFILL_TOKENS}",
        f"KV cell: {c.full + c.swa:,} bytes per token"
        + (f" ({c.full:,} full-attention + {c.swa:,} sliding-window layers; the SWA pool keeps "
           f"{SWA_FULL_TOKENS_RATIO:g} x the full pool's tokens)" if c.swa else "")
        + (f"; Mamba / linear-attention state {c.mamba_per_request:,} bytes per request, "
           f"{mamba_slots:,} slots ({MAMBA_FULL_MEMORY_RATIO:g} : 1 of the rest, mamba_full_memory_ratio)"
           if c.mamba_per_request else ""),
        f"CUDA graphs: SGLang's own sizing, 2 MiB x cuda_graph_max_bs ({len(capture_batch_sizes(d.cuda_graph_max_bs))}"
        " batch sizes captured), inside the reserve" if graphs else "CUDA graphs off (--disable-cuda-graph)",
        f"max_running_requests {max_running}: " + (
            "--max-running-requests" if s.max_num_seqs else
            f"min(max_total_num_tokens // 2, the request pool of min(max(tokens / context_len x 512, 2048), 4096) = "
            f"{max_reqs_pool})") + f"; concurrency {by_pool:.2f} requests of {length:,} tokens by the pool"
        + (f", capped at {max_running} running requests" if starts and max_running < by_pool else ""),
        "--dp starts whole replicas (DP attention, --enable-dp-attention, is not modelled); --ep-size splits the "
        "experts inside the TP group",
    ]
    if c.mamba_per_request:
        notes.append("Mamba state counted in the config's SSM dtype; SGLang's --mamba-ssm-dtype defaults to float32")
    if offloaded:
        notes.append(f"--cpu-offload-gb {s.cpu_offload_gb:g}: {gib(offloaded)} GiB of each GPU's layer weights in "
                     "pinned "
                     "host memory (sglang/srt/utils/offloader.py OffloaderV1: whole parameters of the first layers, "
                     "until the budget is reached); every forward reads them over the host link")
    if lora:
        notes.append(f"LoRA: {s.max_loras or DEFAULT_MAX_LORAS_PER_BATCH} adapter slot(s) (--max-loras-per-batch) of "
                     f"rank {s.max_lora_rank} on every attention and MLP linear, the embedding and the lm_head, "
                     f"{gib(lora)} GiB per GPU before the KV pool is sized (sglang/srt/lora/mem_pool.py "
                     "LoRAMemoryPool); adapters that target fewer modules need less")
    allreduce = custom_ar + quick_ar
    components = {"weights": weights, **({"vision": vision} if vision else {}), **({"lora": lora} if lora else {}),
                  "activations": activations,
                  "non_torch": pre_load, **({"allreduce_buffers": allreduce} if allreduce else {}),
                  "cuda_graphs": graphs, "kv_cache": kv}
    return make_report(
        "sglang", components, gpus=s.gpus, gpu_bytes=g.memory_bytes, budget_bytes=int(before * mfs),
        kv_cache_tokens=max(0, tokens), max_concurrency=concurrency, max_model_len=length,
        host_bytes=offloaded * s.gpus,
        max_model_len_that_fits=longest if starts else 0,
        settings=(("mem_fraction_static", mfs), ("chunked_prefill_size", d.chunked_prefill_size),
                  ("cuda_graph_max_bs", d.cuda_graph_max_bs), ("max_running_requests", max_running),
                  ("page_size", page), ("max_total_num_tokens", tokens)),
        log=tuple(log), warnings=tuple(warnings), assumptions=tuple(notes + list(a.notes)), command=command(s))


def command(s: ServeScenario) -> str:
    """The `python -m sglang.launch_server` command line of the scenario (options at SGLang's defaults omitted)."""
    parts = ["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"] if s.allow_long_context else []
    parts += ["python -m sglang.launch_server --model-path", model_ref(s)]
    mfs = s.mem_fraction_static or resolve_defaults(s).mem_fraction_static
    options = (("--tp", s.tensor_parallel, 1), ("--pp-size", s.pipeline_parallel, 1), ("--dp", s.data_parallel, 1),
               ("--mem-fraction-static", mfs, None), ("--context-length", s.max_model_len, 0),
               ("--max-running-requests", s.max_num_seqs, 0), ("--chunked-prefill-size", s.max_num_batched_tokens, 0),
               ("--page-size", s.block_size, 0), ("--cuda-graph-max-bs", s.cuda_graph_max_bs, 0),
               ("--cpu-offload-gb", s.cpu_offload_gb, 0))
    parts += [f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"
              for flag, value, default in options if value != default]
    if s.kv_dtype != "bf16":
        parts.append(f"--kv-cache-dtype {KV_CACHE_DTYPE_FLAGS.get(s.kv_dtype, s.kv_dtype)}")
    if s.expert_parallel:
        parts.append(f"--ep-size {s.tensor_parallel}")
    if s.enforce_eager:
        parts.append("--disable-cuda-graph")
    if s.weights in QUANTIZATION_FLAGS:
        parts.append(f"--quantization {QUANTIZATION_FLAGS[s.weights]}")
    if s.enable_lora:
        parts.append("--enable-lora" + (f" --max-loras-per-batch {s.max_loras}" if s.max_loras else "")
                     + f" --max-lora-rank {s.max_lora_rank} --lora-target-modules all")
    if s.rope_scaling or s.context_override:
        parts.append(f"--json-model-override-args {config_overrides(s)}")
    return " ".join(parts)


KV_CACHE_DTYPE_FLAGS = {"fp8": "fp8_e4m3", "fp32": "auto"}
QUANTIZATION_FLAGS = {"fp8": "fp8", "bnb-nf4": "bitsandbytes", "nf4": "bitsandbytes", "awq-4bit": "awq",
                      "gptq-4bit": "gptq", "mxfp4": "mxfp4", "nvfp4": "modelopt_fp4", "w8a8-int8": "w8a8_int8"}

# Command-line import (estimator/engines/command.py).
PROGRAMS = ("sglang serve", *(f"{python} -m {module}" for python in ("python", "python3", "python3.10", "python3.11",
                                                                     "python3.12", "python3.13")
                               for module in ("sglang.launch_server", "sglang_router.launch_server")))
MODEL_FLAGS = ("--model-path", "--model")
KV_DTYPES_READ = {"auto": "bf16", "bf16": "bf16", "bfloat16": "bf16", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
                  "fp8": "fp8"}
QUANTIZATION_READ = {"fp8": "fp8", "modelopt_fp8": "fp8", "w8a8_fp8": "fp8", "awq": "awq-4bit",
                     "awq_marlin": "awq-4bit", "gptq": "gptq-4bit", "gptq_marlin": "gptq-4bit", "bitsandbytes": "nf4",
                     "mxfp4": "mxfp4", "modelopt_fp4": "nvfp4", "w8a8_int8": "w8a8-int8"}


def _expert_parallel(text: str) -> bool:
    """--ep-size N: experts split over N of the TP ranks (N > 1 is expert parallelism)."""
    try:
        return int(text) > 1
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None


FLAGS = {
    "--tp": ("tensor_parallel", int), "--tp-size": ("tensor_parallel", int),
    "--tensor-parallel-size": ("tensor_parallel", int),
    "--pp": ("pipeline_parallel", int), "--pp-size": ("pipeline_parallel", int),
    "--pipeline-parallel-size": ("pipeline_parallel", int),
    "--dp": ("data_parallel", int), "--dp-size": ("data_parallel", int), "--data-parallel-size": ("data_parallel", int),
    "--ep": ("expert_parallel", _expert_parallel), "--ep-size": ("expert_parallel", _expert_parallel),
    "--expert-parallel-size": ("expert_parallel", _expert_parallel),
    "--mem-fraction-static": ("mem_fraction_static", float),
    "--context-length": ("max_model_len", human_int), "--max-running-requests": ("max_num_seqs", int),
    "--chunked-prefill-size": ("max_num_batched_tokens", human_int), "--page-size": ("block_size", int),
    "--cuda-graph-max-bs": ("cuda_graph_max_bs", int), "--cpu-offload-gb": ("cpu_offload_gb", float),
    "--kv-cache-dtype": ("kv_dtype", choice_of(KV_DTYPES_READ, "--kv-cache-dtype")),
    "--quantization": ("weights", choice_of(QUANTIZATION_READ, "--quantization")),
    "--json-model-override-args": ("rope_scaling", rope_of_overrides),
    "--max-loras-per-batch": ("max_loras", int), "--max-lora-rank": ("max_lora_rank", int),
    "--lora-paths": ("enable_lora", lambda text: True),  # adapters enable LoRA (server_args, for compatibility)
}
# sglang/srt/environ.py (v0.5.23 wheel): SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN = EnvBool(False), which reads
# true / 1 / yes / y and false / 0 / no / n in any case (anything else is an error)
ENV_TRUTH = {"true": True, "1": True, "yes": True, "y": True, "false": False, "0": False, "no": False, "n": False}
ENV = {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": ("allow_long_context",
                                                     choice_of(ENV_TRUTH, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"))}
SWITCHES = {"--disable-cuda-graph": ("enforce_eager", True), "--enable-ep-moe": ("expert_parallel", True),
            "--enable-lora": ("enable_lora", True)}
