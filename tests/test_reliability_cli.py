"""Reliability of the CLI (issue 6): the same validation as the API and the app; a bad input is one line on
stderr and exit code 2, never a traceback, a hang or an unbounded read. tests/test_cli.py has the contract;
this adds the nonsense inputs, hostile config files, and hypothesis over random command lines."""

import contextlib
import io
import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.cli import main
from estimator.hf_config import MAX_CONFIG_CHARS
from tests.conftest import LLAMA3_8B


def run(argv):
    """(exit code, stdout, stderr) of the CLI in this process; argparse's own errors exit with 2 too."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def assert_usage_error(argv, message):
    code, out, err = run(argv)
    assert code == 2 and out == "", (code, out, err)
    assert message in err and "Traceback" not in err and len(err) < 2_000, err


@pytest.mark.parametrize("argv, message", [
    (["inference", "--params", "nan"], "Total parameters (B) must be between 0.001 and 20,000 (got 'nan')"),
    (["inference", "--params", "inf"], "Total parameters (B) must be between 0.001 and 20,000 (got 'inf')"),
    (["inference", "--params", "-7"], "Total parameters (B) must be between 0.001 and 20,000"),
    (["inference", "--params", "1e6"], "Total parameters (B) must be between 0.001 and 20,000"),
    (["inference", "--params", "7B"], "Total parameters (B) must be a number (got '7B')"),
    (["inference", "--params", "47", "--active-params", "48"], "cannot exceed total"),
    (["inference", "--params", "7", "--seq-len", "0"], "Sequence length must be between 1 and 10,000,000"),
    (["inference", "--params", "7", "--seq-len", "1000000000"], "Sequence length must be between 1 and 10,000,000"),
    (["inference", "--params", "7", "--seq-len", "2048.0"], "Sequence length must be a whole number"),
    (["inference", "--params", "7", "--batch", "-1"], "Batch size must be between 1 and 65,536"),
    (["inference", "--params", "7", "--concurrency", "0"], "Inference concurrency must be between 1 and 65,536"),
    (["inference", "--params", "7", "--tp", "1024"], "Tensor parallel GPUs must be between 1 and 512"),
    (["inference", "--params", "7", "--prefill-chunk", "-1"], "Prefill chunk (tokens) must be between 0"),
    (["inference", "--params", "7", "--overhead-gb", "nan"], "Overhead per GPU (GB) must be between 0 and 1,000"),
    (["inference", "--params", "7", "--overhead-gb", "1e9"], "Overhead per GPU (GB) must be between 0 and 1,000"),
    (["inference", "--params", "7", "--method", "detailed"], "method 'detailed' needs the architecture"),
    (["inference", "--params", "7", "--weights", "int3"], "Extra weight format must be one of fp32, bf16"),
    (["inference", "--params", "7", "--kv-dtype", "fp3"], "KV-cache dtype must be one of bf16, fp32, fp8"),
    (["inference", "--model", "<script>alert(1)</script>"], "unknown model"),
    (["finetune", "--params", "7", "--lora-rank", "0"], "LoRA rank must be between 1 and 65,536"),
    (["finetune", "--model", "meta-llama/Llama-3.2-1B", "--lora-rank", "60000"], "lora_rank must be between 1 "
                                                                                  "and 2,048"),
    (["finetune", "--model", "meta-llama/Llama-3.2-1B", "--technique", "lora", "--lora-rank", "4096"],
     "(the model's layer width)"),
    (["finetune", "--params", "7", "--lora-targets", ""], "lora_targets must be"),
    (["finetune", "--params", "7", "--gpus", "0"], "Number of GPUs must be between 1 and 4,096"),
    (["finetune", "--params", "7", "--zero", "4"], "ZeRO stage must be one of 0, 1, 2, 3"),
    (["finetune", "--params", "7", "--param-bits", "3"], "Parameter precision (bits) must be one of 32, 16, 8, 4"),
])
def test_nonsense_options_are_one_line_on_stderr_and_exit_code_2(argv, message):
    assert_usage_error(argv, message)


def test_a_lora_rank_wider_than_the_model_is_refused_whatever_the_technique():
    """The default table has LoRA rows, and the scenario refuses the rank for any technique."""
    for extra in ([], ["--technique", "full"], ["--technique", "qlora-4bit"]):
        assert_usage_error(["finetune", "--model", "meta-llama/Llama-3.2-1B", "--lora-rank", "4096", *extra],
                           "lora_rank must be between 1 and 2,048")


def test_a_reader_that_goes_away_stops_the_output_quietly():
    """`python -m estimator models | head -1`: a closed pipe ends the CLI without a traceback."""
    code = ("import os, sys; from estimator.cli import main; r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
            "sys.stderr.write(f'exit={main([\"models\", \"--json\"])}')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "exit=1" in done.stderr and "Traceback" not in done.stderr, done.stderr


CONFIG_FILES = {
    "not JSON": (b"model_type = 'llama'", "not valid JSON"),
    "not UTF-8": (b'{"model_type": "\xff"}', "must be UTF-8 text"),
    "binary": (bytes(range(256)) * 4, "UTF-8"),
    "a list": (b"[1, 2, 3]", "must be a JSON object"),
    "too deep": (b'{"a":' * 25 + b"1" + b"}" * 25, "nested more than 20 levels"),
    "recursion bomb": (b"[" * 500_000, "nested too deeply"),
    "too large": (b"{" + b" " * MAX_CONFIG_CHARS + b"}", "too large"),
    "NaN": (json.dumps(LLAMA3_8B).replace("4096", "NaN", 1).encode(), "hidden_size must be a whole number"),
    "5,000-digit number": (json.dumps(LLAMA3_8B).replace("4096", "9" * 5_000, 1).encode(), "too many digits"),
    "long string value": (json.dumps({**LLAMA3_8B, "hidden_size": "x" * 500_000}).encode(),
                          "hidden_size must be a whole number"),
    "unknown model type": (b'{"model_type": "bert"}', "model_type 'bert' has no reader of its own"),
    "inconsistent heads": (json.dumps({**LLAMA3_8B, "num_key_value_heads": 64}).encode(), "cannot exceed"),
    "empty": (b"", "config.json is empty"),
}


@pytest.mark.parametrize("what", list(CONFIG_FILES))
def test_hostile_config_files_are_refused_with_a_short_message(tmp_path, what):
    data, message = CONFIG_FILES[what]
    path = tmp_path / "config.json"
    path.write_bytes(data)
    for command in ("params", "inference"):
        assert_usage_error([command, "--config", path], message)


def test_config_paths_that_are_not_regular_files_are_refused_without_hanging_or_reading_forever(tmp_path):
    assert_usage_error(["params", "--config", tmp_path], "cannot read")  # a directory
    assert_usage_error(["params", "--config", tmp_path / "missing.json"], "cannot read")
    assert_usage_error(["params", "--config", "/dev/zero"], "not a regular file")  # a device: never read


def test_a_config_name_that_a_terminal_cannot_print_is_cleaned(tmp_path):
    """The model name comes from the config's folder or `_name_or_path`: control characters and lone
    surrogates (undecodable file names) are dropped, so printing the table cannot fail."""
    folder = tmp_path / "evil\x1b[31m\udcff"
    try:
        folder.mkdir()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses such names")
    (folder / "config.json").write_text(json.dumps(LLAMA3_8B))
    code, out, err = run(["inference", "--config", folder / "config.json"])
    assert code == 0 and err == "" and out.startswith("evil[31m: detailed method")
    out.encode("utf-8")


def test_the_real_entry_point_exits_2_without_a_traceback():
    for argv in (["inference", "--params", "nan"], ["inference", "--seq-len", "x", "--params", "7"],
                 ["params", "--config", "/dev/zero"], ["finetune"]):
        done = subprocess.run([sys.executable, "-m", "estimator", *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr


# --- hypothesis: random command lines ---
NUMBERS = st.one_of(st.integers(-10, 10**12).map(str), st.floats().map(repr),
                    st.sampled_from(["nan", "inf", "-inf", "0", "1", "7", "70", "1e308", "2048", "x", "", "0x10"]))
OPTIONS = {
    "--params": NUMBERS, "--active-params": NUMBERS, "--model": st.sampled_from(["Qwen/Qwen3-8B", "nope", ""]),
    "--method": st.sampled_from(["auto", "quick", "detailed", "fast"]), "--batch": NUMBERS, "--seq-len": NUMBERS,
    "--overhead-gb": NUMBERS, "--gpu": st.sampled_from(["h100-sxm", "rtx-4090", "tpu"]), "--concurrency": NUMBERS,
    "--weights": st.sampled_from(["bf16", "q4_k_m", "int3"]), "--kv-dtype": st.sampled_from(["fp8", "bf16", "x"]),
    "--tp": NUMBERS, "--prefill-chunk": NUMBERS, "--technique": st.sampled_from(["full", "lora", "qlora-4bit", "x"]),
    "--optimizer": st.sampled_from(["adamw", "sgd", "x"]), "--lora-rank": NUMBERS, "--gpus": NUMBERS,
    "--lora-targets": st.sampled_from(["q,v", "all-linear", "zz", ""]), "--zero": st.sampled_from(["0", "3", "9"]),
}
FLAGS = ["--json", "--no-flash-attention", "--grad-checkpointing", "--offload-optimizer"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["inference", "finetune", "params"]), st.dictionaries(st.sampled_from(sorted(OPTIONS)),
       st.just(None), max_size=6), st.lists(st.sampled_from(FLAGS), max_size=2, unique=True), st.data())
def test_random_command_lines_exit_0_or_2_and_never_print_a_traceback(command, chosen, flags, data):
    argv = [command, *flags]
    for option in chosen:
        argv += [option, data.draw(OPTIONS[option], label=option)]
    code, out, err = run(argv)
    assert code in (0, 2), (argv, code, err)
    assert "Traceback" not in err and len(err) < 5_000
    if code == 0:
        assert err == "" and out
        if "--json" in flags:
            json.loads(out)
    else:
        assert out == "" and err
