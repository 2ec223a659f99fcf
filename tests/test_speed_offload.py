"""Weights kept in host memory by --cpu-offload-gb: every forward reads them over the GPU's host link, at the achieved
fraction of its peak derived from validation/published/offload.csv (estimator.speed.host_offload_seconds)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import estimator as est
from estimator import catalog
from estimator.engines import ServeScenario, serve
from estimator.speed import host_offload_table, serve_speed
from validation import offload

LLAMA = est.model("meta-llama/Llama-3.1-8B").architecture
SPEED_JSON = Path(est.__file__).parent / "data" / "speed.json"


def _vllm_fraction() -> float:
    entry, = (e for e in json.loads(SPEED_JSON.read_text())["host_offload"] if e["engine"] == "vllm")
    return entry["value"]


def test_the_host_link_is_the_pcie_interconnect_or_the_datasheet_s_own_entry():
    assert catalog.gpu("rtx-4090").host_link_gb_s == 32  # PCIe 4.0 x16 is its interconnect
    assert catalog.gpu("t4").host_link_gb_s == 16  # PCIe 3.0 x16
    assert catalog.gpu("h100-sxm").host_link_gb_s == 64  # NVLink between GPUs; 'PCIe Gen5: 128GB/s' to the host
    assert catalog.gpu("a100-80gb-sxm").host_link_gb_s == 32
    assert catalog.gpu("gb200").host_link_gb_s is None  # a C2C link to Grace, not recorded
    assert catalog.gpu("m4-10c-16gb").host_link_gb_s is None  # unified memory


def test_vllm_offload_adds_the_offloaded_bytes_over_the_host_link_to_every_forward():
    """Llama 3.1 8B with --cpu-offload-gb 1 on an RTX 4090: 1,191,215,104 bytes offloaded (whole parameters of layers
    0-2, test_engine_vllm), read over PCIe 4.0 x16 (32 GB/s a direction) at the derived fraction e of its peak:
    1,191,215,104 / (32e9 x e) seconds more in the prompt's forward and in every decode step."""
    s = ServeScenario(LLAMA, gpu="rtx-4090", max_model_len=8192, cpu_offload_gb=1, model_id="meta-llama/Llama-3.1-8B")
    r = serve(s)
    plain = serve_speed(s, replace(r, host_bytes=0))  # the same report without the host bytes: GPU-only speeds
    rate = serve_speed(s, r)
    extra = 1_191_215_104 / (32e9 * _vllm_fraction())
    assert rate.host_prefill_s == rate.host_decode_s == pytest.approx(extra, rel=1e-12)
    assert rate.host_bytes_left_out == 0
    assert rate.ttft_s == pytest.approx(plain.ttft_s + extra, rel=1e-12)
    assert rate.decode_tokens_per_s == pytest.approx(1 / (1 / plain.decode_tokens_per_s + extra), rel=1e-12)
    assert rate.prefill_tokens_per_s == pytest.approx(512 / (512 / plain.prefill_tokens_per_s + extra), rel=1e-12)
    assert 0.2 < _vllm_fraction() < 0.35 and rate.decode_tokens_per_s < 10  # 137 ms a step at 0.278, not ~60 tok/s
    note, = (n for n in rate.assumptions if n.startswith("CPU weight offload"))
    assert f"{extra * 1e3:,.1f} ms added" in note and "(32 GB/s a direction)" in note


def test_sglang_offload_copies_at_the_link_s_peak_and_a_gpu_without_a_host_link_leaves_it_out():
    """SGLang's OffloaderV1 copies the offloaded parameters to the GPU at every forward (functional_call); no
    published run measures its rate, so the copy is priced at the host link's peak (PCIe 4.0 x16, 32 GB/s): a floor
    on the time, the note says so. A GPU without a recorded host link has no peak to price it at."""
    sglang = ServeScenario(LLAMA, engine="sglang", gpu="rtx-4090", max_model_len=8192, cpu_offload_gb=1)
    report = serve(sglang)
    rate, plain = serve_speed(sglang, report), serve_speed(sglang, report, host=False)
    extra = report.host_bytes / 32e9
    assert report.host_bytes > 0 and rate.host_bytes_left_out == 0
    assert rate.host_decode_s == rate.host_prefill_s == pytest.approx(extra, rel=1e-12)
    assert rate.decode_tokens_per_s == pytest.approx(1 / (1 / plain.decode_tokens_per_s + extra), rel=1e-12)
    note, = (n for n in rate.assumptions if n.startswith("CPU weight offload"))
    assert "SGLang's OffloaderV1" in note and "the link's peak (no published run" in note
    gb200 = ServeScenario(LLAMA, gpu="gb200", cpu_offload_gb=1)
    rate = serve_speed(gb200, serve(gb200))
    assert rate.host_decode_s == rate.host_prefill_s == 0
    assert any("records no host link for this GPU" in n for n in rate.assumptions)


def test_the_fraction_is_the_median_of_bytes_over_added_time_and_link_peak():
    """Three records of one cell: --cpu-offload-gb 2 (Llama 3.1 8B: layers 0-3, then the fifth layer's qkv, o and
    gate_up at 2,063,663,104 < 2 GiB, then its down_proj crosses the budget and the norms stay: 2,181,103,616 bytes,
    from the engine) adding 100, 200 and 400 ms over the baseline on a 32 GB/s link: fractions b / 0.1 s / 32e9 and
    so on, the median the middle one; a held-out id (crc32 % 4 == 0) enters neither."""
    base = {"engine": "vllm", "engine_version": "0.17.1", "gpu": "NVIDIA GeForce RTX 3090",
            "model": "meta-llama/Llama-3.1-8B-Instruct", "weights": "bf16", "cpu_offload_gb": "2",
            "gpu_memory_utilization": "0.9", "max_model_len": "8192", "concurrency": "2", "input_tokens": "256",
            "output_tokens": "64", "metric": "tpot_ms", "baseline_value": "20"}
    ids = [i for i in (f"t-{n}" for n in range(40)) if not offload.held_out(i)][:3]
    held = next(i for i in (f"t-{n}" for n in range(40)) if offload.held_out(i))
    cases = offload.cases([dict(base, id=i, value=str(20 + added)) for i, added in zip(ids, (100, 200, 400))]
                          + [dict(base, id=held, value="10000")])
    b = cases[0].offloaded
    assert b == 4 * 436_224_000 + 50_331_648 + 33_554_432 + 234_881_024 + 117_440_512 == 2_181_103_616
    entry, = offload.derive(cases)
    assert entry["value"] == round(b / 0.2 / 32e9, 4) and entry["range"] == [round(b / 0.4 / 32e9, 4),
                                                                             round(b / 0.1 / 32e9, 4)]
    assert entry["records"] == sorted(ids)
    table = host_offload_table({"host_offload": [entry]})
    assert offload.estimate(cases[1], table) == pytest.approx(
        offload.estimate(cases[1], {}) + b / (32e9 * entry["value"]) * 1e3, rel=1e-12)


def test_every_offload_record_states_its_source_settings_and_baseline():
    records = offload.load()
    assert len(records) == 70 and len({r["id"] for r in records}) == 70
    for r in records:
        assert r["source"] and r["quote"] and r["date"] and r["engine_version"], r["id"]
        assert float(r["value"]) > float(r["baseline_value"]) > 0 and float(r["cpu_offload_gb"]) > 0, r["id"]
        assert r["metric"] in ("tpot_ms", "ttft_ms") and int(r["concurrency"]) >= 1, r["id"]
        assert offload.gpu_of(r["gpu"])[0] is not None and offload.model_of(r["model"])[0] is not None, r["id"]
