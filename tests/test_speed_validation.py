"""The published speed measurements (validation/published/speed.csv), the efficiencies derived from them
(estimator/data/speed.json) and the errors the speed model makes on them."""

from __future__ import annotations

import json
import re
import statistics
from types import SimpleNamespace

import pytest

from validation import host_speed, offload
from validation import speed as vs

ENGINES = {"vllm", "sglang", "llama.cpp", "ollama", "mlx", "transformers", "tensorrt-llm", "exllamav2", "other"}
METRICS = {"llama_bench_pp", "llama_bench_tg", "decode_tokens_per_s_per_seq", "output_throughput", "total_throughput",
           "prefill_tokens_per_s", "ttft_ms", "tpot_ms", "train_tokens_per_s", "train_mfu"}


def test_every_record_follows_the_shared_schema():
    records = vs.load_records()
    assert len({r["id"] for r in records}) == len(records)
    text = vs.SPEED_CSV.read_text(encoding="utf-8")
    assert "\r" not in text and text.splitlines()[0] == ",".join(vs.COLUMNS)
    for r in records:
        assert r["engine"] in ENGINES and r["metric"] in METRICS, r["id"]
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["date"]) and float(r["value"]) > 0, r["id"]
        assert r["source"] and r["quote"], r["id"]
        assert int(r["gpus"]) >= int(r["tp"]) >= 1, r["id"]
        # concurrency and lengths may be empty where the source does not state them (a Poisson request rate,
        # ShareGPT prompts, an offline max-throughput run); stated, they are whole numbers
        assert r["concurrency"] == "" or int(r["concurrency"]) >= 1, r["id"]
        assert all(r[f] == "" or int(r[f]) >= 0 for f in ("input_tokens", "output_tokens")), r["id"]


def test_the_committed_efficiencies_are_the_rule_applied_to_the_records():
    """speed.json is derived, never edited: `python -m validation speed --derive` rewrites it."""
    derived = vs.derive_file(vs.cases_of(vs.load_records()))
    assert json.loads(vs.SPEED_JSON.read_text(encoding="utf-8")) == json.loads(json.dumps(derived))


def test_held_out_records_enter_no_efficiency():
    data = json.loads(vs.SPEED_JSON.read_text(encoding="utf-8"))
    used = {record for e in data["efficiencies"] for record in e["records"]}
    assert not {r["id"] for r in vs.load_records() if vs.held_out(r["id"])} & used
    offloaded = {record for e in data["host_offload"] for record in e["records"]}
    assert not {r["id"] for r in offload.load() if vs.held_out(r["id"])} & offloaded and len(offloaded) == 51
    on_host = {record for e in data["host_compute"] for record in e["records"]}
    assert not {r["id"] for r in host_speed.load() if vs.held_out(r["id"])} & on_host and on_host


def test_every_engines_median_error_is_within_20_percent_for_decode_and_prefill_at_batch_1():
    """Issue 17's bar, per engine (vLLM's generations apart), on the records that set the efficiencies: the median
    |error| of decode and of prefill at one request is at most 20% wherever an engine has three or more."""
    rows = vs.results(vs.cases_of(vs.load_records()))
    medians = {}
    for row in rows:
        if not row["skip"] and row["phase"] in ("decode", "prefill") and row["concurrency"] == "1" \
                and not row["held_out"]:
            medians.setdefault((row["engine"], row["phase"]), []).append(abs(row["error_pct"]))
    medians = {key: statistics.median(errors) for key, errors in medians.items() if len(errors) >= 3}
    assert {("llama.cpp", "prefill"), ("mlx", "decode"), ("sglang", "prefill"), ("vllm", "decode"),
            ("vllm-v0", "prefill")} <= set(medians)
    assert {key: m for key, m in medians.items() if m > 20} == {}


def test_a_record_not_compared_says_why():
    rows = vs.results(vs.cases_of(vs.load_records()))
    skipped = [r for r in rows if r["skip"]]
    assert skipped and all(r["skip"] for r in skipped)
    assert len(rows) - len(skipped) >= 230  # of 359: the names as published reach the catalog


def test_published_names_reach_the_catalog_through_the_tables_and_the_memory_suffix():
    assert vs.gpu_of("H100 80G")[0].id == "h100-sxm" and vs.gpu_of("A100 80G")[0].id == "a100-80gb-sxm"
    assert vs.gpu_of("NVIDIA GeForce RTX 3070 8GB")[0].id == "rtx-3070"  # the name without its only size
    assert vs.gpu_of("NVIDIA GeForce RTX 3070 16GB")[0] is None  # no 16 GB RTX 3070
    assert vs.gpu_of("H100")[0] is None and "not stated" in vs.gpu_of("H100")[1]
    llama2_7b = vs.model_of("meta-llama/Llama-2-7b-hf")[0]
    assert vs.model_of("LLaMA 7B (GGUF)")[0] == llama2_7b == vs.model_of("huggyllama/llama-7b")[0]
    assert vs.model_of("nvidia/Llama-3.1-8B-Instruct-FP8")[0] == vs.model_of("meta-llama/Llama-3.1-8B")[0]
    assert vs.model_of("Mistral 7B 4-bit (MLX)")[0] is None
    assert vs.weight_format_id("mlx-4bit") == "int4-g32" and vs.weight_format_id("gguf-f16") == "bf16"


def test_a_metric_missing_a_field_it_needs_is_skipped_with_the_field_named():
    c = vs.case(_record(concurrency="", metric="output_throughput"))
    assert c.skip == "the source states no concurrency, which output_throughput needs"
    assert not vs.case(_record(concurrency="", input_tokens="", metric="llama_bench_tg")).skip


def test_tensor_parallelism_across_servers_is_not_compared():
    """16 H100s span two 8-GPU servers whose network the estimate does not model; 8 are compared, and so is a
    64-GPU training run (its data parallelism is another matter)."""
    assert "spans servers" in vs.case(_record(gpus="16", tp="16", metric="tpot_ms")).skip
    assert not vs.case(_record(gpus="8", tp="8", metric="tpot_ms")).skip


def test_a_measurement_collected_twice_is_compared_once():
    a, b = _record(id="a", metric="llama_bench_tg"), _record(id="b", metric="llama_bench_tg")
    first, second = vs.cases_of([a, b])
    assert not first.skip and second.skip == "the same measurement as a (collected twice)"


def test_prefill_on_a_gpu_without_a_compute_peak_is_not_compared():
    """The Apple prefill error: a chip without TFLOPs has only a bandwidth roofline, so its records gave a
    fraction of bandwidth where the rule takes a fraction of FLOPs (2503% median error before)."""
    assert "no recorded TFLOPs" in vs.case(_record(gpu="tesla-p40", metric="llama_bench_pp")).skip
    assert not vs.case(_record(gpu="tesla-p40", metric="llama_bench_tg")).skip
    assert not vs.case(_record(gpu="Apple M1 Max 32-core GPU 64GB", metric="llama_bench_pp")).skip


def test_training_records_compare_with_the_fine_tuning_speed():
    """torchtitan Llama 2 70B, FSDP on 64 A100 80GB, batch 2 x 4,096, full checkpointing: 353 tokens/s per GPU
    published; the estimate is training_speed's at the derived training efficiency of its key."""
    from estimator import catalog, speed

    records = {r["id"]: r for r in vs.load_records()}
    c = vs.case(records["titan-a100-llama2-2-full-tps"])
    e = speed.training_efficiency("torchtitan", "nvidia-datacenter", "a100-80gb-sxm")
    expected = speed.training_speed(catalog.model("meta-llama/Llama-2-70b-hf").architecture,
                                    catalog.gpu("a100-80gb-sxm"), "full", 2, 4096, gpus=64, zero_stage=3,
                                    checkpointing=True, e=e).tokens_per_s
    assert c.phase == "training" and vs.derivable(c) and vs.estimate(c) == pytest.approx(expected)


def test_a_training_record_gives_the_fraction_of_peak_flops_the_estimate_counts():
    """Llama 2 70B: N = 68,714,504,192 matmul parameters, attention 2 x 8,192 (q width) x 80 layers x 4,096 =
    5,368,709,120 FLOPs a token a pass; full training with checkpointing is 4 passes: 4 x (2N + 5,368,709,120) =
    571,190,870,016 FLOPs a token. 353 tokens/s on an A100's 312 TFLOPs: 353 x 571,190,870,016 / 312e12 = 0.6463.
    Its MFU row (0.505, recomputation not counted) is the same run: the estimate's MFU is e x 3 / 4."""
    records = {r["id"]: r for r in vs.load_records()}
    tps = vs.case(records["titan-a100-llama2-2-full-tps"])
    assert vs.achieved(tps) == pytest.approx(353 * 4 * (2 * 68_714_504_192 + 5_368_709_120) / 312e12)
    assert vs.achieved(tps) == pytest.approx(0.6463, abs=1e-4)
    mfu = next(c for c in vs.cases_of(vs.load_records()) if c.record["id"] == "titan-a100-llama2-2-full-mfu")
    assert mfu.run_compared and not vs.derivable(mfu)
    assert vs.estimate(mfu, 1.0, 0.64) == pytest.approx(0.64 * 3 / 4)
    assert vs.achieved(mfu) == pytest.approx(0.505 * 4 / 3)


def test_a_training_record_faster_than_the_peak_at_its_setup_is_skipped():
    """torchtune Llama 3.1 8B full fine-tuning on an RTX A6000 (checkpointing on in its config): 2,579 tokens/s x
    4 x (2 x 7,504,924,672 + 2 x 4,096 x 32 x 2,048) = 2,579 x 62,186,881,024 = 160.4 TFLOPs, 104% of 154.8."""
    records = {r["id"]: r for r in vs.load_records()}
    assert 2579 * 4 * (2 * 7_504_924_672 + 2 * 4096 * 32 * 2048) / 154.8e12 == pytest.approx(1.036, abs=1e-3)
    assert vs.case(records["torchtune-llama31-8b-full-rtx-a6000"]).skip.startswith("104% of the peak FLOPs")
    assert "states no activation checkpointing" in vs.case(records["torchtune-llama31-8b-lora-rtx-4090"]).skip


def test_the_training_efficiency_is_the_median_of_its_keys_records_with_their_range():
    """Three datacenter records at 0.6354 (torchtitan Llama 3 70B), 0.6463 (Llama 2 70B) and 0.87 (llm.q L40S
    Qwen2.5-1.5B, SOL 87% without recomputation): the GPU-class key is the middle one, its range 0.6354-0.87;
    torchtitan's own key, two records, both on A100 80GB SXM GPUs, is that GPU's: (0.6354 + 0.6463) / 2 = 0.6409."""
    data = vs.derive(vs.cases_of(vs.load_records()))
    entries = {tuple(e["key"]): e for e in data["efficiencies"]}
    klass = entries[("", "nvidia-datacenter", "training", "")]
    assert klass["records"] == ["llmq-l40s-qwen25-1p5b-bf16-sol", "titan-a100-llama2-2-full-tps",
                                "titan-a100-llama3-70b-full-tps"]
    assert klass["value"] == pytest.approx(0.6463, abs=1e-4)
    assert klass["range"] == pytest.approx([0.6354, 0.87], abs=1e-4)
    assert entries[("torchtitan", "a100-80gb-sxm", "training", "")]["value"] == \
        pytest.approx((0.6354 + 0.6463) / 2, abs=1e-4)
    assert ("torchtitan", "nvidia-datacenter", "training", "") not in entries
    assert ("torchtune", "nvidia-consumer", "training", "") not in entries  # one record: below MIN_RECORDS


def test_theil_sen_is_the_median_pairwise_slope_then_the_median_intercept():
    """Points (1, 3), (2, 5), (4, 9) and an outlier (3, 30): the six pairwise slopes are 2, 27, 2, -25, 2, -21,
    median (2 + 2) / 2 = 2; the intercepts y - 2x are 1, 1, 24, 1, median 1. A least-squares line would follow the
    outlier."""
    assert vs.theil_sen([(1, 3), (2, 5), (4, 9), (3, 30)]) == (2, 1)


def test_a_decode_key_fits_a_fixed_step_cost_and_a_bandwidth_fraction(monkeypatch):
    """Step times of 4 + 10 / 0.8, 4 + 20 / 0.8 and 4 + 40 / 0.8 ms (roofline 10, 20, 40 ms): slope 1.25, so
    e_bw = 1 / 1.25 = 0.8 and 4 ms a step. Two records, or a slope below 1 (faster than the bandwidth), set none."""
    monkeypatch.setattr(vs, "step_seconds", lambda point: point)  # the records are their (roofline, measured) times
    records = [(x / 1e3, (4 + x / 0.8) / 1e3) for x in (10, 20, 40)]
    assert vs.decode_fit(records) == {"value": 0.8, "step_ms": 4.0}
    assert vs.decode_fit(records[:2]) is None
    assert vs.decode_fit([(x / 1e3, (1 + x / 1.5) / 1e3) for x in (10, 20, 40)]) is None


def test_a_prompt_length_sweep_separates_the_attention_kernels_fraction_from_the_gemms():
    """Gemma 4 26B-A4B prompts of 4,096, 16,384 and 65,536 tokens on a DGX Spark under vLLM, each timed as its GEMMs
    at 0.6 of their peak + its attention at 0.15 of the 16-bit peak: the points (attention / GEMM time, measured /
    GEMM time) at the peak lie on the line 1 / 0.6 + x / 0.15, so the sweep's attention fraction is 1 / slope = 0.15,
    the key the DGX Spark's (one GPU), and each record's GEMM fraction with that attention taken out is 0.6. Two
    lengths, or lengths over which attention / GEMM time spans under 0.5 (8K to 16K tokens: 0.14 to 0.23), make no
    sweep."""
    def record(tokens: int, value: str = "1000") -> dict:
        return _record(id=f"gemma4-sweep-{tokens}", gpu="dgx-spark", model="google/gemma-4-26B-A4B", weights="nvfp4",
                       input_tokens=str(tokens), output_tokens="", metric="prefill_tokens_per_s", value=value)

    cases = []
    for tokens in (4096, 16384, 65536):
        gemm, attend, _ = vs.prompt_times(vs.case(record(tokens)))
        cases.append(vs.case(record(tokens, repr(tokens / (gemm / 0.6 + attend / 0.15)))))
    assert vs.attention_kernel_of(cases[0]) == "triton" and all(vs.derivable(c) for c in cases)
    assert vs.sweeps(cases) == [cases] and vs.attention_line(cases, {}) == 0.15
    (entry,) = vs.attention_entries(cases, {})
    assert entry == {"key": ["vllm", "dgx-spark", "attention", "triton"], "value": 0.15, "sweeps": 1,
                     "records": ["gemma4-sweep-16384", "gemma4-sweep-4096", "gemma4-sweep-65536"]}
    attention = speed_efficiency(0.15)
    assert [round(vs.achieved(c, attention), 6) for c in cases] == [0.6] * 3
    assert vs.sweeps(cases[:2]) == [] and vs.sweeps([cases[1], vs.case(record(8192)), vs.case(record(12288))]) == []


def test_a_tensor_parallel_sweep_sets_vllm_v0s_rocm_prefix_kernel_fraction_and_no_gemm_key():
    """Llama 3.1 405B TTFTs of 16K, 32K and 128K-token prompts under vLLM 0.6.3 at TP 8 on MI300Xs (the model's own
    131,072 tokens: V0 chunks each prompt in 512-token steps, whose attention runs in the Triton prefix kernel), each
    timed as GEMMs at 0.1 + attention at 0.01: at TP 8 a record sets no GEMM key (`derivable`), but the GEMMs'
    and the attention's FLOPs both divide by 8, so the sweep still sets the kernel's fraction, 0.01, on that GPU.
    The same lengths split between TP 4 and TP 8 are no sweep."""
    def record(tokens: int, value: str = "1000", tp: str = "8") -> dict:
        return _record(id=f"rocm-v0-{tokens}-tp{tp}", engine_version="0.6.3", gpu="mi300x", gpus=tp, tp=tp,
                       model="meta-llama/Llama-3.1-405B-Instruct", input_tokens=str(tokens), output_tokens="",
                       metric="ttft_ms", value=value, source="dstack")

    cases = []
    for tokens in (16000, 32000, 128000):
        gemm, attend, _ = vs.prompt_times(vs.case(record(tokens)))
        cases.append(vs.case(record(tokens, repr((gemm / 0.1 + attend / 0.01) * 1000))))
    c = cases[0]
    assert (c.engine, c.prefill_chunk, vs.attention_kernel_of(c)) == ("vllm-v0", 512, "triton-prefix")
    assert all(vs.sweepable(c) and not vs.derivable(c) for c in cases)
    (entry,) = vs.attention_entries(cases, {})
    assert entry == {"key": ["vllm-v0", "mi300x", "attention", "triton-prefix"], "value": 0.01, "sweeps": 1,
                     "records": ["rocm-v0-128000-tp8", "rocm-v0-16000-tp8", "rocm-v0-32000-tp8"]}
    mixed = [cases[0], cases[1], vs.case(record(128000, tp="4"))]
    assert vs.sweeps(mixed) == []


def speed_efficiency(value: float):
    from estimator import speed

    return speed.Efficiency(value, "given", ())


def test_one_engines_decode_key_fits_a_cost_per_layer(monkeypatch):
    """Three models of 28, 40 and 80 layers with rooflines of 1, 4 and 20 ms, each step 0.1 ms a layer + roofline /
    0.8: 2.8 + 1.25 = 4.05, 4 + 5 = 9 and 8 + 25 = 33 ms. Divided by the layers, the points lie on one line of slope
    1.25 and intercept 0.1 ms: e_bw 0.8 and 100 us a layer. The line per step through the same points does not
    find them: slopes (9 - 4.05) / 3 = 1.65, (33 - 4.05) / 19 = 1.5237, (33 - 9) / 16 = 1.5, median 1.5237 (e_bw
    0.6563), intercepts 4.05 - 1.5237 = 2.5263, 9 - 4 x 1.5237 = 2.9053, 33 - 20 x 1.5237 = 2.5263 ms."""
    monkeypatch.setattr(vs, "step_seconds", lambda c: c.point)
    records = [SimpleNamespace(point=(x / 1e3, (layers * 0.1 + x / 0.8) / 1e3), model=SimpleNamespace(
        num_layers=layers)) for layers, x in ((28, 1), (40, 4), (80, 20))]
    assert vs.decode_fit(records, per_layer=True) == {"value": 0.8, "layer_us": 100.0}
    assert vs.decode_fit(records) == {"value": round(19 / 28.95, 4), "step_ms": round(4.05 - 28.95 / 19, 4)} \
        == {"value": 0.6563, "step_ms": 2.5263}


def test_engine_keys_cost_a_step_per_layer_and_shared_keys_per_step():
    """In speed.json every decode key of one engine carries layer_us (its kernels' floor per layer) and no step_ms;
    every decode key shared by every engine (engine '') carries step_ms and no layer_us: the engines it mixes run
    different kernels a layer."""
    data = json.loads(vs.SPEED_JSON.read_text(encoding="utf-8"))
    decode = [e for e in data["efficiencies"] if e["key"][2] == "decode"]
    assert {bool(e["key"][0]) for e in decode} == {True, False}
    for e in decode:
        assert ("layer_us" in e, "step_ms" in e) == ((True, False) if e["key"][0] else (False, True)), e["key"]


def test_vllm_batch_1_decode_records_set_a_step_cost():
    """Qwen2.5 on an A100 with vLLM 0.6.3 at batch 1: 0.5B at 311.55 tokens/s reads ~1 GB a step (3.21 ms, far more
    than 1 GB / 2,039 GB/s = 0.49 ms); the fitted key says so: its 24 layers cost 2-4 ms a step beyond the bytes
    (3.21 - 0.49 = 2.72 ms measured). vLLM 0.6.3 is the V0 engine, so the key is its generation's, and no key shared
    by every engine holds these records; all of them ran on one A100 80GB, so the key is that GPU's, not the
    datacenter class's."""
    data = json.loads(vs.SPEED_JSON.read_text(encoding="utf-8"))
    entry = next(e for e in data["efficiencies"] if e["key"] == ["vllm-v0", "a100-80gb-sxm", "decode", ""])
    assert 2 < 24 * entry["layer_us"] / 1e3 < 4 and 0 < entry["value"] <= 1
    assert "qwen25-0.5b-bf16-in1-tp1" in entry["records"] or vs.held_out("qwen25-0.5b-bf16-in1-tp1")
    shared = [e for e in data["efficiencies"] if e["key"][0] == ""]
    assert shared and not any(r.startswith("qwen25-") for e in shared for r in e["records"])


def test_engine_generations():
    """vLLM's V1 engine is the default from v0.8.0: earlier versions key as the V0 generation; a version that is not
    a dotted number, or none, is today's engine; Ollama runs llama.cpp's kernels."""
    from estimator import speed

    assert speed.engine_key("vllm", "0.6.3") == "vllm-v0"
    assert speed.engine_key("vllm", "v0.7.3") == "vllm-v0"
    assert speed.engine_key("vllm", "0.8.0") == speed.engine_key("vllm", "0.11.0") == "vllm"
    assert speed.engine_key("vllm", "") == speed.engine_key("vllm", "not stated") == "vllm"
    assert speed.engine_key("ollama", "0.5.1") == "llama.cpp" and speed.engine_key("sglang", "0.4.0") == "sglang"


def _record(**fields) -> dict:
    base = dict(zip(vs.COLUMNS, ("x", "vllm", "", "h100-sxm", "1", "1", "meta-llama/Llama-2-7b-hf", "bf16", "", "1",
                                 "1024", "256", "output_throughput", "100", "u", "2026-01-01", "q", "")))
    return {**base, **fields}


def test_serving_throughput_is_each_requests_prefill_then_its_decode_steps_and_sets_no_efficiency():
    """output_throughput of 8 requests of 1,024 + 256 tokens: 8 x 256 / (prefill of 1,024 + 256 steps of 8
    sequences at 1,024 + 128 cached tokens)."""
    from estimator import catalog, speed

    c = vs.case(_record(concurrency="8", metric="output_throughput"))
    assert c.phase == "throughput" and not vs.derivable(c)
    a, p = catalog.model("meta-llama/Llama-2-7b-hf").architecture, speed.peaks(catalog.gpu("h100-sxm"), "bf16")
    fill = speed.prefill_phase(a, "bf16", 1, 1024, p, 1.0, 1.0).seconds
    step = speed.decode_phase(a, "bf16", "bf16", 1, 8, 1024 + 128, p, 1.0, 1.0).seconds
    assert vs.estimate(c, 1.0, 1.0) == pytest.approx(8 * 256 / (fill + 256 * step))
    assert not vs.derivable(vs.case(_record(concurrency="4", metric="decode_tokens_per_s_per_seq")))
    assert not vs.derivable(vs.case(_record(tp="2", gpus="2", metric="llama_bench_tg")))


def test_a_prefill_bound_by_memory_at_the_roofline_sets_no_flops_efficiency():
    """A 16-token prompt of Llama 3 70B in BF16 on an M2 Ultra: 16 x 2 x ~70e9 FLOPs at 27.2 TFLOPs take ~82 ms,
    the 141 GB of weights at 800 GB/s 176 ms: the record's speed is a fraction of the bandwidth, so it is compared
    but enters no FLOPs median; the same prompt at 512 tokens is compute-bound and would."""
    record = {r["id"]: r for r in vs.load_records()}["mlx1069-m2ultra-llama3-70b-bf16-wired-pp"]
    c = vs.case(record)
    assert not c.skip and vs.roofline_bound(c) == "memory" and not vs.derivable(c)
    longer = vs.case({**record, "id": "x", "input_tokens": "512"})
    assert vs.roofline_bound(longer) == "compute" and vs.derivable(longer)


def test_a_key_set_by_one_gpus_records_is_that_gpus_and_is_looked_up_first():
    """A hand-made table: sglang's own key on the H20 (0.36), a datacenter key over every engine (0.8) and the last
    fallback (0.9). SGLang on the H20 takes 0.36; SGLang on an H100 does not take the H20's, it takes the class's 0.8;
    any engine on the H20 without its own key takes the class's too; with no GPU named, the class key."""
    from estimator import speed

    e = {v: speed.Efficiency(v, str(v), ()) for v in (0.36, 0.8, 0.9)}
    table = {("sglang", "h20", "decode", ""): e[0.36], ("", "nvidia-datacenter", "decode", ""): e[0.8],
             ("", "", "decode", ""): e[0.9]}
    look = lambda engine, gpu: speed.lookup_efficiency(table, engine, "nvidia-datacenter", "decode", "16-bit", gpu)  # noqa: E731
    assert look("sglang", "h20").value == 0.36
    assert look("sglang", "h100-sxm").value == look("vllm", "h20").value == look("sglang", "").value == 0.8
    assert speed.lookup_efficiency(table, "sglang", "apple", "decode", "16-bit", "m2-ultra-192gb").value == 0.9


def test_a_class_key_shared_by_every_engine_keeps_the_kernel_kind():
    """A hand-made table: the consumer class's MoE prefill key over every engine (0.27), its any-kernel key (0.47)
    and the last fallback (0.54). An engine without its own key takes the class's key of its kernel kind: vLLM's
    dense 16-bit prompt on an RTX 5090 does not take the MoE rows' fraction, it falls to the class's any-kernel 0.47,
    and a MoE prompt takes 0.27 (on the DGX Spark, vLLM's MoE prefill ran at 0.31 of the peak, the 16-bit dense
    prompts of llama.cpp and SGLang on GeForce cards at ~0.88)."""
    from estimator import speed

    e = {v: speed.Efficiency(v, str(v), ()) for v in (0.27, 0.47, 0.54)}
    table = {("", "nvidia-consumer", "prefill", "moe"): e[0.27], ("", "nvidia-consumer", "prefill", ""): e[0.47],
             ("", "", "prefill", ""): e[0.54]}
    look = lambda kernel: speed.lookup_efficiency(table, "vllm", "nvidia-consumer", "prefill", kernel, "rtx-5090")  # noqa: E731
    assert look("moe").value == 0.27 and look("16-bit").value == 0.47
    assert speed.lookup_efficiency(table, "vllm", "apple", "prefill", "moe", "m4-max-128gb").value == 0.54
    derived = {tuple(x["key"]) for x in json.loads(vs.SPEED_JSON.read_text(encoding="utf-8"))["efficiencies"]}
    assert {("", "nvidia-consumer", "prefill", "16-bit"), ("", "nvidia-datacenter", "prefill", "moe")} <= derived


def test_llama_cpp_builds_before_int8_mmq_ran_16_bit_gemms():
    """XiongjieDai's May 2024 RTX 4090 pp512 (Llama 3 8B Q4_K_M) ran a build from before llama.cpp#7676 / #7860:
    dequantised FP16 cuBLAS GEMMs, measured against the 16-bit peak (165.2 TFLOPs) and keyed apart; llama.cpp's
    June 2026 master (#24127's column, Q4_K_S) reached 12,394 tokens/s, 1.14 of that peak, which only the int8 path
    allows: it is measured against the INT8 peak (660.8), ~0.28. A prompt of llama.cpp is read in ubatches of 512."""
    cases = {c.record["id"]: c for c in vs.cases_of(vs.load_records())}
    old, new = cases["xd-4090-24gb-8b-q4-k-m-pp512"], cases["mmq24127-4090-llama8b-q4_k_s-pp512"]
    assert (old.cublas_prefill, old.prefill_kernel, old.peak_format) == (True, vs.CUBLAS_KERNEL, "bf16")
    assert (new.cublas_prefill, new.prefill_kernel, new.peak_format) == (False, "quantized", "q4_k_s")
    assert old.prefill_chunk == new.prefill_chunk == 512
    assert vs.achieved(new) == pytest.approx(0.28, abs=0.015)
    data = json.loads(vs.SPEED_JSON.read_text(encoding="utf-8"))
    keys = {tuple(e["key"]): e["records"] for e in data["efficiencies"]}
    dated = {r["id"]: r["date"] for r in vs.load_records()}
    assert all(dated[i] < vs.LLAMA_CPP_INT8_MMQ
               for i in keys[("llama.cpp", "nvidia-consumer", "prefill", vs.CUBLAS_KERNEL)])
    assert all(dated[i] > vs.LLAMA_CPP_INT8_MMQ for i in keys[("llama.cpp", "nvidia-consumer", "prefill", "quantized")])


def test_a_prompts_kernel_kind_on_the_gpu_class_comes_before_the_engines_any_kind_key():
    """Prefill: ('', class, kernel) before (engine, class, any kernel), a prompt's time being its GEMMs'; decode:
    the engine's own key first, its step cost being the engine's."""
    from estimator import speed

    e = {v: speed.Efficiency(v, str(v), ()) for v in (0.27, 0.64, 0.5)}
    for phase in ("prefill", "decode"):
        table = {("", "nvidia-consumer", phase, "moe"): e[0.27], ("llama.cpp", "nvidia-consumer", phase, ""): e[0.64],
                 ("", "", phase, ""): e[0.5]}
        found = speed.lookup_efficiency(table, "llama.cpp", "nvidia-consumer", phase, "moe", "dgx-spark").value
        assert found == (0.27 if phase == "prefill" else 0.64)


def test_sglangs_decode_keys_name_a_gpu_only_while_their_records_ran_on_one():
    """The Qwen team's SGLang 0.4.6 batch-1 decode rows all ran on one H20; the SGLang cookbook's Gemma 4 26B-A4B-it
    TPOT at 1 request on one H200 is the only other fit SGLang decode record. SGLang's FP8 and quantized keys hold H20
    rows only and stay (sglang, h20, ...); its any-format key holds both GPUs and is the NVIDIA datacenter class's, so
    SGLang on an H100 takes it (13 H20 rows and the H200 one). Without the H200 row the same rule gives the H20 its
    own key again and no SGLang class key."""
    from estimator import speed

    data = json.loads(vs.SPEED_JSON.read_text(encoding="utf-8"))
    keys = {tuple(e["key"]): e for e in data["efficiencies"]}
    for kind in ("fp8", "quantized"):
        assert all(r.startswith("qwen3-sgl-") for r in keys[("sglang", "h20", "decode", kind)]["records"])
    shared = keys[("sglang", "nvidia-datacenter", "decode", "")]
    assert "sglcb-h200-gemma-4-26b-a4b-it-c1-tpot" in shared["records"]
    assert sum(r.startswith("qwen3-sgl-") for r in shared["records"]) == len(shared["records"]) - 1 == 13
    assert ("sglang", "h20", "decode", "") not in keys
    table = speed.efficiency_table(data)
    on_h100 = speed.lookup_efficiency(table, "sglang", "nvidia-datacenter", "decode", "16-bit", "h100-sxm")
    assert on_h100.value == keys[("sglang", "nvidia-datacenter", "decode", "16-bit")]["value"]
    cases = [c for c in vs.cases_of(vs.load_records()) if c.record["id"] != "sglcb-h200-gemma-4-26b-a4b-it-c1-tpot"]
    without = {tuple(e["key"]) for e in vs.derive(cases)["efficiencies"]}
    assert ("sglang", "h20", "decode", "") in without and ("sglang", "nvidia-datacenter", "decode", "") not in without


def test_a_shared_gpu_class_key_needs_two_engines(monkeypatch):
    """Three decode records of one engine on two datacenter GPUs set that engine's class key but not the class key
    shared by every engine; a record of a second engine on the same class makes the shared key."""
    records = [vs.case(_record(id=f"x{i}", engine="sglang", gpu=gpu, model=model, metric="llama_bench_tg",
                               output_tokens="128", kv_dtype="f16", value=str(value)))
               for i, (gpu, model, value) in enumerate((("h100-sxm", "meta-llama/Llama-2-7b-hf", 150),
                                                        ("a100-80gb-sxm", "meta-llama/Llama-2-7b-hf", 100),
                                                        ("h100-sxm", "meta-llama/Llama-2-13b-hf", 80)))]
    monkeypatch.setattr(vs, "held_out", lambda record_id: False)
    keys = {tuple(e["key"]) for e in vs.derive(records)["efficiencies"]}
    assert ("sglang", "nvidia-datacenter", "decode", "") in keys and ("", "nvidia-datacenter", "decode", "") not in keys
    other = vs.case(_record(id="y", engine="vllm", gpu="h100-sxm", metric="llama_bench_tg", output_tokens="128",
                            kv_dtype="f16", value="140"))
    assert ("", "nvidia-datacenter", "decode", "") in {tuple(e["key"]) for e in vs.derive(records + [other])[
        "efficiencies"]}


def test_the_first_cell_of_a_llama_batched_bench_run_times_one_time_costs_and_is_not_compared():
    """llama-batched-bench warms up with 16 tokens, then times its cells in order. In llama.cpp's DGX Spark tables the
    first row (PP 512, B 1) of each MoE model took longer than the next row, two 512-token prompts in one batch:
    gpt-oss-20b 512 / 1,311.72 t/s = 0.390 s against 1,024 / 3,754.20 = 0.273 s. The five first rows' prompt phases
    are not compared; the same runs' later cells and the first rows' decode phases are."""
    cases = {c.record["id"]: c for c in vs.cases_of(vs.load_records())}
    first = sorted(i for i, c in cases.items() if vs.FIRST_CELL in c.record["notes"])
    assert first == ["spark-bb-gemma-3-4b-it-qat-pp512-b1-pp", "spark-bb-gpt-oss-120b-pp512-b1-pp",
                     "spark-bb-gpt-oss-20b-pp512-b1-pp", "spark-bb-qwen2.5-coder-7b-q8-0-pp512-b1-pp",
                     "spark-bb-qwen3-coder-30b-a3b-instruct-q8-0-pp512-b1-pp"]
    assert {cases[i].skip for i in first} == {vs.FIRST_CELL_WHY}
    gpt_oss = cases["spark-bb-gpt-oss-20b-pp512-b1-pp"].record
    assert round(512 / float(gpt_oss["value"]), 3) == 0.390
    assert "prefills 1,024 tokens in 0.273 s against this row's 512 in 0.390 s" in gpt_oss["notes"]
    for later in ("spark-bb-gpt-oss-120b-pp512-b32-pp", "spark-bb-gpt-oss-120b-pp4096-b1-pp",
                  "spark-bb-gpt-oss-120b-pp512-b1-tg"):
        assert not cases[later].skip


def test_the_accuracy_of_an_engine_on_a_gpu_class_is_the_median_over_its_compared_rows():
    """Three vLLM rows on NVIDIA datacenter GPUs: a decode rate estimated 10% fast, a TPOT estimated 20% long (its
    speed 1 / 1.2 - 1 = 16.7% slow) and one left out 30% fast (+40% left out); a skipped row and a short TTFT count
    nowhere. Median |error| 20%, left out 20%, signed speed error +10%; every engine on the class and every row hold
    the same three; one SGLang prefill row (estimate 2x the time: 50% slow) is SGLang's and every engine's prefill."""
    def row(engine, metric, phase, error, left_out, skip=""):
        return {"engine": engine, "gpu_class": "nvidia-datacenter", "metric": metric, "phase": phase,
                "measured": 100.0, "estimated": 100.0 + error, "error_pct": error, "loo_error_pct": left_out,
                "skip": skip}

    rows = [row("vllm", "decode_tokens_per_s_per_seq", "decode", 10, 10),
            row("vllm", "tpot_ms", "decode", 20, 20),
            row("vllm", "llama_bench_tg", "decode", 30, 40),
            row("vllm", "ttft_ms", vs.SHORT_TTFT, 300, 300), row("vllm", "tpot_ms", "decode", 0, 0, skip="x"),
            row("sglang", "ttft_ms", "prefill", 100, 100)]
    entries = {(e["engine"], e["class"], e["phase"]): e for e in vs.accuracy_entries(rows)}
    vllm = {"records": 3, "median_pct": 20.0, "left_out_pct": 20.0, "bias_pct": 10.0}
    for key in (("vllm", "nvidia-datacenter", "decode"), ("vllm", "", "decode"), ("", "nvidia-datacenter", "decode"),
                ("", "", "decode")):
        assert {k: entries[key][k] for k in vllm} == vllm
    assert entries[("sglang", "nvidia-datacenter", "prefill")]["bias_pct"] == -50.0
    classes = ("nvidia-datacenter", "")
    assert set(entries) == ({(e, c, "decode") for e in ("vllm", "") for c in classes}
                            | {(e, c, "prefill") for e in ("sglang", "") for c in classes})


def test_a_client_timed_ttft_of_a_short_prompt_is_compared_apart_and_sets_no_efficiency():
    """GPUStack's vLLM TTFT at 1 request (ShareGPT chat prompts of 233 tokens on average, timed by vllm bench serve)
    is under 2,000 tokens: compared as 'prefill, short TTFT', no efficiency; vllm#20469's 16,000-token TTFT is a
    prefill record; the boundary is 2,000 tokens (1,999: short)."""
    records = {r["id"]: r for r in vs.load_records()}
    rows = {r["id"]: r for r in vs.load_results()}  # the committed comparison (speed_results.csv)
    assert vs.short_ttft(vs.case(records["gpustack-h100-qwen3-8b-vllm-c1-ttft"]))
    assert rows["gpustack-h100-qwen3-8b-vllm-c1-ttft"]["phase"] == vs.SHORT_TTFT
    assert rows["vllm20469-a100-qwen3-14b-awq-c1-ttft"]["phase"] == "prefill"
    long = vs.case({**records["vllm20469-a100-qwen3-14b-awq-c1-ttft"], "id": "x", "input_tokens": "2000"})
    short = vs.case({**records["vllm20469-a100-qwen3-14b-awq-c1-ttft"], "id": "x", "input_tokens": "1999"})
    assert vs.roofline_bound(short) == "compute" and not vs.short_ttft(long) and vs.short_ttft(short)
    assert vs.derivable(long) and not vs.derivable(short)


def test_an_offline_run_of_long_prompts_and_few_generated_tokens_is_a_prefill_record():
    """100 requests of 32,000 prompt + 100 generated tokens sent at once (no concurrency: an offline run) generate
    0.31% of their prompt tokens: a prefill record whose total throughput is one request's 32,100 tokens at the
    prefill's rate, compute-bound: Llama 2 7B on an H100 SXM at 100% does 2 x 6,607,343,616 matmul parameters x
    32,100 tokens + 4 x 4,096 (query width) x 32 layers x 32,100 x 32,101 / 2 (causal attention) FLOPs at 989
    TFLOPs. On one GPU it sets the prefill efficiency. 400 generated tokens (1.25%) or a fixed concurrency make it a
    serving throughput again (without a concurrency it is skipped, saying so)."""
    offline = dict(metric="total_throughput", concurrency="", input_tokens="32000", output_tokens="100")
    c = vs.case(_record(**offline))
    assert c.phase == "prefill" and not c.skip and vs.offline_prefill(c.record) and vs.prefill_tokens(c.record) == 32100
    flops = 2 * 6_607_343_616 * 32_100 + 4 * 4096 * 32 * 32_100 * 32_101 // 2
    assert vs.estimate(c, 1.0, 1.0) == pytest.approx(32_100 / (flops / 989e12), rel=1e-9)
    assert vs.roofline_bound(c) == "compute" and vs.derivable(c)
    assert not vs.derivable(vs.case(_record(**offline, tp="2", gpus="2")))
    longer = vs.case(_record(**{**offline, "output_tokens": "400"}))
    assert not vs.offline_prefill(longer.record) and longer.phase == "throughput" and "concurrency" in longer.skip
    batched = vs.case(_record(**{**offline, "concurrency": "100"}))
    assert batched.phase == "throughput" and not batched.skip and not vs.derivable(batched)
    rows = {r["id"]: r for r in vs.load_results()}  # the committed comparison: GPUStack's 32K runs are prefill rows
    assert rows["gpustack-h100-qwen3-14b-vllm-32k"]["phase"] == rows["gpustack-h200-deepseek-r1-sglang-tp8-32k"][
        "phase"] == "prefill"


def test_sglang_cookbook_rows_at_one_request_are_batch_1_records_of_their_printed_totals():
    """The SGLang cookbook's bench_serving runs at --max-concurrency 1 (10 random requests): a row's lengths are the
    printed totals / 10 (Qwen3-235B-A22B-2507 summarization on 8 B200s: 41,941 / 10 = 4,194 prompt tokens, 4,210 / 10
    = 421 generated), so its TTFT is a prefill record (over 2,000 tokens), compared at TP 8 only; the Qwen3-VL-4B
    TTFT of 8,192 tokens on one B300 is compute-bound and sets the prefill efficiency; the instruction-tuned Gemma 4
    26B-A4B reads as the catalog's base model."""
    records = {r["id"]: r for r in vs.load_records()}
    summ = records["sglcb-b200-qwen3-235b-a22b-2507-tp8-summ-c1-ttft"]
    assert (summ["input_tokens"], summ["output_tokens"]) == (str(round(41941 / 10)), str(round(4210 / 10)))
    assert "Total input tokens: 41941" in summ["quote"] and "Total generated tokens: 4210" in summ["quote"]
    c = vs.case(summ)
    assert c.phase == "prefill" and not vs.short_ttft(c) and not vs.derivable(c)  # TP 8: compared only
    vl = vs.case(records["sglvl-b300-qwen3-vl-4b-nhd-c1-ttft"])
    assert vl.phase == "prefill" and vs.roofline_bound(vl) == "compute" and vs.derivable(vl)
    assert vs.model_of("google/gemma-4-26B-A4B-it")[0] == vs.model_of("google/gemma-4-26B-A4B")[0] is not None
    rows = {r["id"]: r for r in vs.load_results()}
    assert rows["sglcb-b200-qwen3-235b-a22b-2507-tp8-summ-c1-ttft"]["phase"] == "prefill"
    assert rows["sglcb-b200-qwen3-235b-a22b-2507-tp8-chat-c1-tpot"]["phase"] == "decode"


VLLM_REQUEST_RECORDS = ["gpustack-h100-qwen3-8b-vllm-c1-ttft", "v1pf-bench3-h200-llama3-8b-c1-ttft",
                        "v1pf-vsx-4090-qwen25-7b-sweep-c1-ttft", "v1pf-wmx-l4-qwen25-0.5b-c1-ttft"]


def first_pass_table():
    """The efficiencies of the records as they are, which the request costs are taken over (`vs.derive`)."""
    cases = vs.cases_of(vs.load_records())
    fit, swept = [c for c in cases if vs.derivable(c)], [c for c in cases if vs.sweepable(c)]
    return vs.speed.efficiency_table({"efficiencies": vs.efficiency_entries(fit, swept, {})})


def test_vllms_request_cost_is_the_median_of_its_short_client_ttfts_less_their_forwards():
    """speed.json's vLLM cost per request, by hand from the four records that set it (client-timed TTFTs of
    prompts under 2,000 tokens, one request at a time, one GPU, not held out): measured - forward at the first pass's
    prefill efficiency = 59.01 - 6.7668 = 52.2432 (GPUStack, Qwen3-8B, H100), 30.5079 - 3.7703 = 26.7376 (bench3,
    Llama 3 8B, H200), 29.9918 - 24.0129 = 5.9789 (vsx's sweep run, Qwen2.5-7B, RTX 4090), 27.0 - 3.9929 = 23.0071
    (wmx, Qwen2.5-0.5B, L4); the median of four is the mean of the middle two, (23.0071 + 26.7376) / 2 = 24.8724 ms."""
    data = json.loads(vs.SPEED_JSON.read_text(encoding="utf-8"))
    cost = {e["engine"]: e for e in data["request_costs"]}["vllm"]
    assert cost["records"] == VLLM_REQUEST_RECORDS
    cases = {c.record["id"]: c for c in vs.cases_of(vs.load_records())}
    measured = [float(cases[i].record["value"]) for i in VLLM_REQUEST_RECORDS]
    assert measured == [59.01, 30.507872998714447, 29.991763029247522, 27.0]
    table = first_pass_table()
    forward = [vs.estimate(cases[i], table=table, costs={}) for i in VLLM_REQUEST_RECORDS]
    assert forward == pytest.approx([6.7668, 3.7703, 24.0129, 3.9929], abs=1e-4)
    assert sorted(m - f for m, f in zip(measured, forward)) == pytest.approx([5.9789, 23.0071, 26.7376, 52.2432],
                                                                             abs=1e-4)
    assert cost["request_ms"] == pytest.approx(((27.0 - 3.992893) + (30.507873 - 3.770258)) / 2, abs=1e-4) == 24.8724
    # every client-timed TTFT adds it to the forward, a short or a long prompt's; the roofline (e = 1) and
    # AccelMark's TTFTs, timed in process, do not
    wmx = cases["v1pf-wmx-l4-qwen25-0.5b-c1-ttft"]
    assert vs.estimate(wmx) == pytest.approx(vs.estimate(wmx, costs={}) + 24.8724, abs=1e-9)
    long = cases["vllm20469-a100-qwen3-14b-awq-c1-ttft"]
    assert vs.client_ttft(long) and vs.estimate(long) == pytest.approx(vs.estimate(long, costs={}) + 24.8724)
    in_process = cases["accelmark-b200-llama31-8b-vllm020-c1-ttft"]
    assert not vs.client_ttft(in_process) and vs.estimate(in_process) == vs.estimate(in_process, costs={})
    # held out (the notes run on the RTX 4090 and the TP 4 row), several requests at once (GPUStack's c2-c8), TP 4:
    # not in the median
    for other in ("v1pf-vsx-4090-qwen25-7b-c1-ttft", "v1pf-kubesimplify-rtxpro6000-qwen3-235b-fp8-tp4-c1-ttft",
                  "gpustack-h100-qwen3-8b-vllm-c2-ttft", "gpustack-h100-qwen3-8b-vllm-c8-ttft"):
        assert vs.short_ttft(cases[other]) and not vs.request_record(cases[other])


def test_sglang_takes_the_request_cost_pooled_with_vllms_records():
    """SGLang has two short client TTFTs at one request (the Gemma 4 cookbook run, GPUStack's EAGLE3 run), too few
    for its own cost. Pooled with vLLM's four (two engines): measured - forward = 103.74 - 28.6558 = 75.0842 and
    34.70 - 6.1262 = 28.5738 beside vLLM's 5.9789, 23.0071, 26.7376, 52.2432; the median of six, (26.7376 + 28.5738)
    / 2 = 27.6557 ms. SGLang's TTFTs take it (its 8,192-token cookbook TTFT on a B200 too); vLLM keeps its own;
    llama.cpp's server and the other engines, none of whose records are in the pool, take none."""
    from estimator import speed

    data = json.loads(vs.SPEED_JSON.read_text(encoding="utf-8"))
    pooled = {e["engine"]: e for e in data["request_costs"]}[""]
    assert pooled["engines"] == ["sglang", "vllm"] and pooled["request_ms"] == 27.6557
    assert pooled["records"] == sorted(VLLM_REQUEST_RECORDS + ["gpustack-h100-qwen3-8b-sglang-fp8-eagle3-c1-ttft",
                                                               "sglcb-h200-gemma-4-26b-a4b-it-c1-ttft"])
    cases = {c.record["id"]: c for c in vs.cases_of(vs.load_records())}
    table = first_pass_table()
    assert [float(cases[i].record["value"]) - vs.estimate(cases[i], table=table, costs={}) for i in (
        "sglcb-h200-gemma-4-26b-a4b-it-c1-ttft", "gpustack-h100-qwen3-8b-sglang-fp8-eagle3-c1-ttft")] == \
        pytest.approx([75.0842, 28.5738], abs=1e-4)
    assert (26.7376 + 28.5738) / 2 == pytest.approx(27.6557)
    b200 = cases["sgl35-b200-qwen35-35b-bf16-c1-ttft"]
    assert vs.estimate(b200) == pytest.approx(vs.estimate(b200, costs={}) + 27.6557)
    assert speed.request_cost("sglang").seconds == 0.0276557 and speed.request_cost("vllm").seconds == 0.0248724
    assert speed.request_cost("llama.cpp") is None and speed.request_cost("transformers") is None
    assert "sglang and vllm pooled" in speed.request_cost("sglang").text


def test_an_engine_needs_three_short_client_ttfts_for_a_request_cost():
    """Without two of vLLM's four records the rule sets no vLLM cost per request (a median needs three runs), only
    the pooled one over its two and SGLang's two (5.9789, 23.0071, 28.5738, 75.0842: 25.7904); with one left out (a
    record's leave-one-out estimate is derived that way) the other three set it, their median: a short TTFT of a
    key's own record is not its own fit."""
    every_case = vs.cases_of(vs.load_records())
    table = first_pass_table()
    cases = [c for c in every_case if c.record["id"] not in VLLM_REQUEST_RECORDS[:2]]
    assert [(e["engine"], e["request_ms"]) for e in vs.request_costs(cases, table)] == [("", 25.7904)]
    without_bench3 = vs.request_costs([c for c in every_case if c.record["id"] != VLLM_REQUEST_RECORDS[1]], table)
    # the median of the other three's differences (5.9789, 23.0071, 52.2432): wmx's
    assert [(e["engine"], e["request_ms"]) for e in without_bench3][1:] == [("vllm", 23.0071)]
    every = vs.request_costs(every_case, table)
    assert [(e["engine"], e["request_ms"]) for e in every] == [("", 27.6557), ("vllm", 24.8724)]
    assert every[1]["records"] == VLLM_REQUEST_RECORDS
