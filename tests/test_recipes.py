"""Published peaks of framework recipes (validation/published/training_recipes.json) and their comparison."""

import csv
import statistics

from validation import recipes
from validation.__main__ import main


def test_every_record_states_its_settings_source_and_quote():
    for record in recipes.load_records():
        assert record["source"].startswith("https://") and len(record["quote"]) > 40
        assert {"model", "framework", "technique", "batch_size", "seq_len", "lora_rank", "measured_gib",
                "measured_by"} <= set(record)
        assert record["measured_by"] in ("capacity", "torch allocator", "unstated")


def test_torch_allocator_records_leave_out_the_context_and_paged_states():
    """torchtune's full fine-tune uses PagedAdamW8bit: its states are CUDA managed memory, which torch's memory
    statistics never count, and the CUDA context is not in them either."""
    record = next(r for r in recipes.load_records() if r["id"] == "torchtune-readme-llama3.1-8b-full-4090")
    s = recipes.scenario(record)
    assert s.overhead_gb == 0 and s.optimizer == "paged-adamw-8bit" and s.optimizer_in_backward
    from estimator.finetune import detailed_finetune
    row = detailed_finetune(s, "full")
    assert recipes.compare(record)["estimate_gib"] == round((row.total - row.component("optimizer_states")) / 2**30, 2)


def test_the_committed_results_are_what_the_command_computes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(recipes, "RESULTS", tmp_path / "recipes_results.csv")
    assert main(["recipes"]) == 0
    fresh = list(csv.DictReader((tmp_path / "recipes_results.csv").open()))
    committed = list(csv.DictReader(open("validation/recipes_results.csv")))
    assert fresh == committed
    median = statistics.median(abs(float(row["error_pct"])) for row in fresh)
    assert f"| all | {len(fresh)} | {median:.1f}% |" in capsys.readouterr().out
