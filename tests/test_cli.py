"""The CLI contract: subcommands, JSON shape, same numbers as the API, errors on stderr with exit code 2."""

import json
import re
import subprocess
import sys

import pytest

import estimator as est
from estimator.cli import main
from tests.conftest import LLAMA3_8B


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _validation(capsys, *argv):
    """`python -m validation ...`, in this process."""
    from validation.__main__ import main as validation_main

    code = validation_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_inference_json_is_the_reference_table(capsys):
    code, out, _ = _run(capsys, "inference", "--params", "7", "--json")
    data = json.loads(out)
    assert code == 0 and data["method"] == "quick"
    assert [(r["scenario"], r["total_bytes"]) for r in data["rows"]] == [
        ("16-bit", 18_800_000_000), ("8-bit", 11_800_000_000), ("4-bit", 8_300_000_000)]
    assert set(data["rows"][0]["components"]) == {"weights", "kv_cache", "activations", "overhead"}


def test_finetune_json_is_the_reference_table(capsys):
    _, out, _ = _run(capsys, "finetune", "--params", "7", "--optimizer", "adamw", "--json")
    assert [(r["scenario"], r["total_bytes"]) for r in json.loads(out)["rows"]] == [
        ("full", 87_400_000_000), ("lora", 18_100_000_000), ("qlora-8bit", 11_100_000_000),
        ("qlora-4bit", 7_600_000_000)]


def test_catalog_model_json_equals_the_api(capsys):
    _, out, _ = _run(capsys, "inference", "--model", "meta-llama/Llama-3.1-8B", "--seq-len", "32768",
                     "--kv-dtype", "fp8", "--concurrency", "4", "--json")
    a = est.model("meta-llama/Llama-3.1-8B").architecture
    api = est.inference_table(est.InferenceScenario(a, seq_len=32768, kv_dtype="fp8", concurrency=4))
    assert [r["total_bytes"] for r in json.loads(out)["rows"]] == [r.total for r in api]


def test_single_weight_format_gives_one_row(capsys):
    _, out, _ = _run(capsys, "inference", "--model", "Qwen/Qwen3-8B", "--weights", "q4_k_m", "--json")
    rows = json.loads(out)["rows"]
    assert [r["scenario"] for r in rows] == ["q4_k_m"]


def test_config_file_and_params_subcommand(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA3_8B))
    _, out, _ = _run(capsys, "params", "--config", str(path), "--json")
    assert json.loads(out) == {"total_params": 8_030_261_248, "active_params": 8_030_261_248,
                               "kv_cache_bytes_per_token": 131_072}


def test_finetune_options_reach_the_scenario(capsys):
    _, out, _ = _run(capsys, "finetune", "--model", "Qwen/Qwen2.5-7B", "--technique", "qlora-4bit", "--lora-rank",
                     "64", "--lora-targets", "all-linear", "--grad-checkpointing", "--gpus", "4", "--zero", "3",
                     "--regime", "mixed", "--optimizer", "paged-adamw-8bit", "--json")
    data = json.loads(out)
    assert data["inputs"]["lora_rank"] == 64 and data["inputs"]["zero_stage"] == 3
    assert data["rows"][0]["scenario"] == "qlora-4bit" and data["rows"][0]["gpus"] == 4


def test_gpu_option_reports_the_count_and_longest_sequence(capsys):
    _, out, _ = _run(capsys, "inference", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "h100-sxm",
                     "--json")
    gpu = json.loads(out)["gpu"]
    assert [row["gpus_needed"] for row in gpu["rows"]] == [2, 1, 1]  # 141 GB of bf16 weights need 2 x 80 GB
    assert all(row["max_seq_len"] > 0 for row in gpu["rows"])


def test_human_output_has_a_table_and_assumptions(capsys):
    code, out, _ = _run(capsys, "inference", "--params", "7")
    assert code == 0 and "18.80" in out and "Assumptions" in out


@pytest.mark.parametrize("argv, message", [
    (["inference", "--params", "0"], "argument --params: Total parameters (B) must be between 0.001 and 20,000"),
    (["inference", "--params", "7", "--seq-len", "1000000000"], "Sequence length must be between 1 and 10,000,000"),
    (["inference", "--params", "7", "--active-params", "9"], "cannot exceed total"),
    (["inference", "--params", "7", "--model", "Qwen/Qwen3-8B"], "exactly one of"),
    (["inference"], "exactly one of"),
    (["inference", "--model", "nope/x"], "nope/x is not in the catalog nor in the local Hub cache"),
    (["inference", "--config", "/does/not/exist.json"], "cannot read"),
    (["inference", "--params", "7", "--gpu", "tpu"], "unknown GPU"),
    (["finetune", "--params", "7", "--lora-targets", "zz"], "unknown projection"),
    (["params", "--config", "/does/not/exist.json"], "cannot read"),
])
def test_errors_go_to_stderr_with_exit_code_2(capsys, argv, message):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and message in err and out == ""


def test_a_bad_config_file_is_exit_code_2(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "foo"}')
    code, _, err = _run(capsys, "params", "--config", str(path))
    assert code == 2 and "missing hidden_size; model_type 'foo' has no reader of its own" in err


def test_python_dash_m_entry_point_and_argparse_errors_exit_2():
    ok = subprocess.run([sys.executable, "-m", "estimator", "models", "--json"], capture_output=True, text=True)
    assert ok.returncode == 0 and len(json.loads(ok.stdout)) >= 40
    bad = subprocess.run([sys.executable, "-m", "estimator", "inference", "--weights", "int3"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "argument --weights: Extra weight format must be one of fp32, bf16" in bad.stderr


def test_the_estimator_package_never_imports_streamlit():
    code = "import sys, estimator, estimator.cli, estimator.hardware; print('streamlit' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_trace_measures_a_catalog_model_and_prints_the_comparison(capsys):
    pytest.importorskip("torch")
    code, out, _ = _validation(capsys, "trace", "training", "--model", "meta-llama/Llama-3.2-1B", "--layers", "2,3",
                               "--seq-len", "256", "--json")
    rows = {row["component"]: row for row in json.loads(out)}
    assert code == 0
    assert rows["weights"]["measured_bytes"] == rows["weights"]["estimate_bytes"] == 2 * 1_235_814_400
    assert abs(rows["peak"]["error_pct"]) < 5


def test_trace_without_the_optional_packages_says_how_to_install_them(capsys, monkeypatch):
    import validation.__main__

    monkeypatch.setattr(validation.__main__, "missing_dependencies", lambda: ["torch"])
    code, _, err = _validation(capsys, "trace", "training", "--model", "meta-llama/Llama-3.2-1B")
    assert code == 2 and "pip install -r requirements-validation.txt" in err


def test_trace_refuses_a_bad_model_before_tracing(capsys):
    code, _, err = _validation(capsys, "trace", "inference", "--model", "nope/x")
    assert code == 2 and "unknown model 'nope/x'" in err


def test_validate_summary_reads_the_committed_results(capsys):
    code, out, _ = _validation(capsys, "--summary")
    assert code == 0 and "| kv_cache |" in out


def test_tracing_is_the_validation_packages_command_not_the_estimators(capsys):
    code, _, err = _run(capsys, "trace", "training", "--model", "meta-llama/Llama-3.2-1B")
    assert code == 2 and "invalid choice: 'trace'" in err


def test_weight_words_users_type_are_accepted_and_a_wrong_one_lists_the_choices(capsys):
    """Issue 14 item 7: `--weights fp16` is the 16-bit row; a word naming no format is one line listing the
    choices on stderr, exit 2 (no usage dump)."""
    assert main(["inference", "--params", "7", "--weights", "fp16", "--json"]) == 0
    fp16 = json.loads(capsys.readouterr().out)
    assert main(["inference", "--params", "7", "--weights", "bf16", "--json"]) == 0
    assert fp16 == json.loads(capsys.readouterr().out)
    for word, meant in (("float16", "bf16"), ("half", "bf16"), ("BF16", "bf16"), ("int4", "awq-4bit"),
                        ("4bit", "awq-4bit"), ("8bit", "fp8"), ("q4", "q4_k_m"), ("Q4_K_M", "q4_k_m")):
        assert main(["inference", "--params", "7", "--weights", word, "--json"]) == 0, word
        assert json.loads(capsys.readouterr().out)["inputs"]["weights"] == meant, word
    assert main(["inference", "--params", "7", "--weights", "fp17"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "usage:" not in captured.err
    assert "must be one of fp32, bf16, fp8" in captured.err and "q4_k_m" in captured.err


def test_help_documents_the_aliases(capsys):
    assert main(["inference", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "fp16, float16, half, f16, bfloat16, 16bit = bf16" in text and "4bit, int4, awq = awq-4bit" in text


def test_gpus_and_models_lists_have_column_headers(capsys):
    assert main(["gpus"]) == 0
    header, first = capsys.readouterr().out.splitlines()[:2]
    assert header.split() == ["id", "usable", "name"] and first.startswith("rtx-3090")
    assert main(["models"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split() == ["id", "parameters"]


def test_a_row_that_never_fits_says_so_instead_of_zero_tokens(capsys):
    assert main(["inference", "--params", "7000", "--gpu", "t4"]) == 0
    out = capsys.readouterr().out
    # "0 tokens" as a whole number (a speed such as "650 tokens/s" also contains the characters)
    assert not re.search(r"(?<![\d,.])0 tokens", out) and "16-bit: does not fit at any length" in out


def test_gpu_option_takes_the_words_of_a_gpu_name(capsys):
    assert main(["inference", "--params", "7", "--gpu", "RTX 4090", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"]["id"] == "rtx-4090"
    assert main(["inference", "--params", "7", "--gpu", "A100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a100-40gb-sxm, a100-80gb-sxm, a100-80gb-pcie" in err


def test_lora_target_text_names_only_roles_the_model_has():
    from estimator.training import lora_target_text, parse_lora_targets

    every = parse_lora_targets("all-linear")
    dense = est.model("meta-llama/Llama-3.1-8B").architecture
    moe = est.model("Qwen/Qwen3-30B-A3B").architecture
    assert lora_target_text(dense, every) == "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj"
    assert lora_target_text(moe, every).endswith("experts, router")


def test_a_row_that_does_not_fit_prints_the_mildest_change_that_fits(capsys):
    """The page's 'what would make it fit' (issue 14 item 2) in the CLI: the issue's QLoRA example (Qwen2.5 7B,
    QLoRA 4-bit, r16, all-linear, batch 4, 2048 tokens, checkpointing on) is 28.7 GB on a 25.4 GB (CUDA total) RTX 4090;
    micro-batch 1 with accumulation holds it in 15.0 GB (tests/test_advice.py: 14.8 + the accumulated gradients)."""
    argv = ["finetune", "--model", "Qwen/Qwen2.5-7B", "--technique", "qlora-4bit", "--lora-targets", "all-linear",
            "--batch", "4", "--seq-len", "2048", "--gpu", "rtx-4090"]
    assert main([*argv, "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["gpu"]["rows"][0]
    assert row["gpus_needed"] is None
    assert row["advice"]["change"] == "Micro-batch 1 with 4 gradient-accumulation steps (same effective batch)"
    assert (row["advice"]["gpus"], round(row["advice"]["per_gpu_bytes"] / 1e9, 1)) == (1, 15.0)
    assert main(argv) == 0
    assert ("qlora-4bit: does not fit at any length; mildest change that fits: Micro-batch 1 with 4 gradient-"
            "accumulation steps (same effective batch): 14.99 GB per GPU") in capsys.readouterr().out
