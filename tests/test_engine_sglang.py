"""SGLang's start-up accounting (estimator/engines/sglang.py), pinned to arithmetic from SGLang's source
(model_runner_kv_cache_mixin.py profile_max_num_token, server_args.py _handle_gpu_memory_settings)."""

import subprocess
import sys
from dataclasses import replace

import pytest

import estimator as est
from estimator.engines import REFUSAL, ServeScenario, apply_command, import_command, launch_command, serve
from estimator.engines import sglang

LLAMA = est.model("meta-llama/Llama-3.1-8B").architecture
QWEN_32B = est.model("Qwen/Qwen2.5-32B").architecture
GiB = 2**30


def test_llama_8b_on_h100_by_hand():
    r = serve(ServeScenario(LLAMA, engine="sglang", gpu="h100-sxm", mem_fraction_static=0.88))
    total = 85_028_896_768  # the H100 SXM's cudaMemGetInfo total (estimator/data/gpus.json)
    before = total - 500 * 2**20  # "Load weight begin. avail mem": less the CUDA context, one GPU (no NCCL)
    weights = 8_030_261_248 * 2  # bf16, published count
    after = before - weights  # "Load weight end. avail mem"
    # profile_max_num_token: rest = available - total_gpu_memory x (1 - mem_fraction_static), where
    # total_gpu_memory is the free memory before loading
    rest = after - int(before * (1 - 0.88))
    cell = 8 * (128 + 128) * 32 * 2  # kv heads x (head_dim + v_head_dim) x layers x bf16 = 131,072 bytes per token
    tokens = rest // cell
    assert tokens == 444_820
    assert r.kv_cache_tokens == tokens
    assert r.component("weights") == weights
    # the pool: K and V buffers of size + page_size (1) rows per layer
    assert r.component("kv_cache") == (tokens + 1) * cell
    assert r.budget_bytes == int(before * 0.88)
    assert r.component("activations") + r.component("cuda_graphs") == int(before * (1 - 0.88))
    # H100 SXM (81,559 MiB in nvidia-smi), TP 1: cuda_graph_max_bs 256, graphs sized by SGLang as 2 MiB per batch
    assert r.component("cuda_graphs") == 256 * 2 * 2**20
    assert f"Load weight end. avail mem={after / GiB:.2f} GB, mem usage={weights / GiB:.2f} GB." in r.log
    kv_gb = (tokens + 1) * cell / 2 / GiB
    assert f"KV Cache is allocated. #tokens: {tokens}, K size: {kv_gb:.2f} GB, V size: {kv_gb:.2f} GB" in r.log
    # init_memory: max_num_reqs = min(max(int(444,820 / 131,072 x 512), 2048), 4096) = 2048; tp_worker:
    # max_running_requests = min(tokens // 2, 2048)
    assert dict(r.settings)["max_running_requests"] == 2048
    assert r.log[-1].startswith(f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                                "max_running_requests=2048, context_len=131072")
    assert r.max_concurrency == pytest.approx(tokens / 131_072)
    assert r.max_model_len_that_fits == 131_071  # max_req_len = min(context_len - 1, max_total_num_tokens - 1)
    assert r.starts


@pytest.mark.parametrize("gpu, tp, mib, expected", [
    # reserve = 512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + tp / 8 x 1024 (MiB),
    # at least 10 GiB above 60 GiB; mem_fraction_static = round((gpu_mem - reserve) / gpu_mem, 3)
    ("h100-sxm", 1, 81_559, round((81_559 - (512 + 1.5 * 8192 + 2 * 256 + 1 / 8 * 1024)) / 81_559, 3)),
    ("l4", 4, 23_034, round((23_034 - (512 + 1.5 * 2048 + 2 * 80 + 4 / 8 * 1024)) / 23_034, 3)),
    ("h200", 8, 143_771, round((143_771 - (512 + 1.5 * 8192 + 2 * 512 + 8 / 8 * 1024)) / 143_771, 3)),
    ("rtx-4090", 1, 24_564, round((24_564 - (512 + 1.5 * 2048 + 2 * 24 + 1 / 8 * 1024)) / 24_564, 3)),
])
def test_default_mem_fraction_static(gpu, tp, mib, expected):
    d = sglang.resolve_defaults(ServeScenario(QWEN_32B, engine="sglang", gpu=gpu, tensor_parallel=tp))
    assert d.gpu_mem_mib == mib
    assert d.mem_fraction_static == expected
    assert (d.mem_fraction_static, gpu) in {(0.835, "h100-sxm"), (0.815, "l4"), (0.897, "h200"), (0.847, "rtx-4090")}


def test_small_gpu_floor_and_given_value():
    # a given --mem-fraction-static is kept; the tiers still give chunked_prefill_size and cuda_graph_max_bs
    d = sglang.resolve_defaults(ServeScenario(LLAMA, engine="sglang", gpu="h100-sxm", mem_fraction_static=0.7))
    assert (d.mem_fraction_static, d.reserved_mib, d.chunked_prefill_size, d.cuda_graph_max_bs) == (0.7, 0.0, 8192, 256)


def test_cuda_graph_max_bs_sets_the_reserve_and_the_graphs():
    """--cuda-graph-max-bs 64 on an H100: the default fraction reserves 2 MiB x 64 for the graphs instead of 2 x 256,
    round((81,559 - (512 + 1.5 x 8,192 + 2 x 64 + 1 / 8 x 1,024)) / 81,559, 3) = 0.84, and the graphs take
    2 MiB x 64; the command carries the flag and reads it back."""
    s = ServeScenario(LLAMA, engine="sglang", gpu="h100-sxm", cuda_graph_max_bs=64, model_id="m")
    d = sglang.resolve_defaults(s)
    assert d.cuda_graph_max_bs == 64
    assert d.mem_fraction_static == round((81_559 - (512 + 1.5 * 8192 + 2 * 64 + 1 / 8 * 1024)) / 81_559, 3) == 0.84
    assert serve(s).component("cuda_graphs") == 2 * 64 * 2**20
    assert launch_command(s).endswith("--mem-fraction-static 0.84 --cuda-graph-max-bs 64")
    assert dict(import_command(launch_command(s)).fields)["cuda_graph_max_bs"] == 64

def test_not_enough_memory_refusal():
    r = serve(ServeScenario(LLAMA, engine="sglang", gpu="l4", mem_fraction_static=0.5))
    assert not r.starts
    assert r.kv_cache_tokens == 0
    assert f"{REFUSAL}Not enough memory. Please try to increase --mem-fraction-static. " \
           "Current value: self.server_args.mem_fraction_static=0.5" in r.warnings
    assert r.component("kv_cache") == 0


def test_context_length_above_the_model_refused():
    r = serve(ServeScenario(LLAMA, engine="sglang", gpu="h100-sxm", max_model_len=200_000))
    assert any(w.startswith(f"{REFUSAL}User-specified context_length (200000) is greater than the derived "
                            "context_length (131072)") for w in r.warnings)


def test_qwen_32b_on_four_l4_matches_the_published_log(monkeypatch):
    """validation/engine_logs sglang-llms-in-clouds-1: the logged free memory before and after the weights give
    SGLang's own token count (46,611) through the same arithmetic. The estimate starts from the L4's CUDA total
    (22478 MB, 23,570,219,008 bytes) less the CUDA context and, at TP 4, NCCL's 520 MiB of channel buffers; this
    4 x L4 box has no P2P (its custom all-reduce is off), where NCCL's SHM transport uses host memory (NCCL docs,
    NCCL_SHM_DISABLE), and the log's 21.63 GiB free is what is left without those buffers. Not modelled (the scenario
    has no P2P input): with them the tokens are 10% under the log, without them within 7%."""
    rest = 6.09 - 21.63 * (1 - 0.85)
    assert int(rest * GiB) // (2 * (128 + 128) * 64 * 2) == pytest.approx(46_611, abs=20)
    s = ServeScenario(QWEN_32B, engine="sglang", gpu="l4", tensor_parallel=4, mem_fraction_static=0.85)
    r = serve(s)
    assert r.component("weights") / GiB == pytest.approx(15.54, rel=0.02)
    assert r.kv_cache_tokens == pytest.approx(46_611 * 0.9, rel=0.01)  # 41,838: NCCL's buffers taken on the GPU
    monkeypatch.setattr(sglang, "NCCL_START_BYTES", 0)
    assert serve(s).kv_cache_tokens == pytest.approx(46_611, rel=0.07)


def test_mla_cell_is_the_latent_on_every_rank():
    a = est.model("deepseek-ai/DeepSeek-V3").architecture
    c = sglang.cells(a, ServeScenario(a, engine="sglang", gpu="h200", tensor_parallel=8))
    assert c.full == (512 + 64) * 61 * 2


def test_import_real_commands():
    # sglang-llms-in-clouds-1 (didier-durand/llms-in-clouds docs/sglang.md): unknown flags are kept, not errors
    text = ("python3.12 -m sglang.launch_server   --model Qwen/QwQ-32B --model-path /home/model/Qwen/QwQ-32B   "
            "--host 0.0.0.0 --port 30000 --tensor-parallel-size 4   --log-level info   --enable-metrics "
            "--trust-remote-code --enable-p2p-check")
    imported = import_command(text)
    assert imported.engine == "sglang"
    assert imported.model == "/home/model/Qwen/QwQ-32B"
    assert dict(imported.fields) == {"tensor_parallel": 4}
    assert set(imported.ignored) >= {"--host 0.0.0.0", "--port 30000", "--log-level info", "--enable-metrics",
                                     "--trust-remote-code", "--enable-p2p-check"}
    # sgl-project/sglang#4048
    text = ("python -m sglang.launch_server --model-path  /models/deepseek-ai/deepseek-r1 --host 0.0.0.0 --port 8100 "
            "--tensor-parallel-size 8 --mem-fraction-static 0.9 --trust-remote-code --context-length 163840 "
            "--chunked-prefill-size 4096 --served-model-name DeepSeek-R1-Sglang-160k")
    imported = import_command(text)
    assert dict(imported.fields) == {"tensor_parallel": 8, "mem_fraction_static": 0.9, "max_model_len": 163840,
                                     "max_num_batched_tokens": 4096}
    a = est.model("deepseek-ai/DeepSeek-R1").architecture
    s = apply_command(ServeScenario(a, gpu="h200"), imported)
    assert s.engine == "sglang" and s.tensor_parallel == 8
    assert launch_command(s).startswith("python -m sglang.launch_server --model-path")
    assert "--tp 8 --mem-fraction-static 0.9 --context-length 163840 --chunked-prefill-size 4096" in launch_command(s)


def test_switches_and_choices():
    imported = import_command("python3 -m sglang.launch_server --model-path m --tp 8 --ep-size 8 "
                              "--kv-cache-dtype fp8_e4m3 --disable-cuda-graph --page-size 64 --quantization fp8")
    assert dict(imported.fields) == {"tensor_parallel": 8, "expert_parallel": True, "kv_dtype": "fp8",
                                     "enforce_eager": True, "block_size": 64, "weights": "fp8"}


def test_command_has_default_fraction():
    s = ServeScenario(LLAMA, engine="sglang", gpu="h100-sxm", model_id="meta-llama/Llama-3.1-8B")
    assert launch_command(s) == ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B "
                                 "--mem-fraction-static 0.835")


def test_core_imports_without_site_packages():
    code = "import estimator.engines.sglang as m; assert m.estimate"
    subprocess.run([sys.executable, "-S", "-c", code], check=True, cwd=__file__.rsplit("/tests/", 1)[0])


@pytest.mark.parametrize("tp, fraction", [(1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79)])
def test_pre_v05_default_fraction_by_tp(tp, fraction):
    """Before v0.5 ServerArgs.__post_init__ fixed mem_fraction_static by TP size; chunked_prefill_size and
    cuda_graph_max_bs by a 25,000 MiB threshold. The v0.5 reserve rule applies from 0.5 on (and when unset)."""
    old = sglang.resolve_defaults(ServeScenario(QWEN_32B, engine="sglang", gpu="h200", tensor_parallel=tp,
                                                engine_version="0.4.8"))
    assert (old.mem_fraction_static, old.reserved_mib, old.chunked_prefill_size, old.cuda_graph_max_bs) == \
        (fraction, 0.0, 8192, 160)
    new = sglang.resolve_defaults(ServeScenario(QWEN_32B, engine="sglang", gpu="h200", tensor_parallel=tp,
                                                engine_version="0.5"))
    assert new.reserved_mib > 0 and new.mem_fraction_static != fraction


def test_pre_v05_small_gpu_tiers_match_the_l4_log():
    # sglang-llms-in-clouds-1 (early 2025, v0.4.x): 4 x L4 logged mem_fraction_static=0.85, chunked_prefill_size=2048,
    # cuda_graph_max_bs=80 without passing any of them
    d = sglang.resolve_defaults(ServeScenario(QWEN_32B, engine="sglang", gpu="l4", tensor_parallel=4,
                                              engine_version="0.4.3"))
    assert (d.mem_fraction_static, d.chunked_prefill_size, d.cuda_graph_max_bs) == (0.85, 2048, 80)
    d1 = sglang.resolve_defaults(ServeScenario(LLAMA, engine="sglang", gpu="l4", engine_version="0.4.3"))
    assert (d1.mem_fraction_static, d1.cuda_graph_max_bs) == (0.88, 8)
    r = serve(ServeScenario(QWEN_32B, engine="sglang", gpu="l4", tensor_parallel=4, engine_version="0.4.3"))
    assert dict(r.settings)["mem_fraction_static"] == 0.85
    assert any("before v0.5" in n for n in r.assumptions)


def test_validation_rows_for_the_sglang_logs():
    """validation/engines.py compare_sglang on the published logs: K / V sizes from the logged #tokens are the cell
    arithmetic alone (within 1%), records outside the catalog are 'skipped' rows with a reason."""
    import json
    from pathlib import Path

    from validation import engines

    records = json.loads((Path(engines.LOGS) / "sglang.json").read_text())["records"]
    rows = [row for record in records for row in engines.compare_sglang(record)]
    sizes = [r for r in rows if r["quantity"] in ("k_size", "v_size")]
    assert len(sizes) >= 6 and all(abs(r["error_pct"]) < 1 for r in sizes)
    assert all(r["note"] for r in rows if r["quantity"] == "skipped")
    l4 = {r["quantity"]: r for r in rows if r["record"] == "sglang-llms-in-clouds-1"}
    assert abs(l4["weights"]["error_pct"]) < 3
    # 21.95 GiB (the L4's CUDA total) - 500 MiB context - 520 MiB NCCL = 20.96 GiB, 0.67 GiB under the logged 21.63;
    # NCCL's buffers are in host memory on this P2P-less box (test above), and without them it is within 1%
    free = l4["free_before_load"]
    assert free["estimate"] == pytest.approx((23_570_219_008 - 500 * 2**20 - 520 * 2**20) / GiB, abs=1e-4)
    assert abs(free["estimate"] + 520 * 2**20 / GiB - free["logged"]) / free["logged"] < 0.01


def test_mla_pools_print_one_kv_size_compared_from_the_logged_tokens():
    """An MLA pool prints one 'KV size'. Kimi-K2.5 on 8 MI355X (sglang-ajsirra-kimi-1): (2,454,421 + 1 page) tokens
    x 61 layers x (512 latent + 64 rope) x 2 bytes = 160.63 GiB, as logged. GLM-5-FP8 with an FP8 cache
    (sglang-ajsirra-glm5-1) logs 186.77 GiB for 3,262,823 tokens: 78 layers x (656 + 132) bytes, FlashMLA's 'FP8 with
    scale' record (512 FP8 + 4 fp32 scales + 64 bf16 rope: 656 bytes) plus the DSA indexer's 128 + 4; the estimate's
    cell is 576 + 132 bytes (167.81 GiB, -10.2%). Its token budget counts that smaller cell: the estimate's KV tokens
    are within 4% of the log."""
    import json
    from pathlib import Path

    from validation import engines

    records = {r["id"]: r for r in json.loads((Path(engines.LOGS) / "sglang.json").read_text())["records"]}
    rows = {(r["record"], r["quantity"]): r for rid in ("sglang-ajsirra-kimi-1", "sglang-ajsirra-glm5-1")
            for r in engines.compare_sglang(records[rid])}
    kimi = rows[("sglang-ajsirra-kimi-1", "kv_size")]
    assert kimi["logged"] == 160.63 and round((2_454_421 + 1) * 61 * 576 * 2 / 2**30, 2) == 160.63
    assert abs(kimi["error_pct"]) < 0.1
    glm = rows[("sglang-ajsirra-glm5-1", "kv_size")]
    assert round((3_262_823 + 1) * 78 * (656 + 132) / 2**30, 2) == glm["logged"] == 186.77
    assert glm["estimate"] == pytest.approx((3_262_823 + 1) * 78 * (576 + 132) / 2**30, abs=0.01)
    assert abs(rows[("sglang-ajsirra-glm5-1", "kv_tokens")]["error_pct"]) < 4


def test_sglang_derives_its_context_length_from_the_rope_override_by_its_own_rule():
    """get_context_length (sglang/srt/utils/hf_transformers/common.py, v0.5.23 wheel): max_position_embeddings x the
    RoPE factor, except that a factor given with original_max_position_embeddings (or rope_type llama3) counts as
    1. So Qwen's YaRN override leaves Qwen3-8B at its 40,960 positions and --context-length 131072 is refused unless
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set, as tame-llm's sglang/launch-sglang.sh sets it with the same
    override (github.com/catman626/tame-llm); a linear factor 4 without it gives 163,840."""
    qwen = est.model("Qwen/Qwen3-8B").architecture
    yarn = '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}'
    line = ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python -m sglang.launch_server --model-path "
            f"Qwen/Qwen3-8B --json-model-override-args '{{\"rope_scaling\":{yarn}}}' --context-length 131072")
    fields = dict(import_command(line).fields)
    assert fields == {"allow_long_context": True, "max_model_len": 131_072, "rope_scaling":
                      '{"factor":4.0,"original_max_position_embeddings":32768,"rope_type":"yarn"}'}
    s = ServeScenario(qwen, engine="sglang", gpu="h100-sxm", model_id="Qwen/Qwen3-8B", **fields)
    assert sglang.derived_context_len(s) == 40_960
    started = serve(s)
    assert started.starts and started.warnings[0].startswith("Warning: User-specified context_length (131072)")
    refused = serve(replace(s, allow_long_context=False))
    assert not refused.starts and "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in refused.warnings[0]
    linear = replace(s, rope_scaling='{"rope_type": "linear", "factor": 4}', allow_long_context=False)
    assert sglang.derived_context_len(linear) == 4 * 40_960 == 163_840 and serve(linear).starts
    assert dict(import_command(launch_command(s)).fields).items() >= fields.items()  # + the resolved fraction


@pytest.mark.parametrize("gpu, tp, version, custom, quick", [
    # aiter CustomAllreduce since v0.1.12 (SGLang v0.5.10+ images): uncached meta = sizeof(Signal) 5,504 + 2 x 1 GiB,
    # input 1 GiB, rank_data 8 MiB. Quick reduce: 2 x 2 GiB data + 2 x tp x 1,216 blocks x 4-byte flags + tp pointers.
    ("mi355x", 2, "0.5.12", 5_504 + 3 * GiB + 8 * 2**20, 4 * GiB + 2 * 2 * 1_216 * 4 + 2 * 8),
    ("mi300x", 8, "", 3_229_619_584, 4_294_967_296 + 77_824 + 64),
    ("mi355x", 6, "0.5.10", 3_229_619_584, 0),  # quick reduce: world sizes 2, 4, 8 only
    # aiter v0.1.10.post2-v0.1.11: 128 MiB meta + input + output, 8 MiB rank_data; v0.5.9 has quick reduce
    ("mi355x", 8, "0.5.9", 5_504 + 392 * 2**20, 4_295_045_184),
    ("mi355x", 8, "0.5.8", 411_047_296, 0),  # the v0.5.8.post1 image's quick reduce fails (no amdsmi module)
    ("mi355x", 8, "0.5.7", 0, 0),  # not traced before v0.5.8
    ("mi355x", 1, "", 0, 0),
    ("h100-sxm", 8, "", 0, 0),
    ("mi250x-gcd", 8, "", 0, 0),  # gfx90a: neither SGLang's ROCm images nor quick reduce's gfx94 / gfx95
])
def test_rocm_allreduce_buffers(gpu, tp, version, custom, quick):
    s = ServeScenario(QWEN_32B, engine="sglang", gpu=gpu, tensor_parallel=tp, engine_version=version)
    assert sglang.rocm_allreduce_bytes(s) == (custom, quick)


def test_rocm_allreduce_buffers_leave_the_free_memory_before_loading():
    """GLM-5.1 at TP 2 on MI355X, v0.5.12, --mem-fraction-static 0.85 (sglang-jacob-glm51-1): 'Init torch distributed
    ends. mem usage=8.18 GB' there; the estimate takes NCCL's 520 MiB + 3,229,619,584 + 4,294,986,768 bytes = 7.52 GiB
    of it, and the KV budget is measured from what is left."""
    glm = est.model("zai-org/GLM-5.1").architecture
    s = ServeScenario(glm, engine="sglang", gpu="mi355x", tensor_parallel=2, mem_fraction_static=0.85,
                      engine_version="0.5.12", weights="mxfp4", kv_dtype="fp8")
    r = serve(s)
    allreduce = 3_229_619_584 + 4_294_986_768
    before = 288 * GiB - 500 * 2**20 - 520 * 2**20 - allreduce
    assert before / GiB == pytest.approx(280.00, abs=0.005)  # logged 279.13
    assert r.component("allreduce_buffers") == allreduce
    assert r.component("non_torch") == (500 + 520) * 2**20
    assert r.budget_bytes == int(before * 0.85)
    assert r.total == sum(size for _, size in r.per_gpu)
    weights = r.component("weights")
    rest = before - weights - int(before * (1 - 0.85))
    cell = 78 * (576 + 132)  # fp8 latent + rope per layer, plus the DSA indexer's 128 + 4 bytes: 55,224 bytes
    assert sglang.cells(glm, s).full == cell
    assert r.kv_cache_tokens == rest // cell == 794_795  # logged 733,696 (+8.3%; +24.1% without the buffers)
    one = serve(ServeScenario(glm, engine="sglang", gpu="h200", tensor_parallel=2, mem_fraction_static=0.85,
                              engine_version="0.5.12", weights="mxfp4", kv_dtype="fp8"))
    assert one.component("allreduce_buffers") == 0  # CUDA: not counted


def test_cpu_offload_keeps_only_the_embeddings_on_the_gpu_as_logged():
    """sglang-tianyangchen-1: Qwen3-14B at TP 2 with --cpu-offload-gb 48 (sglang/srt/utils/offloader.py OffloaderV1:
    the decoder layers' parameters move to pinned host memory until 48 GiB are offloaded, more than a rank's 12.3 GiB
    of layers). What stays on each GPU is the vocabulary-parallel embedding and lm_head, 2 x 151,936 x 5,120 x 2 / 2
    = 1,555,824,640 B, and the final norm, 10,240 B: 1.449 GiB against the logged 'mem usage=1.50 GB'."""
    qwen = est.model("Qwen/Qwen3-14B").architecture
    s = ServeScenario(qwen, engine="sglang", gpu="rtx-4090", tensor_parallel=2, mem_fraction_static=0.65,
                      cpu_offload_gb=48, model_id="Qwen/Qwen3-14B")
    r, plain = serve(s), serve(replace(s, cpu_offload_gb=0))
    assert r.component("weights") == 1_555_824_640 + 10_240
    assert r.host_bytes == 2 * (plain.component("weights") - r.component("weights"))
    assert "--cpu-offload-gb 48" in r.command and r.kv_cache_tokens > plain.kv_cache_tokens


def test_lora_pool_is_sized_per_slot_before_the_kv_pool():
    """--enable-lora --max-lora-rank 16 --lora-target-modules all (sglang/srt/lora/mem_pool.py LoRAMemoryPool, v0.5.23
    wheel), --max-loras-per-batch at its default 8. Llama 3.1 8B at TP 1, rank-rows per slot: a layer's q 4,096 + 4,096,
    k and v 4,096 + 1,024 each, o 4,096 + 4,096, gate and up 4,096 + 14,336 each, down 14,336 + 4,096 = 81,920, x 32
    layers = 2,621,440; the embedding 128,256 + 4,096 and the lm_head 4,096 + 128,256 = 264,704; x 16 x 8 slots x 2
    bytes = 738,852,864. The pool is allocated before the KV pool is sized, so the KV pool shrinks by it."""
    s = ServeScenario(LLAMA, engine="sglang", gpu="h100-sxm", enable_lora=True, max_lora_rank=16,
                      model_id="meta-llama/Llama-3.1-8B")
    r, plain = serve(s), serve(replace(s, enable_lora=False))
    assert (2_621_440 + 264_704) * 16 * 8 * 2 == 738_852_864 == r.component("lora") == sglang.lora_bytes(s)
    cell = 32 * 8 * 128 * 2 * 2  # K and V of 8 KV heads x 128 in 16-bit over 32 layers: 131,072 bytes a token
    assert abs((plain.kv_cache_tokens - r.kv_cache_tokens) - 738_852_864 // cell) <= 1  # page size 1
    assert sglang.lora_bytes(replace(s, max_loras=2)) == (2_621_440 + 264_704) * 16 * 2 * 2
    layer = (4_096 + 2_048) + 2 * (4_096 + 512) + (2_048 + 4_096) + 2 * (4_096 + 7_168) + (7_168 + 4_096)
    tp2 = layer * 32 + (128_256 + 4_096) + (4_096 + 64_128)  # output shards of q / k / v / gate / up and the lm_head
    assert layer == 55_296  # vLLM's half (test_engine_vllm), the same shards
    assert sglang.lora_bytes(replace(s, tensor_parallel=2)) == tp2 * 16 * 8 * 2
    assert launch_command(s).endswith("--enable-lora --max-lora-rank 16 --lora-target-modules all")
    imported = import_command("python -m sglang.launch_server --model-path m --lora-paths a=/x "
                              "--max-loras-per-batch 4 --max-lora-rank 64")
    assert dict(imported.fields) == {"enable_lora": True, "max_loras": 4, "max_lora_rank": 64}
    assert any("LoRA: 8 adapter slot(s)" in note for note in r.assumptions)
