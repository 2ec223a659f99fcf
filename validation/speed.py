"""The speed model against published measurements (validation/published/speed.csv): derive the efficiencies, report
the errors.

    python -m validation speed            # errors per engine and GPU class (fit and held-out records)
    python -m validation speed --derive   # rewrite estimator/data/speed.json from the records, then report

Rule of the efficiencies (written into speed.json): for each record, the achieved fraction is the measured value
over the roofline estimate at 100% efficiency (decode: of the memory bandwidth, the phase being memory-bound at
batch 1; prefill: of the peak FLOPs). A decode step also costs the engine time beyond its bytes (kernel launches and
each short kernel's floor, scheduling, sampling) that a small model's step is mostly made of, so a decode key with at
least MIN_STEP_RECORDS records is fitted as measured step time = t_step + roofline step time / e_bw (Theil-Sen: the
median of the pairwise slopes, then the median intercept; robust to outliers as the median is), kept when
0 < e_bw <= 1 and t_step > 0 (else the key is not made, but for the last fallback, phase alone). The key of one
engine fits that line per decoder layer (both times divided by the model's layers: t_step = layers x t_layer, the
floor of the kernels each layer runs one after another,
speed.LAYER_COST); a key shared by every engine, whose records ran different engines' kernels, keeps t_step a
constant per step. Any other
efficiency is the median achieved fraction of the records of one key,
from the most specific key with at least MIN_RECORDS records to the least:
(engine, GPU class, phase, kernel) -> (engine, GPU class, phase) -> (GPU class, phase, kernel) -> (GPU class, phase)
-> (engine, phase) -> phase, a prompt's (GPU class, phase, kernel) before (engine, GPU class, phase);
a (GPU class, phase) key, shared by every engine, needs the records of at least MIN_SHARED_ENGINES engines, and a key
whose records all ran on one GPU names that GPU instead of its class (the efficiency one GPU reached is that GPU's).
Held-out records (crc32 of the id % HOLDOUT_MODULUS == 0) never enter a median; their error is reported apart. Only
records of one sequence on one GPU whose roofline at 100% is bound as its phase enter a median (`derivable`);
batches, tensor parallelism and serving throughput (output_throughput, total_throughput) are compared but set no
efficiency, as is a client-timed TTFT of a prompt under CLIENT_TTFT_MIN_PROMPT tokens (compared apart as "prefill,
short TTFT": the request's fixed cost is most of it). Those short TTFTs set instead the engine's fixed cost per
request (`request_costs`, speed.RequestCost): for an engine with at least MIN_REQUEST_RECORDS of them at
concurrency 1 on one GPU (tp 1), not held out, the median of (measured TTFT - the record's forward at the derived
prefill efficiency); pooled over every engine's such records (engine '', at least MIN_SHARED_ENGINES engines) for an
engine among them with fewer of its own (speed.request_cost_in). A median of differences, not a Theil-Sen line
TTFT = t_request + forward / e over every client-timed TTFT: the short prompts' forwards span a few milliseconds (no
leverage on a slope), and the long prompts' TTFTs set the prefill efficiency itself, so a line through both would fit
one term twice; the median leaves the efficiency to the long prompts and is robust to one run's outlier, as the
other medians are. Every client-timed TTFT, long or short, holds that cost (`client_ttft`: all but the in-process
AccelMark rows): it is compared against the forward + the cost (what serve gives a user), and a long one sets the
prefill efficiency with the cost taken out. The cost is derived first, over efficiencies of the records as they are,
then the efficiencies again without it (`derive`): the short prompts' forwards it is taken net of are a small part
of their TTFTs, so which pass's efficiencies price them moves it little. Taking it out matters: SGLang's cookbook
TTFTs of 8,192-token prompts are 98-182 ms on a B200 or H200, of which ~28 ms is the request's. An offline run of every
request at once whose requests generate at most OFFLINE_PREFILL_MAX_OUTPUT of their prompt tokens is a prefill record
(`offline_prefill`): its prompts' forwards, compute-bound, are its time. Training records (train_tokens_per_s
against the fine-tuning speed, train_mfu against the MFU the estimate implies) set the training efficiency by the
same rule, keyed by (framework, GPU class): the achieved fraction of the peak FLOPs counting the FLOPs the estimate
counts (6N / 4N per token, + 2N with recomputation).

Published names reach the catalog through tables with a reason per entry (MODEL_NAMES, GPU_NAMES, WEIGHT_WORDS,
TRAINING_SETUPS); a record that stays ambiguous, or whose metric needs a field the source does not state, is
skipped with the reason (speed_results.csv's `skip`).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import itertools
import json
import re
import statistics
import zlib
from dataclasses import dataclass
from pathlib import Path

from estimator import catalog, speed
from estimator.engines.llama_cpp import DEFAULT_UBATCH
from estimator.formats import WEIGHT_FORMATS, resolve_word

SPEED_CSV = Path(__file__).parent / "published" / "speed.csv"
SPEED_RESULTS_CSV = Path(__file__).with_name("speed_results.csv")
SPEED_JSON = Path(speed.__file__).parent / "data" / "speed.json"
COLUMNS = ("id", "engine", "engine_version", "gpu", "gpus", "tp", "model", "weights", "kv_dtype", "concurrency",
           "input_tokens", "output_tokens", "metric", "value", "source", "date", "quote", "notes")
DECODE_METRICS = ("llama_bench_tg", "decode_tokens_per_s_per_seq", "tpot_ms")
PREFILL_METRICS = ("llama_bench_pp", "prefill_tokens_per_s", "ttft_ms")
TIME_METRICS = ("tpot_ms", "ttft_ms")  # seconds, not a rate: lower is faster
MIN_RECORDS = 2
MIN_STEP_RECORDS = 3  # a line through the records needs more than two of them to have a median slope
MIN_SHARED_ENGINES = 2  # a GPU-class key shared by every engine stands for more than one engine's records
# A prompt-length sweep (`sweeps`) separates the attention kernel's fraction only where the attention's share moves:
# its attention time at the peak, over its GEMM time at the peak, must span at least this much across the sweep
# (from a 4K to a 64K-token prompt of Gemma 4 on a DGX Spark: 0.09 to 0.75). Over a smaller span, the few percent a
# record's time varies run to run move the line's slope more than the attention fractions to tell apart: over 0.2
# of span, attention at 0.3 or at 0.6 of the peak changes a sweep's time by 0.2 / 0.3 - 0.2 / 0.6 = 0.33 GEMM-times,
# 4% of a prompt whose GEMMs reach 0.12 of their peak.
MIN_SWEEP_SPREAD = 0.5
ATTENTION_LINE = ("each sweep's prompts of one model on one GPU timed at several lengths give measured time / GEMM "
                  "time at the peak = 1 / GEMM fraction + (attention time at the peak / GEMM time at the peak) / "
                  "attention fraction, a line whose slope is 1 / the attention kernel's fraction")
MIN_REQUEST_RECORDS = 3  # an engine's cost per request is a median over at least three runs, as a decode line is
HOLDOUT_MODULUS = 4
# A TTFT is timed by a serving benchmark's client (vllm bench serve, AIPerf, sglang.bench_serving; only AccelMark's
# long-prompt rows, SPEED_SOURCES.md section 24, are timed in process): it holds the request's fixed cost (HTTP, chat
# template, tokenisation, scheduling, streaming the first token) beside the prompt's forward, a cost the prefill
# roofline has no term for. Below this prompt length such a record is compared apart ("prefill, short TTFT") and
# enters neither an efficiency nor the prefill bar: at one request on one GPU it sets its engine's fixed cost per
# request instead (`request_costs`); from it on the forward is most of the time (issue 17's threshold: TTFT at
# concurrency 1 with prompts of 2,000 tokens or more).
CLIENT_TTFT_MIN_PROMPT = 2000
IN_PROCESS_TTFT_SOURCES = ("FreedomIntelligence/AccelMark",)  # TTFTs timed inside the engine process (section 24)
SHORT_TTFT = "prefill, short TTFT"
# An offline run sends every request at once (`concurrency` empty: SPEED_SOURCES.md's convention), so the GPU is
# never idle and, its prompts' forwards being compute-bound, serves them one chunk after another: vLLM V1's
# scheduler fills each step up to max_num_batched_tokens and SGLang's up to chunked_prefill_size, the sequences
# already decoding riding in the same steps (vllm v0.11.0 vllm/v1/core/sched/scheduler.py `schedule`; sglang
# python/sglang/srt/managers/scheduler.py `get_new_batch_prefill`). Where the requests generate at most one token per
# 1 / OFFLINE_PREFILL_MAX_OUTPUT prompt tokens the run's time is its prompts' prefill: its total_throughput is
# compared as prefill, one request's prompt + generated tokens at the prefill's rate (requests served together
# share the FLOPs, so the run's token rate is one request's; a generated token costs one more token's forward).
# The decode-only steps left at the end of the run are not counted.
OFFLINE_PREFILL_MAX_OUTPUT = 0.01
# llama.cpp before its int8 tensor-core MMQ kernels (ggml-org/llama.cpp#7676 and #7860, opened and merged in June
# 2024) dequantised GGUF weights to FP16 and multiplied a prompt with cuBLAS (#3412): a record of such a build (dated
# before this day) on an NVIDIA GPU ran 16-bit GEMMs behind a dequantisation pass, so its prefill is measured against
# the 16-bit peak, not the INT8 peak today's builds use (`speed.int8_tops`), and keyed as a kernel of its own,
# CUBLAS_KERNEL, that no estimate of today's llama.cpp looks up (the dequantisation makes it slower than F16
# weights' cuBLAS GEMMs: 0.59-0.90 of the peak against 0.79-1.0 in the same tables).
LLAMA_CPP_INT8_MMQ = "2024-06-01"
CUBLAS_KERNEL = "dequantised-cublas"
UBATCH_STATED = re.compile(r"(?:-ub|--ubatch-size|n_ubatch)[ =]?(\d+)")  # a llama.cpp command's ubatch
# llama-batched-bench warms up with one decode of a 16-token batch (tools/batched-bench/batched-bench.cpp at
# 0a1f01792b77, "// warm up"), then times its cells in order; the first cell's prompt is the first forward at its size,
# and pays what the warm-up did not run (kernels loaded on their first launch, buffers sized for the larger batch). In
# llama.cpp's DGX Spark tables (SPEED_SOURCES.md section 35) the next row, two prompts of the same length in one batch,
# takes less time than the first row's one prompt for every MoE model (gpt-oss-20b 0.273 s for 1,024 tokens against
# 0.390 s for 512). A record notes that it is such a cell; its prompt phase is not compared.
FIRST_CELL = "the first measured cell of its llama-batched-bench run"
FIRST_CELL_WHY = ("the first measured cell of a llama-batched-bench run: after a 16-token warm-up its prompt phase "
                  "holds one-time costs (the run's next row prefills twice the tokens in less time for MoE models)")
MAX_MODEL_LEN_STATED = re.compile(r"max[_-]model[_-]len[ =]+(\d+)")  # a vLLM command's or config's max_model_len
# Published model names -> the catalog id whose architecture (layers, widths, heads, experts) the record ran, and
# why. A quantized re-upload keeps its base model's shapes; the record's `weights` column says how it is stored.
MODEL_NAMES = {
    "codellama/CodeLlama-7b-hf": ("meta-llama/Llama-2-7b-hf", "Code Llama 7B is Llama 2 7B further trained: same "
                                  "shapes, vocabulary 32,016 instead of 32,000 (Roziere et al. 2023, "
                                  "arXiv:2308.12950, section 2)"),
    "codellama/CodeLlama-7b-hf (GGUF)": ("meta-llama/Llama-2-7b-hf", "the GGUF conversion of Code Llama 7B (above)"),
    "huggyllama/llama-7b": ("meta-llama/Llama-2-7b-hf", "LLaMA 1 7B: the shapes of Llama 2 7B (32 layers, 4096 "
                            "wide, 32 heads, MLP 11008, vocabulary 32,000), 2K instead of 4K context (Touvron et "
                            "al. 2023, arXiv:2307.09288, section 2.2: Llama 2 'adopt[s] most of the pretraining "
                            "setting and model architecture from Llama 1')"),
    "LLaMA 7B (GGUF)": ("meta-llama/Llama-2-7b-hf", "llama.cpp's 'LLaMA 7B' GGUF is LLaMA 1 7B (above)"),
    "LLaMA 7B (llama 7B GGUF)": ("meta-llama/Llama-2-7b-hf", "llama.cpp's 'LLaMA 7B' GGUF is LLaMA 1 7B (above)"),
    "ggml-org/gpt-oss-20b-GGUF": ("openai/gpt-oss-20b", "ggml-org's GGUF of gpt-oss-20b keeps the MXFP4 experts"),
    "ggml-org/gpt-oss-120b-GGUF": ("openai/gpt-oss-120b", "ggml-org's GGUF of gpt-oss-120b keeps the MXFP4 experts"),
    "ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF": ("Qwen/Qwen2.5-7B", "Qwen2.5-Coder 7B has the shapes of Qwen2.5 7B (28 "
                                            "layers, 3584 wide, 28 query / 4 KV heads, MLP 18944; Hui et al. 2024, "
                                            "arXiv:2409.12186, Table 1)"),
    "ggml-org/Qwen3-Coder-30B-A3B-Instruct-Q8_0-GGUF": ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "ggml-org's Q8_0 GGUF "
                                                        "of Qwen3-Coder-30B-A3B-Instruct"),
    "ggml-org/gemma-3-4b-it-qat-GGUF": ("google/gemma-3-4b-it", "the quantization-aware-trained Gemma 3 4B: same "
                                        "model, stored as Q4_0"),
    "mlx-community/Llama-3.3-70B-Instruct-4bit": ("meta-llama/Llama-3.3-70B-Instruct", "mlx-community's 4-bit "
                                                  "conversion (mlx_lm.convert -q)"),
    "nvidia/Llama-3.1-8B-Instruct-FP8": ("meta-llama/Llama-3.1-8B-Instruct", "NVIDIA ModelOpt FP8 quantization of "
                                         "the Meta model"),
    "nvidia/Llama-3.3-70B-Instruct-FP8": ("meta-llama/Llama-3.3-70B-Instruct", "NVIDIA ModelOpt FP8 quantization"),
    "nvidia/Llama-3.3-70B-Instruct-FP4": ("meta-llama/Llama-3.3-70B-Instruct", "NVIDIA ModelOpt NVFP4 quantization"),
    "nvidia/Llama-3.1-405B-Instruct-FP8": ("meta-llama/Llama-3.1-405B-Instruct", "NVIDIA ModelOpt FP8 quantization"),
    "nvidia/Qwen3-235B-A22B-FP8": ("Qwen/Qwen3-235B-A22B", "NVIDIA ModelOpt FP8 quantization"),
    "nvidia/Qwen3-30B-A3B-FP4": ("Qwen/Qwen3-30B-A3B", "NVIDIA ModelOpt NVFP4 quantization"),
    "Qwen/Qwen3-14B-AWQ": ("Qwen/Qwen3-14B", "Qwen's own AWQ 4-bit release of Qwen3-14B"),
    "Qwen/Qwen3-14B-FP8": ("Qwen/Qwen3-14B", "Qwen's own FP8 release of Qwen3-14B (block-wise FP8, the record's "
                           "weights column)"),
    "Qwen/Qwen3-4B-Instruct-2507": ("Qwen/Qwen3-4B", "the July 2025 instruct update of Qwen3-4B: its model card "
                                    "gives the same shapes (36 layers, 32 query / 8 KV heads, 4.0B parameters); "
                                    "the native context grows to 262,144"),
    "Qwen/Qwen3-235B-A22B-Instruct-2507": ("Qwen/Qwen3-235B-A22B", "the July 2025 instruct update of "
                                           "Qwen3-235B-A22B: its model card gives the same shapes (94 layers, 64 "
                                           "query / 4 KV heads, 128 experts, 8 activated); the native context "
                                           "grows to 262,144"),
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": ("Qwen/Qwen3-235B-A22B", "Qwen's own FP8 release of the 2507 "
                                               "instruct model (above; block-wise FP8)"),
    "deepseek-ai/DeepSeek-R1-0528": ("deepseek-ai/DeepSeek-R1", "the May 2025 update of DeepSeek-R1, released "
                                     "with the same DeepSeek-V3 architecture (61 layers, MLA, 256 routed experts, 8 "
                                     "active) and FP8 weights"),
    "Qwen/Qwen3-8B-FP8": ("Qwen/Qwen3-8B", "Qwen's own FP8 release of Qwen3-8B (block-wise FP8, the record's "
                          "weights column)"),
    "Qwen/Qwen3.6-35B-A3B-FP8": ("Qwen/Qwen3.6-35B-A3B", "Qwen's own FP8 release of Qwen3.6-35B-A3B (the record's "
                                 "weights column)"),
    "Qwen/Qwen3.5-27B-FP8": ("Qwen/Qwen3.5-27B", "Qwen's own FP8 release of Qwen3.5-27B (the record's weights column)"),
    "Qwen/Qwen3.5-35B-A3B-FP8": ("Qwen/Qwen3.5-35B-A3B", "Qwen's own FP8 release of Qwen3.5-35B-A3B (the "
                                 "record's weights column)"),
    "Qwen/Qwen3.5-122B-A10B-FP8": ("Qwen/Qwen3.5-122B-A10B", "Qwen's own FP8 release of Qwen3.5-122B-A10B (the "
                                   "record's weights column)"),
    "Qwen/Qwen3.5-397B-A17B-FP8": ("Qwen/Qwen3.5-397B-A17B", "Qwen's own FP8 release of Qwen3.5-397B-A17B (the "
                                   "record's weights column)"),
    "zai-org/GLM-5.2-FP8": ("zai-org/GLM-5.2", "Z.ai's FP8 release of GLM-5.2 (the SGLang cookbook's modelNames "
                            "'default|fp8'; the record's weights column)"),
    "nvidia/GLM-5.2-NVFP4": ("zai-org/GLM-5.2", "NVIDIA's NVFP4 quantization of GLM-5.2 (Model Optimizer; the record's "
                             "weights column)"),
    "nvidia/Qwen3.6-35B-A3B-NVFP4": ("Qwen/Qwen3.6-35B-A3B", "NVIDIA's NVFP4 quantization of Qwen3.6-35B-A3B (the "
                                     "SGLang cookbook: MoE experts in 4 bits, W4A16)"),
    "Qwen/Qwen3.6-27B": ("nvidia/Qwen3.6-27B-NVFP4", "the catalog holds Qwen3.6 27B as NVIDIA's NVFP4 quantization, "
                         "whose architecture fields are Qwen/Qwen3.6-27B's (models.json's source note); the record's "
                         "weights column says how it was stored"),
    "Qwen/Qwen3.6-27B-FP8": ("nvidia/Qwen3.6-27B-NVFP4", "Qwen's own FP8 release of Qwen3.6-27B (as 'Qwen/Qwen3.6-27B' "
                             "above)"),
    "google/gemma-4-26B-A4B-it": ("google/gemma-4-26B-A4B", "the instruction-tuned release of Gemma 4 26B-A4B: "
                                  "Gemma4ForConditionalGeneration with the base model's shapes (the catalog's config "
                                  "is the base model's)"),
    "RedHatAI/gemma-4-26B-A4B-it-NVFP4": ("google/gemma-4-26B-A4B", "Red Hat's NVFP4 quantization of "
                                          "gemma-4-26B-A4B-it (above; the record's weights column)"),
    "cyankiwi/gemma-4-26B-A4B-it-qat-AWQ-INT4": ("google/gemma-4-26B-A4B", "an AWQ INT4 export of Google's "
                                                 "quantization-aware-trained gemma-4-26B-A4B-it (above)"),
    "RedHatAI/Qwen3.6-35B-A3B-NVFP4": ("Qwen/Qwen3.6-35B-A3B", "Red Hat's NVFP4 quantization of Qwen3.6-35B-A3B "
                                       "(the record's weights column)"),
    "Meta-Llama-3.1-8B-Instruct": ("meta-llama/Llama-3.1-8B", "Llama 3.1 8B Instruct, the catalog's "
                                   "meta-llama/Llama-3.1-8B-Instruct alias: instruction tuning keeps the shapes"),
    "Mixtral-8x7B-Instruct": ("mistralai/Mixtral-8x7B-v0.1", "Mixtral 8x7B Instruct is Mixtral 8x7B fine-tuned, same "
                              "architecture (Jiang et al. 2024, arXiv:2401.04088, section 4)"),
    "mlx-community/Qwen3-4B-Instruct-2507-4bit": ("Qwen/Qwen3-4B", "mlx-community's 4-bit conversion of "
                                                  "Qwen3-4B-Instruct-2507, which the catalog reads as Qwen3-4B"),
    "mlx-community/Qwen3-4B-Instruct-2507-8bit": ("Qwen/Qwen3-4B", "mlx-community's 8-bit conversion (above)"),
    "mlx-community/Qwen3-30B-A3B-Instruct-2507-4bit": ("Qwen/Qwen3-30B-A3B", "mlx-community's 4-bit conversion of "
                                                       "Qwen3-30B-A3B-Instruct-2507, which the catalog reads as "
                                                       "Qwen3-30B-A3B"),
    "mlx-community/Qwen3-30B-A3B-Instruct-2507-8bit": ("Qwen/Qwen3-30B-A3B", "mlx-community's 8-bit conversion "
                                                       "(above)"),
    "Qwen3-8B-4bit": ("Qwen/Qwen3-8B", "an MLX 4-bit conversion of Qwen3-8B (itsmostafa/inference-speed-tests names "
                      "the repository's last path part; its README loads mlx-community/Qwen3-8B-4bit)"),
    "gpt-oss-20b-MXFP4-Q8": ("openai/gpt-oss-20b", "an MLX conversion of gpt-oss-20b keeping the MXFP4 experts, the "
                             "other weights 8-bit"),
    "gpt-oss-120b-MXFP4-Q8": ("openai/gpt-oss-120b", "an MLX conversion of gpt-oss-120b keeping the MXFP4 experts, "
                              "the other weights 8-bit"),
    "gemma-4-26b-a4b-it-4bit": ("google/gemma-4-26B-A4B", "an MLX 4-bit conversion of Gemma 4 26B-A4B instruct "
                                "(google/gemma-4-26B-A4B-it, above)"),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8": ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
                                                  "NVIDIA's FP8 release of Nemotron 3 Nano 30B-A3B: the BF16 model's "
                                                  "architecture, its weights stored in FP8 (the record's weights "
                                                  "column)"),
    "Qwen/Qwen2.5-7B-Instruct-AWQ": ("Qwen/Qwen2.5-7B", "Qwen's own AWQ 4-bit release of Qwen2.5-7B-Instruct (the "
                                     "record's weights column)"),
    "cognitivecomputations/Qwen3-30B-A3B-AWQ": ("Qwen/Qwen3-30B-A3B", "an AWQ 4-bit quantization of Qwen3-30B-A3B (the "
                                                "record's weights column)"),
    "Llama 3.1 405B FP8 (checkpoint not named)": ("meta-llama/Llama-3.1-405B-Instruct", "every Llama 3.1 405B FP8 "
                                                  "checkpoint quantizes the same architecture; which one the source "
                                                  "ran changes only the few layers kept in 16-bit"),
}
# Published names the estimator cannot read as one model: skipped with the reason
AMBIGUOUS_MODELS = {
    "Mistral 7B 4-bit (MLX)": "checkpoint not named: Mistral 7B v0.1 attends a 4,096-token sliding window, v0.2 / "
                              "v0.3 the whole prompt; at the record's 33,898 tokens the attention FLOPs differ ~4x",
}
# GPU names the sources wrote loosely (estimator.catalog.gpu() reads the rest), with why each is that GPU
GPU_NAMES = {
    "H100 80G": ("h100-sxm", "NVIDIA NIM docs (and SGLang's benchmark_vllm_060, whose rows are skipped for their "
                 "unstated lengths): the NIM support matrix names its optimized H100 profiles, TP2 FP8 among them, "
                 "'H100 SXM/NVLink 80' (docs.nvidia.com/nim/large-language-models/latest/support-matrix.html)"),
    "A100 80GB": ("a100-80gb-sxm", "form factor not stated; both A100 80GB have 312 dense BF16 TFLOPs and 2,039 "
                  "(SXM) vs 1,935 GB/s (PCIe): SXM, the multi-GPU server part, and at most 5% on a decode estimate"),
    "A100 80G": ("a100-80gb-sxm", "as 'A100 80GB'"),
    "A100 40GB": ("a100-40gb-sxm", "form factor not stated (inference-bench's Modal 'A100' / 'A100-40GB'); the "
                  "catalog's SXM and PCIe 40 GB parts have the same 1,555 GB/s and 312 dense BF16 TFLOPs, so the "
                  "estimate does not depend on which"),
    "NVIDIA A100 SXM": ("a100-80gb-sxm", "memory size not stated (GPUStack's Qwen3-14B page; its other A100 pages "
                        "say 'A100 SXM 80GB'): both SXM A100s have 312 dense BF16 TFLOPs, and the record is a "
                        "compute-bound prefill, where the 40 GB part's 1,555 GB/s (2,039) moves only the weight "
                        "read"),
    "Apple M4 Max 64GB": ("m4-max-128gb", "the 64 GB M4 Max is sold only with the 16-core CPU / 40-core GPU, the "
                          "chip of m4-max-128gb (546 GB/s, the same GPU cores and clock); the memory size enters no "
                          "speed estimate"),
}
AMBIGUOUS_GPUS = {
    "H100": "H100 PCIe, SXM or NVL not stated (756 / 989 / 835 dense BF16 TFLOPs)",
    "NVIDIA H100 96GB HBM2e (Grand Teton, 500 W)": "Meta's Grand Teton H100 (96 GB HBM2e, 500 W cap): a part "
                                                   "between SXM and NVL with no published peaks",
    "Apple M2 Ultra": "M2 Ultra 60- or 76-core GPU not stated (the FLOPs differ by 27%)",
}
# MLX 4-bit (mlx_lm.convert -q: q_bits 4, q_group_size 64; ml-explore/mlx-lm mlx_lm/convert.py) stores per group of
# 64 a 16-bit scale and a 16-bit bias (mlx.core.quantize, mode "affine"): 4 + 32/64 = 4.5 bits a weight, the bytes
# of int4-g32 (4 + 16/32). MLX also quantizes the embedding and lm_head that int4-g32 keeps 16-bit: the estimate
# reads ~1.5 GB more of a 70B's ~40 GB (a few % slower).
# MLX 8-bit (q_bits 8, group 64) stores 8 + 32/64 = 8.5 bits a weight; read as int8, the other weight-only 8-bit
# format (the GEMM dequantises, as MLX's affine kernels do): the estimate reads ~6% fewer bytes.
WEIGHT_WORDS = {"mlx-4bit": "int4-g32", "mlx-8bit": "int8"}
# The sources' training setups, by record id prefix (a run's tokens/s and MFU rows share it): (technique,
# activation checkpointing, why). A record of another setup, or whose setup the source does not state, is skipped
# with the reason of TRAINING_UNREAD (or the generic one).
TRAINING_SETUPS = {
    "titan-a100-llama2-2-no-": ("full", False, "torchtitan pre-training, activation checkpointing 'no'"),
    "titan-a100-llama2-2-full-": ("full", True, "torchtitan pre-training, activation checkpointing 'full'"),
    "titan-a100-llama3-70b-full-": ("full", True, "torchtitan pre-training, activation checkpointing 'full'"),
    "torchtune-llama31-8b-full-": ("full", True, "torchtune llama3_1/8B_full_single_device.yaml: "
                                   "enable_activation_checkpointing: True (pytorch/torchtune@02d70355)"),
    "llmq-rtx-5090-": ("full", True, "llm.q full-parameter training; --recompute-ffn --recompute-att recompute "
                       "the forward"),
    "llmq-rtx-4090-qwen25-7b-": ("full", True, "row flags --recompute-ffn --recompute-norm --recompute-att: the "
                                 "forward's matmuls again"),
    "llmq-rtx-4090-qwen25-1p5b-": ("full", False, "no memory flags in the row: no recomputation"),
    "llmq-l40s-qwen25-1p5b-": ("full", False, "no memory flags in the row: no recomputation"),
    "llmq-l40s-qwen25-7b-": ("full", False, "row flags --recompute-swiglu --recompute-norm recompute element-wise "
                             "ops only, no matmul (the FLOPs of no recomputation)"),
    "llmq-rtx-pro-6000-blackwell-": ("full", False, "no memory flags in the rows: no recomputation"),
    "llmq-h100-": ("full", False, "no memory flags in the rows: no recomputation"),
}
TRAINING_UNREAD = {
    "titan-a100-llama3-8b-selective-": "torchtitan selective activation checkpointing recomputes part of the forward "
                                       "(every other layer, or chosen ops), which the estimate (none or all) does not "
                                       "model",
    "titan-a100-llama2-2-selective-": "torchtitan selective activation checkpointing (as above)",
    "torchtune-llama31-8b-lora-": "torchtune's table states no activation checkpointing for its LoRA rows (the RTX "
                                  "A6000 row's 4,699 tokens/s is 142% of the card's 154.8 TFLOPs with it, 94% "
                                  "without: which one ran decides the estimate)",
    "torchtune-llama31-8b-qlora-": "torchtune's table states no activation checkpointing for its QLoRA row (as the "
                                   "LoRA rows)",
}
TRAINING_METRICS = ("train_tokens_per_s", "train_mfu")
# What a metric needs of the record's fields (the schema lets a source leave them empty)
NEEDS = {"llama_bench_pp": ("input_tokens",), "llama_bench_tg": ("output_tokens",),
         "prefill_tokens_per_s": ("input_tokens",), "ttft_ms": ("concurrency", "input_tokens"),
         "decode_tokens_per_s_per_seq": ("concurrency", "input_tokens"),
         "tpot_ms": ("concurrency", "input_tokens", "output_tokens"),
         "output_throughput": ("concurrency", "input_tokens", "output_tokens"),
         "total_throughput": ("concurrency", "input_tokens", "output_tokens"),
         "train_tokens_per_s": ("concurrency", "input_tokens")}
RULE = ("An efficiency is the median, over the published records of its key, of measured / (the roofline estimate at "
        "100% efficiency): decode records give the achieved fraction of the memory bandwidth, prefill records of the "
        f"peak FLOPs. A decode key needs at least {MIN_STEP_RECORDS} records and is fitted as measured step time = "
        "step_ms + roofline step time at 100% / value (Theil-Sen: median pairwise slope, then median intercept; kept "
        "when 0 < value <= 1 and step_ms > 0, else the key is not made and the next key's line applies; the last "
        "fallback, phase alone, then keeps the median fraction and no step cost): the engine's cost per step "
        "beyond its bytes (launches, each short kernel's floor, scheduling, sampling) and the achieved fraction of "
        "bandwidth. A key of one engine fits the same line per decoder layer (both times divided by the record's "
        "layers: layer_us, the floor of the kernels a layer runs one after another, times the layers is the step "
        "cost); a key shared by every engine keeps step_ms per step. Keys from the most "
        f"specific with at least {MIN_RECORDS} records (decode: {MIN_STEP_RECORDS}) to the least: (engine, GPU class, "
        "phase, kernel) -> (engine, GPU class, phase) -> (GPU class, phase, kernel) -> (GPU class, phase) -> (engine, "
        "phase) -> phase (the kernel kind: a MoE's grouped GEMMs, FP8 or weight-only kernels reach another fraction "
        "than a dense 16-bit GEMM, on any engine; for a prompt, whose time is its GEMMs', (GPU class, phase, kernel) "
        "comes before (engine, GPU class, phase)); a record "
        "of a superseded engine generation (vLLM before v0.8.0, the V0 engine: 'vllm-v0') sets only its "
        "generation's keys, not the keys shared by every engine; a GPU-class key shared by every engine needs "
        f"records of at least {MIN_SHARED_ENGINES} engines (one engine's records set that engine's keys and the "
        "last fallback, phase alone); a key whose records all ran on one GPU is that GPU's key (its catalog id in "
        "place of the class, looked up before the class at the same level), not its class's or every GPU's. "
        f"Records whose id has crc32 % {HOLDOUT_MODULUS} == 0 are held out of every median, and only records of one "
        "sequence on one GPU (concurrency 1, tp 1) whose roofline at 100% is bound as its phase (decode: memory; "
        "prefill: compute) enter one. A prompt's attention runs in another kernel than its GEMMs: where records of "
        "one sequence (any tensor parallelism: both parts divide by the GPUs) time one model's prompts on one GPU at "
        f"{MIN_STEP_RECORDS} or more lengths over which the attention's time at the peak, over the GEMMs', spans "
        f"at least {MIN_SWEEP_SPREAD} (a sweep: over less, run-to-run noise moves the slope more than the fractions "
        "to tell apart), "
        f"{ATTENTION_LINE} (Theil-Sen; kept when the slope is at least 1 and the intercept positive), and the "
        "median over a key's sweeps is the attention fraction of (engine, GPU class, 'attention', attention "
        "kernel) -> (engine, 'attention', attention kernel) (the kernel: speed.attention_kernel, e.g. vLLM's Triton "
        "attention for Gemma 4's 512-wide heads, V0's Triton prefix kernel for ROCm's chunked prompts); a prompt "
        "with such a fraction gives its GEMMs' fraction as their "
        "time at the peak / (measured time - its attention's time at that fraction), one without runs its attention "
        "at the GEMMs' fraction. Batches, tensor parallelism and serving throughput are compared only, and so is "
        f"a client-timed TTFT of a prompt under {CLIENT_TTFT_MIN_PROMPT:,} tokens (mostly the request's fixed cost: "
        "HTTP, chat template, tokenisation, scheduling). Those short TTFTs set an engine's request_ms instead (the "
        "server's fixed cost per request, added to the forward in a TTFT a serving client times): with at least "
        f"{MIN_REQUEST_RECORDS} of them at concurrency 1 on one GPU, not held out, the median of measured TTFT - "
        "the record's forward at the efficiencies of the records as they are; the same median over every engine's "
        f"such records (engine '', at least {MIN_SHARED_ENGINES} engines) for an engine among them with fewer of its "
        "own. Every TTFT a serving client timed (all but AccelMark's, timed in process), long or short, holds that "
        "cost: the efficiencies are then derived again with it taken out of the long ones. An offline run of every "
        "request at once whose requests "
        f"generate at most {OFFLINE_PREFILL_MAX_OUTPUT:.0%} of their prompt tokens is a prefill record (its total "
        "throughput: one request's prompt + generated tokens at the prefill's rate, the compute-bound prompts served "
        "one after another) and, on one GPU, enters the prefill median like a single prompt. Training "
        "records give the achieved fraction of the dense 16-bit peak FLOPs counting 6N per token (4N for LoRA), "
        "+ 2N with recomputation, plus attention (tokens/s rows: measured / the estimate at 100%; MFU rows, whose "
        "FLOPs leave recomputation out: MFU x (passes + 1) / passes with it), keyed (framework, GPU class, "
        "training) -> (GPU class, training) -> (framework, training) -> training; an MFU row whose run's tokens/s "
        "row is compared does not count twice; a record above 100% at its stated setup is skipped; with no training "
        "record the estimate falls back to Llama 3's 38-43% MFU (arXiv:2407.21783).")
KV_WORDS = {"": "bf16", "f16": "bf16", "fp16": "bf16", "bf16": "bf16", "fp8": "fp8", "q8_0": "q8_0",
            "q4_0": "q4_0", "q5_0": "q5_0", "f32": "fp32", "fp32": "fp32"}


def load_records(path: Path = SPEED_CSV) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if tuple(row) != COLUMNS:
            raise ValueError(f"{path}: columns must be {', '.join(COLUMNS)}")
    return rows


def held_out(record_id: str) -> bool:
    return zlib.crc32(record_id.encode()) % HOLDOUT_MODULUS == 0


THROUGHPUT_METRICS = ("output_throughput", "total_throughput")


def phase_of(metric: str) -> str | None:
    """decode / prefill (they also set the efficiencies), throughput and training (compared only), None."""
    if metric in DECODE_METRICS:
        return "decode"
    if metric in TRAINING_METRICS:
        return "training"
    return "prefill" if metric in PREFILL_METRICS else "throughput" if metric in THROUGHPUT_METRICS else None


def one_sequence(c: Case) -> bool:
    """A compared decode or prefill record of one sequence (any tensor parallelism), not held out, whose roofline at
    100% is bound the way its phase's efficiency is (decode reads the weights and one cache: memory; a prompt's
    prefill: compute; a 16-token prompt of a 70B reads far more bytes than it does FLOPs, so its speed is a fraction
    of the bandwidth, not of the FLOPs)."""
    r = c.record
    return (not c.skip and c.phase in ("decode", "prefill") and not short_ttft(c) and int(r["concurrency"] or 1) == 1
            and not held_out(r["id"]) and roofline_bound(c) == ("memory" if c.phase == "decode" else "compute"))


def sweepable(c: Case) -> bool:
    """Whether a record can be part of a prompt-length sweep (`sweeps`): a prefill record of `one_sequence` at any
    tensor parallelism (the GEMMs' and the attention's FLOPs both divide by the GPUs, so their ratio, the sweep's
    abscissa, does not change; the all-reduces grow with the prompt as the GEMMs do and stay in the line's intercept,
    not in the slope that sets the attention fraction)."""
    return c.phase == "prefill" and one_sequence(c)


def derivable(c: Case) -> bool:
    """Whether a record measures an efficiency: `one_sequence` on one GPU. Batches, tensor parallelism and serving
    throughput are compared with the estimate but set no efficiency; an offline prefill-bound run
    (`offline_prefill`) on one GPU does: its prompts' forwards are compute-bound whatever the batch, one after
    another."""
    r = c.record
    if c.phase == "training":
        return not c.skip and not c.run_compared and not held_out(r["id"])
    return one_sequence(c) and int(r["tp"] or 1) == 1


def offline_prefill(record: dict) -> bool:
    """A total_throughput of every request sent at once (no concurrency) whose requests generate at most
    OFFLINE_PREFILL_MAX_OUTPUT of their prompt tokens: its time is the prompts' prefill."""
    inp, out = record["input_tokens"], record["output_tokens"]
    return (record["metric"] == "total_throughput" and not record["concurrency"] and bool(inp) and bool(out)
            and int(out) <= OFFLINE_PREFILL_MAX_OUTPUT * int(inp))


def prefill_tokens(record: dict) -> int:
    """The tokens of a prefill record's forward: the prompt (512 where not stated), + the generated tokens of an
    offline prefill-bound run."""
    prompt = int(record["input_tokens"] or 0) or 512
    return prompt + int(record["output_tokens"]) if offline_prefill(record) else prompt


def short_ttft(c: Case) -> bool:
    """A client-timed TTFT of a prompt shorter than CLIENT_TTFT_MIN_PROMPT: mostly the request's fixed cost."""
    return c.record["metric"] == "ttft_ms" and int(c.record["input_tokens"] or 0) < CLIENT_TTFT_MIN_PROMPT


def request_record(c: Case) -> bool:
    """Whether a record sets its engine's cost per request: a short client-timed TTFT (`short_ttft`) of one request
    at a time (concurrency 1) on one GPU, not held out."""
    r = c.record
    return (not c.skip and short_ttft(c) and r["concurrency"] == "1" and int(r["tp"] or 1) == 1
            and not held_out(r["id"]))


def roofline_bound(c: Case) -> str:
    """'memory' or 'compute': what bounds the record's phase at 100% efficiency."""
    r = c.record
    p = speed.peaks(c.gpu, c.peak_format)
    if c.phase == "prefill":
        return speed.prefill_phase(c.model, c.weights, int(r["tp"] or 1), prefill_tokens(r), p, 1.0, 1.0,
                                   c.prefill_chunk).bound
    context = int(r["output_tokens"] or 0) // 2 if r["metric"] == "llama_bench_tg" \
        else int(r["input_tokens"] or 0) + int(r["output_tokens"] or 0) // 2
    return speed.decode_phase(c.model, c.weights, c.kv_dtype, int(r["tp"] or 1), int(r["concurrency"] or 1),
                              context, p, 1.0, 1.0).bound


@dataclass(frozen=True)
class Case:
    """A record as the estimator reads it, or why it cannot."""

    record: dict
    phase: str
    skip: str = ""  # the reason the record is not compared
    run_compared: bool = False  # an MFU row whose run's tokens/s row is compared (that one sets the efficiency)
    model: object = None
    gpu: object = None
    weights: str = ""
    kv_dtype: str = "bf16"

    @property
    def klass(self) -> str:
        return speed.gpu_class(self.gpu)

    @property
    def engine(self) -> str:
        """The engine generation the record's efficiencies are keyed by (`speed.engine_key`)."""
        return speed.engine_key(self.record["engine"], self.record["engine_version"])

    @functools.cached_property
    def roofline(self) -> float:
        """The record's metric at 100% efficiency (`estimate`), computed once: every derivation reads it."""
        return estimate(self, 1.0, 1.0)

    @property
    def kernel(self) -> str:
        """The kernel kind of the record's phase: a prompt's forward (`speed.prefill_kernel_kind`), else a decode
        step's (`speed.kernel_kind`)."""
        return self.prefill_kernel if self.phase == "prefill" else speed.kernel_kind(self.weights, self.gpu)

    @property
    def prefill_kernel(self) -> str:
        if self.cublas_prefill and not self.model.is_moe:
            return CUBLAS_KERNEL
        return speed.prefill_kernel_kind(self.model, self.weights, self.gpu)

    @property
    def cublas_prefill(self) -> bool:
        """A llama.cpp build before int8 tensor-core MMQ (`LLAMA_CPP_INT8_MMQ`) with GGUF-quantized weights on an
        NVIDIA GPU whose INT8 peak the estimate would take: its prompt ran FP16 cuBLAS GEMMs."""
        return (speed.engine_key(self.record["engine"]) == "llama.cpp" and self.weights in speed.GGUF_FORMATS
                and self.record["date"] < LLAMA_CPP_INT8_MMQ and speed.int8_tops(self.gpu) is not None
                and bool(self.gpu.bf16_tflops or self.gpu.fp16_tflops))  # Pascal ran dp4a MMQ all along

    @functools.cached_property
    def prefill_chunk(self) -> int:
        """Tokens per forward of the record's prompt: for llama.cpp / Ollama the ubatch its command states (-ub N,
        n_ubatch N in the notes or the quoted table), else llama.cpp's default 512; vLLM V0's default chunk of a
        long-context server (`speed.default_prefill_chunk`, at the max_model_len the record states, else the
        model's context length, vLLM's default); one forward for other engines (the vLLM V1 and SGLang chunks,
        2,048-16,384 tokens, are not modelled: no record's time is near their weight traffic)."""
        r = self.record
        if speed.engine_key(r["engine"]) != "llama.cpp":
            stated = MAX_MODEL_LEN_STATED.search(r["notes"])
            length = int(stated[1]) if stated else self.model.max_position_embeddings
            return speed.default_prefill_chunk(r["engine"], r["engine_version"], length)
        stated = UBATCH_STATED.search(f"{r['notes']} {r['quote']}")
        return int(stated[1]) if stated else DEFAULT_UBATCH

    @property
    def peak_format(self) -> str:
        """The weight format whose peak the record's FLOPs are measured against (`speed.peak_format`; 16-bit for
        `cublas_prefill`)."""
        return "bf16" if self.cublas_prefill else speed.peak_format(self.model, self.weights)


def weight_format_id(text: str) -> str | None:
    word = text.lower().removeprefix("gguf-")
    word = WEIGHT_WORDS.get(word, word)
    word = {"f16": "bf16", "fp16": "bf16", "bf16": "bf16", "f32": "fp32"}.get(word, word)
    return word if word in WEIGHT_FORMATS else resolve_word(word, tuple(WEIGHT_FORMATS))


def model_of(name: str) -> tuple[object, str]:
    """The catalog architecture of a published model name (MODEL_NAMES first), or the reason there is none."""
    if name in AMBIGUOUS_MODELS:
        return None, f"model {name}: {AMBIGUOUS_MODELS[name]}"
    try:
        return catalog.model(MODEL_NAMES.get(name, (name,))[0]).architecture, ""
    except ValueError:
        return None, f"model {name} is not in the catalog"


MEMORY_SUFFIX = re.compile(r"^(.*\S)\s+(\d+)\s*GB$", re.IGNORECASE)


def gpu_of(name: str) -> tuple[catalog.Gpu | None, str]:
    """The catalog GPU of a published name: GPU_NAMES, then estimator.catalog.gpu() (nvidia-smi names, aliases),
    then the name without a trailing memory size ("... RTX 3070 8GB": the id of that name, if its memory is that
    size); else None and the reason."""
    if name in AMBIGUOUS_GPUS:
        return None, f"GPU {name}: {AMBIGUOUS_GPUS[name]}"
    try:
        return catalog.gpu(GPU_NAMES.get(name, (name,))[0]), ""
    except ValueError:
        pass
    match = MEMORY_SUFFIX.match(name)
    if match:
        try:
            g = catalog.gpu(match[1])
        except ValueError:
            g = None
        if g is not None and g.memory_gb == int(match[2]):
            return g, ""
    return None, f"GPU {name} is not in the catalog"


def training_setup(record_id: str) -> tuple[str, bool, str] | None:
    return next((v for k, v in TRAINING_SETUPS.items() if record_id.startswith(k)), None)


def training_framework(record: dict) -> str:
    """The training framework: the first word of engine_version ('torchtitan (2024)', 'torchtune (Sep 2024)',
    'llm.q (Sep/Oct 2025)'), lower case; the key the training efficiency is derived and looked up by."""
    return (record["engine_version"].split() or [""])[0].lower()


def same_run(record_id: str) -> str:
    """The id of the tokens/s row of the run an MFU row (…-mfu, …-sol) belongs to."""
    return re.sub(r"-(mfu|sol)$", "-tps", record_id)


def case(record: dict) -> Case:
    phase = "prefill" if offline_prefill(record) else phase_of(record["metric"])
    if phase is None:
        return Case(record, "", skip=f"metric {record['metric']} is not compared")
    needs = ("input_tokens", "output_tokens") if offline_prefill(record) else NEEDS.get(record["metric"], ())
    missing = [f for f in needs if not record[f]]
    if missing:
        return Case(record, phase, skip=f"the source states no {' / '.join(missing)}, which {record['metric']} "
                                        "needs")
    if phase == "prefill" and FIRST_CELL in record["notes"]:
        return Case(record, phase, skip=FIRST_CELL_WHY)
    model, why = model_of(record["model"])
    if model is None:
        return Case(record, phase, skip=why)
    gpu, why = gpu_of(record["gpu"])
    if gpu is None:
        return Case(record, phase, skip=why)
    tp = int(record["tp"] or 1)
    if phase != "training" and speed.servers(gpu, tp) > 1:
        return Case(record, phase, skip=f"tensor parallelism over {tp} GPUs spans servers: the network between them "
                                        "is not modelled (estimator/speed.py across_servers_note)")
    weights = weight_format_id(record["weights"])
    kv = KV_WORDS.get(record["kv_dtype"].lower())
    if weights is None or kv is None:
        return Case(record, phase, skip=f"weights {record['weights']!r} / KV {record['kv_dtype']!r} not modelled")
    if phase == "training":
        if training_setup(record["id"]) is None:
            why = next((v for k, v in TRAINING_UNREAD.items() if record["id"].startswith(k)),
                       "training setup not stated (activation checkpointing)")
            return Case(record, phase, skip=f"training setup not modelled: {why}")
        if weights not in ("bf16", "nf4"):
            return Case(record, phase, skip=f"training with {weights} weights: the estimate's training speed "
                                            "runs 16-bit matmuls")
    if phase in ("prefill", "throughput", "training") and speed.peaks(gpu, weights).flops is None:
        return Case(record, phase, skip=f"{gpu.name} has no recorded TFLOPs: a {phase} estimate needs the "
                                        "compute peak (its roofline is not memory-bound)")
    c = Case(record, phase, model=model, gpu=gpu, weights=weights, kv_dtype=kv)
    if phase == "training" and achieved(c) > 1:
        return Case(record, phase, skip=f"{achieved(c):.0%} of the peak FLOPs at the stated setup, more than the GPU "
                                        "can do: the run did fewer FLOPs a token than its setup implies (less "
                                        "recomputation) or counted other tokens")
    return c


def mark_duplicates(cases: list[Case]) -> list[Case]:
    """A measurement collected twice (the same number for the same model, GPU, format, metric and lengths) is
    compared once: the later record is skipped, naming the first."""
    seen: dict[tuple, str] = {}
    out = []
    for c in cases:
        r = c.record
        if not c.skip:
            key = (c.gpu.id, c.model, c.weights, r["metric"], float(r["value"]), r["input_tokens"] or "0",
                   r["output_tokens"] or "0")
            if key in seen:
                c = Case(r, c.phase, skip=f"the same measurement as {seen[key]} (collected twice)")
            else:
                seen[key] = r["id"]
        out.append(c)
    return out


def mark_runs(cases: list[Case]) -> list[Case]:
    """An MFU row of a run whose tokens/s row is compared sets no efficiency (one run, one vote)."""
    compared = {c.record["id"] for c in cases if not c.skip and c.record["metric"] == "train_tokens_per_s"}
    return [dataclasses.replace(c, run_compared=True) if not c.skip and c.record["metric"] == "train_mfu"
            and same_run(c.record["id"]) in compared else c for c in cases]


def cases_of(records: list[dict]) -> list[Case]:
    return mark_runs(mark_duplicates([case(r) for r in records]))


def training_estimate(c: Case, e: speed.Efficiency) -> float:
    """train_tokens_per_s per GPU at the training efficiency `e` (speed.training_speed), or the MFU the estimate
    implies: e counts the recomputed forward, an MFU (torchtitan, llm.q's SOL) does not, so with checkpointing
    MFU = e x passes / (passes + 1) (3 passes of 2N for full training, 2 for LoRA)."""
    r = c.record
    technique, checkpointing, _ = training_setup(r["id"])
    if r["metric"] == "train_mfu":
        passes = 3 if technique == "full" else 2
        return e.value * passes / (passes + 1) if checkpointing else e.value
    gpus = int(r["gpus"] or 1)  # several: torchtitan's FSDP2 shards everything (ZeRO-3)
    return speed.training_speed(c.model, c.gpu, technique, int(r["concurrency"]), int(r["input_tokens"]),
                                gpus=gpus, zero_stage=3 if gpus > 1 else 0, checkpointing=checkpointing,
                                e=e).tokens_per_s


def estimate(c: Case, e_bw: float | None = None, e_flops: float | None = None, table: dict | None = None,
             costs: dict | None = None) -> float:
    """The record's metric as the model estimates it; with e_bw / e_flops given, at those efficiencies (the
    roofline at 100% is e = 1), else at those of `table` (default: the derived ones of speed.json). A short
    client-timed TTFT (`short_ttft`) adds its engine's cost per request from `costs` (default: speed.json's; none
    at given efficiencies)."""
    r = c.record
    if c.phase == "training":
        if e_flops is not None:
            return training_estimate(c, speed.Efficiency(e_flops, "given", ()))
        table = speed._efficiency_table() if table is None else table
        return training_estimate(c, speed.training_efficiency_in(table, training_framework(r), c.klass, c.gpu.id))
    tp, conc = int(r["tp"] or 1), int(r["concurrency"] or 1)
    inp, out = int(r["input_tokens"] or 0), int(r["output_tokens"] or 0)
    p = speed.peaks(c.gpu, c.peak_format)
    step_s = 0.0  # the engine's fixed cost per decode step: none at the roofline (e_bw given)
    request_s = 0.0  # the server's fixed cost per request, in a short client-timed TTFT: none at the roofline
    e_attention = 0.0  # the prompt's attention at its own kernel's fraction: none at the roofline
    if e_bw is None:
        table = speed._efficiency_table() if table is None else table
        engine = c.engine
        attention = attention_of(c, table)
        e_attention = attention.value if attention is not None else 0.0
        request_s = request_seconds(c, speed._request_costs() if costs is None else costs)
        decode = speed.lookup_efficiency(table, engine, c.klass, "decode", speed.kernel_kind(c.weights, c.gpu),
                                         c.gpu.id)
        e_bw, step_s = decode.value, decode.fixed_s(c.model.num_layers)
        e_flops = speed.lookup_efficiency(table, engine, c.klass, "prefill", c.prefill_kernel, c.gpu.id).value
    if c.phase == "prefill":  # an offline prefill-bound run: its prompt + generated tokens (prefill_tokens)
        tokens = prefill_tokens(r)
        fill = speed.prefill_phase(c.model, c.weights, tp, tokens, p, e_bw, e_flops, c.prefill_chunk, e_attention)
        return (fill.seconds + request_s) * 1000 if r["metric"] == "ttft_ms" else tokens / fill.seconds
    context = out // 2 if r["metric"] == "llama_bench_tg" else inp + out // 2
    step = speed.decode_phase(c.model, c.weights, c.kv_dtype, tp, conc, context, p, e_bw, e_flops, step_s=step_s)
    if c.phase == "throughput":  # each of `conc` requests: its prefill, then `out` steps of the batch
        request_s = speed.prefill_phase(c.model, c.weights, tp, max(inp, 1), p, e_bw, e_flops,
                                        e_attention=e_attention).seconds \
            + out * step.seconds
        return conc * (out if r["metric"] == "output_throughput" else inp + out) / request_s
    return step.seconds * 1000 if r["metric"] == "tpot_ms" else 1 / step.seconds


def achieved(c: Case, attention: speed.Efficiency | None = None, request_s: float = 0.0) -> float:
    """Measured over the roofline at 100% efficiency (a time metric: the other way round), a client-timed TTFT less
    `request_s` (its engine's fixed cost per request). With `attention` (a prompt's attention kernel fraction): the
    GEMMs' fraction, their time at the peak over the measured time less the attention's at that fraction
    (`prompt_times`)."""
    if attention is not None and c.phase == "prefill":
        gemm, attend, measured = prompt_times(c, request_s)
        if measured > attend / attention.value:
            return gemm / (measured - attend / attention.value)
    ideal = c.roofline
    value = float(c.record["value"]) - request_s * 1000
    return ideal / value if c.record["metric"] in TIME_METRICS else value / ideal


def client_ttft(c: Case) -> bool:
    """A TTFT timed by a serving client (every TTFT record but the in-process ones, IN_PROCESS_TTFT_SOURCES): it holds
    the engine's fixed cost per request beside the prompt's forward, at any prompt length."""
    return c.record["metric"] == "ttft_ms" and not c.record["source"].startswith(IN_PROCESS_TTFT_SOURCES)


def request_seconds(c: Case, costs: dict) -> float:
    """The fixed cost per request a client-timed TTFT holds: its engine's of `costs` (`speed.request_cost_in`), else
    none."""
    if not client_ttft(c):
        return 0.0
    cost = speed.request_cost_in(costs, c.engine)
    return cost.seconds if cost is not None else 0.0


def prompt_times(c: Case, request_s: float = 0.0) -> tuple[float, float, float]:
    """A compute-bound prefill record's (GEMM and indexer seconds at the peak, attention seconds at the 16-bit peak,
    measured seconds less `request_s`): the two parts of its roofline at 100% that run in different kernels."""
    r = c.record
    tokens, tp = prefill_tokens(r), int(r["tp"] or 1)
    p = speed.peaks(c.gpu, c.peak_format)
    whole = speed.prefill_phase(c.model, c.weights, tp, tokens, p, 1.0, 1.0, c.prefill_chunk).compute_s
    attend = speed.prefill_attention_flops(c.model, tokens) / tp / (p.attention_flops or p.flops)
    value = float(r["value"])
    return whole - attend, attend, (value / 1000 if r["metric"] == "ttft_ms" else tokens / value) - request_s


def attention_kernel_of(c: Case) -> str:
    return speed.attention_kernel(c.engine, c.model, c.gpu, chunked=c.prefill_chunk > 0)


def attention_of(c: Case, table: dict) -> speed.Efficiency | None:
    """The attention kernel fraction of `table` for the record's engine, GPU and kernel (`speed.attention_kernel`)."""
    return speed.attention_efficiency_in(table, c.engine, c.klass, attention_kernel_of(c), c.gpu.id)


def sweeps(swept: list[Case]) -> list[list[Case]]:
    """The `sweepable` records that time one model's prompts on one GPU type at MIN_STEP_RECORDS or more lengths (one
    engine and version, weights, KV dtype, chunk and tensor parallelism) over which the attention's time at the peak,
    over the GEMMs', spans at least MIN_SWEEP_SPREAD: attention's share of the time grows with the prompt, so such a
    sweep separates the attention kernel's fraction from the GEMMs'."""
    groups: dict[tuple, list[Case]] = {}
    for c in swept:
        if c.phase == "prefill":
            r = c.record
            key = (r["engine"], r["engine_version"], c.gpu.id, r["model"], c.weights, c.kv_dtype, c.prefill_chunk,
                   r["tp"])
            groups.setdefault(key, []).append(c)
    out = []
    for members in groups.values():
        shares = [attend / gemm for gemm, attend, _ in map(prompt_times, members)]
        if (len({prefill_tokens(c.record) for c in members}) >= MIN_STEP_RECORDS
                and max(shares) - min(shares) >= MIN_SWEEP_SPREAD):
            out.append(members)
    return out


def attention_line(sweep: list[Case], costs: dict) -> float | None:
    """The attention kernel's fraction of one sweep (ATTENTION_LINE): the Theil-Sen line of measured / GEMM
    time on attention / GEMM time (both at the peak), 1 / its slope; None where the line does not set one (a slope
    under 1 or an intercept at or under 0: no attention fraction <= 1 and GEMM fraction > 0 fits the sweep)."""
    times = (prompt_times(c, request_seconds(c, costs)) for c in sweep)
    points = [(attend / gemm, measured / gemm) for gemm, attend, measured in times]
    slope, intercept = theil_sen(points)
    return round(1 / slope, 4) if slope >= 1 and intercept > 0 else None


def gpu_key(key: tuple, gpus: set[str], entries: list[dict]) -> tuple | None:
    """A key whose records all ran on one GPU is that GPU's, not its class's (or every GPU's); None where that GPU's
    key is already among `entries` (the class key and the any-GPU key hold the same records)."""
    if len(gpus) != 1:
        return key
    key = (key[0], next(iter(gpus)), key[2], key[3])
    return None if any(e["key"] == list(key) for e in entries) else key


def attention_entries(swept: list[Case], costs: dict) -> list[dict]:
    """speed.json's attention kernel fractions: the median of the `attention_line`s of every sweep of a key
    (engine, GPU class, 'attention', attention kernel), then the engine on any GPU; a key of one GPU's sweeps names
    that GPU."""
    keys: dict[tuple, list[tuple[list[Case], float]]] = {}
    for sweep in sweeps(swept):
        if (value := attention_line(sweep, costs)) is None:
            continue
        c = sweep[0]
        engine, kernel = c.engine, attention_kernel_of(c)
        for key in ((engine, c.klass, "attention", kernel), (engine, "", "attention", kernel)):
            keys.setdefault(key, []).append((sweep, value))
    entries = []
    for key, lines in sorted(keys.items()):
        records = sorted(c.record["id"] for sweep, _ in lines for c in sweep)
        if (key := gpu_key(key, {sweep[0].gpu.id for sweep, _ in lines}, entries)) is None:
            continue
        entries.append({"key": list(key), "value": round(statistics.median(v for _, v in lines), 4),
                        "sweeps": len(lines), "records": records})
    return entries


def step_seconds(c: Case) -> tuple[float, float]:
    """A decode record's (roofline step time at 100% efficiency, measured step time), in seconds."""
    ideal, value = c.roofline, float(c.record["value"])
    return (ideal / 1e3, value / 1e3) if c.record["metric"] == "tpot_ms" else (1 / ideal, 1 / value)


def theil_sen(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(slope, intercept) of y on x: the median of the slopes between every two points of different x, then the
    median of y - slope x (Theil 1950; Sen 1968, JASA 63(324))."""
    slopes = [(y2 - y1) / (x2 - x1) for (x1, y1), (x2, y2) in itertools.combinations(points, 2) if x2 != x1]
    slope = statistics.median(slopes)
    return slope, statistics.median(y - slope * x for x, y in points)


def decode_fit(members: list[Case], per_layer: bool = False) -> dict | None:
    """The decode efficiency and step cost of a key's records (step time = step + roofline / value), or None where
    the records cannot set both (too few, or a fit outside 0 < value <= 1, step > 0). `per_layer`: the line through
    each record's times divided by its model's decoder layers, whose intercept is the cost per layer ("layer_us")."""
    if len(members) < MIN_STEP_RECORDS:
        return None
    points = [step_seconds(c) for c in members]
    if per_layer:
        points = [(x / c.model.num_layers, y / c.model.num_layers) for (x, y), c in zip(points, members)]
    slope, intercept = theil_sen(points)
    if slope < 1 or intercept <= 0:
        return None
    if per_layer:
        return {"value": round(1 / slope, 4), "layer_us": round(intercept * 1e6, 4)}
    return {"value": round(1 / slope, 4), "step_ms": round(intercept * 1e3, 4)}


def derive(cases: list[Case]) -> dict:
    """speed.json: the efficiencies of every key with enough fit records, each with its record ids, and the engines'
    fixed costs per request. Two passes: the request costs are taken over the efficiencies of the records without
    them (`request_costs`), then the efficiencies again with every client-timed TTFT less its engine's cost
    (`client_ttft`)."""
    fit, swept = [c for c in cases if derivable(c)], [c for c in cases if sweepable(c)]
    costs = request_costs(cases, speed.efficiency_table({"efficiencies": efficiency_entries(fit, swept, {})}))
    return {"rule": RULE,
            "source": "validation/published/speed.csv (each record with its URL, quote and settings)",
            "efficiencies": efficiency_entries(fit, swept, speed.request_cost_table({"request_costs": costs})),
            "request_costs": costs}


def efficiency_entries(fit: list[Case], swept: list[Case], costs: dict) -> list[dict]:
    """The efficiencies of every key with enough of the `fit` records, and the attention fractions of the sweeps
    among the `swept` ones; a client-timed TTFT less its engine's fixed cost per request of `costs`."""
    keys: dict[tuple, list[Case]] = {}
    engines: dict[tuple, set[str]] = {}  # the engines (training: frameworks) of each key's records
    for c in fit:
        engine = c.engine
        kernel = c.kernel
        if c.phase == "training":  # keyed by framework; one kernel (16-bit matmuls)
            engine, kernel = training_framework(c.record), ""
        own = ((engine, c.klass, c.phase, kernel), (engine, c.klass, c.phase, ""), (engine, "", c.phase, ""))
        shared = () if engine in speed.SUPERSEDED_ENGINES else (
            ("", c.klass, c.phase, kernel), ("", c.klass, c.phase, ""), ("", "", c.phase, ""))
        for key in dict.fromkeys(own + shared):
            keys.setdefault(key, []).append(c)
            engines.setdefault(key, set()).add(engine)
    entries = attention_entries(swept, costs)
    attention = speed.efficiency_table({"efficiencies": entries})
    for key, members in sorted(keys.items()):
        least = MIN_STEP_RECORDS if key[2] == "decode" else MIN_RECORDS  # a decode key sets a step cost too
        if len(members) < least and key[:2] != ("", ""):
            continue
        if key[0] == "" and key[:2] != ("", "") and len(engines[key]) < MIN_SHARED_ENGINES:
            continue  # one engine's records are that engine's key, not every engine's
        if key[:2] != ("", "") and (key := gpu_key(key, {c.gpu.id for c in members}, entries)) is None:
            continue
        fractions = [achieved(c, attention_of(c, attention), request_seconds(c, costs)) for c in members]
        entry = {"key": list(key), "value": round(statistics.median(fractions), 4),
                 "records": sorted(c.record["id"] for c in members)}
        if key[2] == "decode":
            line = decode_fit(members, per_layer=key[0] != "")  # one engine's kernels: per layer
            if line is None and key[:2] != ("", ""):
                continue  # no line through these records: the next key's applies
            entry.update(line or {})
        if key[2] == "training":  # the fine-tuning speed's range
            entry["range"] = [round(min(fractions), 4), round(max(fractions), 4)]
        entries.append(entry)
    entries.sort(key=lambda e: e["key"])
    return entries


def request_costs(cases: list[Case], table: dict) -> list[dict]:
    """Each engine's fixed cost per request (`request_record`s, at least MIN_REQUEST_RECORDS): the median of the
    measured TTFT - the record's forward at the efficiencies of `table`, in ms, with its record ids."""
    engines: dict[str, list[Case]] = {}
    for c in cases:
        if request_record(c):
            engine = c.engine
            engines.setdefault(engine, []).append(c)
            if engine not in speed.SUPERSEDED_ENGINES:
                engines.setdefault("", []).append(c)
    shared = sorted({c.engine for c in engines.get("", ())})
    return [{"engine": engine, "request_ms": round(statistics.median(
                float(c.record["value"]) - estimate(c, table=table, costs={}) for c in members), 4),
             "records": sorted(c.record["id"] for c in members), **({} if engine else {"engines": shared})}
            for engine, members in sorted(engines.items()) if len(members) >= MIN_REQUEST_RECORDS
            and (engine or len(shared) >= MIN_SHARED_ENGINES)]


def leave_one_out(c: Case, cases: list[Case]) -> float:
    """The record's estimate with efficiencies derived from every other record (the record held out)."""
    data = derive([o for o in cases if o is not c])
    return estimate(c, table=speed.efficiency_table(data), costs=speed.request_cost_table(data))


def results(cases: list[Case], table: dict | None = None, costs: dict | None = None) -> list[dict]:
    """Each record against its estimate under `table` and `costs` (default: speed.json's), and left out."""
    rows = []
    for c in cases:
        r = c.record
        # the engine generation the efficiencies are keyed by (vllm-v0: vLLM before 0.8, reported apart)
        row = {"id": r["id"], "engine": c.engine, "gpu": r["gpu"],
               "metric": r["metric"], "concurrency": r["concurrency"],
               "measured": float(r["value"]), "held_out": held_out(r["id"]), "skip": c.skip}
        if not c.skip:
            row.update(gpu_class=c.klass, phase=SHORT_TTFT if short_ttft(c) else c.phase,
                       estimated=round(estimate(c, table=table, costs=costs), 3))
            if c.phase == "training":  # its efficiency's key, not written to speed_results.csv
                row["framework"] = training_framework(r)
            row["error_pct"] = round(100 * (row["estimated"] / row["measured"] - 1), 2)
            row["loo_error_pct"] = round(100 * (leave_one_out(c, cases) / row["measured"] - 1), 2)
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> str:
    """Median |error| per engine, GPU class and phase, for the fit and the held-out records."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if not row["skip"]:
            groups.setdefault((row["engine"], row["gpu_class"], row["phase"]), []).append(row)
    shown = lambda errors: f"{statistics.median(errors):.1f}%" if errors else "-"  # noqa: E731
    lines = ["| engine | GPU class | phase | records (held out) | median abs error: fit | held out | each record "
             "left out |", "|---|---|---|---|---|---|---|"]
    for (engine, klass, phase), members in sorted(groups.items()):
        fit = [abs(m["error_pct"]) for m in members if not m["held_out"]]
        out = [abs(m["error_pct"]) for m in members if m["held_out"]]
        loo = [abs(m["loo_error_pct"]) for m in members]
        lines.append(f"| {engine} | {klass} | {phase} | {len(members)} ({len(out)}) | {shown(fit)} | {shown(out)} "
                     f"| {shown(loo)} |")
    engines = sorted({row["engine"] for row in rows if not row["skip"]})
    lines.append("")
    lines.append("Per engine (decode and prefill: concurrency 1, as llama-bench runs; then every record, offline runs "
                 "included):")
    lines.append("")
    lines.append("| engine | phase | records (held out) | fit | held out | each record left out |")
    lines.append("|---|---|---|---|---|---|")
    for engine in engines:
        for phase in ("decode", "prefill", SHORT_TTFT, "throughput", "training"):
            members = [r for r in rows if not r["skip"] and r["engine"] == engine and r["phase"] == phase]
            subsets = [("", members)]
            if phase in ("decode", "prefill"):
                subsets = [(" (batch 1)", [m for m in members if m["concurrency"] == "1"]),
                           (" (all)", members)]
            for label, group in subsets:
                if not group or (label == " (all)" and len(group) == len(subsets[0][1])):
                    continue
                fit = [abs(m["error_pct"]) for m in group if not m["held_out"]]
                out = [abs(m["error_pct"]) for m in group if m["held_out"]]
                lines.append(f"| {engine} | {phase}{label} | {len(group)} ({len(out)}) | {shown(fit)} | {shown(out)} "
                             f"| {shown([abs(m['loo_error_pct']) for m in group])} |")
    skipped = [row for row in rows if row["skip"]]
    reasons: dict[str, int] = {}
    for row in skipped:
        reason = re.sub(r"^(model|GPU) .*? (is not in the catalog)$", r"\1 not in the catalog", row["skip"])
        reason = re.sub(r"^the same measurement as .*", "the same measurement collected twice", reason)
        reasons[reason] = reasons.get(reason, 0) + 1
    compared = len(rows) - len(skipped)
    lines.append(f"\n{compared} of {len(rows)} records compared; skipped by reason:")
    lines += [f"- {n} x {reason}" for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1])]
    if skipped:
        lines.append(f"\n{len(skipped)} record(s) not compared:")
        lines += [f"- {row['id']}: {row['skip']}" for row in skipped]
    return "\n".join(lines)


def write_results(rows: list[dict], path: Path = SPEED_RESULTS_CSV) -> None:
    names = ("id", "engine", "gpu", "gpu_class", "metric", "concurrency", "phase", "measured", "estimated",
             "error_pct", "loo_error_pct", "held_out", "skip")
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({name: row.get(name, "") for name in names})


def load_results(path: Path = SPEED_RESULTS_CSV) -> list[dict]:
    """The committed comparison rows (for the Methodology page)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def accuracy_entries(rows: list[dict]) -> list[dict]:
    """speed.json's accuracy: over the compared decode, prefill and training rows (any concurrency; not the short
    TTFTs) of each engine generation (training: framework) and GPU class, then of the engine on every class, of every
    engine on the class and of every row, the count, the median |error|, the median |error| with each record left
    out and the median signed error of the speed (a time metric's error turned round: measured time / estimated
    time - 1), > 0 where the estimate is faster than measured."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for row in rows:
        if not row["skip"] and row["phase"] in ("decode", "prefill", "training"):
            engine, klass = row.get("framework", row["engine"]), row["gpu_class"]
            for key in ((engine, klass), (engine, ""), ("", klass), ("", "")):
                groups.setdefault((*key, row["phase"]), []).append(row)

    def faster(row: dict) -> float:
        ratio = row["estimated"] / row["measured"]
        return 1 / ratio - 1 if row["metric"] in TIME_METRICS else ratio - 1

    return [{"engine": engine, "class": klass, "phase": phase, "records": len(members),
             "median_pct": round(statistics.median(abs(m["error_pct"]) for m in members), 1),
             "left_out_pct": round(statistics.median(abs(m["loo_error_pct"]) for m in members), 1),
             "bias_pct": round(100 * statistics.median(faster(m) for m in members), 1) + 0.0}  # no -0.0
            for (engine, klass, phase), members in sorted(groups.items())]


def derived(cases: list[Case]) -> tuple[dict, list[dict]]:
    """The whole of speed.json and the comparison rows it gives: `derive`'s efficiencies and request costs, the
    host-link fraction of the offload records (validation/offload.py, validation/published/offload.csv),
    llama.cpp's fractions for weights in host RAM (validation/host_speed.py, validation/published/host_speed.csv),
    and the accuracy of the records' estimates under those efficiencies (`accuracy_entries`)."""
    from . import host_speed, offload  # they read this module's name tables

    data = {**derive(cases), "host_offload": offload.derive(offload.cases()),
            "host_compute": host_speed.derive(host_speed.cases())}
    rows = results(cases, speed.efficiency_table(data), speed.request_cost_table(data))
    return {**data, "accuracy": accuracy_entries(rows)}, rows


def derive_file(cases: list[Case]) -> dict:
    """The whole of speed.json (`derived`)."""
    return derived(cases)[0]


def run(derive_first: bool = False, write: bool = True) -> list[dict]:
    cases = cases_of(load_records())
    if derive_first:
        data, rows = derived(cases)
        SPEED_JSON.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        for cached in (speed._speed_data, speed._efficiency_table, speed._request_costs, speed.efficiency,
                       speed._host_offload, speed._host_compute, speed._accuracy):
            cached.cache_clear()
    else:
        rows = results(cases)
    if write:
        write_results(rows)
    return rows
