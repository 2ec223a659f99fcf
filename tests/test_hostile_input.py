"""Hostile input, round 2 (issue 10): what an attacker tried against a fresh clone and what failed.

Each test here failed on the code before the fix: a config whose layer or expert count is expanded before it is
checked, the CLI waiting forever on a FIFO, empty `--config` / `--gpu` values, a config with a byte-order mark,
and the generator that found the first failure (any integer field set to 10^6..10^12).
"""

import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from app_helpers import APP, TIMEOUT, start
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

import estimator as est
from ui import links
from estimator.hf_config import FIELD_LIMITS, parse_config_text

ROOT = Path(__file__).resolve().parents[1]
BILLION_LAYER_MIXTRAL = {"model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32,
                         "num_hidden_layers": 1_000_000_000, "vocab_size": 32000, "num_local_experts": 8,
                         "num_experts_per_tok": 2, "intermediate_size": 14336}
MEMORY_CAP = 2 * 1024**3  # address space of the CLI under test: the old code grew past 5 GB on this config


def cli(*argv: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """The CLI in a subprocess with a memory cap and a timeout (a hang or a runaway allocation fails the test
    instead of the machine)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    return subprocess.run([sys.executable, "-m", "estimator", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=cap)


def assert_one_line_exit_2(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_a_billion_layer_config_is_refused_at_once_by_the_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(BILLION_LAYER_MIXTRAL))
    started = time.monotonic()
    result = cli("params", "--config", str(path))
    assert_one_line_exit_2(result, "num_hidden_layers must be between 1 and 2,000, got 1,000,000,000")
    assert time.monotonic() - started < 10  # the old code took 10 s and 4 GB for 10^8 layers


@pytest.mark.parametrize("field, value, message", [
    ("num_hidden_layers", 10**12, "num_hidden_layers must be between 1 and 2,000"),
    ("num_local_experts", 10**9, "num_local_experts must be between 1 and 16,384"),
    ("num_experts_per_tok", 10**7, "num_experts_per_tok must be between 1 and 16,384"),
    ("vocab_size", 10**9, "vocab_size must be between 1 and 10,000,000"),
])
def test_counts_that_size_a_loop_are_bounded_before_anything_is_built(field, value, message):
    with pytest.raises(ValueError, match=message):
        est.architecture_from_config({**BILLION_LAYER_MIXTRAL, "num_hidden_layers": 32, field: value})


def test_per_layer_lists_longer_than_any_model_are_refused():
    config = {**BILLION_LAYER_MIXTRAL, "num_hidden_layers": 32, "sliding_window": 4096,
              "layer_types": ["sliding_attention"] * 2_001}
    with pytest.raises(ValueError, match="layer_types has 2,001 entries; a model has at most 2,000 layers"):
        est.architecture_from_config(config)


def test_a_billion_layer_config_in_a_link_is_refused_in_well_under_a_second():
    start()  # a warm session first: the timed run measures the link, not the imports
    link = {"cfg": links.pack_config(json.dumps(BILLION_LAYER_MIXTRAL))}
    assert len(link["cfg"]) < 200  # ~190 characters took the server to 4.2 GB and 18.7 s
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(link)
    started = time.perf_counter()
    at.run()
    assert time.perf_counter() - started < 1.0
    assert not at.exception
    assert "num\\_hidden\\_layers must be between 1 and 2,000" in at.warning[0].value


def test_the_cli_refuses_a_fifo_at_once_instead_of_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    assert_one_line_exit_2(cli("params", "--config", str(fifo), timeout=10), "not a regular file")


def test_an_empty_config_path_and_an_empty_gpu_are_errors_not_defaults():
    assert_one_line_exit_2(cli("params", "--config", ""), "--config needs the path of a config.json file")
    assert_one_line_exit_2(cli("inference", "--params", "7", "--gpu", ""), "unknown GPU ''")


def test_a_config_saved_with_a_byte_order_mark_is_read(tmp_path):
    text = json.dumps(BILLION_LAYER_MIXTRAL | {"num_hidden_layers": 32, "num_key_value_heads": 8})
    assert parse_config_text("\ufeff" + text) == json.loads(text)
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())  # as Notepad writes UTF-8
    result = cli("params", "--config", str(path), "--json")
    assert result.returncode == 0, result.stderr
    # Mixtral 8x7B's published count: 46,702,792,704 parameters
    assert json.loads(result.stdout)["total_params"] == 46_702_792_704


REAL_CONFIGS = [est.catalog.raw_config(m.id) for m in est.models()]
# Bounded counts that every reader reads when its family's config has them (a field such as sliding_window is
# ignored by a reader whose family turns it off, so a huge value there is harmless)
READ_BY_EVERY_READER = {"num_hidden_layers", "n_layer", "vocab_size", "hidden_size", "n_embd", "num_attention_heads",
                        "n_head", "num_local_experts", "num_experts", "n_routed_experts"}
INTEGER_FIELDS = sorted({key for config in REAL_CONFIGS for key, value in config.items()
                         if isinstance(value, int) and not isinstance(value, bool)} | set(FIELD_LIMITS))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(REAL_CONFIGS), st.sampled_from(INTEGER_FIELDS), st.integers(10**6, 10**12))
def test_any_integer_field_set_huge_is_answered_fast_with_bounded_memory(real_config, field, value):
    """The generator that found the billion-layer failure: whatever field is set to 10^6..10^12, reading the
    config takes under 100 ms of CPU and a few MB; a count that sizes the model (layers, experts, width, heads,
    vocabulary) beyond its limit is refused."""
    config = {**real_config, field: value}
    est.architecture_from_config(real_config)  # warm the per-process caches (a checkpoint's ignore-list matching)
    tracemalloc.start()
    started = time.process_time()
    try:
        est.architecture_from_config(config)
        refused = False
    except ValueError as err:
        refused = True
        assert str(err)
    elapsed, (_, peak) = time.process_time() - started, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 0.1 and peak < 16 * 1024**2, (field, value, elapsed, peak)
    if field in real_config and field in READ_BY_EVERY_READER and FIELD_LIMITS[field] < value:
        assert refused, (field, value)
