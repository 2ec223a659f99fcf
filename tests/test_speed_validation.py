"""The published speed measurements (validation/published/speed.csv), the efficiencies derived from them
(estimator/data/speed.json) and the errors the speed model makes on them."""

from __future__ import annotations

import json
import re
import statistics

import pytest

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
        assert int(r["gpus"]) >= int(r["tp"]) >= 1 and int(r["concurrency"]) >= 1, r["id"]


def test_the_committed_efficiencies_are_the_rule_applied_to_the_records():
    """speed.json is derived, never edited: `python -m validation speed --derive` rewrites it."""
    derived = vs.derive([vs.case(r) for r in vs.load_records()])
    assert json.loads(vs.SPEED_JSON.read_text(encoding="utf-8")) == json.loads(json.dumps(derived))


def test_held_out_records_enter_no_efficiency():
    data = json.loads(vs.SPEED_JSON.read_text(encoding="utf-8"))
    used = {record for e in data["efficiencies"] for record in e["records"]}
    assert not {r["id"] for r in vs.load_records() if vs.held_out(r["id"])} & used


def test_llama_cpp_median_error_is_within_20_percent_for_decode_and_prefill():
    """The issue's bar, per engine, on the records: llama-bench tg (batch 1) and pp."""
    rows = vs.results([vs.case(r) for r in vs.load_records()])
    for phase in ("decode", "prefill"):
        errors = [abs(r["error_pct"]) for r in rows if not r["skip"] and r["engine"] == "llama.cpp"
                  and r["phase"] == phase]
        assert len(errors) >= 3 and statistics.median(errors) <= 20, (phase, errors)


def test_a_record_on_a_gpu_outside_the_catalog_is_reported_not_dropped_silently():
    rows = vs.results([vs.case(r) for r in vs.load_records()])
    skipped = [r for r in rows if r["skip"]]
    assert skipped and all("not in the catalog" in r["skip"] or "not compared" in r["skip"] for r in skipped)


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
