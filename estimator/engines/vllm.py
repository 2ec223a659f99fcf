"""vLLM (V1 engine): how a start-up divides each GPU, from vLLM's source.

Read at vllm-project/vllm 35d5cda (`vllm/v1/worker/gpu_worker.py`, `vllm/utils/mem_utils.py` at a6d5c39,
`vllm/v1/core/kv_cache_utils.py`, `vllm/engine/arg_utils.py` EngineArgs.get_batch_defaults):

    requested   = total x gpu_memory_utilization            (total: cudaMemGetInfo, the catalog's CUDA-visible bytes)
    weights     = what load_model allocated ("Model loading took X GiB")
    activations = the torch peak increase of profile_run: a dummy forward of max_num_batched_tokens tokens, then
                  the sampler over min(max_num_seqs, max_num_batched_tokens) requests
    non_torch   = memory outside PyTorch's allocator that grew from the worker's first snapshot to the end of
                  profiling (custom all-reduce and NCCL buffers, CUDA libraries, loaded kernels)
    graphs      = the CUDA-graph estimate of profile_cudagraph_memory (v0.21+, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
                  on by default), taken from the budget before the KV cache; before v0.21, and with Model Runner V2
                  (v0.25+, dense models), whose estimate is 0, the graphs are captured after the KV cache is
                  allocated and come on top of the requested memory
    KV cache    = requested - weights - activations - non_torch - graphs ("Available KV cache memory"), or
                  --kv-cache-memory

The KV cache is split into pages of block_size tokens. Layers of one kind (full attention, sliding window, chunked
local, MLA, Mamba / linear-attention state) form groups of equal size that share the pool:
    num_blocks = available // (page_bytes x group_size)      (kv_cache_utils.get_kv_cache_config_from_groups)
    max concurrency = num_blocks / blocks one request of max_model_len needs, summed over the groups
    GPU KV cache size = int(max concurrency x max_model_len) tokens
"""

from __future__ import annotations

import functools
import json
import math
import shlex
from dataclasses import dataclass, replace

from .. import catalog
from ..activations import inference_layer_peak
from ..architecture import Architecture, tensors
from ..kv_cache import indexer_bytes_per_token, kv_dtype_bytes, layer_elements, state_bytes
from ..units import BF16_BYTES, GiB
from .base import (AUTO_FIT, REFUSAL, ROPE_WRAPPERS, ServeReport, ServeScenario, at_least, canonical_rope_scaling, gib,
                   make_report, model_ref, offloaded_bytes, parse_version, rope_override, tensor_size, weight_split)
from .command import choice_of, human_int

# EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py), `vllm serve` (UsageContext.OPENAI_API_SERVER): GPUs
# with at least 70 GiB that are not A100s (H100, H200, B200, MI300X) get the larger defaults.
LARGE_GPU_BYTES = 70 * GiB
DEFAULT_BATCHED_TOKENS = {True: 8192, False: 2048}
DEFAULT_MAX_SEQS = {True: 1024, False: 256}
DEFAULT_BLOCK = 16  # CacheConfig.block_size for CUDA
DEFAULT_MAX_LORAS = 1  # LoRAConfig.max_loras
MLA_BLOCK = 64  # FlashMLA (the default MLA backend on Hopper and later) forces 64-token blocks
MAMBA_BLOCK_ALIGN = 16  # HybridAttentionMambaModelConfig: attention blocks grow in steps the kernels accept

# The sampler's dummy run with top-k and top-p set (gpu_model_runner._dummy_sampler_run), PyTorch's path
# (vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p, `logits.sort(dim=-1)`), at its peak, the sort: the
# 16-bit logits from compute_logits (2 bytes), their fp32 copy (4), the sorted values (4) and int64 indices (8),
# the int64 index sequence torch.sort hands CUB as the values to permute (8), and CUB's radix-sort alternate key
# and value buffers (4 + 8) = 38 bytes per logit. Checked against the llm-d H100 profiles of Qwen3-0.6B,
# Llama-3.1-8B, gpt-oss-20b and Llama-3.3-70B (validation/engine_logs/vllm.json): 38.3-38.9 bytes per logit.
# Releases that sample with FlashInfer by default (VLLM_USE_FLASHINFER_SAMPLER) keep far less.
SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 8 + 8 + 4 + 8
# Which sampler runs is TopKTopPSampler's choice, and the start-up log says which ("Using FlashInfer for top-p & top-k
# sampling" / "Falling back to the PyTorch-native implementation"): the scenario's `sampler` input. 'auto': before
# v0.11 V1 takes FlashInfer wherever it is installed (the v0.10.1.1 wheel: VLLM_USE_FLASHINFER_SAMPLER "None means
# True" in V1; the dummy run already sets top_k / top_p), which filters without a sort (below; the v0.10.1 A100
# records, vllm-dennislee22-*, leave 0.5 GiB for the whole profiling peak and non-torch memory where the sort over 256
# requests would take 1.4 GiB); from SAMPLER_SORTS_SINCE FlashInfer is opt-in and the native path sorts (the llm-d
# profiles), until the filter without a sort below. Model Runner V2's dummy requests filter nothing: the 16-bit
# logits and their fp32 copy.
GREEDY_SAMPLER_BYTES_PER_LOGIT = 2 + 4
SAMPLER_SORTS_SINCE = (0, 11)
# From v0.17 the PyTorch-native path filters without sorting when the batch has 8 rows or more: apply_top_k_top_p runs
# apply_top_k_top_p_triton (vllm/v1/sample/ops/topk_topp_sampler.py, `if HAS_TRITON and logits.shape[0] >= 8`, in
# the v0.17.0 wheel and not in v0.16.0's), which masks the fp32 logits in place; forward_native then keeps the
# softmax probabilities and random_sample its exponential draws: 2 + 4 + 4 + 4 = 14 bytes a logit. FlashInfer's path
# (forward_cuda -> flashinfer.sampling.top_k_top_p_sampling_from_logits, flashinfer/sampling.py in the 0.7.4 wheel:
# the dummy run's top_k of vocab - 1 misses its fast path, so top_k_mask_logits' masked copy and their softmax) holds
# the same 14; it is vLLM's default on CUDA from v0.21 (vllm/envs.py: VLLM_USE_FLASHINFER_SAMPLER defaults to True in
# the v0.21.0 wheel, None = off in v0.19.0's and v0.20.0's), opt-in before.
FILTER_SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 4
TRITON_FILTER_SINCE, TRITON_FILTER_MIN_ROWS = (0, 17), 8
FLASHINFER_SAMPLER_DEFAULT_SINCE = (0, 21)

# Model Runner V2 (vllm/v1/worker/gpu/model_runner.py), the default for dense models since v0.25.0: "Model Runner V2
# is now the default for all dense models" (#44443, merged 2026-07-02; v0.25.0's release notes, as quoted in
# huggingface/trl#6406). vllm/config/vllm.py VllmConfig._is_default_v2_model_runner_model returns
# `is_default_v2_architecture or not model_config.is_moe`, and False for hybrid (Mamba / linear-attention) and
# attention-free models outside its list (quoted in vllm-project/vllm#49224, 2026-07): MoE and hybrid models keep the
# V1 runner. Two budget terms differ, read at vllm-project/vllm 0036d38de46c (vllm/v1/worker/gpu/model_runner.py):
# - GPUModelRunner.profile_cudagraph_memory is `return 0` ("NOTE(woosuk): It is TBD whether we keep this API or
#   not", added by #36520), so gpu_worker.py determine_available_memory subtracts no graph estimate and the graphs
#   are captured after the KV cache, on top of the budget, as before v0.21 (vllm-project/vllm#49224: the KV cache
#   "claimed the whole gpu_memory_utilization budget"; the fix, #49233, was closed unmerged).
# - _dummy_sampler_run calls the V2 Sampler on InputBatch.make_dummy requests ("the sampler may skip top_k, top_p,
#   and logprobs"): vllm/v1/worker/gpu/sample/states.py SamplingStates fills top_k with the vocabulary size and top_p
#   with 1.0, so no request sorts; Sampler.sample (sample/sampler.py at b9928aee2a98) keeps the 16-bit logits and
#   their fp32 copy (`torch.empty_like(logits, dtype=torch.float32).copy_(logits)`), and gumbel_sample
#   (sample/gumbel.py) adds an int64 and an fp32 value per 1,024 logits: 6 bytes per logit, as before v0.11.
V2_RUNNER_SINCE = (0, 25)

# Memory outside PyTorch's allocator that grows between the worker's first snapshot (taken after NCCL is set up,
# gpu_worker.init_device) and the end of profiling: on one GPU the kernel images CUDA's lazy loading brings in at
# the first forward (0.13-0.14 GiB in the five llm-d H100 profiles of validation/engine_logs/vllm.json); with
# tensor parallelism NCCL's channel buffers, allocated at the first collective: NCCL_BUFFSIZE (4 MiB) per channel,
# send and receive, to both ring neighbours, over up to 32 channels (NCCL docs, "NCCL_BUFFSIZE" and
# "NCCL_MAX_NCHANNELS"), plus vLLM's custom all-reduce buffer (custom_all_reduce.py max_size 8 MiB). Not held: the
# ~1.7 GiB a GPU more that v0.10.0 logs at TP 4 / 8 on NVSwitch H100s, of which NCCL's NVLS buffers are 32 MiB x the
# TP size (NVIDIA/nccl v2.26.2-1 src/transport/nvls.cc); the rest is not traced (FINDINGS_engines.md E3a).
NON_TORCH_ONE_GPU = 128 * 2**20
NON_TORCH_TENSOR_PARALLEL = 4 * 2**20 * 2 * 2 * 32 + 8 * 2**20

# CUDA graphs. Read at vllm-project/vllm 21e39436c (2025-08-18; its gpu_model_runner.py logs "Graph capturing
# finished" at L2708, as the v0.10.1.1 logs print it), 27d7638b9 (2025-09-27, the week v0.11.0 was cut) and
# 1c5887661 (2026-05-06; its gpu_worker.py logs at L460 / L475, as the v0.21 club-3090 log prints them):
# - capture sizes (vllm/config/vllm.py _set_cudagraph_sizes, 1c5887661 L1427-1597): the largest is
#   min(max_num_seqs x decode_query_len x 2, 512, max_num_batched_tokens) (decode_query_len = 1 + speculative
#   tokens since #30330, 2025-12); the list is 1, 2, 4, then steps of 8 below 256 and of 16 from 256 (#26016,
#   2025-10-24, after v0.11.0; before it steps of 8 all the way: vllm/config/__init__.py L3771 at 21e39436c, the
#   largest min(2 x max_num_seqs, 512) from config/scheduler.py L244); with speculative decoding and FULL decode
#   graphs every size is rounded up to a multiple of decode_query_len (compilation.py
#   adjust_cudagraph_sizes_for_spec_decode, 1c5887661 L1406-1492, #28315).
# - modes: PIECEWISE graphs (one CUDA graph per compiled piece, the pieces split at every attention layer) for
#   every size; since v0.11.0 (FULL_AND_PIECEWISE default, #25444, 2025-09-23) also one FULL graph per size
#   between decode_query_len and max_num_seqs x decode_query_len (v1/cudagraph_dispatcher.py
#   initialize_cudagraph_keys, 1c5887661 L165-230; gpu_model_runner.py capture_model L3471 at 27d7638b9).
# - capture (capture_model, L2635-2708 at 21e39436c, L6107-6191 at 1c5887661) takes the largest size first so the
#   smaller ones reuse its memory pool; "took X GiB" is the fall of free memory over the capture: the pool (the
#   intermediate tensors of a forward of the largest size) plus what each captured graph keeps.
# - estimate (v0.21+, gpu_model_runner.py profile_cudagraph_memory; read in the v0.21.0, v0.22.0 and v0.26.0
#   release packages, L6049-6147 / L6265-6370 / L6576-6742, the same procedure in all three; line numbers below are
#   v0.22.0's, whose L6279 / L6365 are the lines the v0.22.1 log of vllm-mlopsassign-1 prints): after
#   torch.accelerator.empty_cache() (L6303), for each mode in get_capture_descs' order (v1/cudagraph_dispatcher.py
#   L330-354: PIECEWISE first, then FULL, each largest size first) it warms up and captures only the two largest
#   sizes, into one scratch pool (L6289-6296), reading the driver's free memory (torch.cuda.mem_get_info) before and
#   after each (L6305-6325). The first reading holds the eager warm-up's blocks (cudagraph_num_of_warmups = 1,
#   config/vllm.py L1240), the pool of the largest size and that graph; the second (at least 1 MiB, "for driver
#   overhead", L6329) is taken for each of the mode's other graphs; total = the largest first reading + the sum over
#   modes of (graphs - 1) x the second reading (L6362-6364). The FULL mode's first capture runs with sequences of
#   max_num_batched_tokens // its size tokens (profile_seq_lens, L6314-6321), which can make its first reading the
#   larger one (vllm-project/vllm#50780, hybrid GDN models); not modelled: the PIECEWISE first reading is taken.
#   gpu_worker.py determine_available_memory calls it inside memory_profiling, after profile_run (L392-411), and
#   subtracts it from the budget (L447-451) when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is set (vllm/envs.py
#   L1768 at v0.21.0, default "1" since #38284, 2026-04-21, "default since v0.21.0").
MAX_CAPTURE_SIZE = 512
# gpt-oss (GptOssForCausalLMConfig.verify_and_update_config, vllm/model_executor/models/config.py) raises the
# largest size when the user sets none, whatever max_num_seqs: to 1,024 in v0.10 (sizes 1, 2, 4, steps of 8 to 248,
# of 16 from 256 to 1,024: 83 graphs, the list the v0.10.1.1 start-up prints after "[config.py:273] Overriding max
# cuda graph capture size to 1024 for performance.", dennislee22/vLLM-benchmarking log/vllm.log at f8144414);
# to 992 in v0.11 ("When using full cuda graph with FA3, the max supported size is 992", range(256, 993, 16):
# "from 67 to 81" graphs; vllm 6c728f777 config.py L259 as quoted in SemiAnalysisAI/InferenceX#117, and
# vllm-project/vllm 0144dd5b0d2d); back to max_cudagraph_capture_size = 1,024 ("from 67 to 83") once #27840
# ("Remove max cudagraph size limit of 992", 2025-11) lifted the cap. v0.11.1's side of #27840 is not identified:
# it is taken as 992.
GPT_OSS_CAPTURE_CEILING = ((0, 0, 1024), (0, 11, 992), (0, 12, 1024))
FULL_DECODE_GRAPHS_SINCE = (0, 11)  # FULL_AND_PIECEWISE, #25444
STEP_16_CAPTURE_SIZES_SINCE = (0, 11, 1)  # #26016, merged after v0.11.0
SPECULATIVE_CAPTURE_SINCE = (0, 13)  # #28315 / #30330 (merged 2025-11 / 2025-12); the release is inferred
# What one captured graph keeps per layer it spans: kernel nodes and their parameters, held by the driver outside
# PyTorch's pool (the source measures it, it does not compute it), and what each all-reduce adds at TP > 1. Published
# logs print totals only, so both are derived from them by one rule over every V1 capture the estimator models
# (validation/engines.py derive_graph_constants; `python -m validation engines --graphs` prints it capture by
# capture): take out what the source gives (the pool of the largest size, twice since v0.21, _graph_terms) and divide
# what is left by graphs x layers; one value per configuration (start-ups that differ only in utilization or
# max_model_len are one); LAYER_GRAPH_BYTES is the median over the one-GPU configurations, rounded down. The 28 of
# validation/engine_logs/vllm.json (each rounded down): 24,914 (Qwen3-0.6B, H100, v0.11.0, vllm-llmd-5/-6), 72,369
# (gpt-oss-20b, vllm-llmd-1), 124,265 (Qwen3-32B-AWQ, RTX 5090, v0.17.1, vllm-culturedx-1/-2/-4), 137,738
# (Qwen3-30B-A3B, v0.22.1, vllm-mlopsassign-1), 154,632 (vllm-kuberay4366-1), 163,159 (Qwen2.5-3B, v0.17.1,
# vllm-memsuit-2), 165,688 (Phi-3-mini, v0.19.1, vllm-localai-1), 166,077 (gpt-oss-120b on one H100, v0.11.0,
# vllm-llmd-11: (round(1.03 x 2^30) - the pool at 992 tokens) / (162 graphs x 36 layers)), 169,247
# (vllm-controllersearch-1), 169,601 (vllm-elloraa-1), 172,889 (Llama-3.1-8B, v0.17.1, vllm-memsuit-1), 180,043
# (Qwen2.5-7B on an A40, vllm-isseihasegawa-1/-2), 181,271 (vllm-bilalrana-1), 188,613 (vllm-autoscientists-1),
# 189,927 (vllm-isseihasegawa-6), 201,645 (vllm-benyucong-2), 206,816 (Qwen3-30B-A3B on an H100, v0.10.2,
# vllm-kolyangg-1/-2), 212,608 (vllm-telcorag-1), 217,396 (PP 2, vllm-isseihasegawa-5), 218,450 (vllm-demoenvl4-1),
# 219,910 / 229,070 (Qwen3-32B / 14B on an A100, v0.11.0, vllm-pranay-2 / -1), 223,544 (vllm-benyucong-1), 247,192
# (Qwen2-7B on an A100, v0.10.1.1, vllm-dennislee22-1/-2), 330,350 (vllm-anton-1), 339,729 (vllm-mrefaat-1, T4),
# 918,837 (vllm-energyllm-1), 2,085,527 (two graphs only, vllm-memoryrlhf-1/-2): the mean of the middle two, 189,270.
# (llm-d's Llama-3.3-70B row at TP 1 has no capture: it failed at KV sizing, before the graphs, and its file's
# summary gives N/A.) Most configurations lie within 120-250 KB; the low ones are llm-d's v0.11.0 logs, measured
# net of PyTorch's cached blocks, which the first capture frees (torch.cuda.graph.__enter__, pytorch/pytorch
# torch/cuda/graphs.py: "Free as much memory as we can for the graph", torch.cuda.empty_cache()), down to -0.88 GiB in
# other llm-d rows; how much was cached is not in any log (validation/engine_logs/FINDINGS_engines.md E6).
LAYER_GRAPH_BYTES = 189_270
# With tensor parallelism each layer's two all-reduces are captured too: given LAYER_GRAPH_BYTES, the median over the
# twelve tensor-parallel configurations of what is left per all-reduce (each rounded down): 12,222 / 20,026 / 33,952
# (Llama-3-8B TP 4 on L4, v0.22.0 / v0.23.0 / v0.23.1 at 128 sequences, vllm-djl3055-1..3), 48,230 (Qwen3-32B TP 8,
# v0.10.0, vllm-daisuketakai-1/-5), 48,336 (Qwen3-32B TP 4, YaRN, vllm-daisuketakai-3), 79,643 (Qwen2-7B TP 2 on an
# A100, v0.10.1.1, vllm-dennislee22-4/-5), 103,779 (Qwen3-30B-A3B TP 4 on RTX 4090s, v0.11.0, vllm-27782-1), 105,705
# (Qwen2.5-72B TP 4 on L40S, v0.19.0, vllm-eksagentic-1), 114,992 (Qwen3-235B-A22B TP 8, vllm-daisuketakai-2/-4),
# 136,136 / 136,783 (Qwen2.5-7B TP 4 / 2 on A40s, vllm-isseihasegawa-4 / -3), 223,371 (gpt-oss-120b TP 4 over Ray
# across nodes, vllm-dennislee22-6): the mean of the middle two, 91,711.
ALLREDUCE_GRAPH_BYTES = 91_711
ALLREDUCES_PER_LAYER = 2  # attention output and MLP / MoE output projections (row-parallel layers)
# The estimate's per-graph term is one reading, the second-largest size captured right after the largest (whose
# pool and warm-up blocks it reuses), not the mean over the whole capture, and the logs that print the estimate imply
# about half of LAYER_GRAPH_BYTES per layer, with no all-reduce term at TP 2. What that one capture adds is measured by
# the driver, not computed by the source, so it is derived from those logs by the rule above
# (validation/engines.py derive_estimate_constant; `python -m validation engines --graphs` prints it): take out the
# pool terms (the first reading's warm-up and pool, _graph_terms) and divide what is left by (graphs - modes + 1)
# readings x layers; the median over the configurations, rounded down. The four of validation/engine_logs/vllm.json
# (each rounded down): 78,951 (Qwen3.6-27B hybrid, TP 2 on RTX 3090s, vllm-club3090-104-1: (0.88 - 0.8592) x the
# catalog's RTX 3090 CUDA total (25,286,672,384 bytes) - 92 MiB of pool terms, over 85 readings x 64 layers), 82,738
# (Qwen3-30B-A3B, v0.22.1 on an H100, vllm-mlopsassign-1), 84,508 (Qwen3.6-35B-A3B hybrid, v0.22.0 on one RTX 3090,
# vllm-club3090-pr323-2), 288,274 (Qwen3-30B-A3B, a v0.26.1 source build with local changes on an A100, 7 + 5 graphs,
# vllm-autoscientists-1): the mean of the middle two, 83,623.4, rounded down. The same TP-2 record implies no more per
# layer than the TP-1 ones,
SAMPLED_GRAPH_BYTES = 83_623
CUDA_GRAPHS_PROFILED_SINCE = (0, 21)
# "GPU KV cache size" was num_blocks // groups x block_size (v0.10.1, validation/engine_logs vllm-dennislee22-6);
# it is int(max concurrency x max_model_len) in the v0.21-0.24 logs (club-3090 records) and the current source.
CAPACITY_TOKENS_SINCE = (0, 21)
# The CUDA context and PyTorch's handles, created before vLLM's first snapshot and so outside its accounting: a typical
# size with CUDA 12's lazy module loading, not measured here; used only to warn that graphs captured on top of the
# budget may not fit, and to refuse weights that cannot load.
CUDA_CONTEXT_BYTES = 500 * 2**20


@dataclass(frozen=True)
class KVGroup:
    """Layers of one kind sharing the page pool: `count` layers, `block` tokens per page."""

    kind: str  # "full", "sliding", "chunked", "state"
    count: int
    block: int  # tokens per page of this kind
    window: int = 0


@functools.lru_cache(maxsize=256)
def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int = 1 << 30, decode_query_len: int = 1,
                  step_16: bool = True, round_to_query: bool = False, ceiling: int = 0) -> tuple[int, ...]:
    """vLLM's default CUDA-graph batch sizes (vllm/config/vllm.py _set_cudagraph_sizes): 1, 2, 4, then steps of 8
    (to 256 when `step_16`, then steps of 16) up to min(2 x max_num_seqs x decode_query_len, 512,
    max_num_batched_tokens), or up to min(`ceiling`, max_num_batched_tokens) where the model's config sets the
    largest size (gpt-oss); `round_to_query` rounds them up to multiples of decode_query_len (speculative decoding
    with FULL decode graphs)."""
    largest = min(ceiling or min(2 * max_num_seqs * decode_query_len, MAX_CAPTURE_SIZE), max_num_batched_tokens)
    sizes = [n for n in (1, 2, 4) if n <= largest]
    if step_16:
        sizes += list(range(8, min(largest + 1, 256), 8)) + list(range(256, largest + 1, 16))
    else:
        sizes += list(range(8, largest + 1, 8))
    if round_to_query and decode_query_len > 1:
        q = decode_query_len
        sizes = sorted({-(-n // q) * q for n in sizes if -(-n // q) * q <= largest}) or [q]
    return tuple(sizes)


@functools.lru_cache(maxsize=64)
def _graph_rules(version: str) -> tuple[bool, bool, bool, bool]:
    """(FULL decode graphs, steps of 16 from 256, sizes widened for speculative decoding, graphs profiled into the
    budget) for a release ('' = the newest)."""
    own = parse_version(version)
    return tuple(not own or own >= since for since in (FULL_DECODE_GRAPHS_SINCE, STEP_16_CAPTURE_SIZES_SINCE,
                                                       SPECULATIVE_CAPTURE_SINCE, CUDA_GRAPHS_PROFILED_SINCE))


def cuda_graph_counts(s: ServeScenario, max_num_seqs: int, batched: int) -> tuple[tuple[int, ...], int, int]:
    """(capture sizes, PIECEWISE graphs, FULL decode graphs) vLLM captures for the scenario's release."""
    full, step_16, speculative, _ = _graph_rules(s.engine_version or "")
    return _graph_counts(max_num_seqs, batched, 1 + s.speculative_tokens if speculative else 1, full, step_16,
                         s.cuda_graph_max_bs or capture_ceiling(s.model, s.engine_version or ""))


def capture_ceiling(a: Architecture, version: str) -> int:
    """The largest capture size the model's config sets (GPT_OSS_CAPTURE_CEILING), 0 where vLLM's default applies.
    A user's --max-cudagraph-capture-size (the scenario's cuda_graph_max_bs) replaces both (_set_cudagraph_sizes
    takes compilation_config.max_cudagraph_capture_size first)."""
    if a.model_type != "gpt_oss":
        return 0
    own = parse_version(version)
    return [size for *since, size in GPT_OSS_CAPTURE_CEILING if not own or own >= tuple(since)][-1]


@functools.lru_cache(maxsize=1024)
def _graph_counts(max_num_seqs: int, batched: int, q: int, full: bool, step_16: bool,
                  ceiling: int = 0) -> tuple[tuple[int, ...], int, int]:
    sizes = capture_sizes(max_num_seqs, batched, q, step_16 or bool(ceiling), full and q > 1, ceiling)
    decode = sum(1 for n in sizes if q <= n <= max_num_seqs * q) if full else 0
    return sizes, len(sizes), decode


@functools.lru_cache(maxsize=1024)
def pp_stages(num_layers: int, pp: int) -> tuple[tuple[int, int], ...]:
    """The [start, end) layers of each pipeline stage (vllm/distributed/utils.py get_pp_indices, read in the v0.22.0
    release package): num_layers // pp each, the remainder one more each on the stages before the last, from the
    second-to-last backwards (VLLM_PP_LAYER_PARTITION unset)."""
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    starts = [sum(parts[:r]) for r in range(pp)]
    return tuple((start, start + n) for start, n in zip(starts, parts))


def largest_stage(num_layers: int, pp: int) -> tuple[int, int]:
    """The [start, end) layers of the pipeline stage holding the most (the first of them)."""
    return max(pp_stages(num_layers, pp), key=lambda stage: stage[1] - stage[0])


@functools.lru_cache(maxsize=1024)
def _page_layout(a: Architecture, kv_dtype: str, block_size: int, tp: int, draft_layers: int = 0,
                 pp: int = 1) -> tuple[int, tuple[KVGroup, ...], int]:
    """(page bytes, groups, layers of a group on the GPU that holds the most) of the layers on one tensor-parallel
    rank; `draft_layers` MTP layers add full-attention layers of the last attention layer's shape (the draft's KV
    cache shares the pool). With pipeline stages the groups are the whole model's, each stage keeps its own layers
    of them (kv_cache_utils._project_kv_cache_groups_to_worker) and sizes its blocks by its largest group; every
    stage then takes the fewest blocks of any (get_kv_cache_configs, step 5): the stage whose group holds the most
    layers. Read in the v0.22.0 release package (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs)."""
    dtype = kv_dtype_bytes(kv_dtype)
    block = block_size or (MLA_BLOCK if a.is_mla else DEFAULT_BLOCK)
    kinds: dict[str, list[int]] = {}
    per_token: dict[str, int] = {}
    sliding = set(a.sliding_layers)
    for layer in a.cached_layers:
        kind = ("chunked" if a.chunked_attention else "sliding") if layer in sliding else "full"
        kinds.setdefault(kind, []).append(layer)
        size = math.ceil(layer_elements(a, layer, tp, True) * dtype)
        per_token[kind] = max(per_token.get(kind, 0), size)
    if draft_layers:
        last = a.attention_layers[-1]
        kinds.setdefault("full", []).extend([last] * draft_layers)
        per_token["full"] = max(per_token.get("full", 0), math.ceil(layer_elements(a, last, tp, True) * dtype))
    if a.index_heads and "full" in per_token:  # DeepSeek-V3.2's indexer key sits in its own spec; counted per layer
        per_token["full"] += math.ceil(indexer_bytes_per_token(a) / max(1, len(kinds["full"])))
    state_layers = len(a.linear_layers) + len(a.mamba_layers)
    state_page = state_bytes(a, 1, tp) // state_layers if state_layers else 0
    page = max((per_token[k] * block for k in per_token), default=0)
    if state_page > page:  # HybridAttentionMambaModelConfig: attention blocks grow until a page holds the state
        step = max(1, max(per_token.values(), default=1)) * MAMBA_BLOCK_ALIGN
        page = -(-state_page // step) * step if per_token else state_page
    groups_of = {kind: len(layers) for kind, layers in kinds.items()}
    if state_layers:
        groups_of["state"] = state_layers
    smallest, largest = min(groups_of.values()), max(groups_of.values())
    group_size = largest if largest < smallest * 1.25 else smallest  # _get_kv_cache_groups_uniform_page_size
    groups = []
    for kind, count in groups_of.items():
        tokens = page // per_token[kind] if kind in per_token else 0  # pages of equal bytes: smaller layers, more
        for _ in range(-(-count // group_size)):
            groups.append(KVGroup(kind, group_size, tokens, a.sliding_window if kind != "full" else 0))
    if pp > 1:
        members = [*kinds.values(), *([sorted(a.linear_layers + a.mamba_layers)] if state_layers else [])]
        chunks = [layers[i:i + group_size] for layers in members for i in range(0, len(layers), group_size)]
        group_size = max(sum(start <= layer < end for layer in chunk)
                         for start, end in pp_stages(a.num_layers, pp) for chunk in chunks)
    return page, tuple(groups), group_size


def blocks_per_request(groups: tuple[KVGroup, ...], length: int, batched: int) -> int:
    """Pages one request of `length` tokens holds at its longest, over every group (kv_cache_interface.py
    max_memory_usage_bytes): a full-attention group every page; a sliding-window one the window's last W - 1
    tokens plus the `batched` tokens of a prefill chunk, and a page more since the window need not start a page; a
    chunked-local one its chunk plus the prefill chunk; a Mamba / linear-attention group one page (the state)."""
    total = 0
    for g in groups:
        if g.kind == "state":
            total += 1
        elif g.kind == "full":
            total += -(-length // g.block)
        elif g.kind == "sliding":
            total += -(-min(g.window - 1 + batched, length) // g.block) + 1
        else:
            total += -(-min(g.window + batched, length) // g.block)
    return total


@functools.lru_cache(maxsize=4096)
def _longest_that_fits(groups: tuple[KVGroup, ...], num_blocks: int, ceiling: int, batched: int) -> int:
    """The longest request the pool holds (vLLM's 'estimated maximum model length'), up to `ceiling`."""
    if blocks_per_request(groups, 1, batched) > num_blocks:
        return 0
    low, high = 1, ceiling
    while low < high:
        mid = (low + high + 1) // 2
        if blocks_per_request(groups, mid, batched) <= num_blocks:
            low = mid
        else:
            high = mid - 1
    return low


def resolved_defaults(s: ServeScenario) -> tuple[int, int, bool]:
    """(max_num_seqs, max_num_batched_tokens, large GPU) as vLLM resolves them for `vllm serve`."""
    g = catalog.gpu(s.gpu)
    large = g.memory_bytes >= LARGE_GPU_BYTES and "a100" not in g.name.lower()
    return (s.max_num_seqs or DEFAULT_MAX_SEQS[large], s.max_num_batched_tokens or DEFAULT_BATCHED_TOKENS[large],
            large)


def _weights_per_gpu(s: ServeScenario) -> tuple[int, int]:
    """(language-model weights, vision tower) on the most loaded GPU: TP slices every matrix (vocabulary-parallel
    embeddings included), expert parallelism gives each of the tp x dp ranks whole experts, pipeline stages split
    the layers as get_pp_indices does (the largest stage counted), the first stage holding the embedding and the
    last the lm_head."""
    w = weight_split(s)
    tp, pp = s.tensor_parallel, s.pipeline_parallel
    experts = w.experts / (tp * s.data_parallel if s.expert_parallel else tp) * _mxfp4_padding(s)
    embeddings = w.embeddings / tp
    if pp > 1 and not s.model.tie_word_embeddings:
        embeddings /= 2  # the input embedding on the first stage, the lm_head on the last
    start, end = largest_stage(s.model.num_layers, pp)
    stage = (end - start) / s.model.num_layers
    layers = (w.layers / tp + experts + w.vectors) * stage  # the largest stage's share of the layers
    return math.ceil(layers + embeddings + _draft_bytes(s) / tp), math.ceil(w.towers / tp)


# LoRA (--enable-lora): vllm/lora/model_manager.py wraps every supported linear module (LoRAConfig.target_modules
# unset: all), and each wrapper allocates, with the weights, zeroed stacks for --max-loras adapters of
# --max-lora-rank in the model's dtype (vllm/lora/layers/base_linear.py and column_parallel_linear.py
# create_lora_weights, v0.22.0 wheel): per output slice an A of rank x input_size and a B of output_size x rank, the
# sizes of this rank's shard (a column-parallel layer slices its output, a row-parallel one its input, a
# replicated one neither; fully_sharded_loras off). A fused MoE layer (vllm/lora/layers/fused_moe.py
# FusedMoEWithLoRA) stacks them per local expert: w13 A r x hidden and B intermediate_per_partition x r, twice
# (gate, up), w2 A r x intermediate_per_partition and B hidden x r; that file is first in the v0.12.0 wheel (not in
# v0.11.0's): before it the experts carry no LoRA. Not modelled: LoRA on the embedding and
# lm_head (only when targeted) and the punica buffers of the profiling run. The graphs: LORA_GRAPHS_SINCE.
ROW_PARALLEL = frozenset({"attn_output", "ffn_down", "shared_down", "expert_down", "linear_out", "ssm_out",
                          "latent_out"})
MOE_LORA_SINCE = (0, 12)
REPLICATED = frozenset({"router", "attn_q_a", "attn_kv_a", "attn_index_q", "attn_index_k", "attn_index_weights",
                        "latent_in"})


def lora_bytes(s: ServeScenario) -> int:
    """The LoRA slots on the most loaded GPU: max_loras x max_lora_rank x (input + output size of each wrapped
    linear's shard) x 2 bytes, over the decoder layers of the largest pipeline stage."""
    if not s.enable_lora:
        return 0
    return _lora_bytes(s.model, s.max_loras or DEFAULT_MAX_LORAS, s.max_lora_rank, s.tensor_parallel,
                       s.pipeline_parallel, s.tensor_parallel * s.data_parallel if s.expert_parallel else 0,
                       at_least(s, *MOE_LORA_SINCE))


@functools.lru_cache(maxsize=256)
def _lora_bytes(a: Architecture, max_loras: int, rank: int, tp: int, pp: int, expert_ranks: int,
                experts_too: bool) -> int:
    start, end = largest_stage(a.num_layers, pp)
    per_slot = 0.0
    for t in tensors(a):
        if not (t.is_matrix and start <= t.layer < end) or t.is_expert and not experts_too:
            continue
        split = 1 if t.is_expert and expert_ranks else tp  # expert parallelism: whole experts, unsliced
        copies = t.copies / expert_ranks if t.is_expert and expert_ranks else t.copies
        if t.role in REPLICATED:
            inputs, outputs = t.cols, t.rows
        elif t.role in ROW_PARALLEL:
            inputs, outputs = t.cols / split, t.rows
        else:
            inputs, outputs = t.cols, t.rows / split
        per_slot += copies * rank * (inputs + outputs)
    return math.ceil(max_loras * per_slot * BF16_BYTES)


def _draft_bytes(s: ServeScenario) -> int:
    """The MTP draft vLLM loads for speculative decoding (model_executor/models/deepseek_mtp.py, qwen3_next_mtp.py):
    per module a decoder layer like the model's last attention layer, the projection fusing the embedding with the
    hidden state (2h -> h, 16-bit) and its norms; the embedding and lm_head are the target model's."""
    a: Architecture = s.model
    if not s.speculative_tokens or not a.mtp_layers or not a.attention_layers:
        return 0
    size_of = tensor_size(a, s.weights)
    last = a.attention_layers[-1]
    layer = sum(size_of(t) for t in tensors(a) if t.layer == last)
    h = a.hidden_size
    return a.mtp_layers * (layer + BF16_BYTES * (2 * h * h + 3 * h))


def _mxfp4_padding(s: ServeScenario) -> float:
    """How much larger MXFP4 experts are once loaded: vLLM pads gpt-oss's hidden size to a multiple of 256
    (fused_moe/layer.py maybe_roundup_layer_hidden_size) and the Marlin kernels, which serve MXFP4 on GPUs older than
    Hopper, each rank's expert width to a multiple of 128 (quantization/mxfp4.py Mxfp4MoEMethod.create_weights; 64
    on Hopper and later). gpt-oss-20b: 2,880 -> 3,072 hidden, +6.7% on the experts."""
    a: Architecture = s.model
    fmt = a.checkpoint.format_id if s.weights == "checkpoint" and a.checkpoint is not None else s.weights
    if fmt != "mxfp4" or not a.num_experts:
        return 1.0
    h, width = a.hidden_size, a.moe_intermediate_size // (1 if s.expert_parallel else s.tensor_parallel)
    hidden = -(-h // 256) * 256 if a.model_type == "gpt_oss" else h
    step = 128 if s.gpu in MARLIN_MXFP4_GPUS else 64
    return hidden / h * (-(-width // step) * step) / width


# GPUs below compute capability 9.0, where vLLM serves MXFP4 experts with Marlin (NVIDIA CUDA GPUs page)
MARLIN_MXFP4_GPUS = frozenset({"rtx-3090", "rtx-4090", "rtx-a6000", "l4", "l40s", "a10g", "a10", "t4", "v100-32gb",
                               "a100-40gb-sxm", "a100-80gb-sxm", "a100-80gb-pcie"})


# The longest max_model_len vLLM accepts (_get_and_verify_max_len, vllm/config/model.py in the v0.22.0 wheel; the same
# rule in vllm/config.py of v0.10): the config's max_position_embeddings, scaled by its RoPE parameters when their
# rope_type is not one of these (whose configs already state the scaled length): by `factor`, from
# original_max_position_embeddings for YaRN. Qwen3's documented 131,072-token YaRN setting: 32,768 x 4. A longer
# max_model_len raises "User-specified max_model_len ... is greater than the derived max_model_len" unless
# VLLM_ALLOW_LONG_MAX_MODEL_LEN is set (then a warning). Gemma 3's configs state the scaled length already, so its
# model types are never scaled. Not modelled: the tokenizer's model_max_length, which can only lower the length.
UNSCALED_ROPE_TYPES = ("su", "longrope", "llama3")
# `--max-model-len auto` (or -1, vllm-project/vllm#29431; first released in v0.14.0, absent from the v0.13.0 wheel):
# after profiling, kv_cache_utils._auto_fit_max_model_len lowers max_model_len to the longest one request can hold in
# the KV memory (the binary search of _estimate_max_model_len_from_groups, the same as the refusal's estimate), or
# keeps the derived length when it fits; with no room for one token it raises "Cannot auto-fit max_model_len".
AUTO_FIT_SINCE = (0, 14)


def derived_max_len(s: ServeScenario) -> int:
    """The longest max_model_len vLLM derives from the model's config and the scenario's RoPE-scaling override."""
    rope = dict(rope_override(s.rope_scaling))
    kind = rope.get("rope_type")
    if not rope or kind in UNSCALED_ROPE_TYPES or "gemma3" in s.model.model_type:
        return s.context_length
    base = rope.get("original_max_position_embeddings", s.context_length) if kind == "yarn" else s.context_length
    return int(base * (rope.get("factor") or 1.0))  # a null factor falls back to 1.0


def estimate(s: ServeScenario, total_bytes: int | None = None) -> ServeReport:
    """The start-up report; `total_bytes` replaces the GPU's memory as cudaMemGetInfo reports it (a logged
    total_gpu_memory, for validation)."""
    a: Architecture = s.model
    g = catalog.gpu(s.gpu)
    if total_bytes is not None:
        g = replace(g, memory_bytes=total_bytes)
    tp = s.tensor_parallel
    max_seqs, batched, large = resolved_defaults(s)
    derived = derived_max_len(s)
    auto = s.max_model_len == AUTO_FIT
    length = s.max_model_len if s.max_model_len > 0 else derived  # auto-fit lowers it once the pool is known
    warnings, notes = [], []
    if auto and not at_least(s, *AUTO_FIT_SINCE):
        warnings.append(f"{REFUSAL}argument --max-model-len: invalid human_readable_int value: 'auto' (auto-fit "
                        "came with v0.14.0, vllm-project/vllm#29431)")
    if a.num_heads % tp:
        warnings.append(f"{REFUSAL}Total number of attention heads ({a.num_heads}) must be divisible by tensor "
                        f"parallel size ({tp}).")
    if length > derived:
        too_long = (f"User-specified max_model_len ({length}) is greater than the derived max_model_len "
                    f"(max_position_embeddings={derived} in model's config.json"
                    + (f", with the RoPE scaling {s.rope_scaling}" if s.rope_scaling else "") + ").")
        warnings.append(f"{too_long} VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution: positions past "
                        "the derived length are untrained." if s.allow_long_context else
                        f"{REFUSAL}{too_long} Set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to allow it.")
    if s.kv_dtype not in KV_CACHE_DTYPE_FLAGS and s.kv_dtype != "bf16":
        warnings.append(f"{REFUSAL}argument --kv-cache-dtype: invalid choice: '{s.kv_dtype}' (vLLM caches "
                        "auto (the model dtype), fp8 (fp8_e4m3, fp8_e5m2) or float32; q8_0 / q4_0 are llama.cpp's)")
    if s.speculative_tokens and not a.mtp_layers:
        warnings.append(f"{REFUSAL}MTP speculative decoding needs the checkpoint's multi-token-prediction layers; "
                        f"{a.name or 'this model'}'s config declares none (num_nextn_predict_layers / "
                        "mtp_num_hidden_layers)")
    if batched < max_seqs:
        warnings.append(f"{REFUSAL}max_num_batched_tokens ({batched}) must be greater than or equal to "
                        f"max_num_seqs ({max_seqs}).")

    weights, vision = _weights_per_gpu(s)
    offloaded = 0
    if s.cpu_offload_gb:
        start, end = largest_stage(a.num_layers, s.pipeline_parallel)
        offloaded = min(weights, offloaded_bytes(s, start, end, tp * s.data_parallel if s.expert_parallel else tp))
    weights -= offloaded  # pinned host memory, outside the GPU's "Model loading took"
    lora = lora_bytes(s)  # allocated with the weights: inside "Model loading took"
    forward = _forward_peak(a, batched, tp)
    requests = min(max_seqs, batched)
    v2 = v2_runner(s)
    per_logit = sampler_bytes_per_logit(s, requests, v2)
    sampler = BF16_BYTES * batched * a.hidden_size + per_logit * requests * a.vocab_size
    activations = max(forward, sampler)
    non_torch = NON_TORCH_ONE_GPU + (NON_TORCH_TENSOR_PARALLEL if tp > 1 else 0)
    captured, estimated = (0, 0) if s.enforce_eager else cuda_graph_bytes(s, max_seqs, batched)
    budgeted = graphs_budgeted(s)
    graphs = estimated if budgeted else captured
    requested = int(g.memory_bytes * s.gpu_memory_utilization)
    graphs_first = graphs if budgeted else 0
    available = s.kv_cache_memory or requested - weights - vision - lora - activations - non_torch - graphs_first

    drafts = a.mtp_layers if s.speculative_tokens else 0
    page, groups, group_size = _page_layout(a, s.kv_dtype, s.block_size, tp, drafts, s.pipeline_parallel)
    num_blocks = max(0, available) // (page * group_size) if page else 0
    longest = _longest_that_fits(groups, num_blocks, max(derived, length) if s.allow_long_context else derived,
                                 batched)
    if auto and 0 < longest < length:
        length = longest
    need = blocks_per_request(groups, length, batched)
    concurrency = num_blocks / need if need else 0.0
    if at_least(s, *CAPACITY_TOKENS_SINCE):  # kv_cache_utils: the tokens the pool holds at that concurrency
        tokens = int(concurrency * length)
    else:  # num_blocks // len(kv_cache_groups) * min block size
        tokens = num_blocks // max(1, len(groups)) * min((g.block for g in groups if g.block), default=0)
    log = [f"Model loading took {(weights + lora) / GiB:.4f} GiB", f"Available KV cache memory: {gib(available)} GiB"]
    if offloaded:
        log.insert(0, f"Total CPU offloaded parameters: {gib(offloaded)} GiB")
        notes.append(f"--cpu-offload-gb {s.cpu_offload_gb:g}: {gib(offloaded)} GiB of each GPU's layer weights in "
                     "pinned "
                     "host memory (vllm/model_executor/offloader/uva.py: whole parameters of the first layers, until "
                     "the budget is reached); every forward reads them over the host link")
    if weights + vision + lora > g.memory_bytes - CUDA_CONTEXT_BYTES:
        log = []
        warnings.append(f"{REFUSAL}torch.OutOfMemoryError: CUDA out of memory while loading the weights: "
                        f"{gib(weights + vision)} GiB per GPU on a {gib(g.memory_bytes)} GiB GPU. Use more GPUs "
                        "(--tensor-parallel-size) or a quantized checkpoint.")
    elif auto and longest <= 0:
        warnings.append(f"{REFUSAL}Cannot auto-fit max_model_len: not enough GPU memory available to serve even a "
                        "single token. Try increasing `gpu_memory_utilization`.")
    elif available <= 0:
        warnings.append(f"{REFUSAL}No available memory for the cache blocks. Try increasing "
                        "`gpu_memory_utilization` when initializing the engine.")
    elif need > num_blocks:
        warnings.append(
            f"{REFUSAL}To serve at least one request with the models's max seq len ({length}), "
            f"({gib(need * page * group_size)} GiB KV cache is needed, which is larger than the available KV cache "
            f"memory ({gib(available)} GiB). Based on the available memory, the estimated maximum model length is "
            f"{longest}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
            "the engine.")
    else:
        if auto:  # kv_cache_utils._auto_fit_max_model_len
            log.append(f"Auto-fit max_model_len: reduced from {derived} to {length} to fit in available GPU memory "
                       f"({gib(available)} GiB available for KV cache)" if length < derived else
                       f"Auto-fit max_model_len: full model context length {derived} fits in available GPU memory")
        log += [f"GPU KV cache size: {tokens:,} tokens",
                f"Maximum concurrency for {length:,} tokens per request: {concurrency:.2f}x"]
    if graphs and budgeted:  # gpu_worker.py L465-480 at 1c5887661
        u = s.gpu_memory_utilization
        log.append(f"CUDA graph memory profiling is enabled (default since v0.21.0). The current "
                   f"--gpu-memory-utilization={u:.4f} is equivalent to --gpu-memory-utilization="
                   f"{round(u - graphs / g.memory_bytes, 4):.4f} without CUDA graph memory profiling.")
    if graphs:
        log.append(f"Graph capturing finished, took {gib(captured)} GiB")
        if not graphs_first and requested + graphs + CUDA_CONTEXT_BYTES > g.memory_bytes:
            warnings.append(f"CUDA graphs ({gib(graphs)} GiB) are captured after the KV cache, outside the "
                            f"{s.gpu_memory_utilization:g} budget: with the CUDA context "
                            f"({gib(CUDA_CONTEXT_BYTES)} GiB) they exceed the GPU's {gib(g.memory_bytes)} GiB and "
                            "capture may run out of memory; lower --gpu-memory-utilization or use --enforce-eager.")
    kv = max(0, available) if s.kv_cache_memory or available > 0 else 0
    notes += [
        f"vLLM {s.engine_version or 'V1 (newest modelled)'} on {g.name}, "
        + ("Model Runner V2 (dense model, v0.25+: no CUDA-graph estimate in the budget)" if v2 else "model runner V1")
        + f": budget {s.gpu_memory_utilization:g} x "
        f"{gib(g.memory_bytes)} GiB = {gib(requested)} GiB per GPU (vllm/v1/worker/gpu_worker.py "
        "determine_available_memory)",
        f"Defaults resolved: max_num_seqs {max_seqs}, max_num_batched_tokens {batched} ("
        + ("GPU of 70 GiB or more, not an A100" if large else "GPU under 70 GiB or an A100") + ")",
        f"Profiling run: a forward of {batched:,} tokens ({gib(forward)} GiB), then the sampler over {requests} "
        f"requests x {a.vocab_size:,} logits ({gib(sampler)} GiB, "
        + {SAMPLER_BYTES_PER_LOGIT: "sorted for top-k / top-p)",
           FILTER_SAMPLER_BYTES_PER_LOGIT: "filtered for top-k / top-p without a sort)"}.get(
            per_logit, "no top-k / top-p filter)"),
        f"KV cache: pages of {page:,} bytes, {len(groups)} group(s) of {group_size} layers; a request of "
        f"{length:,} tokens holds {need:,} pages",
    ]
    if lora:
        notes.append(f"LoRA: {s.max_loras or DEFAULT_MAX_LORAS} adapter slot(s) of rank {s.max_lora_rank} on every "
                     "decoder linear, "
                     f"{gib(lora)} GiB per GPU (vllm/lora/layers create_lora_weights)"
                     + ("; every CUDA graph is captured twice, without and with adapters" if at_least(
                         s, *LORA_GRAPHS_SINCE) and graphs else ""))
    components = {"weights": weights, **({"vision": vision} if vision else {}), **({"lora": lora} if lora else {}),
                  "activations": activations, "non_torch": non_torch, "cuda_graphs": graphs, "kv_cache": kv}
    return make_report(
        "vllm", components, gpus=s.gpus, gpu_bytes=g.memory_bytes, budget_bytes=requested,
        kv_cache_tokens=tokens, max_concurrency=concurrency, max_model_len=length, host_bytes=offloaded * s.gpus,
        max_model_len_that_fits=longest, settings=(("max_num_seqs", max_seqs), ("max_num_batched_tokens", batched),
                                                   ("block_size", groups[0].block if groups else 0)),
        log=tuple(log), warnings=tuple(warnings), assumptions=tuple(notes + list(a.notes)), command=command(s))


@functools.lru_cache(maxsize=4096)
def _forward_peak(a: Architecture, tokens: int, tp: int) -> int:
    """The largest layer working set of one forward of `tokens` tokens (FlashAttention)."""
    return inference_layer_peak(a, 1, tokens, tokens, flash_attention=True, tp=tp, linear_attention_kernels=True)


def sampler_bytes_per_logit(s: ServeScenario, requests: int, v2: bool) -> int:
    """Bytes per logit at the peak of the profiling run's sampler: Model Runner V2 keeps the logits and their fp32
    copy; FlashInfer (chosen, or 'auto' on NVIDIA GPUs before v0.11 and from v0.21) and the PyTorch-native path of
    v0.17+ over 8 requests or more filter without sorting; the native path sorts otherwise."""
    if v2:
        return GREEDY_SAMPLER_BYTES_PER_LOGIT
    default_on = not at_least(s, *SAMPLER_SORTS_SINCE) or at_least(s, *FLASHINFER_SAMPLER_DEFAULT_SINCE)
    flashinfer = s.sampler == "flashinfer" or s.sampler == "auto" and default_on and \
        catalog.gpu(s.gpu).vendor == "NVIDIA"
    if flashinfer or at_least(s, *TRITON_FILTER_SINCE) and requests >= TRITON_FILTER_MIN_ROWS:
        return FILTER_SAMPLER_BYTES_PER_LOGIT
    return SAMPLER_BYTES_PER_LOGIT


def v2_runner(s: ServeScenario) -> bool:
    """Whether the scenario runs on Model Runner V2: as its `model_runner` input says (VLLM_USE_V2_MODEL_RUNNER,
    which VllmConfig.use_v2_model_runner obeys first), else the release's default (v0.25+, dense models: not MoE,
    not hybrid, not attention-free; VllmConfig._is_default_v2_model_runner_model)."""
    if s.model_runner != "auto":
        return s.model_runner == "v2"
    a: Architecture = s.model
    hybrid = bool(a.linear_layers or a.mamba_layers)
    attention_free = not a.cached_layers and not hybrid
    return at_least(s, *V2_RUNNER_SINCE) and not a.is_moe and not hybrid and not attention_free


def graphs_budgeted(s: ServeScenario) -> bool:
    """Whether the release takes the CUDA-graph estimate from the budget before the KV cache (v0.21+ on the V1 model
    runner; not on Model Runner V2, whose estimate is 0; not with --kv-cache-memory, which skips profiling:
    determine_available_memory returns it first)."""
    return (at_least(s, *CUDA_GRAPHS_PROFILED_SINCE) and not v2_runner(s) and not s.enforce_eager
            and not s.kv_cache_memory)


def cuda_graph_bytes(s: ServeScenario, max_num_seqs: int, batched: int) -> tuple[int, int]:
    """(what the captured graphs take, what v0.21+ budgets for them before the KV cache): the pool of the largest
    capture size plus each graph's own memory; the estimate follows profile_cudagraph_memory's extrapolation."""
    return _graph_bytes(*_graph_key(s, max_num_seqs, batched))


def cuda_graph_terms(s: ServeScenario, max_num_seqs: int, batched: int) -> tuple[int, tuple[int, ...], int]:
    """What the capture takes besides each graph's own memory, from the source: (the pool of the largest size, twice
    since v0.21; the graphs captured per mode, PIECEWISE then FULL decode; the layers each graph spans). The
    per-graph constants are derived from published captures over these terms (validation/engines.py
    derive_graph_constants)."""
    return _graph_terms(*_graph_key(s, max_num_seqs, batched))


def _graph_key(s: ServeScenario, max_num_seqs: int, batched: int) -> tuple:
    full, step_16, speculative, profiled = _graph_rules(s.engine_version or "")
    q = 1 + s.speculative_tokens if speculative else 1
    lora_cases = 2 if s.enable_lora and at_least(s, *LORA_GRAPHS_SINCE) else 1
    return (s.model, max_num_seqs, batched, s.tensor_parallel, s.pipeline_parallel, q, full, step_16, profiled,
            s.cuda_graph_max_bs or capture_ceiling(s.model, s.engine_version or ""), lora_cases)


# With LoRA, vllm/v1/cudagraph_dispatcher.py captures every size once per LoRA case (_get_lora_cases): without
# adapters and with them (compilation_config.cudagraph_specialize_lora, on by default; one "with" case unless
# LoRAConfig.specialize_active_lora): twice the graphs, sharing one pool. In the v0.12.0 wheel first (v0.11.0's
# dispatcher has no LoRA case).
LORA_GRAPHS_SINCE = (0, 12)


@functools.lru_cache(maxsize=1024)
def _graph_terms(a: Architecture, max_num_seqs: int, batched: int, tp: int, pp: int, q: int, full: bool,
                 step_16: bool, profiled: bool, ceiling: int = 0,
                 lora_cases: int = 1) -> tuple[int, tuple[int, ...], int]:
    sizes, piecewise, decode = _graph_counts(max_num_seqs, batched, q, full, step_16, ceiling)
    pool = _forward_peak(a, sizes[-1], tp)
    # Each size is first run eagerly (_warmup_and_capture, cudagraph_num_of_warmups = 1); since the releases that
    # empty PyTorch's cache before measuring (capture_model L6151-6153 and profile_cudagraph_memory at 1c5887661,
    # #30515), the blocks of that eager run stay cached inside the measured fall of free memory.
    warmup = pool if profiled else 0
    return warmup + pool, tuple(n * lora_cases for n in (piecewise, decode) if n), -(-a.num_layers // pp)


def graph_bytes_each(layers: int, tp: int, layer_bytes: int = LAYER_GRAPH_BYTES,
                     allreduce_bytes: int = ALLREDUCE_GRAPH_BYTES) -> int:
    """What one captured graph keeps beyond the shared pool: per layer it spans, LAYER_GRAPH_BYTES, plus its two
    captured all-reduces with tensor parallelism (other constants: validation/engines.py's leave-one-out)."""
    return layers * (layer_bytes + (ALLREDUCES_PER_LAYER * allreduce_bytes if tp > 1 else 0))


@functools.lru_cache(maxsize=1024)
def _graph_bytes(a: Architecture, max_num_seqs: int, batched: int, tp: int, pp: int, q: int, full: bool,
                 step_16: bool, profiled: bool, ceiling: int = 0, lora_cases: int = 1) -> tuple[int, int]:
    fixed, modes, layers = _graph_terms(a, max_num_seqs, batched, tp, pp, q, full, step_16, profiled, ceiling,
                                        lora_cases)
    captured = fixed + graph_bytes_each(layers, tp) * sum(modes)
    return captured, profiled_estimate(fixed, modes, layers)


def profiled_estimate(fixed: int, modes: tuple[int, ...], layers: int, layer_bytes: int = SAMPLED_GRAPH_BYTES) -> int:
    """profile_cudagraph_memory's total (gpu_model_runner.py L6362-6364 at v0.22.0): the largest first reading (the
    PIECEWISE one: warm-up and pool of the largest size + that graph) + per mode (graphs - 1) x the second reading, at
    least 1 MiB; a reading is `layers` x SAMPLED_GRAPH_BYTES (other values: validation/engines.py's leave-one-out)."""
    reading = layers * layer_bytes
    return fixed + reading + sum(max(reading, 1 << 20) * (n - 1) for n in modes)


def command(s: ServeScenario) -> str:
    """The `vllm serve` command line of the scenario (options left at vLLM's defaults are omitted)."""
    parts = [f"{name}={value}" for name, (field, values) in ENV_CHOICES.items()
             for value, chosen in values.items() if getattr(s, field) == chosen]
    if s.allow_long_context:
        parts.append("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    parts += ["vllm serve", model_ref(s)]
    options = (("--tensor-parallel-size", s.tensor_parallel, 1), ("--pipeline-parallel-size", s.pipeline_parallel, 1),
               ("--data-parallel-size", s.data_parallel, 1),
               ("--gpu-memory-utilization", s.gpu_memory_utilization, 0.9),
               ("--max-model-len", "auto" if s.max_model_len == AUTO_FIT else s.max_model_len, 0),
               ("--max-num-seqs", s.max_num_seqs, 0), ("--max-num-batched-tokens", s.max_num_batched_tokens, 0),
               ("--block-size", s.block_size, 0), ("--kv-cache-memory", s.kv_cache_memory, 0),
               ("--max-cudagraph-capture-size", s.cuda_graph_max_bs, 0), ("--cpu-offload-gb", s.cpu_offload_gb, 0))
    parts += [f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"
              for flag, value, default in options if value != default]
    if s.kv_dtype != "bf16":
        parts.append(f"--kv-cache-dtype {KV_CACHE_DTYPE_FLAGS.get(s.kv_dtype, s.kv_dtype)}")
    if s.expert_parallel:
        parts.append("--enable-expert-parallel")
    if s.speculative_tokens:
        parts.append("--speculative-config " + shlex.quote(json.dumps(
            {"method": "mtp", "num_speculative_tokens": s.speculative_tokens})))
    if s.enforce_eager:
        parts.append("--enforce-eager")
    if s.weights in QUANTIZATION_FLAGS:
        parts.append(f"--quantization {QUANTIZATION_FLAGS[s.weights]}")
    if s.enable_lora:
        parts.append("--enable-lora" + "".join(f" {flag} {value}" for flag, value, default in (
            ("--max-loras", s.max_loras or DEFAULT_MAX_LORAS, DEFAULT_MAX_LORAS),
            ("--max-lora-rank", s.max_lora_rank, 16)) if value != default))
    if s.rope_scaling or s.context_override:
        parts.append(f"--hf-overrides {config_overrides(s)}")
    return " ".join(parts)


def config_overrides(s: ServeScenario) -> str:
    """The scenario's config overrides (its RoPE scaling, its trained context) as the JSON argument vLLM's
    --hf-overrides (all V1 releases) and SGLang's --json-model-override-args take, quoted for a shell."""
    overrides = {**({"max_position_embeddings": s.context_override} if s.context_override else {}),
                 **({"rope_scaling": json.loads(s.rope_scaling)} if s.rope_scaling else {})}
    return shlex.quote(json.dumps(overrides))


def rope_of_overrides(text: str) -> dict:
    """The RoPE-scaling override and the trained context (max_position_embeddings) an --hf-overrides /
    --json-model-override-args JSON object sets ({} when neither: its other keys are not modelled)."""
    try:
        overrides = json.loads(text)
    except ValueError:
        raise ValueError(f"must be JSON, got {text[:60]!r}") from None
    if not isinstance(overrides, dict):
        return {}
    rope = next((overrides[k] for k in ROPE_WRAPPERS if k in overrides), None)
    positions = overrides.get("max_position_embeddings")
    if positions is not None and (isinstance(positions, bool) or not isinstance(positions, int) or positions < 1):
        raise ValueError(f"max_position_embeddings must be a whole number of positions, got {positions!r}")
    return {**({"rope_scaling": canonical_rope_scaling(json.dumps(rope))} if isinstance(rope, dict) else {}),
            **({"context_override": positions} if positions else {})}


KV_CACHE_DTYPE_FLAGS = {"fp8": "fp8", "fp32": "float32"}
QUANTIZATION_FLAGS = {"fp8": "fp8", "bnb-nf4": "bitsandbytes", "bnb-int8": "bitsandbytes", "fp8-block": "fp8_per_block",
                      "int8": "int8_per_channel_weight_only"}

# Command-line import (estimator/engines/command.py): `vllm serve MODEL ...` and the older API-server module.
PROGRAMS = ("vllm serve", "vllm-openai", "python -m vllm.entrypoints.openai.api_server",
            "python3 -m vllm.entrypoints.openai.api_server")
MODEL_FLAGS = ("--model",)
KV_DTYPES_READ = {"auto": "bf16", "bfloat16": "bf16", "float16": "bf16", "half": "bf16", "fp8": "fp8",
                  "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp8_inc": "fp8", "float32": "fp32"}
# --quantization (QuantizationMethods, vllm/model_executor/layers/quantization/__init__.py in the v0.22.0 wheel): the
# online ones and the checkpoint formats the catalog has; the methods that only name how a checkpoint is stored
# (compressed-tensors, quark, gguf, moe_wna16, torchao, inc) read as the checkpoint's own format.
QUANTIZATION_READ = {"fp8": "fp8", "fp8_per_tensor": "fp8", "fp8_per_block": "fp8-block", "fbgemm_fp8": "fp8-channel",
                     "modelopt": "fp8", "int8_per_channel_weight_only": "int8", "awq": "awq-4bit",
                     "awq_marlin": "awq-4bit", "gptq": "gptq-4bit", "gptq_marlin": "gptq-4bit",
                     "auto_gptq": "gptq-4bit", "bitsandbytes": "nf4", "mxfp4": "mxfp4", "gpt_oss_mxfp4": "mxfp4",
                     "modelopt_fp4": "nvfp4", **dict.fromkeys(("compressed-tensors", "quark", "gguf", "moe_wna16",
                                                               "torchao", "inc"), "checkpoint")}


def _speculative(text: str) -> int:
    """--speculative-config's draft tokens when the draft is the checkpoint's MTP (methods mtp, deepseek_mtp,
    qwen3_next_mtp...); 0 for other drafts (EAGLE, n-gram, a separate model), which are not modelled."""
    try:
        config = json.loads(text)
    except ValueError:
        raise ValueError(f"--speculative-config must be JSON, got {text[:60]!r}") from None
    if not isinstance(config, dict):
        raise ValueError("--speculative-config must be a JSON object")
    tokens = config.get("num_speculative_tokens", 0)
    if "mtp" not in str(config.get("method", "")) or not isinstance(tokens, int) or not 0 <= tokens <= 16:
        return 0
    return tokens


def _max_model_len(text: str) -> int:
    """--max-model-len as human_readable_int_or_auto reads it: 'auto' or -1 = auto-fit, else 32768, 32k, 1M..."""
    return AUTO_FIT if text.strip().lower() in ("auto", "-1") else human_int(text)


FLAGS = {
    "--tensor-parallel-size": ("tensor_parallel", int), "-tp": ("tensor_parallel", int),
    "--pipeline-parallel-size": ("pipeline_parallel", int), "-pp": ("pipeline_parallel", int),
    "--data-parallel-size": ("data_parallel", int), "-dp": ("data_parallel", int),
    "--gpu-memory-utilization": ("gpu_memory_utilization", float),
    "--max-model-len": ("max_model_len", _max_model_len), "--max-num-seqs": ("max_num_seqs", int),
    "--max-num-batched-tokens": ("max_num_batched_tokens", human_int), "--block-size": ("block_size", int),
    "--kv-cache-memory": ("kv_cache_memory", human_int), "--kv-cache-memory-bytes": ("kv_cache_memory", human_int),
    "--kv-cache-dtype": ("kv_dtype", choice_of(KV_DTYPES_READ, "--kv-cache-dtype")),
    "--quantization": ("weights", choice_of(QUANTIZATION_READ, "--quantization")),
    "-q": ("weights", choice_of(QUANTIZATION_READ, "--quantization")),
    "--speculative-config": ("speculative_tokens", _speculative),
    "--max-cudagraph-capture-size": ("cuda_graph_max_bs", int), "--cpu-offload-gb": ("cpu_offload_gb", float),
    "--max-loras": ("max_loras", int), "--max-lora-rank": ("max_lora_rank", int),
    "--rope-scaling": ("rope_scaling", canonical_rope_scaling), "--hf-overrides": ("rope_scaling", rope_of_overrides),
}
SWITCHES = {"--enforce-eager": ("enforce_eager", True), "--enable-expert-parallel": ("expert_parallel", True),
            "--enable-lora": ("enable_lora", True),
            "-ep": ("expert_parallel", True)}
# The environment variables that choose the sampler and the model runner (vllm/envs.py: VLLM_USE_FLASHINFER_SAMPLER,
# "If set, vllm will use flashinfer sampler", and VLLM_USE_V2_MODEL_RUNNER, both read as bool(int(value))), as
# `VAR=value vllm serve ...` or `docker run -e VAR=value ...` set them; unset = the release's choice ('auto').
ENV_CHOICES = {"VLLM_USE_FLASHINFER_SAMPLER": ("sampler", {"1": "flashinfer", "0": "pytorch"}),
               "VLLM_USE_V2_MODEL_RUNNER": ("model_runner", {"1": "v2", "0": "v1"})}
ENV = {name: (field, choice_of(values, name)) for name, (field, values) in ENV_CHOICES.items()}
# vllm/envs.py (v0.22.0 wheel): VLLM_ALLOW_LONG_MAX_MODEL_LEN is on when its value, stripped and lowered, is "1" or
# "true" (off for any other; here the usual spellings of off)
TRUTH = {"1": True, "true": True, "0": False, "false": False, "": False}
ENV["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = ("allow_long_context", choice_of(TRUTH, "VLLM_ALLOW_LONG_MAX_MODEL_LEN"))
