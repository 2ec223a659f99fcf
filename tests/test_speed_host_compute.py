"""llama.cpp weights in host RAM (-ngl below the layers, --n-cpu-moe, -ot ...=CPU): a token's decode reads them on
the CPU at the RAM's bandwidth, a prompt's ubatch copies them to the GPU (op offload), each at a fraction of its
peak (estimator.speed.host_decode_seconds / host_copy_seconds)."""

from __future__ import annotations

import pytest

import estimator as est
from estimator import speed
from estimator.engines import ServeScenario, serve
from estimator.engines.llama_cpp import host_matrices
from validation import host_speed

QWEN_MOE = est.model("Qwen/Qwen3-30B-A3B").architecture  # 48 layers, 128 experts, 8 a token


@pytest.fixture
def fractions(monkeypatch):
    table = {("llama.cpp", "decode"): speed.Efficiency(0.5, "test decode", ("a", "b", "c"), (0.4, 0.6)),
             ("llama.cpp", "copy"): speed.Efficiency(0.6, "test copy", ("d", "e", "f"), (0.5, 0.7))}
    monkeypatch.setattr(speed, "_host_compute", lambda: table)
    return table


def test_n_cpu_moe_reads_a_token_s_experts_from_ram_and_copies_a_prompt_s_to_the_gpu(fractions):
    """--n-cpu-moe 20 on an RTX 3090 (936 GB/s; PCIe 4.0 x16, 32 GB/s) with 96 GB/s of RAM: a token routes to 8 of 128
    experts, so the CPU reads 8/128 of the 20 layers' expert bytes at 0.5 x 96 GB/s, and the GPU no longer reads
    them (at its own decode fraction); pp512 is one ubatch of 512 tokens, which touches 1 - (120/128)^512 of the
    experts, copied at 0.6 x 32 GB/s before the GPU multiplies."""
    s = ServeScenario(QWEN_MOE, engine="llama.cpp", gpu="rtx-3090", weights="q4_k_m", max_model_len=4096,
                      n_cpu_moe=20, host_memory_gb_s=96)
    report = serve(s)
    plain, rate = speed.serve_speed(s, report, host=False), speed.serve_speed(s, report)
    dense, expert = host_matrices(s)
    assert dense == 0 and expert > 0
    read = expert * 8 / 128
    gpu_rate = plain.basis.peaks.bandwidth * plain.basis.e_bw.value
    assert plain.basis.peaks.bandwidth == 936e9
    step = 1 / plain.decode_tokens_per_s - read / gpu_rate + read / (96e9 * 0.5)
    assert rate.decode_tokens_per_s == pytest.approx(1 / step, rel=1e-12)
    assert rate.host_decode_s == pytest.approx(read / (96e9 * 0.5) - read / gpu_rate, rel=1e-12)
    copied = expert * (1 - (120 / 128) ** 512)
    assert rate.ttft_s == pytest.approx(plain.ttft_s + copied / (32e9 * 0.6), rel=1e-12)
    assert rate.host_bytes_left_out == 0 and rate.host_prefill_s == pytest.approx(copied / (32e9 * 0.6), rel=1e-12)
    note, = (n for n in rate.assumptions if n.startswith("llama.cpp keeps"))
    assert "at 0.50 of the 96 GB/s RAM given" in note and "at 0.60 of its peak" in note


def test_without_the_ram_bandwidth_the_decode_time_stays_out_and_says_so(fractions):
    s = ServeScenario(QWEN_MOE, engine="llama.cpp", gpu="rtx-3090", weights="q4_k_m", max_model_len=4096,
                      n_gpu_layers=30)
    report = serve(s)
    rate, plain = speed.serve_speed(s, report), speed.serve_speed(s, report, host=False)
    assert rate.decode_tokens_per_s == plain.decode_tokens_per_s and rate.ttft_s > plain.ttft_s  # the copy is in
    assert rate.host_bytes_left_out == report.host_bytes
    assert any("no host memory bandwidth given (--host-memory-bandwidth)" in n for n in rate.assumptions)


def test_the_fractions_are_medians_of_cpu_only_decodes_and_of_prompt_copies():
    """Three CPU-only tg128 records of Llama 3.1 8B Q4_K_M at 100 GB/s of RAM: each token reads every matrix but the
    token embedding's (all of them: -ngl 0), so the fraction is those bytes x tokens/s / 100e9."""
    base = {"engine": "llama.cpp", "engine_version": "b6000", "gpu": "none", "gpus": "0", "cpu": "test",
            "threads": "", "host_memory": "test", "host_memory_gb_s": "100", "model": "meta-llama/Llama-3.1-8B",
            "weights": "q4_k_m", "n_gpu_layers": "0", "n_cpu_moe": "", "override_tensor": "", "flash_attn": "",
            "metric": "llama_bench_tg", "n_tokens": "128", "source": "s", "date": "2026-01-01", "quote": "q",
            "notes": ""}
    ids = [i for i in (f"t-{n}" for n in range(40)) if not host_speed.held_out(i)][:3]
    cases = host_speed.cases([dict(base, id=i, value=str(v)) for i, v in zip(ids, (10, 12, 14))])
    read = cases[0].touched(1)
    dense, expert = host_matrices(cases[0].scenario)
    assert expert == 0 and read == dense > 4e9  # 8B at ~4.9 bits a weight, the 0.5 GB token embedding left out
    entry, = host_speed.derive(cases)
    assert entry["phase"] == "decode" and entry["value"] == round(read * 12 / 100e9, 4)
    assert entry["range"] == [round(read * 10 / 100e9, 4), round(read * 14 / 100e9, 4)]
    table = speed.host_compute_table({"host_compute": [entry]})
    assert host_speed.estimate(cases[0], table) == pytest.approx(100e9 * entry["value"] / read, rel=1e-12)


def test_without_a_measured_copy_fraction_the_prompt_copies_at_the_link_s_peak(monkeypatch):
    """No copy fraction is derived (validation/host_speed.py derivable says why): the copy is priced at the link's
    peak for every expert a uniformly routed ubatch touches, and the note says so."""
    monkeypatch.setattr(speed, "_host_compute", lambda: {})
    s = ServeScenario(QWEN_MOE, engine="llama.cpp", gpu="rtx-3090", weights="q4_k_m", max_model_len=4096,
                      n_cpu_moe=20, host_memory_gb_s=96)
    report = serve(s)
    rate, plain = speed.serve_speed(s, report), speed.serve_speed(s, report, host=False)
    copied = host_matrices(s)[1] * (1 - (120 / 128) ** 512)
    assert rate.ttft_s == pytest.approx(plain.ttft_s + copied / 32e9, rel=1e-12)
    assert rate.decode_tokens_per_s == plain.decode_tokens_per_s and rate.host_bytes_left_out == report.host_bytes
    assert any("at 1.00 of its peak (the link's peak, for every expert a uniformly routed ubatch touches: no fraction"
               in n for n in rate.assumptions)


def test_every_host_speed_record_states_its_source_machine_and_settings():
    records = host_speed.load()
    assert len(records) == 91 and len({r["id"] for r in records}) == 91
    for r in records:
        assert r["source"] and r["quote"] and r["cpu"] and float(r["value"]) > 0, r["id"]
        assert r["date"] or "date not in the stored text" in r["notes"], r["id"]
        assert r["metric"] in host_speed.DECODE_METRICS + host_speed.PREFILL_METRICS, r["id"]
        assert r["host_memory_gb_s"] == "" or float(r["host_memory_gb_s"]) > 0, r["id"]
        assert (r["gpu"] == "none") == (r["gpus"] == "0"), r["id"]
