"""Models by Hub id, against a local Hub stand-in (tests/hub_standin.py): the real huggingface_hub talks to a real
(local) HTTP server; nothing is mocked and nothing leaves the machine. Each test has its own HF_HOME."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from estimator import catalog, hub
from estimator.architecture import parameter_counts
from estimator.hf_config import MAX_CONFIG_CHARS
from estimator.inference import inference_table
from estimator.kv_cache import kv_bytes_per_token
from estimator.scenarios import InferenceScenario
from hub_standin import HubStandIn, commit_of

pytest.importorskip("huggingface_hub")
ROOT = Path(__file__).resolve().parents[1]
QWEN3_8B = catalog.raw_config("Qwen/Qwen3-8B")
HUB_ONLY = "someone/Qwen3-8B-copy"  # a Hub-only id holding Qwen3-8B's config: not in the catalog
TOKEN = "hf_test_token"
# Qwen3-8B's safetensors as the Hub reports them: 8,190,735,360 BF16 elements (the model card's 8.2B)
SAFETENSORS = {"parameters": {"BF16": 8_190_735_360}, "total": 8_190_735_360}


def _config(**changes) -> bytes:
    return json.dumps({**QWEN3_8B, **changes}).encode()


@pytest.fixture
def standin(tmp_path, monkeypatch):
    with HubStandIn(token=TOKEN) as server:
        server.add(HUB_ONLY, {"config.json": _config()}, safetensors=SAFETENSORS)
        server.add("acme/Gated-8B", {"config.json": _config()}, gated=True)
        old = commit_of("acme/Layers@v1")
        server.add("acme/Layers", {"config.json": _config(num_hidden_layers=40)}, revisions={"v1": old},
                   file_revisions={old: {"config.json": _config(num_hidden_layers=20)}})
        server.add("acme/Huge", {"config.json": b"{" + b" " * MAX_CONFIG_CHARS + b"}"})
        server.add("acme/Broken", {"config.json": b'{"model_type": "llama", "hidden_size": 4096,'})
        for name, value in (("HF_ENDPOINT", server.url), ("HF_HOME", str(tmp_path / "hf")),
                            ("HF_HUB_DISABLE_TELEMETRY", "1")):
            monkeypatch.setenv(name, value)
        for name in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "TRANSFORMERS_OFFLINE"):
            monkeypatch.delenv(name, raising=False)
        yield server


def _closed_port_url() -> str:
    """An endpoint nothing listens on: the Hub cannot be reached."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_hub_only_id_gives_the_catalog_numbers_for_the_same_config(standin):
    m = hub.resolve(HUB_ONLY)
    ours, theirs = m.architecture, catalog.model("Qwen/Qwen3-8B").architecture
    assert (m.source, str(m.ref), m.commit) == (hub.HUB, HUB_ONLY, commit_of(HUB_ONLY + "@main"))
    assert parameter_counts(ours) == parameter_counts(theirs)
    assert parameter_counts(ours).total == 8_190_735_360  # Qwen3-8B: 8.2B (model card)
    # K and V: 2 x 36 layers x 8 kv heads x 128 head_dim x 2 bytes
    assert kv_bytes_per_token(ours) == kv_bytes_per_token(theirs) == 2 * 36 * 8 * 128 * 2
    assert [r.total for r in inference_table(InferenceScenario(ours))] == \
        [r.total for r in inference_table(InferenceScenario(theirs))]


def test_stored_bytes_come_from_the_hubs_safetensors_metadata(standin):
    m = hub.resolve(HUB_ONLY)
    assert m.stored_bytes == (("BF16", 8_190_735_360 * 2),)
    assert f"{8_190_735_360 * 2:,} bytes BF16" in m.architecture.notes[0]


def test_a_catalog_id_is_answered_by_the_catalog_without_a_request(standin):
    m = hub.resolve("Qwen/Qwen3-8B")
    assert (m.source, str(m.ref)) == (hub.CATALOG, "Qwen/Qwen3-8B")
    assert standin.requests == []


def test_a_revision_reads_the_config_at_that_commit(standin):
    assert hub.resolve("acme/Layers").architecture.num_layers == 40
    m = hub.resolve("acme/Layers@v1")
    assert (m.architecture.num_layers, m.commit) == (20, commit_of("acme/Layers@v1"))
    assert ("GET", "/api/models/acme/Layers/revision/v1", "") in standin.requests
    with pytest.raises(hub.HubError, match="acme/Layers has no revision 'v9'"):
        hub.resolve("acme/Layers@v9")


def test_a_gated_model_needs_a_token_and_says_how_to_give_one(standin, monkeypatch):
    with pytest.raises(hub.HubError, match="gated model on the Hub: set HF_TOKEN") as err:
        hub.resolve("acme/Gated-8B")
    assert "\n" not in str(err.value)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert hub.resolve("acme/Gated-8B").architecture.num_layers == 36
    with pytest.raises(hub.HubError) as wrong:  # a wrong token: still gated, and the token is never repeated
        hub.resolve("acme/Gated-8B", token="hf_wrong_secret")
    assert "hf_wrong_secret" not in str(wrong.value)


def test_a_missing_model_is_one_line(standin):
    with pytest.raises(hub.HubError, match="^nobody/nothing is not in the catalog nor a model on the Hub"):
        hub.resolve("nobody/nothing")


def test_offline_the_cached_config_answers_and_an_uncached_id_is_one_fast_line(standin, monkeypatch):
    online = hub.resolve(HUB_ONLY)
    monkeypatch.setenv("HF_ENDPOINT", _closed_port_url())
    cached = hub.resolve(HUB_ONLY)
    assert cached.source == hub.HUB_CACHE
    assert parameter_counts(cached.architecture) == parameter_counts(online.architecture)
    start = time.monotonic()
    with pytest.raises(hub.HubError, match="^acme/Layers is not in the catalog nor in the local Hub cache, and the Hub .* cannot be reached"):
        hub.resolve("acme/Layers")
    assert time.monotonic() - start < 5
    monkeypatch.setenv("HF_ENDPOINT", standin.url)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(standin.requests)
    assert hub.resolve(HUB_ONLY).source == hub.HUB_CACHE
    assert len(standin.requests) == before  # HF_HUB_OFFLINE: no request at all


def test_an_oversized_config_is_refused_before_it_is_downloaded(standin):
    with pytest.raises(hub.HubError, match=f"config.json is too large \\({MAX_CONFIG_CHARS + 2:,} bytes"):
        hub.resolve("acme/Huge")
    assert not [r for r in standin.requests if r[0] == "GET" and r[1].endswith("/config.json")]


def test_a_malformed_config_is_the_pasted_configs_error(standin):
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        hub.resolve("acme/Broken")


@pytest.mark.parametrize("text, expected", [
    ("org/name", hub.ModelRef("org/name")),
    ("org/name@v1.0", hub.ModelRef("org/name", "v1.0")),
    ("unsloth/Qwen3-8B-GGUF:Q4_K_M", hub.ModelRef("unsloth/Qwen3-8B-GGUF", "", "Q4_K_M")),
    ("org/name@refs/pr/1:Q8_0", hub.ModelRef("org/name", "refs/pr/1", "Q8_0")),
    ("qwen3-8b", None), ("../etc/passwd", None), ("org/../x", None), ("org/name@../../x", None),
    ("a/" + "b" * 100, None), ("org/na me", None), ("org/námé", None),
])
def test_model_references_parse_as_llama_cpp_and_ollama_write_them(text, expected):
    assert hub.parse_ref(text) == expected


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "estimator", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=60)


def test_cli_params_json_of_a_hub_id(standin):
    done = _cli("params", "--model", HUB_ONLY, "--json", env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["total_params"], out["kv_cache_bytes_per_token"]) == (8_190_735_360, 2 * 36 * 8 * 128 * 2)
    assert (out["source"], out["id"], out["stored_bytes"]) == ("Hub", HUB_ONLY, {"BF16": 16_381_470_720})


def test_cli_inference_of_a_hub_id_equals_the_catalog_entry(standin):
    hub_run = _cli("inference", "--model", HUB_ONLY, "--json", env=dict(os.environ))
    catalog_run = _cli("inference", "--model", "Qwen/Qwen3-8B", "--json", env=dict(os.environ))
    assert hub_run.returncode == catalog_run.returncode == 0, hub_run.stderr
    assert [r["total_bytes"] for r in json.loads(hub_run.stdout)["rows"]] == \
        [r["total_bytes"] for r in json.loads(catalog_run.stdout)["rows"]]


@pytest.mark.parametrize("model, message", [
    ("acme/Gated-8B", "error: acme/Gated-8B is a gated model on the Hub"),
    ("nobody/nothing", "error: nobody/nothing is not in the catalog nor a model on the Hub"),
    ("acme/Layers", "error: acme/Layers is not in the catalog nor in the local Hub cache"),
])
def test_cli_gated_missing_and_unreachable_exit_2_with_one_line(standin, model, message):
    env = dict(os.environ)
    if model == "acme/Layers":
        env["HF_ENDPOINT"] = _closed_port_url()
    start = time.monotonic()
    done = _cli("inference", "--model", model, env=env)
    assert time.monotonic() - start < 20
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr
