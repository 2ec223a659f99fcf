"""A .gguf file opened in the app (ui/gguf_file.py), fed to the Python side exactly as its browser component
feeds it: base64 slices of the file, first min(size, 256 KiB) bytes, then each range Python asks for. The model is
the CLI's `--gguf` model of the same file, and only the header's window is ever handed over."""

from __future__ import annotations

import base64
import contextlib
import io
import itertools
import json
import os

import pytest
from app_helpers import assert_clean, segmented, start, texts, totals

from estimator import cli, hub
from estimator.architecture import parameter_counts
from estimator.gguf import FIRST_READ, file_reader, read_header
from estimator.kv_cache import kv_bytes_per_token
from ui import gguf_file, links, state

gguf_files = pytest.importorskip("gguf_files")
MIB = 2**20


def _chunk(path, offset: int, length: int, token: str = "pick-1") -> dict:
    """The component's message for bytes [offset, offset + length) of `path` (FileReader over file.slice)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read(length)
    return {"token": token, "name": path.name, "size": path.stat().st_size, "offset": offset,
            "data": base64.b64encode(data).decode("ascii")}


def _open(path, limit: int | None = None):
    """The whole exchange: the pick's first slice, then every range Python asks for; (file kept, ranges asked)."""
    reading = gguf_file.received(None, _chunk(path, 0, min(path.stat().st_size, FIRST_READ)))
    asked = []
    while isinstance(found := gguf_file.parse(reading, *([limit] if limit else [])), int):
        offset, length = gguf_file.next_range(reading, found)
        asked.append((offset, length))
        reading = gguf_file.received(reading, _chunk(path, offset, length))
    return gguf_file.opened(reading, found), asked


def _cli_json(*args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*args, "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def qwen3_file(tmp_path_factory):
    """The Qwen3-8B-shaped Q4_K_M header of tests/gguf_files.py in a sparse file of its full size (5.0 GB)."""
    return gguf_files.write_header_only(tmp_path_factory.mktemp("gguf") / "Qwen3-8B-Q4_K_M.gguf")


def test_a_tiny_file_is_read_from_its_first_slice_and_is_the_clis_model(tmp_path):
    path = gguf_files.write_tiny_llama(tmp_path / "tiny.gguf")
    file, asked = _open(path)
    assert asked == [] and file.read_bytes == FIRST_READ < path.stat().st_size  # 256 KiB of a 1.3 MB file
    links.add_gguf_file(file)
    app, cli_model = links.gguf_resolved(file.key), hub.read_gguf_file(str(path))
    assert app.architecture == cli_model.architecture and app.stored_bytes == cli_model.stored_bytes
    assert app.stored_total == 1_288_144  # tests/test_hub.py works these bytes out by hand


def test_a_large_header_is_asked_for_in_doubling_windows_never_the_file(qwen3_file):
    file, asked = _open(qwen3_file)
    # estimator/gguf.py's window: 256 KiB, doubled while the 3.4 MB header goes on; each range is what it lacks
    assert asked == [(256 * 1024, 256 * 1024), (512 * 1024, 512 * 1024), (MIB, MIB), (2 * MIB, 2 * MIB)]
    assert file.read_bytes == 4 * MIB and file.header.header_bytes < 4 * MIB
    assert file.size > 1000 * file.read_bytes  # 5.0 GB: the tensor data stayed on disk
    links.add_gguf_file(file)
    m = links.gguf_resolved(file.key)
    assert m.architecture == hub.read_gguf_file(str(qwen3_file)).architecture
    assert parameter_counts(m.architecture).total == 8_190_735_360  # Qwen3-8B's published count
    # Q4_K_M's split (llama.cpp use_more_bits: 18 of 36 layers keep attn_v and ffn_down in Q6_K), by hand:
    h, kv, ffn, vocab = 4096, 1024, 12288, 151_936
    q4_k = h * vocab + 36 * (2 * h * h + h * kv + 2 * h * ffn) + 18 * (h * kv + ffn * h)
    q6_k = h * vocab + 18 * (h * kv + ffn * h)
    assert dict(m.stored_bytes) == {"Q4_K": q4_k * 144 // 256, "Q6_K": q6_k * 210 // 256,
                                    "F32": 4 * (h + 36 * (2 * h + 2 * 128))}


def test_a_window_over_a_chunk_is_handed_over_in_chunks_as_the_clis_reader_reads_it(tmp_path):
    # a 20 MB general.description, then zeros to 1 GiB (sparse): windows of 20 MB and more, in chunks of 8 MiB
    path = gguf_files.write_tiny_llama(tmp_path / "long.gguf", description="x" * 20_000_000)
    os.truncate(path, 2**30)
    file, asked = _open(path)
    assert [offset for offset, _ in asked] == list(itertools.accumulate([FIRST_READ] + [n for _, n in asked[:-1]]))
    assert max(length for _, length in asked) == gguf_file.CHUNK  # no message over one chunk
    cli_read = []
    read = file_reader(str(path))
    header = read_header(lambda offset, size: cli_read.append(offset + size) or read(offset, size))
    assert file.read_bytes == max(cli_read) < 50 * MIB  # the CLI's window on the local file, byte for byte
    assert header.get("general.description") == "x" * 20_000_000  # read through, not kept (MAX_KEPT_STRING)
    assert file.header.tensors == header.tensors and file.header.header_bytes == header.header_bytes
    assert file.header.metadata == tuple(kv for kv in header.metadata if kv[0] != "general.description")


@pytest.mark.parametrize("data, limit, message", [
    (b"GGML" + bytes(100), None, "not a GGUF file (its first bytes are not 'GGUF')"),
    ("first 5000", None, "GGUF file ends inside its header"),  # the whole file is 5,000 bytes
    ("whole", 10_000, "GGUF header is larger than 10,000 bytes"),  # its header takes 19.6 kB
])
def test_a_bad_file_is_one_message_naming_the_problem(tmp_path, data, limit, message):
    tiny = gguf_files.write_tiny_llama(tmp_path / "tiny.gguf").read_bytes()
    path = tmp_path / "bad.gguf"
    path.write_bytes(tiny[:5000] if data == "first 5000" else tiny if data == "whole" else data)
    with pytest.raises(ValueError) as err:
        _open(path, limit)
    assert str(err.value) == message


def test_a_header_over_64_mib_is_refused_with_no_message_over_a_chunk(tmp_path):
    path = gguf_files.write_huge_header(tmp_path / "huge.gguf")
    reading = gguf_file.received(None, _chunk(path, 0, FIRST_READ))
    with pytest.raises(ValueError) as err:
        while isinstance(found := gguf_file.parse(reading), int):
            offset, length = gguf_file.next_range(reading, found)
            assert length <= gguf_file.CHUNK
            reading = gguf_file.received(reading, _chunk(path, offset, length))
    assert str(err.value) == "GGUF header is larger than 67,108,864 bytes"
    assert len(reading.data) == 64 * MIB  # the window doubled from 40 MB, capped at the limit: never past it


def test_a_message_that_is_not_what_was_asked_is_refused(tmp_path):
    path = gguf_files.write_tiny_llama(tmp_path / "tiny.gguf")
    first = gguf_file.received(None, _chunk(path, 0, 1000))
    for chunk, message in [({**_chunk(path, 1000, 10), "data": "%%%"}, "garbled"),
                           (_chunk(path, 2000, 10), "out of order"),
                           (_chunk(path, 1000, 10, token="another pick"), "a part of a file it was not asked for"),
                           ({**_chunk(path, 1000, 10), "size": 1005}, "the bytes of another file"),
                           ({**_chunk(path, 1000, 10), "size": "big"}, "malformed"),
                           ("bytes", "no bytes")]:
        with pytest.raises(ValueError, match=message):
            gguf_file.received(first, chunk)
    with pytest.raises(ValueError, match="more bytes than the file has"):
        gguf_file.received(None, {**_chunk(path, 0, 1000), "size": 500})
    again = gguf_file.received(first, _chunk(path, 0, 10, token="pick-2"))  # a new pick starts over
    assert (again.token, len(again.data)) == ("pick-2", 10)


def test_a_share_link_carries_the_headers_config_and_the_files_recipe(tmp_path):
    file, _ = _open(gguf_files.write_tiny_llama(tmp_path / "tiny.gguf"))
    links.add_gguf_file(file)
    page = {**links.defaults("inference"), "src": "gguf", "gguf": file.key, "row": "checkpoint",
            "engine": "llama.cpp", "e.weights": "checkpoint"}
    params = links.encode("inference", page, links.view_defaults())
    assert (params["w"], params["row"], params["e.w"]) == ("q4_k_m", "custom", "q4_k_m")  # general.file_type 15
    opened = links.decode(params, "inference")
    assert opened.warnings == [] and opened.state["src"] == "config"
    a, linked = links.model_of(page), links.model_of(opened.state)
    assert (linked.name, parameter_counts(linked), kv_bytes_per_token(linked)) == \
        (a.name, parameter_counts(a), kv_bytes_per_token(a))
    assert linked.checkpoint is None  # the exact per-tensor bytes stay with the file


def test_a_file_the_app_no_longer_holds_is_named():
    with pytest.raises(ValueError, match="no longer held by the app; open it again"):
        links.model_of({**links.defaults("inference"), "src": "gguf", "gguf": "0" * 24})


def test_the_page_estimates_an_opened_file_as_the_cli_does(qwen3_file):
    """AppTest cannot drive a custom component: the session gets the file as the component's callback leaves it
    (the session's files and the page's key), and the page must show the CLI's numbers for that file."""
    file, _ = _open(qwen3_file)
    at = start()
    segmented(at, "inference.src").set_value("gguf").run()
    assert "Open a .gguf file to estimate from its header" in at.info[0].value
    at.session_state[state.GGUF_FILES] = {file.key: file}
    at.session_state[state.PAGES]["inference"].update(gguf=file.key, row="checkpoint")
    at.run()
    assert_clean(at)
    shown = texts(at)
    assert "8.19 B parameters · `qwen3` · 36 layers · 32 heads (8 KV) · stored 5.02 GB (Q4_K 3.70 GB, Q6_K 1.32 GB, " \
        "F32 1.23 MB) · uploaded file Qwen3-8B-Q4_K_M.gguf" in shown
    assert f"Read 4,194,304 of its {file.size:,} bytes" in shown
    rows = _cli_json("inference", "--gguf", str(qwen3_file))["rows"]
    assert [r["scenario"] for r in rows] == ["checkpoint", "16-bit", "8-bit", "4-bit"]
    assert totals(at) == [round(r["total_bytes"] / 1e9, 1) for r in rows] == [7.5, 18.9, 12.0, 8.6]
    at.selectbox(key="inference.engine").set_value("llama.cpp").run()  # the engine gets the file's own weights
    assert_clean(at)
    serve = _cli_json("serve", "--gguf", str(qwen3_file), "--engine", "llama.cpp", "--gpu", "rtx-4090")
    assert f"{serve['kv_cache_tokens']:,}" in [m.value for m in at.metric]
    assert serve["command"].startswith("llama-server -m Qwen3-8B-Q4_K_M.gguf ")  # the file's name, as on the page
    assert serve["command"] in [c.value for c in at.code]


def test_the_page_keeps_no_long_metadata_string_and_refuses_a_header_of_too_many_tensors(tmp_path):
    """A chat template (here 300,000 characters in general.description) is not kept: the page holds parsed headers
    in memory, and the estimate reads no long string; the file's model is unchanged without it."""
    path = gguf_files.write_tiny_llama(tmp_path / "tiny.gguf", description="x" * 300_000)
    file, _ = _open(path)
    assert read_header(file_reader(str(path))).get("general.description") == "x" * 300_000
    assert file.header.get("general.description") is None
    assert file.header.get("general.architecture") == "llama"
    assert links.gguf_key(path.name, b"") != file.key
    too_many = b"GGUF" + (3).to_bytes(4, "little") + (100_001).to_bytes(8, "little") + (0).to_bytes(8, "little")
    with pytest.raises(ValueError, match="declares 100,001 tensors and 0 keys; the limits are 100,000"):
        read_header(lambda offset, size: too_many[offset:offset + size])
