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

import huggingface_hub.constants
import pytest

from estimator import catalog, hub
from estimator.architecture import parameter_counts
from estimator.hf_config import MAX_CONFIG_CHARS
from estimator.formats import CHECKPOINT
from estimator.inference import estimate_inference, inference_table
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
        # huggingface_hub reads HF_HUB_OFFLINE once, at import: imported earlier in the session (transformers, with
        # conftest's HF_HUB_OFFLINE=1) it would refuse every request to the stand-in as "offline mode"
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
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


def test_a_checkpoint_holding_more_than_its_config_says_so(standin):
    # Qwen3-8B's config with 400M more BF16 elements stored (an MTP module, say): 800 MB more than counted
    standin.add("acme/Extra", {"config.json": _config()}, safetensors={"parameters": {"BF16": 8_590_735_360},
                                                                       "total": 8_590_735_360})
    note = hub.resolve("acme/Extra").architecture.notes[0]
    assert "the config's tensors come to 16,381,470,720 bytes" in note
    assert "holds 800,000,000 bytes more than the estimate counts" in note
    matching = hub.resolve(HUB_ONLY).architecture.notes[0]
    assert "which the config's tensors match (16,381,470,720 bytes counted)" in matching


def test_a_malformed_hub_answer_is_one_line(standin):
    standin.add("acme/Odd", {"config.json": _config()}, safetensors={"parameters": {"BF16": 1}})  # no "total"
    with pytest.raises(hub.HubError, match="^the Hub's answer for acme/Odd is malformed"):
        hub.resolve("acme/Odd")


def test_without_the_hubs_metadata_the_stored_bytes_come_from_the_safetensors_headers(standin):
    import numpy as np
    from safetensors.numpy import save

    # two shards written by the safetensors library: F16 embeddings, U8-packed weights with F32 scales
    first = save({"embed": np.zeros((1000, 64), np.float16), "packed": np.zeros((64, 32), np.uint8)})
    second = save({"scales": np.zeros((64, 2), np.float32), "lm_head": np.zeros((1000, 64), np.float16)})
    index = {"metadata": {"total_size": 0}, "weight_map": {"embed": "model-00001-of-00002.safetensors",
             "packed": "model-00001-of-00002.safetensors", "scales": "model-00002-of-00002.safetensors",
             "lm_head": "model-00002-of-00002.safetensors"}}
    standin.add("acme/NoMeta", {"config.json": _config(), "model.safetensors.index.json": json.dumps(index).encode(),
                                "model-00001-of-00002.safetensors": first + bytes(2**20),  # and data past the header
                                "model-00002-of-00002.safetensors": second})
    m = hub.resolve("acme/NoMeta")
    assert m.stored_bytes == (("F16", 2 * 1000 * 64 * 2), ("U8", 64 * 32), ("F32", 64 * 2 * 4))
    shard_reads = [r[2] for r in standin.requests if r[1].endswith(".safetensors")]
    assert all(r.startswith("bytes=") for r in shard_reads) and len(shard_reads) == 4  # length, then header, x 2


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
    with pytest.raises(hub.HubError, match="^acme/Layers is not in the catalog nor in the local Hub cache, and the "
                                           "Hub .* cannot be reached"):
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


def test_hub_search_lists_matching_ids_and_nothing_when_unreachable(standin, monkeypatch):
    assert set(hub.search("qwen3")) == {HUB_ONLY}
    assert standin.requests[-1][1] == "/api/models"
    monkeypatch.setenv("HF_ENDPOINT", _closed_port_url())
    start = time.monotonic()
    assert hub.search("qwen3") == ()
    assert time.monotonic() - start <= hub.HUB_TIMEOUT_S + 1


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


# GGUF: a tiny Llama written by llama.cpp's gguf package, its tensors in six ggml types (tests/gguf_files.py)
def _tiny_llama_weight_bytes() -> int:
    """Bytes of every tensor of tests/gguf_files.py, by hand: rows x (row length / block) x block bytes."""
    q8_0, q6_k, q4_k, q5_k, iq4_xs, f32 = 34 / 32, 210 / 256, 144 / 256, 176 / 256, 136 / 256, 4
    outside = 1000 * 256 * q8_0 + 1000 * 256 * q6_k + 256 * f32  # token_embd, output, output_norm
    layer = (2 * 256 * f32 + 256 * 256 * q4_k + 128 * 256 * q8_0 + 256 * 256 * iq4_xs  # norms, q, v, o
             + 512 * 256 * q4_k + 512 * 256 * q5_k + 256 * 512 * q6_k)  # gate, up, down
    k = 128 * 256 * q6_k + 128 * 256 * q4_k  # layer 0's attn_k in Q6_K, layer 1's in Q4_K
    return round(outside + 2 * layer + k)


def test_tiny_gguf_weights_are_exact_for_a_mix_of_six_types(tmp_path):
    from gguf_files import write_tiny_llama

    m = hub.read_gguf_file(str(write_tiny_llama(tmp_path / "tiny.gguf")))
    a = m.architecture
    assert _tiny_llama_weight_bytes() == 1_288_144
    assert a.checkpoint.weight_bytes(a).total == m.stored_total == 1_288_144
    # Q4_K: q and gate of both layers, and layer 1's k
    assert dict(m.stored_bytes)["Q4_K"] == 2 * (256 * 144 + 512 * 144) + 128 * 144
    assert (a.name, a.num_layers, a.hidden_size, a.num_kv_heads, a.vocab_size, a.max_position_embeddings) == \
        ("Tiny Llama", 2, 256, 2, 1000, 4096)
    row = estimate_inference(InferenceScenario(a, weights=CHECKPOINT))
    assert row.component("weights") == 1_288_144


def test_a_moe_gguf_reads_as_qwen3_moe_with_exact_expert_bytes(tmp_path):
    from estimator.architecture import tensors
    from gguf_files import write_tiny_qwen3_moe

    m = hub.read_gguf_file(str(write_tiny_qwen3_moe(tmp_path / "moe.gguf")))
    a = m.architecture
    assert (a.model_type, a.num_experts, a.experts_per_token, a.moe_intermediate_size, a.head_dim, a.qk_norm_params) \
        == ("qwen3_moe", 8, 2, 256, 64, 2 * 64)
    # 8 experts x (gate and up: 256 rows of 256 in Q4_K; down: 256 rows of 256 in Q6_K), per layer
    experts = 8 * (2 * 256 * 144 + 256 * 210)
    assert dict(a.checkpoint.groups_bytes)[("expert_gate", 0)] == 8 * 256 * 144
    assert sum(a.checkpoint.tensor_bytes(a, t) for t in tensors(a) if t.is_expert) == 2 * experts
    outside = 512 * 8 * 34 + 512 * 210 + 256 * 4  # token_embd Q8_0, output Q6_K, output_norm F32
    attention = (256 + 128 + 128) * 8 * 34 + 256 * 8 * 34 + 2 * 64 * 4  # q, k, v, o in Q8_0; q and k norms
    per_layer = attention + 2 * 256 * 4 + 8 * 256 * 4 + experts  # 2 norms, the F32 router, the experts
    assert m.stored_total == a.checkpoint.weight_bytes(a).total == outside + 2 * per_layer


def test_gguf_arrays_are_kept_as_arrays_not_counts(tmp_path):
    from estimator.gguf import GgufArray, file_reader, read_header
    from gguf_files import write_tiny_llama

    header = read_header(file_reader(str(write_tiny_llama(tmp_path / "tiny.gguf"))))
    assert header.get("tokenizer.ggml.tokens") == GgufArray(1000)  # the 1,000 tokens: a length, not a number
    assert header.get("llama.attention.head_count_kv") == 2


def test_cli_gguf_file(tmp_path):
    from gguf_files import write_projector, write_tiny_llama

    path = write_tiny_llama(tmp_path / "tiny.gguf")
    done = _cli("params", "--gguf", str(path), "--json", env={})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stored_bytes"]["IQ4_XS"] == 2 * 256 * 136
    with_projector = _cli("inference", "--gguf", str(path), "--mmproj", str(write_projector(tmp_path / "mmproj.gguf")),
                          "--weights", "checkpoint", "--json", env={})
    assert json.loads(with_projector.stdout)["rows"][0]["components"]["vision"] == 2 * PROJECTOR_PARAMS
    lone = _cli("params", "--model", "Qwen/Qwen3-8B", "--mmproj", str(path), env={})
    assert (lone.returncode, lone.stderr) == (2, "error: --mmproj goes with --gguf (the model file it projects images "
                                                 "into)\n")
    not_clip = _cli("params", "--gguf", str(path), "--mmproj", str(path), env={})
    assert (not_clip.returncode, not_clip.stderr) == (2, "error: tiny.gguf is not a vision projector (its "
                                                         "general.architecture is not 'clip')\n")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGML" + bytes(100))
    done = _cli("inference", "--gguf", str(bad), env={})
    assert (done.returncode, done.stderr) == (2, "error: not a GGUF file (its first bytes are not 'GGUF')\n")


# the projector's elements: patch embedding 588 x 64, one 64 x 64 attention weight, a 64 norm, 64 -> 256 projection
PROJECTOR_PARAMS = 588 * 64 + 64 * 64 + 64 + 64 * 256


def test_a_hub_gguf_quant_is_read_from_its_header_by_range_requests(standin, tmp_path):
    from gguf_files import write_projector, write_tiny_llama

    data = write_tiny_llama(tmp_path / "tiny.gguf").read_bytes() + bytes(2 * 2**20)  # 2 MB of "tensor data" more
    standin.add("someone/Tiny-GGUF", {"Tiny-Q4_K_M.gguf": data, "Tiny-Q8_0.gguf": b"GGUF",
                                      "mmproj-F16.gguf": write_projector(tmp_path / "mmproj.gguf").read_bytes(),
                                      "README.md": b"# Tiny"})
    m = hub.resolve("someone/Tiny-GGUF:q4_k_m")
    a = m.architecture
    assert (m.source, m.stored_total, a.checkpoint.weight_bytes(a).total) == (hub.HUB, 1_288_144, 1_288_144)
    commit = commit_of("someone/Tiny-GGUF@main")
    reads = [r for r in standin.requests if r[1].endswith(".gguf")]
    assert reads == [("GET", f"/someone/Tiny-GGUF/resolve/{commit}/{name}", f"bytes=0-{256 * 1024 - 1}")
                     for name in ("Tiny-Q4_K_M.gguf", "mmproj-F16.gguf")]  # one 256 KiB window of a 3.3 MB file
    assert a.vision_parameters == PROJECTOR_PARAMS
    row = estimate_inference(InferenceScenario(a, weights=CHECKPOINT))
    assert (row.component("weights"), row.component("vision")) == (1_288_144, 2 * PROJECTOR_PARAMS)
    with pytest.raises(hub.HubError, match="has no .gguf file of 'Q2_K'; it has Q4_K_M, Q8_0"):
        hub.resolve("someone/Tiny-GGUF:Q2_K")


@pytest.mark.parametrize("quant, files", [
    ("Q4_K_M", ["Qwen3-8B-Q4_K_M.gguf"]),
    ("q4_k", ["Qwen3-8B-Q4_K.gguf"]),  # not Q4_K_M nor UD-Q4_K_XL
    ("UD-Q4_K_XL", ["UD-Q4_K_XL/Qwen3-8B-UD-Q4_K_XL-00001-of-00002.gguf",
                    "UD-Q4_K_XL/Qwen3-8B-UD-Q4_K_XL-00002-of-00002.gguf"]),
    ("Q8_0", []),
])
def test_the_files_of_a_quant_tag_are_found_by_name_as_llama_cpp_names_them(quant, files):
    names = ["Qwen3-8B-Q4_K_M.gguf", "Qwen3-8B-Q4_K.gguf", "mmproj-Q4_K_M.gguf", "README.md",
             "UD-Q4_K_XL/Qwen3-8B-UD-Q4_K_XL-00002-of-00002.gguf", "UD-Q4_K_XL/Qwen3-8B-UD-Q4_K_XL-00001-of-00002.gguf"]
    assert hub.gguf_files(names, quant) == files


def test_serve_imports_llama_server_hf_with_a_hub_gguf_quant(standin, tmp_path):
    from gguf_files import write_tiny_llama

    standin.add("someone/Tiny-GGUF", {"Tiny-Q4_K_M.gguf": write_tiny_llama(tmp_path / "tiny.gguf").read_bytes()})
    done = _cli("serve", "--gpu", "rtx-4090", "--json", "--command",
                "llama-server -hf someone/Tiny-GGUF:Q4_K_M -c 4096",
                env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["inputs"]["weights"] == "checkpoint"
    # the file's tensors, all on the GPU but the token embedding (llama.cpp keeps the input layer on the CPU)
    assert out["per_gpu"]["weights"] == 1_288_144 - 1000 * 256 // 32 * 34


def test_a_server_that_ignores_the_range_is_cut_off(standin, tmp_path):
    from gguf_files import write_tiny_llama

    data = write_tiny_llama(tmp_path / "tiny.gguf").read_bytes() + bytes(8 * 2**20)
    standin.add("someone/Tiny-GGUF", {"Tiny-Q4_K_M.gguf": data})
    standin.ignore_range = True  # 200 and the whole 9 MB file: only the window asked for is taken
    assert hub.resolve("someone/Tiny-GGUF:Q4_K_M").stored_total == 1_288_144


def test_a_gguf_header_larger_than_the_limit_is_refused(tmp_path):
    from estimator.gguf import bytes_reader, read_header
    from gguf_files import write_tiny_llama

    data = write_tiny_llama(tmp_path / "tiny.gguf").read_bytes()
    with pytest.raises(ValueError, match="GGUF header is larger than 10,000 bytes"):
        read_header(bytes_reader(data), limit=10_000)  # the header takes 19.6 kB (1,000 tokens and scores)
    with pytest.raises(ValueError, match="GGUF file ends inside its header"):
        read_header(bytes_reader(data[:5_000]))


def test_without_huggingface_hub_the_core_runs_and_the_hub_path_says_how_to_install_it():
    # python -S: no site-packages, so no huggingface_hub; the catalog still answers
    run = [sys.executable, "-S", "-m", "estimator", "params", "--model"]
    done = subprocess.run([*run, "someone/not-in-the-catalog"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (done.returncode, done.stderr) == (2, f"error: reading a model from the Hugging Face Hub needs "
                                                 f"huggingface_hub: {hub.INSTALL_HINT}\n")
    done = subprocess.run([*run, "Qwen/Qwen3-8B"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and "total_params: 8,190,735,360" in done.stdout


def test_serve_imports_a_command_naming_a_hub_model(standin):
    done = _cli("serve", "--gpu", "h100-sxm", "--json", "--command", f"vllm serve {HUB_ONLY} --max-model-len 8192",
                env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    catalog_run = _cli("serve", "--gpu", "h100-sxm", "--json", "--command", "vllm serve Qwen/Qwen3-8B --max-model-len "
                       "8192", env=dict(os.environ))
    assert out["kv_cache_tokens"] == json.loads(catalog_run.stdout)["kv_cache_tokens"]
    assert f"vllm serve {HUB_ONLY}" in out["command"]


def test_a_share_link_carries_the_hub_id_and_revision_not_the_config(standin):
    from ui import links

    links.resolved_model.cache_clear()  # the app's cache of resolved ids: this test's stand-in answers
    link = links.decode({"v": "1", "p": "inference", "model": "acme/Layers@v1"}, "inference")
    assert (link.warnings, link.state["src"], link.state["model"]) == ([], "catalog", "acme/Layers@v1")
    assert links.model_of(link.state).num_layers == 20  # the config at v1
    params = links.encode("inference", link.state, link.view)
    assert params["model"] == "acme/Layers@v1" and "cfg" not in params
