"""vLLM's start-up accounting (estimator/engines/vllm.py), pinned to arithmetic from vLLM's source and to published
start-up logs (validation/engine_logs/vllm.json)."""

import json
import math
import subprocess
import sys
from dataclasses import replace

import pytest

import estimator as est
from estimator.engines import REFUSAL, ServeScenario, apply_command, import_command, launch_command, serve
from estimator.activations import inference_layer_peak
from estimator.engines import vllm

LLAMA = est.model("meta-llama/Llama-3.1-8B").architecture
GiB = 2**30


def test_llama_8b_on_h100_by_hand():
    """vllm/v1/worker/gpu_worker.py determine_available_memory, v0.11 (CUDA graphs outside the budget)."""
    r = serve(ServeScenario(LLAMA, gpu="h100-sxm", max_model_len=16000, engine_version="0.11.0"))
    total = 85_028_896_768  # the H100 SXM's cudaMemGetInfo total (estimator/data/gpus.json)
    requested = int(total * 0.9)
    weights = 8_030_261_248 * 2  # bf16, published count
    # H100: >= 70 GiB and not an A100 -> max_num_seqs 1024, max_num_batched_tokens 8192 (arg_utils.py); the sampler
    # over 1024 requests x 128,256 logits at 38 bytes each, while the forward's 8,192 x 4,096 bf16 output is alive
    activations = 38 * 1024 * 128_256 + 2 * 8192 * 4096
    non_torch = 128 * 2**20
    available = requested - weights - activations - non_torch
    assert r.budget_bytes == requested
    assert (r.component("weights"), r.component("activations"), r.component("kv_cache")) == \
        (weights, activations, available)
    page = 16 * 8 * 128 * 2 * 2  # block_size x KV heads x head_dim x (K, V) x bf16 = 65,536 bytes per layer
    blocks = available // (page * 32)  # one group of 32 layers
    assert blocks == 26_356
    assert r.kv_cache_tokens == blocks * 16 == 421_696  # v0.11: num_blocks // groups x block_size
    assert r.max_concurrency == pytest.approx(blocks / math.ceil(16000 / 16))
    assert "Maximum concurrency for 16,000 tokens per request: 26.36x" in r.log
    # the llm-d H100 profile of this model (validation/engine_logs vllm-llmd-4) logged 51.38 GiB of KV cache
    assert available / GiB == pytest.approx(51.38, rel=0.01)


def test_sliding_window_groups_reproduce_a_logged_start_up():
    """gpt-oss-120b at TP 4 on A100s, vLLM 0.10.1.1 (vllm-dennislee22-6): 45.32 GiB of KV cache logged as
    2,640,144 tokens and 284.25x concurrency for 16,384 tokens. 18 full + 18 sliding (128-token window) layers form
    2 groups of 18; a page is 16 tokens x 2 KV heads per rank x 64 x 2 x 2 bytes = 8,192 bytes."""
    gpt = est.model("openai/gpt-oss-120b").architecture
    r = serve(ServeScenario(gpt, gpu="a100-80gb-sxm", tensor_parallel=4, max_model_len=16384,
                            engine_version="0.10.1.1", kv_cache_memory=round(45.32 * GiB)))
    blocks = round(45.32 * GiB) // (8192 * 18)
    # a request: 16384 / 16 full pages + the window (127 tokens) plus a 2,048-token prefill chunk (A100 default),
    # in pages, + 1
    need = 16384 // 16 + math.ceil((128 - 1 + 2048) / 16) + 1
    assert r.max_concurrency == pytest.approx(blocks / need)
    assert r.max_concurrency == pytest.approx(284.25, abs=0.01)
    assert r.kv_cache_tokens == blocks // 2 * 16
    assert r.kv_cache_tokens == pytest.approx(2_640_144, rel=1e-4)


def test_newer_releases_report_capacity_tokens_and_budget_cuda_graphs():
    new = serve(ServeScenario(LLAMA, gpu="h100-sxm", max_model_len=16000, engine_version="0.24"))  # V1 runner
    old = serve(ServeScenario(LLAMA, gpu="h100-sxm", max_model_len=16000, engine_version="0.11"))
    graphs = new.component("cuda_graphs")
    assert graphs > 0
    # v0.21+: the graph pool comes first; the profiling sampler filters without sorting (FlashInfer by default)
    assert old.component("activations") - new.component("activations") == (38 - 14) * 1024 * 128_256
    assert new.component("kv_cache") == old.component("kv_cache") - graphs + (38 - 14) * 1024 * 128_256
    assert new.kv_cache_tokens == int(new.max_concurrency * 16000)


def test_before_0_11_the_profiling_sampler_is_flashinfers_where_it_is_installed():
    """v0.10.1.1's TopKTopPSampler (vllm/v1/sample/ops/topk_topp_sampler.py in its wheel) takes FlashInfer whenever it
    is installed and VLLM_USE_FLASHINFER_SAMPLER is not 0 ("In V1, None means True"), and the dummy run sets top_k /
    top_p (gpu_model_runner._dummy_sampler_run): flashinfer 0.2.8's top_k_top_p_sampling_from_logits keeps a masked
    copy and its softmax, 14 bytes a logit with the bf16 logits and their fp32 copy. Llama 3.1 8B on an H100: 1,024
    requests x 128,256 logits x 14 = 1,838,678,016 bytes + the forward's 8,192 x 4,096 bf16 output."""
    r = serve(ServeScenario(LLAMA, gpu="h100-sxm", max_model_len=16000, engine_version="0.10.1"))
    sampler = 2 * 8192 * 4096 + 14 * 1024 * 128_256
    forward = inference_layer_peak(LLAMA, 1, 8192, 8192, flash_attention=True)
    assert r.component("activations") == max(sampler, forward) == 1_905_786_880


def test_the_sampler_the_log_names_decides_the_sort():
    """TopKTopPSampler sorts the dummy run's logits on PyTorch's path and not on FlashInfer's; the start-up log says
    which ran. Qwen3-30B-A3B on an H100 at v0.10.2 with PyTorch's sampler (vllm-kolyangg-1's log: 'Falling back to the
    PyTorch-native implementation'): 1,024 requests x 151,936 logits x 38 bytes = 5,912,133,632 bytes, where 'auto'
    (before 0.11: FlashInfer where installed) filters without a sort: the bf16 logits, their fp32 copy, the top-k
    masked copy and its softmax, 14 bytes a logit (flashinfer top_k_top_p_sampling_from_logits). From 0.11 'auto'
    sorts (FlashInfer opt-in), and a chosen FlashInfer (the log: 'Using FlashInfer for top-p & top-k sampling') does
    not."""
    qwen = est.model("Qwen/Qwen3-30B-A3B").architecture
    pytorch = serve(ServeScenario(qwen, gpu="h100-sxm", max_model_len=6144, engine_version="0.10.2",
                                  sampler="pytorch"))
    auto = serve(ServeScenario(qwen, gpu="h100-sxm", max_model_len=6144, engine_version="0.10.2"))
    assert 38 * 1024 * 151_936 == 5_912_133_632
    assert pytorch.component("activations") == 2 * 8192 * 2048 + 5_912_133_632
    assert auto.component("activations") == max(2 * 8192 * 2048 + 14 * 1024 * 151_936,
                                                inference_layer_peak(qwen, 1, 8192, 8192, flash_attention=True))
    assert pytorch.component("kv_cache") < auto.component("kv_cache")
    new = serve(ServeScenario(qwen, gpu="h100-sxm", max_model_len=6144, engine_version="0.11"))
    flashinfer = serve(ServeScenario(qwen, gpu="h100-sxm", max_model_len=6144, engine_version="0.11",
                                     sampler="flashinfer"))
    assert new.component("activations") == 2 * 8192 * 2048 + 5_912_133_632
    assert flashinfer.component("activations") == 2 * 8192 * 2048 + 14 * 1024 * 151_936
    with pytest.raises(ValueError, match="sampler"):
        ServeScenario(qwen, sampler="cuda")


def test_tensor_parallel_splits_weights_and_kv_heads():
    one = serve(ServeScenario(LLAMA, gpu="h100-sxm", engine_version="0.11"))
    two = serve(ServeScenario(LLAMA, gpu="h100-sxm", tensor_parallel=2, engine_version="0.11"))
    assert two.component("weights") == pytest.approx(one.component("weights") / 2, abs=300_000)  # norms replicated
    assert two.component("non_torch") == vllm.NON_TORCH_ONE_GPU + vllm.NON_TORCH_TENSOR_PARALLEL
    assert two.gpus == 2


def test_pipeline_stages_size_their_blocks_by_their_own_layers():
    """get_pp_indices gives each of 2 stages 14 of Qwen2.5-7B's 28 layers (61 layers over 4: 15, 15, 16, 15, the
    remainder on the stages before the last); each stage sizes its blocks by the layers of the whole model's group it
    holds and all take the fewest (kv_cache_utils.get_kv_cache_configs, v0.22.0). At PP 2 a page of 16 tokens x 4 KV
    heads x 128 x 2 (K, V) x 2 bytes = 32,768 bytes serves 14 layers, not 28."""
    assert vllm.pp_stages(28, 2) == ((0, 14), (14, 28))
    assert vllm.pp_stages(61, 4) == ((0, 15), (15, 30), (30, 46), (46, 61))
    qwen = est.model("Qwen/Qwen2.5-7B").architecture
    assert vllm._page_layout(qwen, "bf16", 0, 1)[::2] == (32_768, 28)
    assert vllm._page_layout(qwen, "bf16", 0, 1, pp=2)[::2] == (32_768, 14)
    two = serve(ServeScenario(qwen, gpu="l40s", pipeline_parallel=2, max_model_len=8192, engine_version="0.11"))
    blocks = two.component("kv_cache") // (32_768 * 14)
    assert two.kv_cache_tokens == int(blocks / 512 * 8192)  # an 8,192-token request holds 512 pages

def test_max_cudagraph_capture_size_caps_the_captured_sizes():
    """--max-cudagraph-capture-size 64 (_set_cudagraph_sizes takes it before min(2 x max_num_seqs, 512)): sizes 1, 2,
    4, 8, 16, ..., 64, 11 PIECEWISE graphs and, under 1,024 sequences, 11 FULL decode graphs, against 1, 2, 4, steps
    of 8 to 248 and of 16 to 512 (51 each) by default on an H100; the command carries the flag."""
    s = ServeScenario(LLAMA, gpu="h100-sxm", cuda_graph_max_bs=64, engine_version="0.22.0", model_id="m")
    sizes, piecewise, decode = vllm.cuda_graph_counts(s, 1024, 8192)
    assert sizes == (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64) and (piecewise, decode) == (11, 11)
    default = vllm.cuda_graph_counts(replace(s, cuda_graph_max_bs=0), 1024, 8192)
    assert default[1:] == (51, 51) and default[0][-1] == 512
    assert serve(s).component("cuda_graphs") < serve(replace(s, cuda_graph_max_bs=0)).component("cuda_graphs")
    assert launch_command(s) == "vllm serve m --max-cudagraph-capture-size 64"
    assert dict(import_command(launch_command(s)).fields) == {"cuda_graph_max_bs": 64}

def test_refusals_in_vllms_words():
    qwen = est.model("Qwen/Qwen3-8B").architecture
    too_long = serve(ServeScenario(qwen, gpu="l4"))  # 40,960-token context on a 24 GB card
    assert not too_long.starts
    assert "is larger than the available KV cache memory" in too_long.warnings[0]
    assert f"estimated maximum model length is {too_long.max_model_len_that_fits}" in too_long.warnings[0]
    assert 0 < too_long.max_model_len_that_fits < 40_960
    fits = serve(ServeScenario(qwen, gpu="l4", max_model_len=too_long.max_model_len_that_fits))
    assert fits.starts and fits.max_concurrency >= 1
    no_room = serve(ServeScenario(qwen, gpu="l4", gpu_memory_utilization=0.5))
    assert no_room.warnings[0] == (f"{REFUSAL}No available memory for the cache blocks. Try increasing "
                                   "`gpu_memory_utilization` when initializing the engine.")
    too_big = serve(ServeScenario(est.model("meta-llama/Llama-3.3-70B-Instruct").architecture, gpu="rtx-4090"))
    assert "CUDA out of memory while loading the weights" in too_big.warnings[0]
    llama_cpp_cache = serve(ServeScenario(qwen, gpu="h100-sxm", kv_dtype="q8_0"))
    assert "argument --kv-cache-dtype: invalid choice: 'q8_0'" in llama_cpp_cache.warnings[0]
    bad = serve(ServeScenario(qwen, gpu="h100-sxm", max_num_seqs=512, max_num_batched_tokens=256))
    assert "must be greater than or equal to max_num_seqs (512)" in bad.warnings[0]


def test_command_import_of_real_command_lines():
    text = ("CUDA_VISIBLE_DEVICES=0,1 vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 "
            "--max-model-len 32k --gpu-memory-utilization=0.92 --trust-remote-code --host 0.0.0.0 --port 8000 "
            "--kv-cache-dtype fp8_e4m3 --enforce-eager")
    imported = import_command(text)
    assert imported.engine == "vllm" and imported.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert dict(imported.fields) == {"tensor_parallel": 2, "max_model_len": 32_000, "gpu_memory_utilization": 0.92,
                                     "kv_dtype": "fp8", "enforce_eager": True}
    assert imported.ignored == ("--trust-remote-code", "--host 0.0.0.0", "--port 8000")
    older = import_command("python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B-Instruct "
                           "--max-num-seqs 64 -tp 4 --max-model-len 8192")
    assert older.model == "Qwen/Qwen2.5-7B-Instruct"
    assert dict(older.fields) == {"max_num_seqs": 64, "tensor_parallel": 4, "max_model_len": 8192}
    s = apply_command(ServeScenario(LLAMA, model_id="meta-llama/Llama-3.1-8B-Instruct"), imported)
    assert launch_command(s) == ("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 "
                                 "--gpu-memory-utilization 0.92 --max-model-len 32000 --kv-cache-dtype fp8 "
                                 "--enforce-eager")
    assert dict(import_command(launch_command(s)).fields) == dict(imported.fields)  # the command round-trips
    with pytest.raises(ValueError, match="no engine command found"):
        import_command("echo hello")
    with pytest.raises(ValueError, match="--tensor-parallel-size"):
        import_command("vllm serve x --tensor-parallel-size two")


def test_cli_serve_json_and_refusal_exit_codes():
    run = [sys.executable, "-m", "estimator", "serve"]
    out = subprocess.run(run + ["--command", "vllm serve Qwen/Qwen3-8B --max-model-len 65536 --foo 1",
                                "--gpu", "l4", "--json"], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["engine"] == "vllm" and report["starts"] is False  # refused: exit 0 with the engine's words
    assert report["warnings"][0].startswith(REFUSAL)
    assert set(report["per_gpu"]) >= {"weights", "activations", "non_torch", "cuda_graphs", "kv_cache"}
    assert all(isinstance(v, int) for v in report["per_gpu"].values())
    assert report["max_model_len_that_fits"] > 0
    assert "ignored from the command: --foo 1" in report["assumptions"]
    missing_gpu = subprocess.run(run + ["--model", "qwen3-8b"], capture_output=True, text=True)
    assert missing_gpu.returncode == 2 and missing_gpu.stderr.count("\n") == 1 and "--gpu" in missing_gpu.stderr
    bad = subprocess.run(run + ["--gpu", "l4", "--command", "ls -la"], capture_output=True, text=True)
    assert bad.returncode == 2 and "no engine command found" in bad.stderr


def test_mtp_speculative_decoding_loads_the_draft_and_caches_its_layer():
    """--speculative-config '{"method": "mtp", ...}' on Qwen3.5-27B (mtp_num_hidden_layers 1): vLLM loads one more
    decoder layer shaped like the last full-attention layer, the 2h -> h fusion projection and 3 norms, and that
    layer's KV cache joins the full-attention group (16 full + 48 Gated DeltaNet layers -> 17 full)."""
    qwen = est.model("Qwen/Qwen3.5-27B").architecture
    assert qwen.mtp_layers == 1 and len(qwen.cached_layers) == 16
    base = dict(gpu="h100-sxm", max_model_len=32768, engine_version="0.11")
    off, on = serve(ServeScenario(qwen, **base)), serve(ServeScenario(qwen, speculative_tokens=3, **base))
    from estimator.architecture import tensors
    last = qwen.attention_layers[-1]
    layer = sum(t.numel for t in tensors(qwen) if t.layer == last) * 2  # bf16 checkpoint
    h = qwen.hidden_size
    assert on.component("weights") - off.component("weights") == layer + 2 * (2 * h * h + 3 * h)
    # groups of equal size share the pool: 16 full + 48 state layers -> 4 groups of 16; with the draft 17 + 48 ->
    # 1 full group of 17 and 3 state groups of 17 (kv_cache_utils: the smallest kind sets the group size)
    assert [(len(g), size) for _, g, size in (vllm._page_layout(qwen, "bf16", 0, 1, n) for n in (0, 1))] == \
        [(4, 16), (4, 17)]
    assert on.kv_cache_tokens < off.kv_cache_tokens
    assert "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'" in on.command
    assert dict(import_command(on.command).fields)["speculative_tokens"] == 3
    eagle = import_command(
        "vllm serve x --speculative-config '{\"method\": \"eagle3\", \"num_speculative_tokens\": 2}'")
    assert dict(eagle.fields)["speculative_tokens"] == 0  # other drafts are not modelled


def test_capture_sizes_and_modes_per_release():
    """vllm/config/vllm.py _set_cudagraph_sizes and v1/cudagraph_dispatcher.py initialize_cudagraph_keys, checked
    against the graph counts the logs print."""
    s = ServeScenario(LLAMA, gpu="rtx-4090", engine_version="0.11.0")
    # v0.11.0: 1, 2, 4 and steps of 8 up to min(2 x 256, 512); FULL decode graphs up to max_num_seqs = 256.
    # vllm-27782-1 (v0.11.0, max_num_seqs 256): "PIECEWISE ... 67/67", "decode, FULL ... 35/35"
    sizes, piecewise, full = vllm.cuda_graph_counts(s, 256, 2048)
    assert sizes == (1, 2, 4) + tuple(range(8, 513, 8)) and (piecewise, full) == (3 + 64, 3 + 32) == (67, 35)
    # since #26016: steps of 16 from 256 -> 3 + 31 + 17 = 51 sizes; vllm-djl3055 (v0.22 / 0.23, max_num_seqs 256 and
    # 128): 35 and 19 FULL graphs
    new = ServeScenario(LLAMA, gpu="l4", engine_version="0.23.0")
    assert vllm.cuda_graph_counts(new, 256, 2048)[1:] == (3 + 31 + 17, 35) == (51, 35)
    assert vllm.cuda_graph_counts(new, 128, 2048)[1:] == (3 + 31 + 1, 3 + 16) == (35, 19)
    # v0.10.1: PIECEWISE only
    assert vllm.cuda_graph_counts(ServeScenario(LLAMA, engine_version="0.10.1.1"), 256, 2048)[1:] == (67, 0)
    # MTP with 3 draft tokens and 2 sequences: largest 2 x 2 x 4 = 16; [1, 2, 4, 8, 16] rounded up to multiples of 4
    qwen = est.model("nvidia/Qwen3.6-27B-NVFP4").architecture
    sizes, piecewise, full = vllm.cuda_graph_counts(ServeScenario(qwen, speculative_tokens=3), 2, 8192)
    assert sizes == (4, 8, 16) and (piecewise, full) == (3, 2)  # FULL: 4 <= n <= 2 x 4
    # max_num_batched_tokens caps the largest size
    assert vllm.capture_sizes(256, 64) == (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64)


def test_gpt_oss_sets_its_own_largest_capture_size():
    """GptOssForCausalLMConfig (vllm/model_executor/models/config.py) replaces min(2 x max_num_seqs, 512): v0.10.1.1
    prints 83 sizes up to 1,024 (dennislee22/vLLM-benchmarking log/vllm.log, vllm-dennislee22-6's start-up); v0.11
    stops at 992 ("from 67 to 81"); #27840 lifted that cap (83 again). Other models keep the default."""
    oss = est.model("openai/gpt-oss-120b").architecture
    logged = (1024, 1008, 992, 976, 960, 944, 928, 912, 896, 880, 864, 848, 832, 816, 800, 784, 768, 752, 736, 720,
              704, 688, 672, 656, 640, 624, 608, 592, 576, 560, 544, 528, 512, 496, 480, 464, 448, 432, 416, 400, 384,
              368, 352, 336, 320, 304, 288, 272, 256, 248, 240, 232, 224, 216, 208, 200, 192, 184, 176, 168, 160, 152,
              144, 136, 128, 120, 112, 104, 96, 88, 80, 72, 64, 56, 48, 40, 32, 24, 16, 8, 4, 2, 1)
    # v0.10.1.1 on an A100 (256 sequences, 2,048 batched tokens): 3 + 31 + 49 sizes, PIECEWISE only
    sizes, piecewise, full = vllm.cuda_graph_counts(ServeScenario(oss, engine_version="0.10.1.1"), 256, 2048)
    assert sizes == tuple(reversed(logged)) and (piecewise, full) == (3 + 31 + 49, 0) == (83, 0)
    # v0.11.0 on an H100 (1,024 sequences): range(256, 993, 16) -> 3 + 31 + 47 = 81, all of them FULL too
    sizes, piecewise, full = vllm.cuda_graph_counts(ServeScenario(oss, engine_version="0.11.0"), 1024, 8192)
    assert sizes[-1] == 992 and (piecewise, full) == (81, 81)
    # after #27840: 1,024 again; FULL decode graphs only up to max_num_seqs (256: 3 + 31 + 1)
    assert vllm.cuda_graph_counts(ServeScenario(oss, engine_version="0.12.0"), 256, 2048)[1:] == (83, 35)
    # other models keep the default at v0.11.0: up to 512, 67 + 67 graphs at 1,024 sequences
    assert vllm.cuda_graph_counts(ServeScenario(LLAMA, engine_version="0.11.0"), 1024, 8192)[1:] == (67, 67)


def test_cuda_graph_memory_by_hand():
    """Llama 3.1 8B on an H100 (1,024 sequences -> 51 PIECEWISE + 51 FULL graphs of up to 512 tokens): the capture
    holds the pool of a 512-token decode step plus 32 layers x LAYER_GRAPH_BYTES per graph; v0.21+ budgets
    profile_cudagraph_memory's estimate, max over modes of the first capture + (graphs - 1) x the second capture's
    reading per mode, a reading being 32 layers x SAMPLED_GRAPH_BYTES, before the KV cache (v0.21-0.24, where dense
    models still run on the V1 model runner)."""
    new = serve(ServeScenario(LLAMA, gpu="h100-sxm", max_model_len=16000, engine_version="0.24"))
    old = serve(ServeScenario(LLAMA, gpu="h100-sxm", max_model_len=16000, engine_version="0.20"))
    pool = inference_layer_peak(LLAMA, 1, 512, 512, flash_attention=True)
    per_graph = 32 * 189_270  # 6,056,640 bytes: what each captured graph keeps
    reading = 32 * 83_623  # 2,675,936 bytes, over the 1 MiB floor: what the estimate's second capture reads
    # v0.21+: the eager warm-up run of the largest size stays in PyTorch's cache inside the measurement (+ pool)
    estimate = pool + (pool + reading) + (51 - 1) * reading + (51 - 1) * reading
    assert estimate == 2 * pool + 101 * 2_675_936
    assert new.component("cuda_graphs") == estimate
    assert old.component("cuda_graphs") == pool + 102 * per_graph  # what the capture takes, outside the budget
    assert new.component("kv_cache") == old.component("kv_cache") - estimate
    assert f"Graph capturing finished, took {(2 * pool + 102 * per_graph) / GiB:.2f} GiB" in new.log
    equivalent = round(0.9 - estimate / 85_028_896_768, 4)  # the H100 SXM's total (estimator/data/gpus.json)
    assert ("CUDA graph memory profiling is enabled (default since v0.21.0). The current --gpu-memory-utilization="
            f"0.9000 is equivalent to --gpu-memory-utilization={equivalent:.4f} without CUDA graph memory "
            "profiling.") in new.log
    # --kv-cache-memory skips profiling: the graphs are captured on top, as before v0.21
    fixed = serve(ServeScenario(LLAMA, gpu="h100-sxm", max_model_len=16000, kv_cache_memory=10 * GiB))
    assert fixed.component("cuda_graphs") == 2 * pool + 102 * per_graph and fixed.component("kv_cache") == 10 * GiB
    # tensor parallelism adds each layer's two captured all-reduces
    two = serve(ServeScenario(LLAMA, gpu="h100-sxm", tensor_parallel=2, engine_version="0.20"))
    assert two.component("cuda_graphs") == inference_layer_peak(LLAMA, 1, 512, 512, flash_attention=True, tp=2) \
        + 102 * 32 * (189_270 + 2 * 91_711)
    # the estimate's reading has no all-reduce term (SAMPLED_GRAPH_BYTES: the one TP-2 log implies none)
    two_new = serve(ServeScenario(LLAMA, gpu="h100-sxm", tensor_parallel=2, engine_version="0.24"))
    assert two_new.component("cuda_graphs") == 2 * inference_layer_peak(LLAMA, 1, 512, 512, flash_attention=True,
                                                                         tp=2) + 101 * 32 * 83_623
    # 4 pipeline stages: 8 layers per graph, a reading of 8 x 83,623 = 668,984 bytes, under the estimate's 1 MiB
    # floor, which each of the other 2 x 50 graphs takes instead
    staged = serve(ServeScenario(LLAMA, gpu="h100-sxm", pipeline_parallel=4, engine_version="0.24"))
    assert staged.component("cuda_graphs") == 2 * pool + 668_984 + 2 * (51 - 1) * 2**20
    assert serve(ServeScenario(LLAMA, gpu="h100-sxm", enforce_eager=True)).component("cuda_graphs") == 0


def test_graph_constants_follow_from_their_logs():
    """LAYER_GRAPH_BYTES and ALLREDUCE_GRAPH_BYTES are the rule of vllm.py over every V1 capture in
    validation/engine_logs/vllm.json (validation/engines.py derive_graph_constants): the median over the one-GPU
    configurations of what each capture leaves per layer and graph once the source-derived pool is taken out, then
    the median over the tensor-parallel ones of what is left per all-reduce. Adding a capture means re-deriving."""
    from validation import engines
    captures = engines.graph_captures()
    assert engines.derive_graph_constants(captures) == (vllm.LAYER_GRAPH_BYTES, vllm.ALLREDUCE_GRAPH_BYTES)
    # one configuration by hand: gpt-oss-120b (vllm-llmd-11) on one H100 at v0.11.0, 1.03 GiB over 81 PIECEWISE + 81
    # FULL graphs of up to 992 tokens (GptOssForCausalLMConfig) of 36 layers (llm-d's Llama-3.3-70B at TP 1 failed
    # before capturing and is not among them)
    pool = inference_layer_peak(est.model("openai/gpt-oss-120b").architecture, 1, 992, 992, flash_attention=True)
    assert (round(1.03 * GiB) - pool) // ((81 + 81) * 36) == 166_077
    # 28 one-GPU configurations: the median is the mean of the 14th and 15th (vllm-autoscientists-1, 188,613.x, and
    # vllm-isseihasegawa-6, 189,927.x), 189,270.x, rounded down
    implied = sorted({c["config"]: c["implied"] for c in captures if c["tp"] == 1}.values())
    one_gpu = [int(v) for v in implied]
    assert len(one_gpu) == 28 and one_gpu[7] == 166_077 and one_gpu[13:15] == [188_613, 189_927]
    assert one_gpu[:2] == [24_914, 72_369] and one_gpu[-2:] == [918_837, 2_085_527]  # llm-d v0.11 ... two graphs
    assert int((implied[13] + implied[14]) / 2) == 189_270 == vllm.LAYER_GRAPH_BYTES
    # per all-reduce (two a layer), given 189,270: twelve configurations, the median is the mean of the 6th and 7th
    left = sorted((c["implied"] - 189_270) / 2 for c in {c["config"]: c for c in captures if c["tp"] > 1}.values())
    assert [int(v) for v in left] == [12_222, 20_026, 33_952, 48_230, 48_336, 79_643, 103_779, 105_705, 114_992,
                                      136_136, 136_783, 223_371]
    assert int((left[5] + left[6]) / 2) == 91_711 == vllm.ALLREDUCE_GRAPH_BYTES


def test_graph_estimate_constant_follows_from_its_logs():
    """SAMPLED_GRAPH_BYTES is the rule of vllm.py over every V1 log that prints profile_cudagraph_memory's estimate
    (validation/engines.py derive_estimate_constant): the median over the configurations of what each reading leaves
    per layer once the pool terms are taken out. Adding such a log means re-deriving."""
    from validation import engines
    estimates = {e["record"]: e for e in engines.graph_estimates()}
    assert engines.derive_estimate_constant(list(estimates.values())) == vllm.SAMPLED_GRAPH_BYTES == 83_623
    # vllm-club3090-104-1 by hand: (0.88 - 0.8592) x 25,286,672,384 bytes (the catalog's RTX 3090 CUDA total) =
    # 525,962,786 bytes; its pool terms are 92 MiB (96,468,992 bytes: warm-up and pool of a 512-token step at TP 2);
    # 51 PIECEWISE + 35 FULL graphs are 51 + 35 - 2 + 1 = 85 readings of 64 layers
    club = estimates["vllm-club3090-104-1"]
    assert club["logged"] == round(0.0208 * 25_286_672_384) == 525_962_786 and club["fixed"] == 96_468_992
    assert club["modes"] == (51, 35) and club["layers"] == 64 and club["tp"] == 2
    assert int((525_962_786 - 96_468_992) / (85 * 64)) == 78_951 == int(club["implied"])
    # the four, sorted; the median is the mean of the middle two (mlopsassign-1 and club3090-pr323-2)
    implied = sorted(int(e["implied"]) for e in estimates.values())
    assert implied == [78_951, 82_738, 84_508, 288_274]
    middle = sorted(e["implied"] for e in estimates.values())[1:3]
    assert int(sum(middle) / 2) == 83_623
    # the estimate of that record under the constant: 96,468,992 + 85 x 64 x 83,623 = 551,378,112 bytes (0.5135 GiB,
    # +4.8% on the logged 0.4898), where the capture's per-graph constants gave 1.70 GiB
    assert vllm.profiled_estimate(96_468_992, (51, 35), 64) == 96_468_992 + 85 * 64 * 83_623 == 551_378_112
    records = {r["id"]: r for r in json.loads(open("validation/engine_logs/vllm.json").read())["records"]}
    scenario, _ = engines._vllm_scenario(records["vllm-club3090-104-1"])
    assert serve(scenario).component("cuda_graphs") == 551_378_112


def test_engine_validation_compares_the_budget_of_the_records_release():
    """validation/engines.py: a v0.21+ record's "Available KV cache memory" is after the CUDA-graph estimate
    (gpu_worker.py determine_available_memory); a record without a version is compared as the last release before the
    next change of rules after its date: July 2025 as v0.10 (v0.11.0's wheel: 2025-10-03), November 2025 as v0.16
    (v0.17.0's: 2026-03-06), before the graph default (2026-04-21) as v0.20."""
    from validation import engines
    records = {r["id"]: r for r in json.loads(open("validation/engine_logs/vllm.json").read())["records"]}
    july_2025, _ = engines._vllm_scenario(records["vllm-21348-1"])
    assert july_2025.engine_version == "0.10" and not vllm.graphs_budgeted(july_2025)
    assert engines._vllm_scenario(records["vllm-27508-1"])[0].engine_version == "0.16"  # 2025-10-31
    recent, _ = engines._vllm_scenario(records["vllm-club3090-104-1"])  # 2026-05-07, "default since v0.21.0"
    assert recent.engine_version == "" and vllm.graphs_budgeted(recent)
    row = next(r for r in engines.compare_vllm(records["vllm-club3090-104-1"]) if r["quantity"] == "kv_cache")
    report = serve(recent)
    assert row["estimate"] == round(report.component("kv_cache") / GiB, 4)


def test_issue13_records_page_arithmetic():
    """Two of issue 13's start-ups, tokens from their logged KV memory (validation/engines.py kv_tokens_paging).
    vllm-arm-spark-1 (v0.11.0, Mistral-7B: 32 layers x 8 KV heads x 128 x 2 x 2 B = 131,072 B a token, 16-token
    pages of 2 MiB): 102.56 GiB / 2 MiB = 52,510.72 -> 52,510 blocks (the log's num_gpu_blocks) x 16 = 840,160 tokens,
    as logged. vllm-akiyax-1 (v0.26.0, Qwen2.5-7B: 28 x 4 x 128 x 2 x 2 = 57,344 B, pages of 917,504 B): 8.0 GiB ->
    9,362 blocks; a 32,768-token request needs 2,048, and since v0.21 the line is int(9,362 / 2,048 x 32,768) =
    149,792 (149,712 logged: the 8.0 GiB is rounded, 149,712 x 57,344 B = 7.996 GiB)."""
    from validation import engines
    records = {r["id"]: r for r in json.loads(open("validation/engine_logs/vllm.json").read())["records"]}
    paged = {rid: next(r for r in engines.compare_vllm(records[rid]) if r["quantity"] == "kv_tokens_paging")
             for rid in ("vllm-arm-spark-1", "vllm-akiyax-1")}
    spark = records["vllm-arm-spark-1"]["logged"]
    assert paged["vllm-arm-spark-1"]["estimate"] == 52_510 * 16 == spark["kv_cache_tokens"]
    assert paged["vllm-akiyax-1"]["estimate"] == int(9_362 / 2_048 * 32_768) == 149_792


def test_engine_validation_reads_lora_and_auto_fit_settings():
    """validation/engines.py: a record's enable_lora / max_loras / max_lora_rank become the scenario's, 'auto' (or -1)
    max_model_len is auto-fit, and "Model loading took" is compared with the weights plus the LoRA slots, which also
    leave the KV budget. vllm-kaggleexact-2 (Qwen3-8B fp16, TP 2, --enable-lora at vLLM's defaults: one slot of rank
    16): per layer and GPU 16 x (3 x 4,096 + 6,144 / 2) q/k/v + 16 x (4,096 / 2 + 4,096) o_proj + 16 x (2 x 4,096 +
    24,576 / 2) gate/up + 16 x (12,288 / 2 + 4,096) down_proj = 835,584 parameters; x 36 layers x 2 B = 60,162,048 B."""
    from validation import engines
    records = {r["id"]: r for r in json.loads(open("validation/engine_logs/vllm.json").read())["records"]}
    record = records["vllm-kaggleexact-2"]
    scenario, _ = engines._vllm_scenario(record)
    assert scenario.enable_lora and (scenario.max_loras, scenario.max_lora_rank) == (0, 16)  # 0: vLLM's default, 1
    per_layer = 16 * (3 * 4_096 + 6_144 // 2) + 16 * (4_096 // 2 + 4_096) + 16 * (2 * 4_096 + 24_576 // 2) \
        + 16 * (12_288 // 2 + 4_096)
    assert per_layer == 835_584
    report = serve(scenario)
    assert report.component("lora") == per_layer * 36 * 2 == 60_162_048
    rows = {r["quantity"]: r for r in engines.compare_vllm(record)}
    assert rows["weights"]["estimate"] == round((report.component("weights") + 60_162_048) / GiB, 4)
    assert rows["kv_cache"]["estimate"] == round(report.component("kv_cache") / GiB, 4)
    custom = dict(record, settings=dict(record["settings"], max_loras=4, max_lora_rank=64, max_model_len="auto"))
    custom_scenario, _ = engines._vllm_scenario(custom)
    assert (custom_scenario.max_loras, custom_scenario.max_lora_rank) == (4, 64)
    assert custom_scenario.max_model_len == -1


def test_model_runner_v2_budgets_no_graphs_and_samples_without_sorting():
    """v0.25+ runs dense models on Model Runner V2 (#44443; VllmConfig._is_default_v2_model_runner_model: not MoE,
    not hybrid), whose profile_cudagraph_memory returns 0 (vllm/v1/worker/gpu/model_runner.py at 0036d38de46c) and
    whose dummy sampler run sorts nothing (top_k = vocabulary, top_p = 1.0 for the dummy requests: 16-bit logits and
    their fp32 copy, 6 bytes each). Llama 3.1 8B on an H100 at v0.26.0 against v0.24 (V1 runner)."""
    v2 = serve(ServeScenario(LLAMA, gpu="h100-sxm", max_model_len=16000, engine_version="0.26.0"))
    v1 = serve(ServeScenario(LLAMA, gpu="h100-sxm", max_model_len=16000, engine_version="0.24"))
    requested = int(85_028_896_768 * 0.9)  # the H100 SXM's cudaMemGetInfo total (estimator/data/gpus.json)
    weights = 8_030_261_248 * 2
    # the sampler over 1,024 requests x 128,256 logits at 6 bytes (788,004,864) + the forward's 8,192 x 4,096 bf16
    # output (67,108,864) = 855,113,728 bytes, under the forward's own peak, which is then the profiling peak
    sampler = 6 * 1024 * 128_256 + 2 * 8192 * 4096
    assert sampler == 855_113_728
    forward = inference_layer_peak(LLAMA, 1, 8192, 8192, flash_attention=True)
    assert forward > sampler and v2.component("activations") == forward
    # v0.24's V1 runner samples with FlashInfer (the default from v0.21): 14 bytes a logit, 1,838,678,016 + the output
    assert v1.component("activations") == 14 * 1024 * 128_256 + 2 * 8192 * 4096 == 1_905_786_880
    available = requested - weights - forward - 128 * 2**20  # no CUDA-graph term
    assert v2.component("kv_cache") == available
    blocks = available // (65_536 * 32)  # 16-token pages of 65,536 bytes per layer, one group of 32 layers
    assert v2.kv_cache_tokens == int(blocks / 1000 * 16000)  # a 16,000-token request holds 1,000 pages
    # the graphs are captured after the KV cache, on top of the budget: the v0.21+ capture (eager warm-up pool kept,
    # 51 PIECEWISE + 51 FULL graphs of 32 layers) is the same, only where it is paid changes
    pool = inference_layer_peak(LLAMA, 1, 512, 512, flash_attention=True)
    assert v2.component("cuda_graphs") == 2 * pool + 102 * 32 * 189_270
    assert not any("CUDA graph memory profiling is enabled" in line for line in v2.log)
    estimate = v1.component("cuda_graphs")
    assert v2.component("kv_cache") - v1.component("kv_cache") == (1_905_786_880 - forward) + estimate
    # MoE and hybrid models keep the V1 runner in these releases; before v0.25 every model does
    moe = ServeScenario(est.model("Qwen/Qwen3-30B-A3B").architecture, gpu="h100-sxm", engine_version="0.26.0")
    hybrid = ServeScenario(est.model("nvidia/Qwen3.6-27B-NVFP4").architecture, gpu="h100-sxm",
                           engine_version="0.26.0")
    dense = ServeScenario(LLAMA, gpu="h100-sxm", engine_version="0.26.0")
    assert (vllm.v2_runner(moe), vllm.v2_runner(hybrid), vllm.v2_runner(dense)) == (False, False, True)
    assert vllm.graphs_budgeted(moe) and vllm.graphs_budgeted(hybrid) and not vllm.graphs_budgeted(dense)
    assert not vllm.v2_runner(ServeScenario(LLAMA, gpu="h100-sxm", engine_version="0.24.0"))


def test_the_model_runner_input_overrides_the_release_default_and_imports_from_the_environment():
    """VLLM_USE_V2_MODEL_RUNNER, which VllmConfig.use_v2_model_runner obeys before the release default, picks the
    runner: vllm-kaggleexact-1 (v0.22.0, Qwen3-8B on two T4s, 0.85, 8,192 tokens, eager) loaded its weights in V2's
    model_runner.py. On V2 the profiling sampler over 256 requests x 151,936 logits keeps 6 bytes a logit
    (233,373,696) next to the forward's 8,192 x 4,096 bf16 output (67,108,864); on V1 v0.22 FlashInfer (its default
    from v0.21, on the T4's compute capability 7.5) filters without sorting: 14 bytes a logit, 311,164,928 bytes more
    than V2's 6. With VLLM_USE_FLASHINFER_SAMPLER=0 the PyTorch-native path runs v0.17's Triton filter: 14 too."""
    qwen = est.model("Qwen/Qwen3-8B").architecture
    base = dict(gpu="t4", tensor_parallel=2, gpu_memory_utilization=0.85, max_model_len=8192,
                max_num_batched_tokens=8192, enforce_eager=True, engine_version="0.22.0")
    v2 = serve(ServeScenario(qwen, model_runner="v2", **base))
    v1 = serve(ServeScenario(qwen, **base))
    assert vllm.v2_runner(ServeScenario(qwen, model_runner="v2", **base))
    assert not vllm.v2_runner(ServeScenario(qwen, model_runner="v1", gpu="h100-sxm", engine_version="0.26.0"))
    forward = inference_layer_peak(qwen, 1, 8192, 8192, flash_attention=True, tp=2)
    assert v2.component("activations") == max(forward, 6 * 256 * 151_936 + 2 * 8192 * 4096)
    assert v1.component("activations") == 14 * 256 * 151_936 + 2 * 8192 * 4096 == 611_647_488
    assert (14 - 6) * 256 * 151_936 == 311_164_928
    assert v2.component("kv_cache") - v1.component("kv_cache") == 611_647_488 - v2.component("activations")
    assert serve(ServeScenario(qwen, sampler="pytorch", **base)).component("activations") == 611_647_488
    text = "VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_USE_V2_MODEL_RUNNER=1 vllm serve Qwen/Qwen3-8B --max-model-len 8192"
    imported = import_command(text)
    assert dict(imported.fields) == {"sampler": "pytorch", "model_runner": "v2", "max_model_len": 8192}
    s = apply_command(ServeScenario(qwen, model_id="Qwen/Qwen3-8B"), imported)
    assert launch_command(s) == text  # the command carries the environment and round-trips
    assert dict(import_command("docker run --gpus all -e VLLM_USE_V2_MODEL_RUNNER=0 vllm/vllm-openai:v0.26.0 "
                               "--model Qwen/Qwen3-8B").fields) == {"model_runner": "v1"}
    with pytest.raises(ValueError, match="VLLM_USE_V2_MODEL_RUNNER"):
        import_command("VLLM_USE_V2_MODEL_RUNNER=yes vllm serve Qwen/Qwen3-8B")
    with pytest.raises(ValueError, match="model_runner|Model runner"):
        ServeScenario(qwen, model_runner="v3")

def test_engine_validation_groups_add_the_fully_stated_records_as_their_own_median():
    """validation/engines.groups: a quantity some of whose records leave an input unstated gets a second group over
    the records that state every input; refusals and quantities without such records do not."""
    from validation import engines

    def row(record, quantity, error, unstated=""):
        return {"record": record, "engine": "vllm", "era": "v1", "quantity": quantity, "error_pct": error,
                "logged": 0, "estimate": 0, "unstated": unstated}

    rows = [row("a", "kv_tokens", 1.0), row("b", "kv_tokens", -3.0), row("c", "kv_tokens", 40.0, "version"),
            row("a", "weights", 0.5), row("c", "refusal", 0.0, "version"), row("a", "refusal", 0.0),
            row("d", "skipped", 0.0)]
    groups = engines.groups(rows)
    assert [r["record"] for r in groups[("vllm", "v1", "kv_tokens")]] == ["a", "b", "c"]
    assert [r["record"] for r in groups[("vllm", "v1", "kv_tokens, every input stated")]] == ["a", "b"]
    assert ("vllm", "v1", "weights, every input stated") not in groups  # every weights record states its inputs
    assert ("vllm", "v1", "refusal, every input stated") not in groups
    assert all(key[2] != "skipped" for key in groups)
    # the summary: median |error| 3.0% over a, b, c and 2.0% over a, b
    text = engines.summary(rows)
    assert "| vllm | v1 | kv_tokens | 3 | 3.0% | +40.0% (c) |" in text
    assert "| vllm | v1 | kv_tokens, every input stated | 2 | 2.0% | -3.0% (b) |" in text


YARN = '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}'


def test_a_rope_scaling_override_sets_the_longest_max_model_len():
    """_get_and_verify_max_len (vllm/config/model.py, v0.22.0): Qwen3-32B's config says max_position_embeddings
    40,960; with Qwen's documented YaRN override vLLM derives 32,768 x 4 = 131,072 (yarn starts from
    original_max_position_embeddings), with a linear factor 2 40,960 x 2 = 81,920, and llama3 / longrope / su keep
    40,960. vllm-daisuketakai-3 (v0.10.0, TP 4) started at 131,072 with `'rope_scaling': {'rope_type': 'yarn',
    'factor': 4.0, 'original_max_position_embeddings': 32768}` in its non-default args."""
    qwen = est.model("Qwen/Qwen3-32B").architecture
    base = dict(gpu="h100-sxm", tensor_parallel=4, model_id="Qwen/Qwen3-32B")
    plain = serve(ServeScenario(qwen, max_model_len=131_072, **base))
    assert not plain.starts and "derived max_model_len (max_position_embeddings=40960" in plain.warnings[0]
    yarn = ServeScenario(qwen, max_model_len=131_072, rope_scaling=YARN, **base)
    assert vllm.derived_max_len(yarn) == 32_768 * 4 == 131_072 and serve(yarn).starts
    assert serve(yarn).max_model_len_that_fits == 131_072  # the pool holds more: the cap is the derived length
    assert serve(replace(yarn, max_model_len=0)).max_model_len == 131_072  # the default is the derived length
    linear = replace(yarn, rope_scaling='{"rope_type": "linear", "factor": 2}')
    assert vllm.derived_max_len(linear) == 81_920
    for kind in ("llama3", "longrope", "su"):
        assert vllm.derived_max_len(replace(yarn, rope_scaling=f'{{"rope_type": "{kind}", "factor": 8}}')) == 40_960
    gemma = ServeScenario(est.model("google/gemma-3-27b-it").architecture, rope_scaling=linear.rope_scaling)
    assert vllm.derived_max_len(gemma) == 131_072  # "gemma3" configs state the scaled length: never scaled again
    # the same bytes: YaRN changes the positions' rotation, not the KV cache
    assert serve(yarn).kv_cache_tokens == serve(replace(yarn, rope_scaling="")).kv_cache_tokens
    too_long = replace(yarn, max_model_len=262_144)
    assert not serve(too_long).starts
    allowed = serve(replace(too_long, allow_long_context=True))  # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: a warning
    assert allowed.starts and "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution" in allowed.warnings[0]


def test_rope_scaling_and_the_long_length_switch_import_and_round_trip():
    """--rope-scaling (v0.10's flag, as vllm-daisuketakai-3 ran), --hf-overrides '{"rope_scaling": ...}' (every V1
    release) and VLLM_ALLOW_LONG_MAX_MODEL_LEN in the environment fill the scenario; the launch command writes the
    override as --hf-overrides and reads back to the same scenario."""
    canonical = '{"factor":4.0,"original_max_position_embeddings":32768,"rope_type":"yarn"}'
    old = import_command(f"vllm serve Qwen/Qwen3-32B --rope-scaling '{YARN}' --max-model-len 131072 "
                         "--reasoning-parser qwen3 --tensor-parallel-size 4")
    assert dict(old.fields) == {"rope_scaling": canonical, "max_model_len": 131_072, "tensor_parallel": 4}
    assert old.ignored == ("--reasoning-parser qwen3",)
    new = import_command("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve Qwen/Qwen3-32B --hf-overrides "
                         "'{\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, "
                         "\"original_max_position_embeddings\": 32768}}'")
    assert dict(new.fields) == {"allow_long_context": True, "rope_scaling": canonical}  # "type" read as rope_type
    assert dict(import_command("vllm serve m --hf-overrides '{\"max_window_layers\": 28}'").fields) == {}
    s = apply_command(ServeScenario(est.model("Qwen/Qwen3-32B").architecture, model_id="Qwen/Qwen3-32B"), new)
    line = launch_command(s)
    assert line.startswith("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve Qwen/Qwen3-32B --hf-overrides ")
    assert dict(import_command(line).fields) == dict(new.fields)
    with pytest.raises(ValueError, match="--hf-overrides"):
        import_command("vllm serve m --hf-overrides '{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": -1}}'")


@pytest.mark.parametrize("bad", ['{"factor": 4}', "[4]", '{"rope_type": "yarn", "factor": 0}', "yarn 4",
                                 '{"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 1.5}',
                                 '{"rope_type": "yarn", "beta": {"fast": 32}}', "{" * 1001])
def test_a_bad_rope_scaling_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="RoPE scaling|original_max_position_embeddings"):
        ServeScenario(LLAMA, rope_scaling=bad)
    out = subprocess.run([sys.executable, "-m", "estimator", "serve", "--model", "meta-llama/Llama-3.1-8B", "--gpu",
                          "h100-sxm", "--rope-scaling", bad], capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "--rope-scaling" in out.stderr


def test_max_model_len_auto_fits_the_longest_request_the_pool_holds():
    """--max-model-len auto / -1 (vllm-project/vllm#29431, v0.14+): kv_cache_utils._auto_fit_max_model_len lowers
    max_model_len to the longest request the KV memory holds. Llama 3.1 8B on an RTX 4090: one group of 32 full-
    attention layers, a block of 16 tokens x 8 KV heads x 128 x (K, V) x 2 bytes = 65,536 bytes per layer, so the
    pool's N blocks hold one request of 16 N tokens, below the config's 131,072; Qwen3-0.6B's 40,960 fit whole."""
    r = serve(ServeScenario(LLAMA, gpu="rtx-4090", max_model_len=-1, model_id="meta-llama/Llama-3.1-8B"))
    blocks = r.component("kv_cache") // (65_536 * 32)
    assert r.starts and r.max_model_len == 16 * blocks < 131_072 and r.max_concurrency == pytest.approx(1.0)
    assert f"Auto-fit max_model_len: reduced from 131072 to {16 * blocks} to fit in available GPU memory" in r.log[2]
    assert r.command == "vllm serve meta-llama/Llama-3.1-8B --max-model-len auto"
    small = serve(ServeScenario(est.model("Qwen/Qwen3-0.6B").architecture, gpu="rtx-4090", max_model_len=-1))
    assert small.max_model_len == 40_960 and "full model context length 40960 fits" in small.log[2]
    starved = serve(ServeScenario(LLAMA, gpu="rtx-4090", max_model_len=-1, gpu_memory_utilization=0.6))
    assert not starved.starts and "Cannot auto-fit max_model_len" in starved.warnings[0]
    old = serve(ServeScenario(LLAMA, gpu="rtx-4090", max_model_len=-1, engine_version="0.13.0"))
    assert not old.starts and "invalid human_readable_int value: 'auto'" in old.warnings[0]
    for text in ("auto", "AUTO", "-1"):
        assert dict(import_command(f"vllm serve m --max-model-len {text}").fields) == {"max_model_len": -1}
    with pytest.raises(ValueError, match="-1 \\(auto-fit\\) is vLLM's"):
        ServeScenario(LLAMA, engine="sglang", max_model_len=-1)


def test_cpu_offload_moves_whole_parameters_of_the_first_layers_to_host_memory():
    """--cpu-offload-gb (vllm/model_executor/offloader/uva.py, v0.22.0): the decoder layers' parameters move to pinned
    host memory one at a time, in order, while fewer than cpu_offload_gb x 2^30 bytes are offloaded. Llama 3.1 8B
    layer: qkv_proj (4,096 + 2 x 1,024) x 4,096 x 2 = 50,331,648 B, o_proj 33,554,432, gate_up_proj 2 x 14,336 x
    4,096 x 2 = 234,881,024, down_proj 117,440,512, norms 16,384: 436,224,000 B. With 1 GiB: layers 0 and 1
    (872,448,000), then qkv and o of layer 2 (956,334,080 < 1,073,741,824), then gate_up (1,191,215,104), then stop."""
    s = ServeScenario(LLAMA, gpu="rtx-4090", max_model_len=8192, cpu_offload_gb=1, model_id="meta-llama/Llama-3.1-8B")
    r, plain = serve(s), serve(replace(s, cpu_offload_gb=0))
    offloaded = 2 * 436_224_000 + 50_331_648 + 33_554_432 + 234_881_024
    assert offloaded == 1_191_215_104 and r.host_bytes == offloaded
    assert plain.component("weights") - r.component("weights") == offloaded
    assert r.log[0] == "Total CPU offloaded parameters: 1.11 GiB"
    assert r.component("kv_cache") - plain.component("kv_cache") == offloaded  # the budget's room goes to the KV cache
    assert dict(import_command(launch_command(s)).fields) == {"max_model_len": 8192, "cpu_offload_gb": 1.0}
    from estimator.speed import serve_speed
    assert any("reads 1.11 GiB per GPU from pinned host memory" in note for note in serve_speed(s, r).assumptions)


def test_lora_slots_are_sized_per_wrapped_linear_shard():
    """--enable-lora --max-loras 4 --max-lora-rank 64 (vllm/lora/layers create_lora_weights, v0.22.0): each decoder
    linear holds per slot an A of rank x input and a B of output x rank (this rank's shard), in bf16. Llama 3.1 8B
    at TP 1, per layer: q 4,096 + 4,096, k 4,096 + 1,024, v 4,096 + 1,024, o 4,096 + 4,096, gate and up 4,096 + 14,336
    each, down 14,336 + 4,096 = 81,920 rank-rows; x 64 x 32 layers x 4 slots x 2 bytes = 1,342,177,280 bytes, inside
    'Model loading took'. At TP 2 the column-parallel outputs and row-parallel inputs halve: 55,296 rank-rows.
    Qwen3-30B-A3B's experts (fused_moe.py, v0.12+) add 128 x 3 x (2,048 + 768) per layer; v0.11 wraps no expert."""
    s = ServeScenario(LLAMA, gpu="h100-sxm", enable_lora=True, max_loras=4, max_lora_rank=64,
                      model_id="meta-llama/Llama-3.1-8B")
    r, plain = serve(s), serve(replace(s, enable_lora=False))
    assert r.component("lora") == 81_920 * 64 * 32 * 4 * 2 == 1_342_177_280
    assert plain.component("kv_cache") - r.component("kv_cache") == 1_342_177_280
    assert r.log[0] == f"Model loading took {(r.component('weights') + 1_342_177_280) / GiB:.4f} GiB"
    half = 4_096 + 2_048 + 4_096 + 512 + 4_096 + 512 + 2_048 + 4_096 + 2 * (4_096 + 7_168) + 7_168 + 4_096
    assert half == 55_296 and serve(replace(s, tensor_parallel=2)).component("lora") == 55_296 * 64 * 32 * 4 * 2
    assert launch_command(s) == "vllm serve meta-llama/Llama-3.1-8B --enable-lora --max-loras 4 --max-lora-rank 64"
    assert dict(import_command(launch_command(s) + " --max-cpu-loras 8").fields) == \
        {"enable_lora": True, "max_loras": 4, "max_lora_rank": 64}
    moe = est.model("Qwen/Qwen3-30B-A3B").architecture
    new, old = (serve(ServeScenario(moe, gpu="h100-sxm", enable_lora=True, engine_version=v)) for v in ("", "0.11.0"))
    assert new.component("lora") - old.component("lora") == 48 * 128 * 3 * (2_048 + 768) * 16 * 2
    with pytest.raises(ValueError, match="Max LoRA rank|max_lora_rank"):
        ServeScenario(LLAMA, enable_lora=True, max_lora_rank=24)


def test_quantization_methods_read_as_the_formats_they_store():
    """--quantization takes vLLM's QuantizationMethods (v0.22.0): online FP8 per block and weight-only int8 become
    those formats and are written back; the methods that name how a checkpoint is stored keep its own format."""
    qwen = est.model("Qwen/Qwen3-8B").architecture
    for method, weights in (("fp8_per_block", "fp8-block"), ("int8_per_channel_weight_only", "int8"),
                            ("fbgemm_fp8", "fp8-channel"), ("compressed-tensors", "checkpoint"),
                            ("auto_gptq", "gptq-4bit")):
        assert dict(import_command(f"vllm serve Qwen/Qwen3-8B --quantization {method}").fields) == {"weights": weights}
    s = ServeScenario(qwen, weights="fp8-block", model_id="Qwen/Qwen3-8B")
    assert launch_command(s) == "vllm serve Qwen/Qwen3-8B --quantization fp8_per_block"
    assert dict(import_command(launch_command(s)).fields) == {"weights": "fp8-block"}


def test_lora_captures_every_cuda_graph_twice_from_v0_12():
    """vllm/v1/cudagraph_dispatcher.py _get_lora_cases (v0.12+, cudagraph_specialize_lora on): each capture size
    once without adapters and once with them, one pool; v0.11's dispatcher has no LoRA case. Llama 3.1 8B on an H100
    at v0.20 (graphs captured after the KV cache, so the captured size is compared): the LoRA run adds one graph's own
    memory per captured graph, 32 layers x LAYER_GRAPH_BYTES each."""
    base = dict(gpu="h100-sxm", engine_version="0.20.0")
    plain = ServeScenario(LLAMA, **base)
    fixed, modes, layers = vllm.cuda_graph_terms(plain, 1024, 8192)
    lora = ServeScenario(LLAMA, enable_lora=True, **base)
    assert vllm.cuda_graph_terms(lora, 1024, 8192) == (fixed, tuple(2 * n for n in modes), layers)
    extra = serve(lora).component("cuda_graphs") - serve(plain).component("cuda_graphs")
    assert extra == sum(modes) * 32 * vllm.LAYER_GRAPH_BYTES
    old = dict(gpu="h100-sxm", engine_version="0.11.0")
    assert vllm.cuda_graph_terms(ServeScenario(LLAMA, enable_lora=True, **old), 1024, 8192) == \
        vllm.cuda_graph_terms(ServeScenario(LLAMA, **old), 1024, 8192)


def test_from_v0_17_the_native_sampler_filters_without_sorting_over_eight_requests():
    """vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p (v0.17.0 wheel on; v0.16.0's has no such branch):
    `if HAS_TRITON and logits.shape[0] >= 8: return apply_top_k_top_p_triton(...)`, which masks the fp32 logits in
    place; the peak keeps the bf16 logits, the fp32 copy, the softmax probabilities and random_sample's exponential
    draws: 2 + 4 + 4 + 4 = 14 bytes a logit. Under 8 requests it still sorts (38). Llama 3.1 8B on an RTX 4090 with
    the PyTorch sampler: 256 requests x 128,256 logits, plus the forward's 2,048 x 4,096 bf16 output."""
    base = dict(gpu="rtx-4090", max_model_len=8192, sampler="pytorch")
    triton = serve(ServeScenario(LLAMA, engine_version="0.17.0", **base))
    sort = serve(ServeScenario(LLAMA, engine_version="0.16.0", **base))
    few = serve(ServeScenario(LLAMA, engine_version="0.17.0", max_num_seqs=4, **base))
    assert triton.component("activations") == 14 * 256 * 128_256 + 2 * 2048 * 4096 == 476_446_720
    assert sort.component("activations") == 38 * 256 * 128_256 + 2 * 2048 * 4096 == 1_264_451_584
    assert few.component("activations") == max(38 * 4 * 128_256 + 2 * 2048 * 4096,
                                               inference_layer_peak(LLAMA, 1, 2048, 2048, flash_attention=True))


def test_a_max_position_embeddings_override_sets_the_length_vllm_derives():
    """--hf-overrides '{"max_position_embeddings": 65536}' replaces the config's 40,960 for Qwen3-8B before
    _get_and_verify_max_len scales it: 65,536 alone, x 2 with a linear RoPE factor of 2 (131,072); written back in one
    --hf-overrides object with the RoPE scaling."""
    qwen = est.model("Qwen/Qwen3-8B").architecture
    overrides = '{"max_position_embeddings": 65536, "rope_scaling": {"rope_type": "linear", "factor": 2}}'
    fields = dict(import_command(f"vllm serve Qwen/Qwen3-8B --hf-overrides '{overrides}'").fields)
    assert fields == {"context_override": 65_536, "rope_scaling": '{"factor":2,"rope_type":"linear"}'}
    s = ServeScenario(qwen, gpu="h100-sxm", model_id="Qwen/Qwen3-8B", **fields)
    assert vllm.derived_max_len(s) == 131_072 and vllm.derived_max_len(replace(s, rope_scaling="")) == 65_536
    assert serve(s).max_model_len == 131_072
    assert dict(import_command(launch_command(s)).fields) == fields
