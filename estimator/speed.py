"""Speed: prefill throughput, time to first token, decode speed and training throughput, from a roofline per phase.

One GPU of a tensor-parallel group of `tp` runs every phase; a phase takes the longer of its memory time and its
compute time, plus the tensor-parallel all-reduces (Williams, Waterman, Patterson 2009, "Roofline: an insightful
visual performance model", CACM 52(4); for LLM inference, Pope et al. 2022, "Efficiently Scaling Transformer
Inference", arXiv:2211.05102, section 2):

    decode step (B sequences, each with c cached tokens):
        bytes  = weights a step reads (2-D weights / tp + vectors; MoE: the experts B x k picks touch)
                 + KV cache of the B sequences at c tokens (kv_cache.py: GQA, MLA, windows, the KV dtype)
        flops  = 2 x active matmul parameters / tp x B  +  4 x q_width / tp x attended tokens x B (QK^T and PV)
        time   = max(bytes / (bandwidth x e_bw), flops / (peak x e_flops)) + all-reduce time + t_step
        (t_step: the engine's cost per step beyond its bytes and FLOPs, kernel launches and the floor of each
        short kernel, scheduling and sampling, that a small model's step at batch 1 is mostly made of; derived
        with e_bw from the same records: for a key of one engine, layers x t_layer, the per-layer cost of that
        engine's kernels (`LAYER_COST`); for a key shared by every engine, a fixed t_step per step)
    prefill of a P-token prompt:
        flops  = 2 x active matmul parameters / tp x P  +  4 x q_width / tp x sum over positions of the tokens seen
        bytes  = the weights once (every expert the P x k picks touch)
        time   = max(...) + all-reduce time;  TTFT = that time;  prefill throughput = P / time
        (a request timed by a serving client: TTFT = that time + t_request, the engine's fixed cost per request,
        HTTP, tokenising, scheduling, streaming, derived from the engine's published client-timed TTFTs of short
        prompts at one request: `RequestCost`)
    all-reduce (tensor parallel, Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053, section 3: two per layer):
        2 x layers x (latency of one all-reduce on the link  +  2 (tp - 1) / tp x tokens x hidden x 2 bytes / link
        bandwidth (ring all-reduce)); a decode step's all-reduce is a few KB, so its latency is most of it
    training (Kaplan et al. 2020, arXiv:2001.08361, section 2.1: C = 6N per token; Chowdhury / Korthikanti et al.
        2022, arXiv:2205.05198, section 5: recomputation adds a forward, 8N):
        flops per token = 2N forward + 2N backward to the activations + 2N backward to the weights (only for
        trained weights: LoRA's frozen base needs the first two, not the third) + 2N again with checkpointing
        tokens/s per GPU = e_train x peak / flops per token; ZeRO / FSDP traffic overlaps the backward pass

The efficiencies e_bw (achieved fraction of the memory bandwidth), e_flops (of the dense 16-bit tensor peak) and
e_train (of the dense 16-bit peak, counting the FLOPs above, recomputation included) are not one global factor: each
comes from published measurements of an engine (training: a framework) on a GPU class, by the rule written in
`estimator/data/speed.json` (median achieved fraction; `python -m validation speed --derive`).
Everything here is a pure function of its inputs; the memory numbers come from formats.py and kv_cache.py.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

from .architecture import Architecture, parameter_counts, tensors
from .catalog import Gpu
from .catalog import gpu as catalog_gpu
from .engines.base import ServeReport, ServeScenario, override_rules, tensor_size
from .engines.llama_cpp import DEFAULT_UBATCH, OFFLOAD_MIN_BATCH, host_matrices
from .formats import CHECKPOINT, WEIGHT_FORMATS, weight_format
from .inference import QUICK_ROWS
from .quick import quick_inference
from .kv_cache import KV_DTYPE_LABELS, indexer_bytes_per_token, indexer_layers, kv_cache_bytes
from .scenarios import FinetuneScenario, InferenceScenario, gradient_checkpointing
from .training import REGIMES
from .units import BF16_BYTES

TFLOP = 10**12
GB_S = 10**9
ACTIVATION_BYTES = BF16_BYTES  # the hidden states tensor parallelism all-reduces are 16-bit

# GPU-to-GPU link when the catalog records none: PCIe 4.0 x16, 16 GT/s x 16 lanes x 128/130 encoding / 8 bits
# = 31.5 GB/s per direction (PCI-SIG PCI Express Base Specification 4.0, section 4.2)
FALLBACK_LINK_GB_S = 31.5
FALLBACK_LINK = "PCIe 4.0 x16 (no interconnect recorded for this GPU)"

# Latency of one all-reduce of a decode step's activations (tokens x hidden x 2 bytes: 8 KB for a 4096-wide model at
# batch 1, far too small for the link's bandwidth to matter), by the kind of link, from published measurements of the
# kernel the engines run at that size. Not fitted: no tensor-parallel record sets an efficiency.
# - NVLink: the engines' one-shot custom all-reduce over NVLink peer memory (vllm-project/vllm#2192, csrc/
#   custom_all_reduce.cuh; SGLang ships the same kernel): on H100s at 4,096 bytes 8.8 / 8.5 / 9.3 us at TP 2 / 4 / 8
#   (sgl-project/sglang#2904, its "vllm" table, without CUDA graphs): 8.8 us, the median.
# - PCIe: NCCL. vLLM's custom all-reduce turns itself off beyond two GPUs without NVLink (vLLM's
#   vllm/distributed/device_communicators/custom_all_reduce.py: "Custom allreduce is disabled because it's not
#   supported on more than two PCIe-only GPUs"); NCCL's all_reduce_perf on 4 RTX A5000 over PCIe, 8 bytes: 15.93 us
#   out of place (NVIDIA/nccl#757).
# - AMD Infinity Fabric: vLLM's custom all-reduce on ROCm, TP 8, 24 KB: 6.3 us (vllm-project/vllm#39080, the "vllm/us"
#   column, measured on MI355X; no MI300X figure at this size was found, so the MI300 parts take it too).
# A link of another kind (a network between two machines) takes PCIe's figure, as a GPU without a recorded link does.
ALLREDUCE_LATENCY_US = {"nvlink": 8.8, "pcie": 15.93, "infinity-fabric": 6.3}
ALLREDUCE_LATENCY_SOURCES = {
    "nvlink": "vLLM's and SGLang's one-shot custom all-reduce over NVLink (H100, 4 KB, TP 2 / 4 / 8: "
              "sgl-project/sglang#2904)",
    "pcie": "NCCL over PCIe (4 x RTX A5000, 8 B: NVIDIA/nccl#757)",
    "infinity-fabric": "vLLM's ROCm custom all-reduce over Infinity Fabric (MI355X, 24 KB, TP 8: "
                       "vllm-project/vllm#39080)"}


# GPUs one server's link joins: an HGX / DGX board holds 8 (NVIDIA DGX H100 / B200 datasheets: 8 GPUs on NVSwitch,
# and 8 ConnectX-7 400 Gb/s ports to other servers), as AMD's Instinct platforms and PCIe servers do; a GB200 NVL72
# rack is one NVLink domain of 72 (https://www.nvidia.com/en-us/data-center/gb200-nvl72/). Tensor parallelism past
# it all-reduces over the servers' network, with NCCL, since the engines' custom all-reduce works within one node
# (vLLM's custom_all_reduce.py: "Custom allreduce is disabled because this process group spans across nodes"): a
# slower link than the GPU's own, which the estimate does not model, and no published measurement above TP 8 is
# compared, so the assumptions say so.
SERVER_GPUS = 8
LINK_DOMAIN_GPUS = {"gb200": 72}


def servers(g: Gpu, tp: int) -> int:
    """How many servers `tp` GPUs of `g` span (1 for Macs: at most 4, each pair cabled, catalog max_devices)."""
    return 1 if g.kind == "apple" else -(-tp // LINK_DOMAIN_GPUS.get(g.id, SERVER_GPUS))


def across_servers_note(g: Gpu, tp: int) -> str:
    """What a tensor-parallel speed leaves out where `tp` GPUs of `g` span more than one server; '' within one."""
    if (count := servers(g, tp)) == 1:
        return ""
    return (f"Tensor parallel over {tp} spans {count} servers of {LINK_DOMAIN_GPUS.get(g.id, SERVER_GPUS)}: between "
            "them the all-reduces run over the servers' network with NCCL (e.g. 400 Gb/s InfiniBand, 50 GB/s, per GPU "
            "of a DGX H100), "
            "not the GPU link assumed here, and the engines' custom all-reduce is off across nodes (vLLM's "
            "custom_all_reduce.py). That slower link is not modelled and no published measurement above tensor "
            "parallelism 8 was compared: decode is likely slower than this")


# A decode step at batch 1 runs each decoder layer's kernels one after another (norms, the QKV / output / MLP or
# expert GEMVs, rotary and cache writes, attention, routing, all-reduces), a dozen or more a layer, and each takes at
# least a few microseconds however few bytes it reads: graph replay removes the CPU launch, not the kernel's own
# minimum (ramp-up, one wave of blocks, its tail). So the part of a step that is not bytes or FLOPs grows with the
# layers: an engine's key fits it as t_layer per layer (`Efficiency.layer_s`; validation/speed.py decode_fit).
# Published per-kernel timings at decode: vLLM's piecewise CUDA graphs leave several launches and gaps per layer
# (vllm-project/vllm#16072: one full graph cut Qwen2.5-1.5B's TPOT 7%); llama.cpp's CUDA graphs took Llama 2 7B
# Q4_0 from 116.31 to 128.27 tokens/s on an RTX 3090 (ggml-org/llama.cpp#6766), the launches but not the kernels
# gone; a fused_moe_kernel benchmark at batch 1 takes 26.72 us (vllm-project/vllm#36559) and a DeepSeek MoE layer
# (EP 8, 32 local experts) at one token 0.026 / 0.041 / 0.050 ms in TRTLLM NVFP4 / MXFP8 / BF16, routing to
# finalize (flashinfer-ai/flashinfer#5301), where its expert bytes take ~3 us at 8 TB/s; SGLang on 4 B200s
# (DeepSeek-R1 FP4, 64 requests) runs 14 kernels or more a layer, the small ones 2.1-8.9 us each
# (SemiAnalysisAI/InferenceX#863). A key over every engine mixes engines whose layers run different kernels (MLX's
# and TensorRT-LLM's are not llama.cpp's), so it keeps a fixed cost per step.
LAYER_COST = ("a decode step's cost beyond bytes and FLOPs grows with the layers: each layer runs a dozen or more "
              "kernels one after another, each with a floor of microseconds however few bytes it reads "
              "(vllm-project/vllm#16072, #36559; ggml-org/llama.cpp#6766; SemiAnalysisAI/InferenceX#863)")


def link_kind(link_name: str | None) -> str:
    """'nvlink', 'infinity-fabric' or 'pcie' (any other link, or none recorded): the key of ALLREDUCE_LATENCY_US."""
    name = (link_name or "").lower()
    return "nvlink" if "nvlink" in name else "infinity-fabric" if "infinity fabric" in name else "pcie"


# Apple GPUs publish no tensor TFLOPs: FP16 = FP32 rate = GPU cores x 128 ALUs x 2 (FMA) x GPU clock ("Apple
# described each GPU core as having 128 ALUs"; the table of philipturner/metal-benchmarks README.md@936d911 gives
# M1 1278 MHz, 8 cores, 2617 GFLOPS F32 = F16, and M1 Pro / Max / Ultra 1296 MHz, M2 family 1398 MHz). M1: Apple
# gives 2.6 TFLOPs for the 8-core M1 GPU (https://www.apple.com/newsroom/2020/11/apple-unleashes-m1/), i.e. 8 x 128
# x 2 x 1.278 GHz. Later clocks as hmc-tech.com lists them: M2 Ultra 1398 MHz
# (https://hmc-tech.com/gpu/apple-32-core-m4-max-vs-apple-60-core-m2-ultra), M3 1398 MHz
# (https://hmc-tech.com/gpu/apple_10_core_m3), M3 Pro 1398 MHz
# (https://hmc-tech.com/gpu/apple-32-core-m4-max-vs-apple-18-core-m3-pro), M3 Max 1398 MHz and M4 Max 1678 MHz
# (https://hmc-tech.com/gpu/apple-32-core-m4-max-vs-apple-40-core-m3-max), M4 Pro 1470 MHz
# (https://hmc-tech.com/gpu/apple-20-core-m4-pro-vs-intel-hd-620-1000mhz; the base M4's cores taken at that clock).
# An M3 Ultra is two M3 Max dies joined by UltraFusion (Apple, 2025-03-05, quoted at
# https://mjtsai.com/blog/2025/03/05/apple-m3-ultra/: "links two M3 Max dies"), so its cores run at the M3 Max's clock.
# These are third-party clocks: a chip's sustained clock may differ by several per cent.
APPLE_GPU_CLOCK_GHZ = {"M1": 1.278, "M1 Pro": 1.296, "M1 Max": 1.296, "M1 Ultra": 1.296, "M2": 1.398,
                       "M2 Pro": 1.398, "M2 Max": 1.398, "M2 Ultra": 1.398, "M3": 1.398, "M3 Pro": 1.398,
                       "M3 Max": 1.398, "M3 Ultra": 1.398, "M4": 1.470, "M4 Pro": 1.470, "M4 Max": 1.678}
# M5 GPUs add a Neural Accelerator to each core for matrix products, which the ALU count does not see. Apple gives
# only a ratio: M5 "over 4x the peak GPU compute performance for AI compared to M4"
# (https://www.apple.com/newsroom/2025/10/apple-unleashes-m5-the-next-big-leap-in-ai-performance-for-apple-silicon/),
# M5 Pro / M5 Max "over 4x the peak AI compute compared to M4 Pro and M4 Max" (Apple, 2026-03-03, as reported at
# https://news.while1.co.il/article/33565624). So an M5-tier chip's FP16 peak is taken as 4 x its cores at the M4
# tier's ALU rate: a lower bound ("over"). A base M5 ran llama.cpp's 7B Q4_0 pp512 at 608 tokens/s through the
# accelerators (ggml-org/llama.cpp#16634), ~8.8 TFLOPs, above its 4.45 TFLOPs of ALUs and 58% of this 15 TFLOPs.
APPLE_M5_AI_FACTOR = 4
APPLE_CHIP = re.compile(r"Apple (M\d)(?: (Pro|Max|Ultra))? .*?(\d+)-core GPU")


def apple_fp16_tflops(g: Gpu) -> tuple[float, str] | None:
    """(FP16 TFLOPs, how it was derived) of an Apple GPU, from its name's chip and GPU cores; None for a chip without
    a recorded clock."""
    chip = APPLE_CHIP.match(g.name) if g.vendor == "Apple" else None
    if chip is None:
        return None
    family, tier, cores = chip[1], chip[2], int(chip[3])
    name = f"{family} {tier}" if tier else family
    if family == "M5":
        m4 = f"M4 {tier}" if tier else "M4"
        return (APPLE_M5_AI_FACTOR * cores * 128 * 2 * APPLE_GPU_CLOCK_GHZ[m4] * 1e9 / TFLOP,
                f"FP16 through the GPU cores' Neural Accelerators: {APPLE_M5_AI_FACTOR} x {cores} cores x 128 ALUs x "
                f"2 x {APPLE_GPU_CLOCK_GHZ[m4]:g} GHz, the {m4}'s rate (Apple: over 4x the {m4}'s peak GPU compute "
                "for AI; publishes no TFLOPs)")
    if name not in APPLE_GPU_CLOCK_GHZ:
        return None
    return (cores * 128 * 2 * APPLE_GPU_CLOCK_GHZ[name] * 1e9 / TFLOP,
            f"FP16 from {cores} GPU cores x 128 ALUs x 2 x {APPLE_GPU_CLOCK_GHZ[name]:g} GHz (Apple publishes none)")


# llama.cpp multiplies a prompt by GGUF-quantized weights with its MMQ kernels on the int8 tensor cores (the
# activations quantized to q8_1) since ggml-org/llama.cpp#7676 and #7860 (June 2024; before, it dequantised to FP16
# for cuBLAS): `mma(tile<16, 8, int> ...)` issues mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 on Ampere and later,
# m8n8k16 on Turing (ggml/src/ggml-cuda/mma.cuh at 032f69d46583da942e41ac6780d31211c3f2c0eb). Its peak is the dense
# INT8 rate: on GeForce cards, which run 16-bit products with FP32 accumulate at half rate but int8 at full rate,
# 4x the catalog's 16-bit figure (Turing TU102 whitepaper: RTX 2080 Ti 56.9 FP16-FP32-acc vs 227.7 INT8 TOPS; Ampere
# GA102 appendix: RTX 3090 71 vs 284; Ada AD102: RTX 4090 165.2 vs 660.6; RTX Blackwell: RTX 5090 209.5 vs 838);
# elsewhere the FP8 rate where the GPU has FP8 tensor cores (INT8 = FP8 on Ada, Hopper and Blackwell: H100 SXM 1,979
# both), else 2x the 16-bit rate (T4 65 / 130, A100 312 / 624: NVIDIA datasheets). Volta has FP16-only tensor cores,
# and Blackwell Ultra cut INT8 to 0.15 POPS dense (https://verda.com/blog/gb300-nvl72-architecture), below its 16-bit
# rate. Pascal has no tensor cores: its MMQ runs __dp4a int8 dot products on the CUDA cores, the Tesla P40's 47 TOPS
# (NVIDIA Tesla P40 datasheet, the catalog entry's source: "INT8 47 TOPS"). Modern MMQ on an RTX 4090 reaches
# 0.94-1.14 of the 16-bit FP32-accumulate peak (SPEED_SOURCES.md section 32), which only the int8 path allows.
INT8_TOPS_EXCEPTIONS = {"b300": 150.0, "v100-16gb": None, "v100-32gb": None, "tesla-p40": 47.0}
GGUF_FORMATS = frozenset(f.id for f in WEIGHT_FORMATS.values() if f.scope == "gguf")


def peak_format(a: Architecture, format_id: str) -> str:
    """The format whose peak a model's FLOPs are timed at: its own, but a MoE in GGUF at the 16-bit peak, as every
    MoE prompt is ('moe' kernels: grouped expert GEMMs of a few dozen tokens each, whose efficiency routing and tile
    sizes set, and whose records, MXFP4 gpt-oss under llama.cpp among them, are fractions of the 16-bit peak; no
    GGUF MoE record on an int8 GPU sets a fraction of the INT8 one yet)."""
    return "bf16" if a.is_moe and format_id in GGUF_FORMATS else format_id


def int8_tops(g: Gpu) -> float | None:
    """The dense INT8 tensor rate of an NVIDIA GPU (TOPS), by the rule above; None where it has no int8 tensor path
    or no 16-bit figure."""
    if g.id in INT8_TOPS_EXCEPTIONS:
        return INT8_TOPS_EXCEPTIONS[g.id]
    sixteen = g.bf16_tflops or g.fp16_tflops
    if g.vendor != "NVIDIA" or sixteen is None:
        return None
    return 4 * sixteen if g.kind == "consumer" else g.fp8_tflops or 2 * sixteen


# Formats whose GEMMs run on FP8 / INT8 tensor cores when the GPU has them (W8A8: vLLM quantization/fp8.py
# Fp8LinearMethod uses cutlass_scaled_mm on sm89+; w8a8-int8 compressed-tensors). Every other format is measured
# against the 16-bit peak: weight-only kernels dequantise to 16-bit inside the GEMM (Marlin, AWQ, bitsandbytes),
# and llama.cpp's GGUF kernels (int8 dot products, or FP16 cuBLAS after dequantisation) have their own efficiency
# (`compute_note`).
# They are also their own kernel kind ('fp8', `kernel_kind`) where the GPU has FP8 tensor cores (the catalog's
# fp8_dense_tflops): the weights are read at 1 byte and multiplied as they are, with no dequantisation step; on a GPU
# without them vLLM runs FP8 checkpoints as weight-only FP8 through Marlin (vllm/model_executor/layers/quantization/
# utils/marlin_utils_fp8.py: "Your GPU does not have native support for FP8 computation ... Weight-only FP8
# compression will be used leveraging the Marlin kernel"), the 'quantized' kind of AWQ / GPTQ.
FP8_COMPUTE_FORMATS = frozenset({"fp8", "fp8-block", "fp8-channel", "w8a8-int8"})
# Attention's two products (QK^T and PV) multiply the activations by the KV cache, not by the weights, so an FP8
# checkpoint does not make them FP8: the attention kernels take 16-bit Q, K and V (FlashAttention-2: fp16 / bf16 only,
# Dao 2023, arXiv:2307.08691). Their FLOPs are timed at the GPU's 16-bit peak whatever the weights
# (`Peaks.attention_flops`, `_phase`). FP8 attention over an FP8 KV cache (FlashAttention-3's FP8 forward, Shah et al.
# 2024, arXiv:2407.08608) is not modelled.
# Weight-only formats of dense layers whose prefill GEMMs run at the 16-bit rate (`prefill_kernel_kind`): the linear
# formats without FP8 / INT8 activations, less NVFP4, which Blackwell multiplies on its FP4 tensor cores.
WEIGHT_ONLY_FORMATS = frozenset(f for f in WEIGHT_FORMATS if weight_format(f).scope == "linear"
                                and f not in FP8_COMPUTE_FORMATS and f != "nvfp4")

# Training efficiency when speed.json has none (no published training record): Llama 3's MFU (Dubey et al. 2024,
# arXiv:2407.21783, Table 4: 38-43% BF16 MFU on H100s, 8K-16K GPUs, 4D parallelism). The derived efficiencies
# replace it wherever a training record sets one (`training_efficiency`).
MFU_LOW, MFU_HIGH = 0.38, 0.43
MFU = (MFU_LOW + MFU_HIGH) / 2
MFU_FALLBACK_KEY = f"no published training record: Llama 3's {MFU_LOW:.0%}-{MFU_HIGH:.0%} MFU, arXiv:2407.21783 Table 4"

ENGINE_FAMILY = {"ollama": "llama.cpp"}  # Ollama runs llama.cpp's kernels (ollama/ollama llama/ vendors ggml)
# Engine generations whose successor replaced the engine loop: vLLM's V1 engine (its own scheduler and a busy loop in
# a separate process, far less CPU work per step) is the default since v0.8.0 (vllm-project/vllm#13726, "enabled V1
# engine by default", v0.8.0 release notes). A record of an older generation keys its efficiencies by that generation
# ("vllm-v0") and enters no key of any engine: the estimate describes the engines users run today, and a superseded
# loop's cost per step is not theirs.
ENGINE_GENERATIONS = {"vllm": ((0, 8), "vllm-v0")}
SUPERSEDED_ENGINES = frozenset(name for _, name in ENGINE_GENERATIONS.values())


@functools.lru_cache(maxsize=256)
def engine_key(engine: str, version: str = "") -> str:
    """The engine an efficiency is keyed by: its family (Ollama -> llama.cpp), or the superseded generation its
    `version` (the first dotted number in the text, e.g. '0.6.3') belongs to; no version = today's."""
    engine = ENGINE_FAMILY.get(engine, engine)
    generation = ENGINE_GENERATIONS.get(engine)
    own = release(version)
    if generation and own and own < generation[0]:
        return generation[1]
    return engine


def release(version: str) -> tuple[int, ...]:
    """The first dotted number of a version text ('0.6.3.dev116+g151ef4ef' -> (0, 6, 3)); () where none."""
    found = re.search(r"\d+(?:\.\d+)+", version or "")
    return tuple(int(n) for n in found.group().split(".")) if found else ()


def gpu_class(g: Gpu) -> str:
    """The GPU class efficiencies are grouped by: NVIDIA datacenter (HBM), NVIDIA consumer and workstation
    (GDDR), AMD, Apple (unified memory)."""
    if g.kind == "apple" or g.vendor.lower() == "apple":
        return "apple"
    if g.vendor.upper() == "AMD":
        return "amd"
    return "nvidia-datacenter" if g.kind == "datacenter" else "nvidia-consumer"


def kernel_kind(format_id: str, g: Gpu) -> str:
    """The kernels a weight format runs on GPU `g`, by mechanism: '16-bit' for unquantized weights; 'fp8' for FP8
    (W8A8) weights on a GPU with FP8 tensor cores (vLLM Fp8LinearMethod / SGLang's fp8 path: cutlass_scaled_mm, block
    FP8 GEMMs; no dequantisation); 'quantized' for the rest: weight-only formats dequantised inside the GEMM (AWQ /
    GPTQ Marlin, FP8 Marlin on GPUs without FP8 tensor cores, bitsandbytes), GGUF's int8 dot products and MLX's
    affine kernels. Efficiencies are derived separately where records allow."""
    if format_id in ("bf16", "fp32"):
        return "16-bit"
    return "fp8" if format_id in FP8_COMPUTE_FORMATS and g.fp8_tflops else "quantized"


def prefill_kernel_kind(a: Architecture, format_id: str, g: Gpu) -> str:
    """The kernels a prompt's forward spends its FLOPs in, by mechanism (a GEMM there has thousands of rows, where a
    decode step's has a few, so the kinds differ from `kernel_kind`'s):
    'moe' for a mixture of experts: its expert FLOPs run as grouped GEMMs of about tokens x k / E rows an expert,
    behind the routing's sort and gather (vLLM / SGLang fused_moe: moe_align_block_size, then one Triton or Marlin
    kernel over every expert; llama.cpp's MUL_MAT_ID), not as one dense GEMM; 'moe-fp8' where the experts are FP8
    on FP8 tensor cores (block-scaled FP8 grouped GEMMs, another kernel, as 'fp8' is for dense layers);
    '16-bit' for a dense model's weight-only format (AWQ, GPTQ, int4 / int8, bitsandbytes: `scope` 'linear' without
    FP8 / INT8 activations): at prefill's rows the dequantisation is amortised and the product runs on the 16-bit
    tensor cores (vLLM's AWQ dequantises the whole matrix and calls torch.matmul from 256 tokens,
    vllm/model_executor/layers/quantization/awq.py AWQLinearMethod.apply at 000796acdf1e; Marlin's tiles are
    dequantised in registers and multiplied with FP16 tensor-core mma instructions, Frantar et al. 2024, MARLIN,
    arXiv:2408.11743);
    `kernel_kind` otherwise (16-bit, FP8 on FP8 tensor cores, GGUF's and MXFP4's own kernels)."""
    if a.is_moe:
        return "moe-fp8" if kernel_kind(format_id, g) == "fp8" else "moe"
    if format_id in WEIGHT_ONLY_FORMATS:
        return "16-bit"
    return kernel_kind(format_id, g)


# GPUs FlashAttention 4 runs on: Hopper (SM90) and datacenter Blackwell (SM100 / SM103); its CuTe kernels use their
# TMA and WGMMA / tcgen05 instructions (Dao-AILab/flash-attention, flash_attn/cute), which Ampere, Ada and the
# consumer / GB10 Blackwell parts (SM120 / SM121) lack
FLASH_ATTENTION_4_GPUS = frozenset({"h100-pcie", "h100-sxm", "h100-nvl", "h200", "h200-nvl", "h20", "b200", "b300",
                                    "gb200"})
FLASH_ATTENTION_MAX_HEAD = 256  # FlashAttention 2 / 3 and FlashInfer's prefill kernels take head sizes up to 256
ATTENTION_KERNEL_WORDS = {"flash": "the engine's fused FlashAttention-class kernel",
                          "triton": "vLLM's Triton attention, which it forces for head sizes over "
                                    f"{FLASH_ATTENTION_MAX_HEAD} on GPUs without FlashAttention 4",
                          "triton-prefix": "vLLM V0's Triton prefix-prefill kernel, which its ROCm backend runs for "
                                           "every chunk of a chunked prompt"}

# vLLM's V0 engine turned chunked prefill on by itself for a model served at more than 32K tokens (vllm-project/vllm
# #6666, "Enable chunked prefill by default for long context models"; EngineArgs.create_engine_config in
# vllm/engine/arg_utils.py, `use_long_context = max_model_len > 32768`), at 512 tokens a step (SchedulerConfig's
# default with chunked prefill, "the best balance between ITL and TTFT on A100"; start-up logs of v0.6.1 to v0.6.4
# print "Chunked prefill is enabled with max_num_batched_tokens=512"). Its condition was device_type == "cuda", which
# ROCm devices are too, until v0.6.5 (vllm-project/vllm#11146, merged 2024-12-12: "On ROCm platform chunked prefill
# is showing poor performance due to a suboptimal triton kernel"). Later V0 releases are not modelled here (v0.8.5's
# start-up logs print max_num_batched_tokens=2048); V1 chunks every prompt by its own rules.
V0_LONG_CONTEXT = 32768
V0_CHUNK = 512
V0_CHUNK_UNTIL = (0, 6, 5)


def default_prefill_chunk(engine: str, version: str, max_model_len: int) -> int:
    """Tokens per forward of a prompt the engine splits by default: V0_CHUNK for vLLM's V0 engine before
    V0_CHUNK_UNTIL served at more than V0_LONG_CONTEXT tokens; 0 (one forward) otherwise."""
    own = release(version)
    if engine_key(engine, version) == "vllm-v0" and own < V0_CHUNK_UNTIL and max_model_len > V0_LONG_CONTEXT:
        return V0_CHUNK
    return 0


def attention_kernel(engine: str, a: Architecture, g: Gpu, chunked: bool = False) -> str:
    """The kernel a prompt's attention runs in, where it is known to differ from the engine's fused FlashAttention-
    class kernel ('flash'): 'triton' for vLLM serving a model whose full-attention layers have their own head size
    over FLASH_ATTENTION_MAX_HEAD (Gemma 4's global_head_dim 512 beside head_dim 256) on a GPU without FlashAttention 4:
    vLLM then puts every layer on its Triton attention (Gemma4Config.verify_and_update_config: "FA4 not available,
    forcing TRITON_ATTN backend", https://docs.vllm.ai/en/v0.25.0/api/vllm/model_executor/models/config/), whose
    prompt attention reaches a far lower fraction of the peak (`attention_efficiency`). 'triton-prefix' for a
    `chunked` prompt under vLLM's V0 engine on an AMD GPU: with chunked prefill every prompt chunk has a block table
    (CommonMetadataBuilder._add_seq_group, vllm/attention/backends/utils.py: `elif ((chunked_prefill_enabled or not
    is_prompt) and block_tables is not None)`), and ROCmFlashAttentionImpl.forward runs its flash attention only for
    prompts without one; the others go to PagedAttention.forward_prefix, the Triton context_attention_fwd of
    vllm/attention/ops/prefix_prefill.py (vllm-project/vllm#11146: ROCm flash attention "is not getting called when
    chunked prefill is enabled")."""
    if engine == "vllm-v0" and chunked and gpu_class(g) == "amd":
        return "triton-prefix"
    if (engine == "vllm" and a.global_head_dim > FLASH_ATTENTION_MAX_HEAD and not a.is_mla
            and g.id not in FLASH_ATTENTION_4_GPUS):
        return "triton"
    return "flash"


@dataclass(frozen=True)
class Efficiency:
    """An achieved fraction of a peak, and where it comes from."""

    value: float  # achieved / peak
    key: str  # what it is the median of, e.g. "llama.cpp, nvidia-consumer, decode, quantized"
    records: tuple[str, ...]  # ids of validation/published/speed.csv it was derived from
    spread: tuple[float, float] | None = None  # lowest and highest achieved fraction of those records (training)
    step_s: float = 0.0  # decode: fixed seconds per step (launches, scheduling, sampling) derived with the value
    layer_s: float = 0.0  # decode: seconds per decoder layer per step (its kernels' floors), derived with the value
    sweeps: int = 0  # attention: the prompt-length sweeps whose lines it is the median of

    def fixed_s(self, layers: int) -> float:
        """A decode step's seconds beyond its bytes and FLOPs for a model of `layers` decoder layers."""
        return self.step_s + layers * self.layer_s

    @property
    def text(self) -> str:
        if not self.records:
            return f"{self.value:.3f} ({self.key})"
        if self.sweeps:
            return (f"{self.value:.3g} (median of {self.sweeps} prompt-length sweep(s), {len(self.records)} published "
                    f"record(s), each a Theil-Sen line of time on attention's share whose slope is 1 / this fraction: "
                    f"{self.key})")
        if self.layer_s:
            return (f"{self.value:.2f} plus {self.layer_s * 1e6:.0f} us per layer a step (Theil-Sen fit of step time "
                    f"per layer on bytes per layer over {len(self.records)} published record(s): {self.key}; "
                    f"{LAYER_COST})")
        if self.step_s:
            return (f"{self.value:.2f} plus {self.step_s * 1e3:.2f} ms per step (Theil-Sen fit of step time on "
                    f"bytes over {len(self.records)} published record(s): {self.key})")
        return f"{self.value:.2f} (median of {len(self.records)} published record(s): {self.key})"


def efficiency_table(data: dict) -> dict[tuple[str, ...], Efficiency]:
    """speed.json's efficiencies by key (engine, GPU class or the one GPU id its records ran on, phase, kernel;
    '' = any)."""
    return {tuple(e["key"]): Efficiency(float(e["value"]), ", ".join(part for part in e["key"] if part),
                                        tuple(e["records"]), tuple(e["range"]) if "range" in e else None,
                                        e.get("step_ms", 0.0) / 1e3, e.get("layer_us", 0.0) / 1e6,
                                        e.get("sweeps", 0))
            for e in data["efficiencies"]}


@functools.lru_cache(maxsize=1)
def _speed_data() -> dict:
    return json.loads(resources.files("estimator").joinpath("data", "speed.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _efficiency_table() -> dict[tuple[str, ...], Efficiency]:
    return efficiency_table(_speed_data())


def swept_elsewhere(kernel: str) -> str:
    """Where prompt-length sweeps measured `kernel`'s attention, in words (speed.json's attention entries of it)."""
    found = [f"{e.value:.3g} of the peak under {key[0]} on {key[1] or 'any GPU'}" for key, e in
             _efficiency_table().items() if key[2:] == ("attention", kernel)]
    return (f". Where sweeps measured it, it reached {'; '.join(found)}, far under FlashAttention-2's 0.50-0.73 "
            "(Dao 2023, arXiv:2307.08691): a long prompt is likely slower than this") if found else ""


@dataclass(frozen=True)
class RequestCost:
    """The server's fixed cost of one request in a TTFT timed by a serving client (vllm bench serve,
    sglang.bench_serving, AIPerf): the HTTP request, chat template and tokenisation, the hand-over to the engine's
    scheduler (vLLM: from the API-server process to the engine-core process), detokenising and streaming the first
    token back; none of it is the prompt's forward. Derived per engine by `python -m validation speed --derive`
    (speed.json's "request_costs": the median of measured TTFT - the estimated forward over the engine's published
    client-timed TTFTs of short prompts at concurrency 1)."""

    seconds: float
    engine: str  # '': pooled over the records of `engines`
    records: tuple[str, ...]  # ids of validation/published/speed.csv it is the median over
    engines: tuple[str, ...] = ()  # a pooled cost: the engines whose records it is the median over

    @property
    def text(self) -> str:
        whose = self.engine or f"{' and '.join(self.engines)} pooled (too few of one engine's own)"
        return (f"TTFT includes the server's fixed cost per request, {self.seconds * 1e3:.1f} ms (median of "
                f"{len(self.records)} published client-timed TTFTs of {whose}: {', '.join(self.records)})")


def request_cost_table(data: dict) -> dict[str, RequestCost]:
    """speed.json's request costs by engine key (`engine_key`; '' the pooled one)."""
    return {e["engine"]: RequestCost(e["request_ms"] / 1e3, e["engine"], tuple(e["records"]),
                                     tuple(e.get("engines", ())))
            for e in data.get("request_costs", ())}


def request_cost_in(table: dict[str, RequestCost], engine: str) -> RequestCost | None:
    """The engine's own request cost of `table`, else the cost pooled over the short TTFTs of every engine (engine
    '') where the engine's records are among them: vLLM's and SGLang's servers do the same work per request (an HTTP
    front end in Python, the chat template and tokenisation, the hand-over to the scheduler process over ZMQ), so
    an engine with too few short TTFTs of its own takes their median; an engine with none in the pool (llama.cpp's
    C++ llama-server, other servers) takes none."""
    engine = ENGINE_FAMILY.get(engine, engine)
    own = table.get(engine)
    if own is not None:
        return own
    pooled = table.get("")
    return pooled if pooled is not None and engine in pooled.engines else None


@functools.lru_cache(maxsize=1)
def _request_costs() -> dict[str, RequestCost]:
    return request_cost_table(_speed_data())


def request_cost(engine: str) -> RequestCost | None:
    """The engine's fixed cost per client-timed request, or None where speed.json has none for it (no engine
    chosen, or fewer published records than the rule needs)."""
    return request_cost_in(_request_costs(), engine)


GPU_CLASS_WORDS = {"nvidia-datacenter": "NVIDIA datacenter GPUs", "nvidia-consumer": "NVIDIA consumer and "
                   "workstation GPUs", "amd": "AMD GPUs", "apple": "Apple GPUs", "": "GPUs of every class"}


@dataclass(frozen=True)
class Accuracy:
    """How far this estimate's engine and GPU class came from the published measurements it was compared with
    (`python -m validation speed --derive`, speed.json's "accuracy": validation/speed_results.csv grouped by engine
    generation, GPU class and phase)."""

    engine: str  # '': every engine's records (training: the framework)
    klass: str  # '': every GPU class's records
    phase: str  # "decode", "prefill" or "training"
    records: int
    median_pct: float  # median |estimate / measured - 1|
    left_out_pct: float  # the same with each record's efficiencies derived without it
    bias_pct: float  # median of (estimated speed / measured speed - 1): > 0, the estimate is faster than measured

    @property
    def text(self) -> str:
        kind = "framework" if self.phase == "training" else "engine"
        who = f"{self.engine or 'every ' + kind} on {GPU_CLASS_WORDS[self.klass]}"
        way = (f"{abs(self.bias_pct):.1f}% {'faster' if self.bias_pct > 0 else 'slower'} than measured"
               if round(self.bias_pct, 1) else "neither faster nor slower than measured")
        return (f"Checked against {self.records} published {self.phase} measurement(s) of {who}: median error "
                f"{self.median_pct:.1f}% ({self.left_out_pct:.1f}% with each record left out of the efficiencies it "
                f"is estimated with); on median the estimate is {way} (validation/FINDINGS.md)")


def accuracy_table(data: dict) -> dict[tuple[str, str, str], Accuracy]:
    """speed.json's accuracy entries by (engine, GPU class, phase), '' = every engine / class."""
    return {(e["engine"], e["class"], e["phase"]): Accuracy(e["engine"], e["class"], e["phase"], e["records"],
                                                            e["median_pct"], e["left_out_pct"], e["bias_pct"])
            for e in data.get("accuracy", ())}


@functools.lru_cache(maxsize=1)
def _accuracy() -> dict[tuple[str, str, str], Accuracy]:
    return accuracy_table(_speed_data())


def accuracy_in(table: dict[tuple[str, str, str], Accuracy], engine: str, klass: str,
                phase: str) -> Accuracy | None:
    """The accuracy of `table` for the engine on the GPU class, then the engine on every class; without an engine,
    every engine's on the class, then on every class (the efficiencies such an estimate takes); None where no
    published record of that phase was compared (another engine's error is not this one's)."""
    engine = ENGINE_FAMILY.get(engine, engine)
    keys = ((engine, klass, phase), (engine, "", phase)) if engine else (("", klass, phase), ("", "", phase))
    return next((table[key] for key in keys if key in table), None)


def accuracy(engine: str, klass: str, phase: str) -> Accuracy | None:
    """`accuracy_in` speed.json's accuracy entries."""
    return accuracy_in(_accuracy(), engine, klass, phase)


def accuracy_note(engine: str, klass: str, phase: str) -> str:
    """In words, how far the estimates of `engine` (training: the framework) on GPU class `klass` came from the
    published measurements of `phase` (`accuracy`); where it has none, that its error is unknown, and how far the
    every-engine efficiencies it then takes came on the class."""
    own = accuracy(engine, klass, phase)
    if own is not None:
        return own.text + ("" if own.klass == klass else f"; none of them on {GPU_CLASS_WORDS[klass]}")
    kind = "framework" if phase == "training" else "engine"
    shared = accuracy("", klass, phase) if engine else None
    tail = (f"; it takes every {kind}'s efficiencies, whose estimates of {shared.records} published {phase} "
            f"measurement(s) on {GPU_CLASS_WORDS[shared.klass]} came within {shared.median_pct:.1f}% on median"
            if shared is not None else "")
    return (f"No published {phase} measurement of {engine or 'any ' + kind} was compared: this estimate's error is "
            f"unknown{tail}")


def host_offload_table(data: dict) -> dict[str, Efficiency]:
    """speed.json's achieved fractions of the host link's peak for weights read from host memory, by engine."""
    return {e["engine"]: Efficiency(float(e["value"]), f"{e['engine']}, --cpu-offload-gb weights over the host link",
                                    tuple(e["records"]), tuple(e["range"]))
            for e in data.get("host_offload", ())}


@functools.lru_cache(maxsize=1)
def _host_offload() -> dict[str, Efficiency]:
    return host_offload_table(_speed_data())


def host_offload_seconds(offloaded_bytes: float, g: Gpu, engine: str,
                         table: dict[str, Efficiency] | None = None) -> tuple[float, Efficiency] | None:
    """Seconds one forward spends reading `offloaded_bytes` of one GPU's weights from pinned host memory, and the
    efficiency that prices them: vLLM's UVAOffloader (vllm/model_executor/offloader/uva.py in the v0.17.1 wheel)
    leaves each offloaded parameter in pinned host memory and hands the kernels a CUDA view of it
    (get_accelerator_view_from_cpu_tensor, "zero-copy access ... at the cost of PCIe bandwidth"), so every forward,
    prefill or decode step, reads those bytes over the GPU's host link, at the achieved fraction of its peak that
    speed.json derives for the engine (`python -m validation speed --derive`). None where the GPU's host link is not
    recorded or no fraction is derived for the engine (SGLang, llama.cpp)."""
    e = (_host_offload() if table is None else table).get(ENGINE_FAMILY.get(engine, engine))
    if e is None or not g.host_link_gb_s:
        return None
    return offloaded_bytes / (g.host_link_gb_s * 1e9 * e.value), e


HOST_PHASES = {"decode": "the CPU's decode over weights in host RAM, of the RAM's peak bandwidth",
               "copy": "op offload's copy of host weights to the GPU, of the host link's peak"}


def host_compute_table(data: dict) -> dict[tuple[str, str], Efficiency]:
    """speed.json's achieved fractions for weights an engine leaves in host memory, by (engine, HOST_PHASES key)."""
    return {(e["engine"], e["phase"]): Efficiency(float(e["value"]), f"{e['engine']}, {HOST_PHASES[e['phase']]}",
                                                  tuple(e["records"]), tuple(e["range"]))
            for e in data.get("host_compute", ())}


@functools.lru_cache(maxsize=1)
def _host_compute() -> dict[tuple[str, str], Efficiency]:
    return host_compute_table(_speed_data())


def host_decode_seconds(touched_bytes: float, host_gb_s: float, engine: str,
                        table: dict[tuple[str, str], Efficiency] | None = None) -> tuple[float, Efficiency] | None:
    """Seconds the CPU spends on one token's layers and experts in host memory: llama.cpp runs a mat-mul on the
    backend of its weight's buffer when the batch is under op offload's 32 tokens (ggml-cuda.cu
    ggml_backend_cuda_device_offload_op), so at decode the CPU streams `touched_bytes` from RAM, at the achieved
    fraction of the RAM's peak (`host_gb_s`, the scenario's input) that speed.json derives from published runs
    (`python -m validation speed --derive`). None without the RAM's bandwidth or a derived fraction."""
    e = (_host_compute() if table is None else table).get((ENGINE_FAMILY.get(engine, engine), "decode"))
    if e is None or not host_gb_s:
        return None
    return touched_bytes / (host_gb_s * 1e9 * e.value), e


def host_copy_seconds(copied_bytes: float, g: Gpu, engine: str,
                      table: dict[tuple[str, str], Efficiency] | None = None) -> tuple[float, Efficiency] | None:
    """Seconds op offload spends copying a ubatch's host weights to the GPU: from 32 tokens a mat-mul of a host
    weight runs on the GPU and ggml_backend_sched_compute_splits copies the weight there first, a MoE weight only
    the experts the ubatch routes to ("copying only the experts that are used", ggml/src/ggml-backend.cpp), over
    the GPU's host link at the fraction speed.json derives. None without a host link or a derived fraction."""
    e = (_host_compute() if table is None else table).get((ENGINE_FAMILY.get(engine, engine), "copy"))
    if e is None or not g.host_link_gb_s:
        return None
    return copied_bytes / (g.host_link_gb_s * 1e9 * e.value), e


def lookup_efficiency(table: dict[tuple[str, ...], Efficiency], engine: str, klass: str, phase: str,
                      kernel: str, gpu: str = "") -> Efficiency:
    """The most specific efficiency of `table`: (engine, GPU class, phase, kernel), then without the kernel, then
    the GPU class with any engine (the hardware sets most of what is achievable), of the kernel kind, then of any,
    the engine on any GPU, and the phase over every record (speed.json's rule). Where only one GPU's records set a
    key, the key names that GPU (`gpu`, a catalog id) instead of its class, and is looked up before the class at the
    same level."""
    engine = ENGINE_FAMILY.get(engine, engine)
    own = ((engine, gpu, phase, kernel), (engine, gpu, phase, "")) if gpu else ()
    shared = (("", gpu, phase, ""),) if gpu else ()
    # a prompt's time is its GEMMs': the kernel kind on the GPU class tells more than the engine over every kind;
    # a decode step's cost beyond its bytes is the engine's (launches, scheduling), so its engine comes first
    mine = ((engine, klass, phase, ""),)
    kind = (("", klass, phase, kernel),)
    for key in own + ((engine, klass, phase, kernel),) + (shared + kind + mine if phase == "prefill" else
                                                            mine + shared + kind) + (
            ("", klass, phase, ""), (engine, "", phase, ""), ("", "", phase, "")):
        if key in table:
            return table[key]
    raise ValueError(f"estimator/data/speed.json has no efficiency for phase {phase!r}")


@functools.lru_cache(maxsize=256)
def efficiency(engine: str, klass: str, phase: str, kernel: str, gpu: str = "") -> Efficiency:
    """`lookup_efficiency` in the derived efficiencies of estimator/data/speed.json."""
    return lookup_efficiency(_efficiency_table(), engine, klass, phase, kernel, gpu)


def attention_efficiency_in(table: dict[tuple[str, ...], Efficiency], engine: str, klass: str, kernel: str,
                            gpu: str = "") -> Efficiency | None:
    """The achieved fraction of the 16-bit peak of a prompt's attention in `kernel` (`attention_kernel`) under
    `engine`: (engine, GPU, 'attention', kernel), then the GPU class, then any GPU; None where no sweep of that engine
    and kernel sets one, and the prompt's attention then runs at its GEMMs' fraction."""
    engine = ENGINE_FAMILY.get(engine, engine)
    for place in ((gpu,) if gpu else ()) + (klass, ""):
        if (key := (engine, place, "attention", kernel)) in table:
            return table[key]
    return None


@functools.lru_cache(maxsize=256)
def attention_efficiency(engine: str, klass: str, kernel: str, gpu: str = "") -> Efficiency | None:
    """`attention_efficiency_in` the derived efficiencies of estimator/data/speed.json."""
    return attention_efficiency_in(_efficiency_table(), engine, klass, kernel, gpu)


def training_efficiency_in(table: dict[tuple[str, ...], Efficiency], framework: str, klass: str,
                           gpu: str = "") -> Efficiency:
    """The training efficiency of `table` for a framework on a GPU class: (framework, GPU class), the GPU class over
    every framework, the framework on any GPU, every training record; Llama 3's MFU where no record sets one (a key
    set by one GPU's records names that GPU, as in `lookup_efficiency`)."""
    try:
        return lookup_efficiency(table, framework, klass, "training", "", gpu)
    except ValueError:
        return Efficiency(MFU, MFU_FALLBACK_KEY, (), (MFU_LOW, MFU_HIGH))


@functools.lru_cache(maxsize=64)
def training_efficiency(framework: str, klass: str, gpu: str = "") -> Efficiency:
    """`training_efficiency_in` the derived efficiencies of estimator/data/speed.json."""
    return training_efficiency_in(_efficiency_table(), framework, klass, gpu)


@dataclass(frozen=True)
class Peaks:
    """What one GPU can do, and what the estimate assumed for what the catalog does not record."""

    bandwidth: float  # bytes/s
    flops: float | None  # FLOP/s of the weight format's tensor path; None: not published
    link: float  # bytes/s per direction between GPUs
    notes: tuple[str, ...]
    link_latency: float = 0.0  # seconds of one small all-reduce over that link (ALLREDUCE_LATENCY_US)
    attention_flops: float | None = None  # FLOP/s of attention's products: the 16-bit path, whatever the weights
    indexer_flops: float | None = None  # FLOP/s of a sparse-attention indexer's FP8 scores (None: attention's)


@functools.lru_cache(maxsize=1024)
def peaks(g: Gpu, format_id: str) -> Peaks:
    notes = []
    tflops, path = g.bf16_tflops or g.fp16_tflops, "dense BF16/FP16"
    if tflops is None and (apple := apple_fp16_tflops(g)) is not None:
        tflops, path = apple
    attention = tflops
    if format_id in FP8_COMPUTE_FORMATS and g.fp8_tflops:
        tflops, path = g.fp8_tflops, f"dense FP8 (W8A8 GEMMs; attention at the {attention:g} TFLOPs 16-bit peak)"
    elif format_id in GGUF_FORMATS and (int8 := int8_tops(g)) is not None:
        tflops, path = int8, ("dense INT8 (llama.cpp's MMQ on the int8 tensor cores; attention at the "
                              f"{attention:g} TFLOPs 16-bit peak)" if attention else
                              "INT8 dot products (llama.cpp's MMQ with __dp4a: no tensor cores; attention taken at "
                              "the same rate, no 16-bit figure recorded)")
    if tflops is None:
        notes.append(f"{g.name}: no TFLOPs recorded, so compute never bounds a phase (prefill is optimistic)")
    else:
        notes.append(f"{g.name}: {g.bandwidth_gb_s:g} GB/s, {tflops:.1f} TFLOPs {path}")
    link, link_name = g.interconnect_gb_s, g.interconnect
    if not link:
        link, link_name = FALLBACK_LINK_GB_S, FALLBACK_LINK
    kind = link_kind(link_name)
    return Peaks(g.bandwidth_gb_s * GB_S, tflops * TFLOP if tflops else None, link * GB_S,
                 (*notes, f"GPU-to-GPU link: {link_name}, {link:g} GB/s per direction; each all-reduce also costs "
                          f"{ALLREDUCE_LATENCY_US[kind]:g} us, the small-message latency of "
                          f"{ALLREDUCE_LATENCY_SOURCES[kind]}"
                          + ("" if kind != "pcie" or "pcie" in link_name.lower() else
                             "; no figure for this link, so PCIe's")),
                 ALLREDUCE_LATENCY_US[kind] * 1e-6, attention * TFLOP if attention else None,
                 g.fp8_tflops * TFLOP if g.fp8_tflops else None)


@dataclass(frozen=True)
class WeightTraffic:
    """Weight bytes of a model in one format, split by what a step reads of them."""

    layers: int  # 2-D weights every token uses (attention, dense MLPs, shared experts, router, lm_head)
    experts: int  # routed-expert matrices (all E experts)
    vectors: int  # norms, biases: replicated on every tensor-parallel rank
    lookup: int  # input embeddings: a step reads only its tokens' rows (not counted)


@functools.lru_cache(maxsize=1024)
def weight_traffic(a: Architecture, format_id: str) -> WeightTraffic:
    """The weights in `format_id` (CHECKPOINT: the checkpoint's own layout) as formats.py sizes them. The input
    embedding is a row lookup, unless tied: then it is also the lm_head every step reads in full."""
    size_of = tensor_size(a, format_id)
    layers = experts = vectors = lookup = 0
    for t in tensors(a):
        size = size_of(t)
        if not t.is_matrix:
            vectors += size
        elif t.is_expert:
            experts += size
        elif t.role in ("token_embd", "position_embd", "per_layer_embd") and not (
                t.role == "token_embd" and a.tie_word_embeddings):
            lookup += size
        else:
            layers += size
    return WeightTraffic(layers, experts, vectors, lookup)


def experts_touched(a: Architecture, tokens: int) -> float:
    """Expected fraction of a layer's experts that `tokens` tokens route to, each picking k of E uniformly:
    1 - (1 - k/E)^tokens (k/E for one token; all of them once the batch is large)."""
    if not a.is_moe:
        return 0.0
    return 1.0 - (1.0 - a.experts_per_token / a.num_experts) ** tokens


@functools.lru_cache(maxsize=1024)
def matmul_parameters(a: Architecture) -> int:
    """Parameters a token multiplies by: the active parameters without the input embedding lookups (a tied
    embedding is the lm_head, so it stays)."""
    counts = parameter_counts(a)
    lookups = sum(t.numel for t in tensors(a) if t.role in ("token_embd", "position_embd", "per_layer_embd")
                  and not (t.role == "token_embd" and a.tie_word_embeddings))
    return counts.active - lookups


@functools.lru_cache(maxsize=1024)
def attention_layer_counts(a: Architecture) -> tuple[int, int]:
    """(full-attention layers, windowed layers); linear-attention and Mamba layers attend to no cached keys."""
    sliding = set(a.sliding_layers)
    windowed = sum(1 for i in a.attention_layers if i in sliding)
    return len(a.attention_layers) - windowed, windowed


def query_widths(a: Architecture) -> tuple[int, int]:
    """(query width of a full-attention layer, of a windowed one): n_h x the layer's head size, which differs where
    the full layers have their own (Gemma 4's global_head_dim 512 beside head_dim 256: `Architecture.attention_shape`),
    so their QK^T and PV products are twice as wide."""
    if a.is_mla or not a.global_head_dim:
        return a.q_width, a.q_width
    return a.num_heads * a.global_head_dim, a.q_width


def indexer_flops(a: Architecture, keys: int) -> int:
    """The indexer's scores of one query against `keys` cached keys, every indexer layer: index_heads dot products of
    index_head_dim (DeepSeek-V3.2, Liu et al. 2025 eq. 1; the per-head weights and ReLU are negligible). Every
    tensor-parallel rank computes all of them: vLLM's Indexer (vllm/model_executor/models/deepseek_v2.py, "no tensor
    parallel, just replicated") and SGLang's build its projections as ReplicatedLinear."""
    return 2 * a.index_heads * a.index_head_dim * keys * indexer_layers(a)


def attention_flops(a: Architecture, context: int) -> int:
    """FLOPs of one token's attention at `context` cached tokens: QK^T and PV, 2 x 2 x the layer's query width
    (`query_widths`) per key it attends to (windowed layers at most the window; sparse-attention layers the index_topk
    keys their indexer selects; linear-attention and Mamba layers keep a fixed state and attend to none)."""
    full, windowed = attention_layer_counts(a)
    wide, narrow = query_widths(a)
    return 4 * (wide * full * min(context, a.index_topk or context)
                + narrow * windowed * min(context, a.sliding_window))


def _capped_causal(prompt: int, cap: int) -> int:
    """Sum over t = 1..prompt of min(t, cap): the keys a prompt's tokens attend to when each sees at most `cap`."""
    return prompt * (prompt + 1) // 2 if prompt <= cap else cap * (cap + 1) // 2 + (prompt - cap) * cap


def prefill_attention_flops(a: Architecture, prompt: int) -> int:
    """Causal attention of a whole prompt: token t attends to t keys (sum 1..P = P(P+1)/2), windowed layers to at
    most the window, sparse-attention layers to at most index_topk (their indexer's scores: `indexer_flops`)."""
    full, windowed_layers = attention_layer_counts(a)
    wide, narrow = query_widths(a)
    causal = _capped_causal(prompt, a.index_topk or prompt)
    return 4 * (wide * full * causal + narrow * windowed_layers * _capped_causal(prompt, a.sliding_window or prompt))


def allreduce_seconds(a: Architecture, tokens: int, tp: int, link: float, latency: float = 0.0) -> float:
    """Two all-reduces per layer of tokens x hidden 16-bit activations (Megatron-LM: after the attention output and
    the MLP down projection), each `latency` seconds plus its bytes over the link: each GPU sends 2 (tp - 1) / tp of
    the tensor (ring all-reduce)."""
    if tp == 1:
        return 0.0
    per_gpu = 2 * a.num_layers * 2 * (tp - 1) / tp * tokens * a.hidden_size * ACTIVATION_BYTES
    return 2 * a.num_layers * latency + per_gpu / link


@dataclass(frozen=True)
class Phase:
    """One forward on one GPU: its bytes, FLOPs and times (seconds)."""

    bytes: float
    flops: float
    memory_s: float
    compute_s: float
    comm_s: float
    step_s: float = 0.0  # the engine's cost per decode step beyond bytes and FLOPs (Efficiency.fixed_s)

    @property
    def seconds(self) -> float:
        return max(self.memory_s, self.compute_s) + self.comm_s + self.step_s

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s > self.memory_s else "memory"


def _phase(num_bytes: float, flops: float, comm_s: float, p: Peaks, e_bw: float, e_flops: float,
           step_s: float = 0.0, attention: float = 0.0, indexer: float = 0.0, e_attention: float = 0.0) -> Phase:
    """`attention` of the `flops` run at the 16-bit peak (`Peaks.attention_flops`) and at `e_attention` of it where
    one is given (its own kernel's fraction: `attention_efficiency`), else at `e_flops`; `indexer` at the FP8 peak
    where the GPU has one (DeepGEMM's fp8_mqa_logits scores the FP8 indexer keys, as vLLM and SGLang run
    DeepSeek-V3.2's indexer), the rest at the weight format's, both at `e_flops`."""
    rest = flops - attention - indexer
    compute = ((rest / p.flops + indexer / (p.indexer_flops or p.attention_flops or p.flops)) / e_flops
               + attention / (p.attention_flops or p.flops) / (e_attention or e_flops)) if p.flops else 0.0
    return Phase(num_bytes, flops, num_bytes / (p.bandwidth * e_bw), compute, comm_s, step_s)


def decode_phase(a: Architecture, format_id: str, kv_dtype: str, tp: int, sequences: int, context: int,
                 p: Peaks, e_bw: float, e_flops: float, mla_latent: bool = True, step_s: float = 0.0) -> Phase:
    """One decode step of `sequences` sequences, each with `context` cached tokens, plus `step_s` seconds of cost
    beyond bytes and FLOPs (the efficiency's `fixed_s` for the model's layers)."""
    w = weight_traffic(a, format_id)
    weights = (w.layers + w.experts * experts_touched(a, sequences)) / tp + w.vectors
    read = min(context, a.index_topk or context)  # sparse attention reads only the keys its indexer selects
    kv = kv_cache_bytes(a, read, sequences, kv_dtype, tp, mla_latent) \
        + indexer_bytes_per_token(a) * (context - read) * sequences  # and scores every cached indexer key
    attention = sequences * attention_flops(a, context) / tp
    indexer = sequences * indexer_flops(a, context)  # replicated on every rank, as its cache
    flops = sequences * 2 * matmul_parameters(a) / tp + attention + indexer
    return _phase(weights + kv, flops, allreduce_seconds(a, sequences, tp, p.link, p.link_latency), p, e_bw, e_flops,
                  step_s, attention, indexer)


def prefill_phase(a: Architecture, format_id: str, tp: int, prompt: int, p: Peaks, e_bw: float,
                  e_flops: float, chunk: int = 0, e_attention: float = 0.0) -> Phase:
    """The forward of one `prompt`-token prompt, the prompt's FLOPs (its attention at `e_attention` where given:
    `_phase`), in forwards of at most `chunk` tokens (0: one forward), each reading the weights again: llama.cpp
    splits a prompt into ubatches of n_ubatch tokens (512 by default, common.h) and runs the whole graph on each, so
    every ubatch reads every layer's weights and the experts its tokens route to (`experts_touched`). A MoE's experts
    are then read once per ubatch, not once per prompt: a 2,048-token prompt of gpt-oss-120b (~61 GB of experts) in
    ubatches of 512 streams ~256 GB, 0.94 s at a DGX Spark's 273 GB/s, where its FLOPs take 0.17 s at the 125 TFLOPs
    peak."""
    w = weight_traffic(a, format_id)

    def read(tokens: int) -> float:
        return (w.layers + w.experts * experts_touched(a, tokens)) / tp + w.vectors

    full, rest = divmod(prompt, chunk) if 0 < chunk < prompt else (0, prompt)
    weights = full * read(chunk) + (read(rest) if rest else 0.0)
    attention = prefill_attention_flops(a, prompt) / tp
    indexer = indexer_flops(a, 1) * (prompt * (prompt + 1) // 2)  # token t scores its t keys, on every rank
    flops = 2 * matmul_parameters(a) * prompt / tp + attention + indexer
    return _phase(weights, flops, allreduce_seconds(a, prompt, tp, p.link, p.link_latency), p, e_bw, e_flops,
                  attention=attention, indexer=indexer, e_attention=e_attention)


@dataclass(frozen=True)
class Basis:
    """What a Speed was computed from, kept so its assumptions are written only when someone reads them."""

    model: Architecture
    gpu: Gpu
    format_id: str
    kv_dtype: str
    tp: int
    sequences: int
    prompt: int
    context: int
    step: Phase
    fill: Phase
    peaks: Peaks
    e_bw: Efficiency
    e_flops: Efficiency
    e_attention: Efficiency | None = None  # the prompt attention's own kernel fraction, where a sweep sets one
    attention_kernel: str = "flash"
    client: bool = False  # the TTFT as a serving client times it (`inference_speed`)
    request: RequestCost | None = None  # the server's fixed cost per request in that TTFT
    engine: str = ""  # the engine key its efficiencies were looked up for ('' = none chosen)

    def accuracy_notes(self) -> tuple[str, ...]:
        """How far estimates of this engine on this GPU class came from published measurements, per phase."""
        return tuple(accuracy_note(self.engine, gpu_class(self.gpu), phase) for phase in ("prefill", "decode"))

    def ttft_note(self) -> str:
        """What the TTFT holds, in words."""
        if self.request is not None:
            return f"{self.request.text}, added to that forward"
        why = ("validation/published/speed.csv has too few client-timed TTFTs of short prompts at one request for "
               "this engine to derive it") if self.client else "no serving engine chosen"
        return ("TTFT is that forward; a request timed by a serving client also pays the server's fixed cost per "
                "request (HTTP, tokenizing, scheduling), most of a short prompt's TTFT in the vLLM and SGLang records "
                f"(validation/FINDINGS.md), not included ({why})")

    def notes(self) -> tuple[str, ...]:
        a, step, fill, tp = self.model, self.step, self.fill, self.tp
        return (
            f"Decode: each step reads {step.bytes / 1e9:.3g} GB per GPU (the weights it touches in this format + the "
            f"KV cache of {self.sequences} sequence(s) at {self.context:,} tokens, {KV_DTYPE_LABELS[self.kv_dtype]}) "
            f"and does {step.flops / 1e9:.3g} GFLOPs; {step.bound}-bound",
            f"Prefill of a {self.prompt:,}-token prompt: {fill.flops / 1e12:.3g} TFLOPs per GPU (2 x "
            f"{matmul_parameters(a):,} active matmul parameters per token + causal attention); {fill.bound}-bound. "
            f"{self.ttft_note()}",
            *((f"Sparse attention (index_topk {a.index_topk:,}): each token attends to at most {a.index_topk:,} keys "
               f"its indexer selects; the indexer ({a.index_heads} heads x {a.index_head_dim}) scores every cached key "
               "on every GPU, at the FP8 peak where there is one",) if a.index_topk else ()),
            *((f"MoE: a step of {self.sequences} sequence(s) touches {experts_touched(a, self.sequences):.1%} of the "
               f"experts, a {self.prompt:,}-token prompt {experts_touched(a, self.prompt):.1%}",) if a.is_moe else ()),
            *(self.peaks.notes if tp > 1 else self.peaks.notes[:-1]),  # the link matters only between GPUs
            f"Achieved fraction of bandwidth {self.e_bw.text}; of peak FLOPs {self.e_flops.text}",
            *((f"The prompt's attention ({ATTENTION_KERNEL_WORDS[self.attention_kernel]}) at its own fraction of the "
               f"16-bit peak: {self.e_attention.text}",) if self.e_attention is not None else
              (f"The prompt's attention runs in {ATTENTION_KERNEL_WORDS[self.attention_kernel]}; no prompt-length "
               "sweep of it on this GPU sets its fraction, so it is taken at the GEMMs'"
               + swept_elsewhere(self.attention_kernel),) if self.attention_kernel != "flash" else ()),
            compute_note(self.format_id, self.gpu),
            *((f"Tensor parallel over {tp}: bytes and FLOPs split, plus two all-reduces per layer "
               f"({(step.comm_s * 1e3):.3g} ms per decode step, {2 * a.num_layers * self.peaks.link_latency * 1e3:.3g} "
               f"ms of it the latency of {2 * a.num_layers} all-reduces at {self.peaks.link_latency * 1e6:.3g} us "
               "each)",) if tp > 1 else ()),
            *filter(None, (across_servers_note(self.gpu, tp),)),
            *self.accuracy_notes(),
        )


@dataclass(frozen=True)
class Speed:
    """Inference speed of one scenario row on one GPU type."""

    prefill_tokens_per_s: float  # prompt tokens per second while prefilling one prompt
    ttft_s: float  # time to first token of one prompt: its prefill (+ the server's cost per request, `RequestCost`)
    decode_tokens_per_s: float  # generated tokens per second of one sequence
    throughput_tokens_per_s: float  # generated tokens per second over all concurrent sequences
    bound: str  # what limits decode: "memory" or "compute"
    basis: Basis | None = None  # what it was computed from (its assumptions)
    scope: tuple[str, ...] = ()  # notes of the caller: what scenario the numbers are for
    host_bytes_left_out: int = 0  # weights read from host memory at every step, which the numbers leave out
    host_prefill_s: float = 0.0  # seconds the prompt's forward spends with weights in host memory (included)
    host_decode_s: float = 0.0  # the same for a decode step at batch 1 (included)

    @property
    def assumptions(self) -> tuple[str, ...]:
        """The assumptions in words (written on demand: a sweep of thousands of speeds never reads them)."""
        return self.scope + (self.basis.notes() if self.basis is not None else ())

    def to_dict(self) -> dict:
        return {"prefill_tokens_per_s": round(self.prefill_tokens_per_s, 2), "ttft_s": round(self.ttft_s, 6),
                "decode_tokens_per_s": round(self.decode_tokens_per_s, 3),
                "throughput_tokens_per_s": round(self.throughput_tokens_per_s, 3), "bound": self.bound,
                "assumptions": list(self.assumptions)}


def inference_speed(a: Architecture, g: Gpu, format_id: str, kv_dtype: str = "bf16", tp: int = 1,
                    sequences: int = 1, prompt: int = 512, context: int = 512, engine: str = "",
                    mla_latent: bool = True, scope: tuple[str, ...] = (), client: bool = False,
                    chunk: int = 0) -> Speed:
    """Prefill of one `prompt`-token prompt (in forwards of at most `chunk` tokens: `prefill_phase`), and a decode
    step of `sequences` sequences at `context` cached tokens each, on `tp` GPUs of type `g` running `engine` ('' =
    no engine chosen: the GPU class's efficiencies over every engine); `scope` says in words what scenario that is
    (the first assumptions). `client`: the TTFT as a serving client times it, the forward + the engine's fixed cost
    per request (`request_cost`) where speed.json has one; the prefill throughput stays the forward's."""
    own = (a.checkpoint.format_id if _quantized_checkpoint(a) else "bf16") if format_id == CHECKPOINT else format_id
    p, klass = peaks(g, peak_format(a, own)), gpu_class(g)
    e_bw = efficiency(engine, klass, "decode", kernel_kind(own, g), g.id)
    e_flops = efficiency(engine, klass, "prefill", prefill_kernel_kind(a, own, g), g.id)
    kernel = attention_kernel(engine, a, g, chunked=chunk > 0)
    e_attention = attention_efficiency(engine, klass, kernel, g.id)
    step = decode_phase(a, format_id, kv_dtype, tp, sequences, context, p, e_bw.value, e_flops.value, mla_latent,
                        e_bw.fixed_s(a.num_layers))
    fill = prefill_phase(a, format_id, tp, prompt, p, e_bw.value, e_flops.value, chunk,
                         e_attention.value if e_attention is not None else 0.0)
    request = request_cost(engine) if client else None
    basis = Basis(a, g, format_id, kv_dtype, tp, sequences, prompt, context, step, fill, p, e_bw, e_flops,
                  e_attention, kernel, client, request, engine)
    return Speed(prefill_tokens_per_s=prompt / fill.seconds,
                 ttft_s=fill.seconds + (request.seconds if request is not None else 0.0),
                 decode_tokens_per_s=1 / step.seconds, throughput_tokens_per_s=sequences / step.seconds,
                 bound=step.bound, basis=basis, scope=scope)


def compute_note(format_id: str, g: Gpu) -> str:
    """Which kernels the weight format runs on, in words (the peak it is measured against)."""
    if format_id in FP8_COMPUTE_FORMATS and g.fp8_tflops:
        return "FP8 weights: W8A8 GEMMs on the FP8 tensor cores (measured against the FP8 peak)"
    if format_id in ("bf16", "fp32", CHECKPOINT):
        return "Weights as stored: 16-bit GEMMs (quantized checkpoints: as their format below)" \
            if format_id == CHECKPOINT else "16-bit weights: 16-bit GEMMs"
    if weight_format(format_id).scope == "gguf":
        return ("GGUF weights: fewer bytes read; llama.cpp's decode multiplies the quantized blocks directly (int8 "
                "dot products, ggml-cuda mmvq.cu); its prefill on tensor-core GPUs dequantised to FP16 for cuBLAS "
                "(ggml-org/llama.cpp#3412, 2023) until int8 tensor-core MMQ kernels (#7676, #7860, June 2024): "
                "measured against the INT8 peak on NVIDIA GPUs with int8 tensor cores (4x the 16-bit FP32-accumulate "
                "figure on GeForce cards; Pascal's dp4a rate), else the 16-bit peak")
    return ("Quantized weights: fewer bytes read; the kernels (Marlin, AWQ, bitsandbytes) dequantise to 16-bit "
            "inside the GEMM, measured against the 16-bit peak")


def _quantized_checkpoint(a: Architecture) -> bool:
    return a.checkpoint is not None and a.checkpoint.format_id is not None


def llama_bench(a: Architecture, g: Gpu, format_id: str, kv_dtype: str = "bf16", pp: int = 512,
                tg: int = 128, tp: int = 1) -> Speed:
    """llama.cpp's `llama-bench` conventions: ppN = prefill throughput of an N-token prompt; tgN = decode speed
    of N tokens generated from an empty context at batch 1 (the cache grows 0..N: on average N / 2 tokens).
    llama-bench times the forward in process, with no server: its TTFT holds no cost per request."""
    return inference_speed(a, g, format_id, kv_dtype, tp, sequences=1, prompt=pp, context=tg // 2,
                           engine="llama.cpp", chunk=DEFAULT_UBATCH)


@dataclass(frozen=True)
class TrainingSpeed:
    tokens_per_s: float  # per GPU
    step_time_s: float  # one optimizer step of micro-batch x sequence length on every GPU
    epoch_time_s: float | None  # the dataset once over all GPUs; None when no dataset size is given
    tokens_per_s_range: tuple[float, float]  # at the lowest and highest fraction of the efficiency's records
    assumptions: tuple[str, ...] = ()
    efficiency: Efficiency | None = None  # the achieved fraction of the peak FLOPs it assumed, and its source

    def to_dict(self) -> dict:
        return {"tokens_per_s": round(self.tokens_per_s, 3), "step_time_s": round(self.step_time_s, 6),
                "epoch_time_s": None if self.epoch_time_s is None else round(self.epoch_time_s, 3),
                "tokens_per_s_range": [round(v, 3) for v in self.tokens_per_s_range],
                "efficiency": None if self.efficiency is None else round(self.efficiency.value, 4),
                "assumptions": list(self.assumptions)}


def training_flops_per_token(a: Architecture, seq_len: int, technique: str, checkpointing: bool) -> float:
    """FLOPs per trained token: forward 2N, backward to the activations 2N, backward to the weights 2N for full
    fine-tuning only (LoRA adapters' own FLOPs are a fraction of a percent), one more forward with gradient
    checkpointing; attention (2 x the query width x seq per layer forward) scales the same way."""
    n = matmul_parameters(a)
    attention = attention_flops(a, seq_len) // 2  # causal: half of a full row's 4 x query width x seq
    passes = (3 if technique == "full" else 2) + (1 if checkpointing else 0)
    return passes * (2 * n + attention)


def training_speed(a: Architecture, g: Gpu, technique: str, batch: int, seq_len: int, gpus: int = 1,
                   zero_stage: int = 0, checkpointing: bool = False, dataset_tokens: int = 0,
                   grad_bytes: int = BF16_BYTES, framework: str = "", e: Efficiency | None = None) -> TrainingSpeed:
    """Tokens/s per GPU at the achieved fraction of peak FLOPs of published runs (`e`; default: the derived one of
    `framework` on the GPU's class, `training_efficiency`); a step is micro-batch x seq_len tokens on each GPU; data
    parallel communication (ZeRO paper, Rajbhandari et al. 2020, arXiv:1910.02054, section 7: 2 Psi per GPU for
    DP / ZeRO-1 / 2, 3 Psi for ZeRO-3) overlaps compute unless it takes longer."""
    p = peaks(g, "bf16")
    e = training_efficiency(framework, gpu_class(g), g.id) if e is None else e
    per_token = training_flops_per_token(a, seq_len, technique, checkpointing)
    notes = [f"FLOPs per token: {per_token / 1e9:.3g} G ({'6' if technique == 'full' else '4'}N"
             f"{' + 2N recomputation' if checkpointing else ''}, N = {matmul_parameters(a):,} matmul parameters, "
             "plus attention" + ("; LoRA: no weight gradients of the frozen base" if technique != "full" else "")
             + ")", *p.notes[:1],
             f"Achieved fraction of peak FLOPs (recomputation counted) {e.text}"
             + (f"; its records range {e.spread[0]:.2f}-{e.spread[1]:.2f}" if e.spread and e.records else "")]
    if p.flops is None:
        raise ValueError(f"{g.name} has no recorded TFLOPs: training speed cannot be estimated")
    if technique.startswith("qlora"):
        notes.append("QLoRA: the base is dequantised to 16-bit for every matmul (the same FLOPs; the dequantisation "
                     "costs are in the achieved fraction only as far as its records ran QLoRA)")
    tokens = batch * seq_len
    compute_s = tokens * per_token / (p.flops * e.value)
    trained = parameter_counts(a).total if technique == "full" else 0
    comm_s = 0.0
    if gpus > 1 and trained:
        volume = (3 if zero_stage == 3 else 2) * trained * grad_bytes * (gpus - 1) / gpus
        comm_s = volume / p.link
        notes.append(f"Data parallel over {gpus} GPUs (ZeRO-{zero_stage}): {volume / 1e9:.3g} GB per GPU per step "
                     f"over the link ({comm_s:.3g} s), overlapped with compute")
    elif gpus > 1:
        notes.append("LoRA over several GPUs: only the adapters' gradients are all-reduced (negligible)")
    step = max(compute_s, comm_s)
    rate = tokens / step
    notes.append(accuracy_note(framework, gpu_class(g), "training"))
    low, high = (tokens / max(tokens * per_token / (p.flops * m), comm_s) for m in (e.spread or (e.value, e.value)))
    epoch = dataset_tokens / (rate * gpus) if dataset_tokens else None
    return TrainingSpeed(rate, step, epoch, (low, high), tuple(notes), e)


# The inference table's rows and the formats they stand for (inference.DETAILED_ROWS; a format id stands for itself)
ROW_FORMATS = {"16-bit": "bf16", "8-bit": "fp8", "4-bit": "awq-4bit"}
SERVE_PROMPT, SERVE_GENERATED = 512, 128  # llama-bench's pp512 / tg128, the convention of most published numbers


def row_speed(s: InferenceScenario | FinetuneScenario, row: str, g: Gpu) -> Speed | TrainingSpeed | None:
    """The speed of one table row of a scenario on GPU `g`. Inference: the whole sequence as the prompt (TTFT of
    seq_len tokens), and decode with every one of the batch x concurrency sequences at seq_len cached tokens (the
    last, slowest step of a full-length request); a bare parameter count: `quick_speed`. Fine-tuning: None for a
    bare parameter count or a GPU without recorded TFLOPs."""
    if isinstance(s, InferenceScenario) and not isinstance(s.model, Architecture):
        return quick_speed(s, row, g)
    if not isinstance(s.model, Architecture) or (isinstance(s, FinetuneScenario) and peaks(g, "bf16").flops is None):
        return None
    if isinstance(s, InferenceScenario):
        sequences = s.batch_size * s.concurrency
        return inference_speed(s.model, g, ROW_FORMATS.get(row, row), s.kv_dtype, s.tensor_parallel, sequences,
                               prompt=s.seq_len, context=s.seq_len, mla_latent=s.mla_latent_cache, scope=(
                                   f"Speed: prefill of one {s.seq_len:,}-token prompt; decode of {sequences} "
                                   f"sequence(s) each at {s.seq_len:,} cached tokens (the last step of a full-length "
                                   "request); no engine chosen",))
    return training_speed(s.model, g, row, s.batch_size, s.seq_len, s.num_gpus, s.zero_stage,
                          gradient_checkpointing(s.gradient_checkpointing, row), s.dataset_tokens,
                          REGIMES[s.regime].grad_bytes if row == "full" else BF16_BYTES, framework=s.framework)


def quick_speed(s: InferenceScenario, row: str, g: Gpu) -> Speed:
    """Speed of a model known only by its parameter counts, from the quick estimate's own bytes (the reference
    document's weights and KV cache at seq_len): decode reads the weights (a MoE batch of B sequences at most
    B x active / total of them: no expert count is known) and the KV cache, and does 2 x active FLOPs per token;
    prefill does 2 x active FLOPs per prompt token. Without the layer shapes, attention FLOPs and the
    tensor-parallel all-reduces are left out."""
    bits = dict(QUICK_ROWS).get(row) or weight_format(row).bits
    b = quick_inference(s, bits, row)
    total, active = s.model.total_params, s.model.active_params
    tp, sequences = s.tensor_parallel, s.batch_size * s.concurrency
    p, klass, kernel = peaks(g, "bf16"), gpu_class(g), "16-bit" if bits >= 16 else "quantized"
    fill_kernel = "moe" if active < total else "16-bit"  # prefill_kernel_kind: the quick rows are weight-only
    e_bw, e_flops = efficiency("", klass, "decode", kernel, g.id), efficiency("", klass, "prefill", fill_kernel, g.id)
    touched = min(1.0, sequences * active / total)
    step = _phase(b.component("weights") * touched + b.component("kv_cache"), 2 * active * sequences / tp, 0.0, p,
                  e_bw.value, e_flops.value, e_bw.step_s)
    fill = _phase(b.component("weights"), 2 * active * s.seq_len / tp, 0.0, p, e_bw.value, e_flops.value)
    notes = (f"Speed from the parameter counts (quick method): prefill of one {s.seq_len:,}-token prompt at "
             f"2 x {active:,} FLOPs per token; decode of {sequences} sequence(s) reading "
             + (f"{touched:.1%} of the weights (at most B x active / total of a MoE's) " if touched < 1 else
                "the weights ") + "and the quick KV cache; attention FLOPs and tensor-parallel traffic not modelled "
             "(choose a catalog model or a config.json for them)",
             *p.notes[:1], f"Achieved fraction of bandwidth {e_bw.text}; of peak FLOPs {e_flops.text}",
             "This quick speed was not compared with measurements itself: the published records are compared with "
             "the estimate from the architecture, which takes the same efficiencies and came as follows",
             *(accuracy_note("", klass, phase) for phase in ("prefill", "decode")))
    return Speed(prefill_tokens_per_s=s.seq_len / fill.seconds, ttft_s=fill.seconds,
                 decode_tokens_per_s=1 / step.seconds, throughput_tokens_per_s=sequences / step.seconds,
                 bound=step.bound, scope=notes)


def _layers_on_host(s: ServeScenario, report: ServeReport) -> bool:
    """Whether llama.cpp leaves layer weights (not only the token embedding) in host RAM: fewer GPU layers than the
    model's (as given or as --fit chose them), --n-cpu-moe, or an -ot pattern to the CPU."""
    ngl = dict(report.settings).get("n_gpu_layers", s.n_gpu_layers)
    return (0 <= int(ngl) < s.model.num_layers or s.n_cpu_moe > 0
            or any(device < 0 for _, device in override_rules(s.override_tensor)))


def serve_speed(s: ServeScenario, report: ServeReport, host: bool = True) -> Speed:
    """An engine's speed by llama-bench's conventions: pp512 (prefill throughput and TTFT of a 512-token prompt)
    and tg128 (decode at batch 1 from an empty context); the throughput over as many 640-token requests as the
    engine runs at once (its running-request limit, capped by what its KV cache holds). The engine serves requests,
    so the TTFT is one request's as a serving client times it: the forward + the engine's fixed cost per request
    where speed.json derives one (`request_cost`). `host=False`: the GPU's part alone, without the time of weights
    in host memory (validation subtracts it from measured times)."""
    settings = dict(report.settings)
    limits = ("max_num_seqs", "max_running_requests", "n_parallel", "num_parallel", "batch")  # vLLM, SGLang, ...
    limit = next((int(settings[k]) for k in limits if k in settings), s.max_num_seqs or 1)
    request = SERVE_PROMPT + SERVE_GENERATED
    sequences = max(1, min(limit, report.kv_cache_tokens // request)) if report.kv_cache_tokens else 1
    g = catalog_gpu(s.gpu)
    engine = engine_key(s.engine, s.engine_version)
    # llama.cpp's ubatches each read the weights (prefill_phase); vLLM V0 chunked long-context prompts by default
    chunk = int(settings.get("n_ubatch", 0)) or default_prefill_chunk(s.engine, s.engine_version, report.max_model_len)
    one = inference_speed(s.model, g, s.weights, s.kv_dtype, s.tensor_parallel, 1, SERVE_PROMPT,
                          SERVE_GENERATED // 2, engine, client=True, chunk=chunk)
    many = inference_speed(s.model, g, s.weights, s.kv_dtype, s.tensor_parallel, sequences, SERVE_PROMPT,
                           SERVE_PROMPT + SERVE_GENERATED // 2, engine)
    offloaded = host and bool(report.host_bytes and s.cpu_offload_gb)
    on_cpu = host and s.engine in ("llama.cpp", "ollama") and _layers_on_host(s, report)
    if offloaded:
        per_forward = offloaded_per_forward(s, report)
        found = host_offload_seconds(per_forward, g, engine)
        if found is None and g.host_link_gb_s:  # no measured fraction: the link's peak, a floor on the time
            found = (per_forward / (g.host_link_gb_s * 1e9), OFFLOAD_LINK_PEAK)
        extra = found[0] if found is not None else 0.0
        time = HostTime(extra, extra, extra, _host_offload_note(s, g, per_forward, found), found is None)
    elif on_cpu:
        time = _llama_cpp_host_time(s, settings, g, engine, one, many, sequences)
    else:
        time = HostTime(0.0, 0.0, 0.0, "", False)
    scope = (f"Speed by llama-bench's conventions: pp{SERVE_PROMPT} and tg{SERVE_GENERATED} at batch 1 (TTFT of one "
             f"{SERVE_PROMPT}-token request: the forward, + the server's cost per request where one is derived for "
             "the engine); throughput "
             f"over {sequences} concurrent {request}-token request(s) (the engine's running-request limit {limit}, "
             "capped by its KV-cache tokens)",
             *(("Pipeline parallel: a token passes the stages one after another, so a step takes the sum of the "
                "stages' times, as one GPU reading every layer's share would (transfers between stages not "
                "modelled)",) if s.pipeline_parallel > 1 else ()),
             *((EAGER_NOTE,) if s.enforce_eager and s.engine in ("vllm", "sglang") else ()),
             *((time.note,) if time.note else ()))
    if not (time.prefill_s or time.decode_s or time.many_s):
        return dataclasses.replace(one, throughput_tokens_per_s=many.throughput_tokens_per_s, scope=scope,
                                   host_bytes_left_out=report.host_bytes if time.left_out else 0)
    prefill = SERVE_PROMPT / (SERVE_PROMPT / one.prefill_tokens_per_s + time.prefill_s)
    return dataclasses.replace(
        one, prefill_tokens_per_s=prefill, ttft_s=one.ttft_s + time.prefill_s,
        decode_tokens_per_s=1 / (1 / one.decode_tokens_per_s + time.decode_s),
        throughput_tokens_per_s=sequences / (sequences / many.throughput_tokens_per_s + time.many_s),
        bound="memory" if time.decode_s else one.bound, scope=scope, host_prefill_s=time.prefill_s,
        host_decode_s=time.decode_s,
        host_bytes_left_out=report.host_bytes if time.left_out else 0)


# CUDA graphs off (vLLM --enforce-eager, SGLang --disable-cuda-graph): each decode step's kernels are launched from
# Python one by one, a CPU cost per kernel that graph replay removes. The records that set the per-layer decode cost
# ran with graphs on, save a few large models whose steps are long enough to hide it (Qwen's vLLM 0.6.3 eager rows of
# Qwen2.5-32B / 72B come within 6%); the one small model's eager run found is 2.2x slower than the estimate, and
# published eager / graph pairs of one model differ 1.7-4x (Qwen2.5-Omni-7B's thinker on A800s 22 -> 13 ms a token,
# vllm-project/vllm-omni#7960; a VLM on an RTX A6000 11.2 -> 45.9 tokens/s, Project-MONAI/VLM-Surgical-Agent-Framework
# #5), too few and too unlike the catalog's scenarios to derive a cost per kernel from.
EAGER_NOTE = ("CUDA graphs off: every decode step launches its kernels from Python one by one, while the per-layer "
              "cost here is that of runs with graphs on, so decode is likely slower, most for small models whose "
              "steps are short (vLLM 0.9.1 eager decoded Qwen3-14B AWQ on an A100 at 16K tokens of context in 20.6 "
              "ms a token, where the estimate gives 9.5: vllm-project/vllm#20469; published pairs of the same 3-8B "
              "model with graphs off and on differ 1.7-4x: vllm-project/vllm-omni#7960, "
              "Project-MONAI/VLM-Surgical-Agent-Framework#5); no eager cost is derived")


OFFLOAD_LINK_PEAK = Efficiency(1.0, "the link's peak (no published run of this engine's offload sets a fraction yet, "
                                    "so this time is a floor and the speeds ceilings)", ())
LINK_PEAK = Efficiency(1.0, "the link's peak, for every expert a uniformly routed ubatch touches: no fraction is "
                            "derived, the measured prompts running from 0.5 of this rate to faster than it "
                            "(validation/FINDINGS.md)", ())


def offloaded_per_forward(s: ServeScenario, report: ServeReport) -> float:
    """Bytes one GPU reads from host memory in a forward under --cpu-offload-gb: a token passes every pipeline stage,
    and each stage's GPUs read their own offloaded share."""
    return report.host_bytes / s.gpus * s.pipeline_parallel


def gpu_read_seconds(num_bytes: float, rate: Speed, tp: int) -> float:
    """Seconds `rate`'s decode step spends reading `num_bytes` (split over `tp` GPUs) from the GPU's memory, at its
    derived bandwidth fraction: what weights in host memory no longer cost the GPU."""
    return num_bytes / tp / (rate.basis.peaks.bandwidth * rate.basis.e_bw.value)


def ubatch_copy_bytes(touched: Callable[[int], float], tokens: int, ubatch: int) -> float:
    """Bytes op offload copies for a prompt of `tokens`: each ubatch of up to `ubatch` tokens copies what it touches
    (`touched(tokens in the ubatch)`)."""
    return sum(touched(min(ubatch, tokens - start)) for start in range(0, tokens, ubatch))


def host_copy_or_peak(num_bytes: float, g: Gpu, engine: str,
                      table: dict[tuple[str, str], Efficiency] | None = None) -> tuple[float, Efficiency] | None:
    """`host_copy_seconds`, or where no fraction is derived the link's peak (LINK_PEAK); None without a host link."""
    found = host_copy_seconds(num_bytes, g, engine, table)
    if found is None and g.host_link_gb_s:
        found = (num_bytes / (g.host_link_gb_s * 1e9), LINK_PEAK)
    return found


@dataclass(frozen=True)
class HostTime:
    """Seconds weights in host memory add to the prompt's forward, a decode step at batch 1 and a step of the
    concurrent requests, with what they are in words; `left_out`: some of that time is not in them."""

    prefill_s: float
    decode_s: float
    many_s: float
    note: str
    left_out: bool


def _llama_cpp_host_time(s: ServeScenario, settings: dict, g: Gpu, engine: str, one: Speed, many: Speed,
                         sequences: int) -> HostTime:
    """llama.cpp's weights in host memory (-ngl below the layers, --n-cpu-moe, -ot ...=CPU): a batch under 32 tokens
    runs their mat-muls on the CPU, reading them from RAM instead of the GPU's memory (`host_decode_seconds`, the
    GPU's time for those bytes taken off); a batch of 32 or more copies them to the GPU first, each ubatch of the
    prompt its own copy (`host_copy_seconds`). Where the RAM's bandwidth (the scenario's input) or a derived fraction
    is missing, that part stays out of the speeds and the note says so."""
    a = s.model
    # the layers as the start-up placed them (llama.cpp's --fit or Ollama's own rule chose -ngl where it was unset)
    placed = dataclasses.replace(s, engine="llama.cpp", n_gpu_layers=int(settings.get("n_gpu_layers", s.n_gpu_layers)))
    dense, expert = host_matrices(placed)
    ub = int(settings.get("n_ubatch", SERVE_PROMPT))

    def touched(tokens: int) -> float:
        return dense + expert * experts_touched(a, tokens)

    def cpu(tokens: int, speed: Speed) -> tuple[float, Efficiency] | None:
        found = host_decode_seconds(touched(tokens), s.host_memory_gb_s, engine)
        saved = gpu_read_seconds(touched(tokens), speed, s.tensor_parallel)
        return (found[0] - saved, found[1]) if found is not None else None

    copy = host_copy_or_peak(ubatch_copy_bytes(touched, SERVE_PROMPT, ub), g, engine) \
        if ub >= OFFLOAD_MIN_BATCH else None
    step = cpu(1, one)
    batch = host_copy_or_peak(touched(sequences), g, engine) if sequences >= OFFLOAD_MIN_BATCH \
        else cpu(sequences, many)
    read = touched(1)
    parts = [f"llama.cpp keeps {(dense + expert) / 2**30:.2f} GiB of weight matrices in host RAM (what -ngl, "
             f"--n-cpu-moe or -ot leave there; {expert / 2**30:.2f} GiB of it experts)"]
    if step is not None:
        parts.append(f"a token's decode reads {read / 2**30:.3f} GiB of them on the CPU (its experts: "
                     f"{experts_touched(a, 1):.1%}) at {step[1].value:.2f} of the {s.host_memory_gb_s:g} GB/s RAM "
                     f"given ({_fraction_source(step[1])}): {step[0] * 1e3:,.1f} ms more a step than reading them on "
                     "the GPU")
    else:
        why = ("no host memory bandwidth given (--host-memory-bandwidth)" if not s.host_memory_gb_s else
               "no fraction derived for this engine from validation/published/host_speed.csv")
        parts.append(f"the CPU's time reading {read / 2**30:.3f} GiB of them for each decoded token is left out "
                     f"({why}): decode is slower than shown")
    if copy is not None:
        parts.append(f"a prompt's ubatches of {ub} tokens copy them to the GPU first (op offload; a MoE's used "
                     f"experts only) over the {g.host_link_gb_s:g} GB/s host link at {copy[1].value:.2f} of its peak "
                     f"({_fraction_source(copy[1]) if copy[1].records else copy[1].key}): {copy[0] * 1e3:,.1f} ms in "
                     "the prompt's forward")
    else:
        parts.append("the prompt's time with them (op offload's copy to the GPU, or the CPU's own mat-muls under 32 "
                     "tokens a ubatch) is left out")
    return HostTime(copy[0] if copy else 0.0, step[0] if step else 0.0, batch[0] if batch else 0.0,
                    "; ".join(parts), step is None or copy is None or batch is None)


def _fraction_source(e: Efficiency) -> str:
    low, high = e.spread or (e.value, e.value)
    return f"median of {len(e.records)} published runs, {low:.2f}-{high:.2f}: {e.key}"


def _host_offload_note(s: ServeScenario, g: Gpu, per_forward: float, host: tuple[float, Efficiency] | None) -> str:
    """What --cpu-offload-gb does to the speeds, in words."""
    how = (" in place, zero-copy (vLLM's UVA offloader, vllm/model_executor/offloader/uva.py)" if s.engine == "vllm"
           else ", copied to the GPU at every forward (SGLang's OffloaderV1: functional_call over the parameters moved "
                "to the device, sglang/srt/utils/offloader.py in the v0.5.23 wheel)")
    head = (f"CPU weight offload (--cpu-offload-gb {s.cpu_offload_gb:g}): every forward also reads "
            f"{per_forward / 2**30:.2f} GiB per GPU from pinned host memory over the GPU's host link{how}")
    if host is None:
        return (f"{head}, which these speeds leave out (the catalog records no host link for this GPU): decode is "
                "slower, by that transfer's time per step")
    seconds, e = host
    if not e.records:
        return (f"{head} ({g.host_link_gb_s:g} GB/s a direction), at {e.key}: {seconds * 1e3:,.1f} ms added to the "
                "prompt's forward and to every decode step above")
    low, high = e.spread or (e.value, e.value)
    return (f"{head} ({g.host_link_gb_s:g} GB/s a direction), at {e.value:.2f} of the link's peak (median of "
            f"{len(e.records)} published measurements, validation/published/offload.csv; {low:.2f}-{high:.2f} over "
            f"them, validation/FINDINGS.md says which runs reach the top): {seconds * 1e3:,.1f} ms added to the "
            "prompt's forward and to every decode step above")
