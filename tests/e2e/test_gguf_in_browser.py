"""A local .gguf file opened in a real browser (ui/gguf_file.py): Playwright sets the file into the component's file
input, as a person choosing it does; the page reads its header through file.slice() and estimates it as the CLI's
`--gguf` does, while the browser sends the server a few MB of a 5 GB file."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from estimator.cli import main as cli_main
from tests.e2e.browser import TIMEOUT_MS, idle, open_app, radio, set_number, settle, wait_for_totals

gguf_files = pytest.importorskip("tests.gguf_files")
MODEL_INPUT = "input[type=file][accept='.gguf']"  # the component's file inputs: the model's, then the projector's


def _cli(capsys, *argv) -> dict:
    capsys.readouterr()
    assert cli_main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _sent_bytes(page) -> list[int]:
    """Sizes of the websocket frames the browser sends the server from now on (every byte of the file goes there)."""
    sizes: list[int] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sizes.append(len(frame))))
    return sizes


def _open_file(page, path, index: int = 0) -> None:
    settle(page, lambda: page.locator(MODEL_INPUT).nth(index).set_input_files(str(path)))


def test_an_opened_gguf_file_is_estimated_from_its_header_as_the_cli_does(page, app_url, tmp_path, capsys):
    path = gguf_files.write_header_only(tmp_path / "Qwen3-8B-Q4_K_M.gguf")  # 3.4 MB header, 5.0 GB file
    sent = _sent_bytes(page)
    open_app(page, app_url)
    radio(page, "GGUF")
    _open_file(page, path)
    page.get_by_text("uploaded file Qwen3-8B-Q4_K_M.gguf").wait_for(timeout=TIMEOUT_MS)
    idle(page)
    rows = _cli(capsys, "inference", "--gguf", str(path))["rows"]
    expected = {f"Inference ({row}{', q4_k_m' if row == 'checkpoint' else ''})": f"{r['total_bytes'] / 1e9:.1f}"
                for r, row in zip(rows, ("checkpoint", "16-bit, BF16", "8-bit, FP8", "4-bit, AWQ"))}
    assert wait_for_totals(page, expected) == expected  # 7.5, 18.9, 12.0, 8.6 GB
    summary = page.locator("[data-testid='stCaptionContainer']", has_text="uploaded file").inner_text()
    assert "8.19 B parameters · qwen3 · 36 layers · 32 heads (8 KV) · stored 5.02 GB (Q4_K 3.70 GB" in summary
    size = path.stat().st_size
    assert page.get_by_text(f"Read 4,194,304 of its {size:,} bytes").count() == 1
    # what the browser sent while the header was read: the 4 MiB window as base64, not the file
    assert 4 * 2**20 * 4 / 3 < sum(sent) < 8 * 2**20 < size / 500
    before = sum(sent)
    set_number(page, "Sequence length", 32768)  # a rerun keeps the file, and so does a trip to another page
    rows = _cli(capsys, "inference", "--gguf", str(path), "--seq-len", "32768")["rows"]
    assert wait_for_totals(page, {"Inference (checkpoint, q4_k_m)": f"{rows[0]['total_bytes'] / 1e9:.1f}"})
    assert sum(sent) - before < 100_000  # the header's bytes are not sent again with the next input
    settle(page, page.get_by_role("link", name="Fine-tuning").click)
    settle(page, page.get_by_role("link", name="Inference").click)
    page.get_by_text("uploaded file Qwen3-8B-Q4_K_M.gguf").wait_for(timeout=TIMEOUT_MS)
    query = parse_qs(urlsplit(page.url).query)  # the link: the header's config and the recipe, not the file
    assert (query["w"], query["row"], query["seq"]) == (["q4_k_m"], ["custom"], ["32768"]) and "cfg" in query


def test_a_projector_file_adds_its_tower_as_the_clis_mmproj_does(page, app_url, tmp_path, capsys):
    model = gguf_files.write_tiny_llama(tmp_path / "tiny.gguf")
    projector = gguf_files.write_projector(tmp_path / "mmproj-F16.gguf")
    open_app(page, app_url)
    radio(page, "GGUF")
    _open_file(page, model)
    page.get_by_text("uploaded file tiny.gguf").wait_for(timeout=TIMEOUT_MS)
    settle(page, page.get_by_text("Vision projector (mmproj), optional").click)
    _open_file(page, projector, index=1)
    capsys.readouterr()
    assert cli_main(["inference", "--gguf", str(model), "--mmproj", str(projector)]) == 0
    vision = next(line for line in capsys.readouterr().out.splitlines() if "Vision: the projector" in line)[4:]
    settle(page, page.get_by_text("Assumptions", exact=True).click)
    page.get_by_text(vision).wait_for(timeout=TIMEOUT_MS)  # 58,... parameters, counted 16-bit, as the CLI says


@pytest.mark.parametrize("name, data, message", [
    ("notes.gguf", b"hello, not a model", "notes.gguf: not a GGUF file (its first bytes are not 'GGUF')"),
    ("cut.gguf", "first 5000 bytes", "cut.gguf: GGUF file ends inside its header"),
    # 64 MiB handed over in messages of 8 MiB (11.2 MB as base64, under Streamlit's 25 MB), then refused
    ("huge.gguf", "strings of 40 and 30 MB", "huge.gguf: GGUF header is larger than 67,108,864 bytes"),
])
def test_a_bad_file_is_one_message_naming_the_problem(page, app_url, tmp_path, name, data, message):
    path = tmp_path / name
    if name == "huge.gguf":
        gguf_files.write_huge_header(path)
    else:
        tiny = gguf_files.write_tiny_llama(tmp_path / "tiny.gguf").read_bytes()
        path.write_bytes(tiny[:5000] if isinstance(data, str) else data)
    open_app(page, app_url)
    radio(page, "GGUF")
    _open_file(page, path)
    page.locator("[data-testid='stAlert']", has_text=message).wait_for(timeout=3 * TIMEOUT_MS)
    assert page.get_by_text("Traceback").count() == 0
