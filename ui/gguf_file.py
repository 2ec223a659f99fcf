"""Open a local .gguf file in the app, read from its header only: the file never leaves the browser whole.

A GGUF file is 1-400 GB, so `st.file_uploader` (which sends the whole file) is not used. A small custom component
(`st.components.v2.component`, inline HTML and JavaScript) holds the chosen File in the browser and hands Python
only `file.slice(offset, offset + length)` of it, base64 in a trigger value: first FIRST_READ bytes, then the
ranges Python asks for. Python parses what it has with the CLI's reader (estimator/gguf.py `read_header`, which
asks its `read(offset, size)` for windows doubled while the header goes on, up to MAX_HEADER_BYTES); when the
header runs past the bytes handed over, the window the reader wanted is asked of the browser, in chunks of at most
CHUNK bytes, and parsing starts again. Nothing past the header's window is read: the tensor data stays on disk.

The parsed file (its name, size and header: `links.GgufFile`) is what the page keeps; the model is then
`estimator.hub.gguf_model`, the function the CLI's `--gguf PATH` uses, so the estimate is the CLI's.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace

import streamlit as st

from estimator.checks import printable_text
from estimator.gguf import FIRST_READ, MAX_HEADER_BYTES, GgufHeader, read_header
from ui import links, state
from ui.text import escape

# Bytes handed over in one message: Streamlit refuses a client message (and a run's widget state) over
# server.maxWidgetStateSize, 25 MB by default (streamlit/config.py, 1.67); 8 MiB is 11.2 MB as base64
CHUNK = 8 * 2**20
MAX_FILE_BYTES = 2**50  # a size the browser reports beyond this (1 PiB) is not a file's
MAX_NAME_CHARS = 200
# Metadata strings the page keeps: names and architectures are short; the estimate reads no long string
MAX_KEPT_STRING = 1024


@dataclass(frozen=True)
class Reading:
    """A file being read: the browser's pick (`token`), its name and size, and its first len(data) bytes."""

    token: str
    name: str
    size: int
    data: bytes = b""


class _More(Exception):
    def __init__(self, end: int):
        self.end = end


def parse(reading: Reading, limit: int = MAX_HEADER_BYTES) -> GgufHeader | int:
    """The header of the file whose first bytes are `reading.data`, or the byte the reader needs to read up to
    when its window runs past them (the file goes on); ValueError naming what is wrong with the file."""
    data, size = reading.data, reading.size

    def read(offset: int, count: int) -> bytes:
        if offset + count > len(data) and len(data) < size:
            raise _More(min(offset + count, size))
        return data[offset:offset + count]
    try:
        return read_header(read, limit)
    except _More as more:
        return more.end


def next_range(reading: Reading, end: int) -> tuple[int, int]:
    """(offset, length) of the bytes to ask the browser for next: from what it has towards `end`, one chunk."""
    have = len(reading.data)
    return have, min(end - have, CHUNK)


def received(reading: Reading | None, chunk: object) -> Reading:
    """The reading with the component's chunk added: a new pick (offset 0 under a new token) starts a new one.
    ValueError for a chunk that is not what was asked (malformed, another file's, out of order)."""
    if not isinstance(chunk, Mapping):
        raise ValueError("the browser sent no bytes of the file")
    token, name, size, offset, text = (chunk.get(k) for k in ("token", "name", "size", "offset", "data"))
    if not isinstance(token, str) or not isinstance(name, str) or not isinstance(text, str) or \
            any(isinstance(v, bool) or not isinstance(v, int) for v in (size, offset)) or \
            not 0 <= size <= MAX_FILE_BYTES:
        raise ValueError("the browser's message about the file is malformed")
    if chunk.get("error"):
        raise ValueError(f"the browser could not read the file ({printable_text(str(chunk['error']), 120)})")
    if offset == 0 or reading is None or reading.token != token:
        if offset != 0:
            raise ValueError("the browser sent a part of a file it was not asked for")
        reading = Reading(token, printable_text(name, MAX_NAME_CHARS) or "model.gguf", size)
    elif size != reading.size:
        raise ValueError("the browser sent the bytes of another file")
    elif offset != len(reading.data):
        raise ValueError("the browser sent the file's bytes out of order")
    if len(text) > 4 * (CHUNK + FIRST_READ) // 3 + 4:
        raise ValueError("the browser sent more of the file than was asked")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the browser sent the file's bytes garbled") from None
    if len(reading.data) + len(data) > reading.size:
        raise ValueError("the browser sent more bytes than the file has")
    return replace(reading, data=reading.data + data)


def opened(reading: Reading, header: GgufHeader) -> links.GgufFile:
    """What the page keeps of a file whose header was read: its name, size, header (without metadata strings longer
    than MAX_KEPT_STRING: chat templates and the like, which nothing reads) and the bytes handed over."""
    kept = tuple((k, v) for k, v in header.metadata if not (isinstance(v, str) and len(v) > MAX_KEPT_STRING))
    return links.GgufFile(reading.name, reading.size, replace(header, metadata=kept), len(reading.data),
                          links.gguf_key(reading.name, reading.data[:header.header_bytes]))


# --- the component ------------------------------------------------------------------------------------------------

HTML = """<div class="gguf"><button type="button"></button><span class="shown"></span>
<input type="file" accept=".gguf" hidden></div>"""
CSS = """.gguf {display: flex; align-items: center; gap: 0.75rem; flex-wrap: wrap; font-family: var(--st-font);
  font-size: 0.875rem; color: var(--st-text-color);}
.gguf button {font: inherit; padding: 0.375rem 0.75rem; border-radius: var(--st-base-radius, 0.5rem);
  border: 1px solid var(--st-border-color, #d5dae5); background: var(--st-secondary-background-color, #f2f5fa);
  color: inherit; cursor: pointer;}
.gguf button:hover {border-color: var(--st-primary-color); color: var(--st-primary-color);}
.gguf .shown {overflow-wrap: anywhere;}"""
# The File stays on the hidden input (`input.file`); only slices of it are read (FileReader over file.slice), and
# each is sent once: a chunk answers the pick (the first bytes) or Python's request `{token, id, offset, length}`.
JS = """export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const input = parentElement.querySelector("input");
  const button = parentElement.querySelector("button");
  button.textContent = data.button;
  button.setAttribute("aria-label", data.button);
  input.setAttribute("aria-label", data.button);
  parentElement.querySelector(".shown").textContent = data.shown || "";
  button.onclick = () => input.click();
  const send = (file, token, id, offset, length) => {
    const reader = new FileReader();
    const message = {token, id, name: file.name, size: file.size, offset};
    reader.onload = () => {
      if (token !== input.token) return;  // another file was picked meanwhile
      const url = reader.result;
      setTriggerValue("chunk", {...message, data: url.slice(url.indexOf(",") + 1)});
    };
    reader.onerror = () => setTriggerValue("chunk", {...message, data: "", error: String(reader.error)});
    reader.readAsDataURL(file.slice(offset, offset + length));
  };
  input.onchange = () => {
    const file = input.files[0];
    if (!file) return;
    input.file = file;
    input.value = "";  // the same file chosen again is read again
    input.token = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
    input.served = 0;
    send(file, input.token, 0, 0, Math.min(file.size, data.first));
  };
  const want = data.request;
  if (want && input.file && want.token === input.token && want.id > input.served) {
    input.served = want.id;
    send(input.file, want.token, want.id, want.offset, want.length);
  }
}"""
_component = st.components.v2.component("gguf_header_reader", html=HTML, css=CSS, js=JS)

MAX_SESSION_FILES = 8  # the files a session keeps (state.GGUF_FILES), for its page and its compared scenarios


def _keys(page: str, role: str) -> tuple[str, str, str]:
    """Session keys of the component, the reading in progress (with the request sent) and the last problem."""
    return f"{page}.gguf_pick.{role}", f"{page}.gguf_reading.{role}", f"{page}.gguf_problem.{role}"


def _keep(file: links.GgufFile) -> None:
    files = st.session_state.setdefault(state.GGUF_FILES, {})
    files.pop(file.key, None)
    files[file.key] = file
    while len(files) > MAX_SESSION_FILES:
        del files[next(iter(files))]
    links.add_gguf_file(file)


def _chunk_arrived(page: str, role: str) -> None:
    """The component's callback (before the page runs): add the chunk, parse, and either ask for the next range
    or keep the file as the page's model (role "gguf") or its projector ("mmproj")."""
    pick, reading_key, problem_key = _keys(page, role)
    chunk = (st.session_state.get(pick) or {}).get("chunk")
    if chunk is None:
        return
    before = st.session_state.get(reading_key)
    if isinstance(chunk, Mapping) and chunk.get("offset") != 0 and \
            (before is None or chunk.get("token") != before[0].token):
        return  # a late part of a file picked before the current one (or of a reading already ended): not asked for
    name = chunk.get("name") if isinstance(chunk, Mapping) and isinstance(chunk.get("name"), str) else "the file"
    st.session_state.pop(problem_key, None)  # a new pick, or the next part of one: the last problem is past
    try:
        reading = received(before[0] if before else None, chunk)
        found = parse(reading)
    except ValueError as err:
        st.session_state[problem_key] = f"{printable_text(name, MAX_NAME_CHARS)}: {err}"
        st.session_state.pop(reading_key, None)
        state.page_state(page)[role] = ""
        return
    if isinstance(found, int):
        offset, length = next_range(reading, found)
        request_id = (before[1]["id"] if before and before[0].token == reading.token else 0) + 1
        st.session_state[reading_key] = (reading, {"token": reading.token, "id": request_id, "offset": offset,
                                                   "length": length})
        return
    st.session_state.pop(reading_key, None)
    inputs = state.page_state(page)
    try:
        file = opened(reading, found)
        if role == links.MMPROJ and found.get("general.architecture") != "clip":
            raise ValueError("not a vision projector (its general.architecture is not 'clip')")
        _keep(file)
        model = file.key if role == links.GGUF else inputs[links.GGUF]
        if model:  # read as the page will: a header the estimator cannot read is named now, under the button
            links.gguf_resolved(model, file.key if role == links.MMPROJ else inputs[links.MMPROJ])
    except ValueError as err:
        st.session_state[problem_key] = f"{reading.name}: {err}"
        inputs[role] = ""
        return
    inputs[role] = file.key
    if role == links.GGUF:
        from ui import form  # the row follows the file's own weights, as for a quantized checkpoint

        form.row_follows(page, links.model_of(inputs).checkpoint)


def _size(n: int) -> str:
    return f"{n / 1e9:,.2f} GB" if n >= 1e9 else f"{n / 1e6:,.2f} MB" if n >= 1e6 else f"{n:,} bytes"


def picker(page: str, role: str, button: str) -> None:
    """The button that opens a .gguf file, what it holds now, and the reading's progress or problem."""
    pick, reading_key, problem_key = _keys(page, role)
    inputs = state.page_state(page)
    current = links.GGUF_FILES.get(inputs[role]) if inputs[role] else None
    reading = st.session_state.get(reading_key)
    shown = f"{current.name} ({_size(current.size)})" if current else "no file chosen"
    if reading:
        shown = f"reading {reading[0].name}: {len(reading[0].data):,} bytes so far"
    _component(key=pick, data={"button": button, "shown": shown, "first": FIRST_READ,
                               "request": reading[1] if reading else None},
               on_chunk_change=functools.partial(_chunk_arrived, page, role))
    problem = st.session_state.get(problem_key)
    if problem:
        st.error(escape(problem), icon=":material/error:")
    elif current:
        st.caption(f"Read {current.read_bytes:,} of its {current.size:,} bytes (the header is "
                   f"{current.header.header_bytes:,}); the file itself stayed on this computer.")
