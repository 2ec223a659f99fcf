"""The published speed measurements (validation/published/speed.csv), the efficiencies derived from them
(estimator/data/speed.json) and the errors the speed model makes on them."""

from __future__ import annotations

import json
import re
import statistics

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
