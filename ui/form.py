"""Input widgets shared by the Inference and Fine-tuning pages.

Each widget takes its label, help, range or choices and default from the input's declaration
(`estimator.inputs.Input`, via `ui.links.fields`), so the form, the link codec and the CLI cannot disagree. A
widget reads and writes the page state through `ui.state.bind`; invalid combinations are reported by the page,
never by resetting what the user typed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import streamlit as st

from estimator import catalog, parameter_counts
from estimator.scenarios import LORA_SHORT_NAMES
from estimator.training import LORA_ROLES
from ui import links, state
from ui.text import escape

SOURCE_LABELS = {"params": "Parameter count", "catalog": "Catalog model", "config": "config.json"}
# "auto" is detailed whenever the method choice shows (a catalog model or a config.json)
METHOD_LABELS = {"auto": "Detailed (from the architecture)", "quick": "Quick (reference rule of thumb)"}


@st.cache_data(show_spinner=False)
def catalog_models() -> dict[str, str]:
    """Catalog model id -> 'name (id)', for the searchable picker."""
    return {m.id: f"{m.name} ({m.id})" for m in catalog.models()}


@st.cache_data(show_spinner=False)
def catalog_gpus() -> dict[str, str]:
    """GPU id -> 'name · usable GB', smallest first."""
    gpus = sorted(catalog.gpus(), key=lambda g: (g.memory_bytes, g.name))
    return {g.id: f"{g.name} · {g.memory_bytes / 1e9:.1f} GB" for g in gpus}


def _store(page: str, key: str, value: object) -> object:
    state.page_state(page)[key] = value
    return value


def number(page: str, name: str, *, step: float, fmt: str | None = None, placeholder: str | None = None) -> object:
    """A number input with the input's range; floats or whole numbers as the input's default."""
    spec = links.fields(page)[name]
    kind = spec.kind
    widget_key, now = state.bind(page, name)
    value = st.number_input(spec.label, min_value=kind(spec.low), max_value=kind(spec.high), value=now,
                            step=kind(step), format=fmt, help=spec.help, placeholder=placeholder, key=widget_key)
    return _store(page, name, value)


def choice(page: str, name: str, labels: Mapping | None = None, *, radio: bool = False,
           disabled: bool = False) -> object:
    """A select box (or horizontal radio) over the input's choices (led by None when it may be left unset)."""
    spec = links.fields(page)[name]
    options = ((None,) if spec.optional else ()) + tuple(spec.choices)
    show: Callable[[object], str] = (lambda value: labels.get(value, str(value))) if labels else str
    widget = st.radio if radio else st.selectbox
    # a select box shows a None value as its placeholder ("Choose an option" unless told): the None label instead
    extra = {"horizontal": True} if radio else {"placeholder": show(None)} if spec.optional else {}
    widget_key, now = state.bind(page, name)
    value = widget(spec.label, options, index=options.index(now), format_func=show, help=spec.help,
                   disabled=disabled, key=widget_key, **extra)
    return _store(page, name, value)


def flag(page: str, name: str) -> bool:
    spec = links.fields(page)[name]
    widget_key, now = state.bind(page, name)
    return _store(page, name, st.toggle(spec.label, value=now, help=spec.help, key=widget_key))


def unit(page: str) -> str:
    """GB / GiB toggle (a view setting shared by all pages)."""
    widget_key, now = state.bind(page, "unit")
    value = st.segmented_control("Unit", ("GB", "GiB"), default=now, required=True, key=widget_key,
                                 label_visibility="collapsed",
                                 help="GB = 10^9 bytes (the reference document); GiB = 2^30 bytes (nvidia-smi)")
    state.view()["unit"] = value
    return value


def target_gpu(page: str) -> str:
    """The GPU the fit numbers and the solid chart line refer to (a view setting shared by all pages)."""
    gpus = catalog_gpus()
    widget_key, now = state.bind(page, "gpu")
    value = st.selectbox("Target GPU", tuple(gpus), index=tuple(gpus).index(now), format_func=gpus.get, key=widget_key,
                         help="Drawn as a solid line on the charts. Memory is what frameworks can allocate.")
    state.view()["gpu"] = value
    return value


def lora_targets(page: str) -> str:
    """The adapted projections, as a multiselect over q, k, v, o, gate, up, down."""
    short_to_hf = dict(zip(LORA_SHORT_NAMES, LORA_ROLES))
    spec = links.fields(page)["lora_targets"]
    widget_key, now = state.bind(page, "lora_targets", lambda text: text.split(",") if text else [])
    chosen = st.multiselect(spec.label, LORA_SHORT_NAMES, default=now, format_func=short_to_hf.get,
                            help="Linear layers that get adapters. PEFT's default for Llama-style models is "
                                 "q_proj, v_proj; 'all-linear' is all of them.", key=widget_key)
    return _store(page, "lora_targets", ",".join(name for name in LORA_SHORT_NAMES if name in chosen))


def model_source(page: str) -> None:
    """Where the model comes from: a parameter count (quick method), a catalog model or a config.json
    (detailed method), with the inputs of that source."""
    widget_key, now = state.bind(page, "src")
    src = st.segmented_control("Model", links.SOURCES, default=now, format_func=SOURCE_LABELS.get, required=True,
                               key=widget_key,
                               help="A parameter count uses the reference document's rule of thumb. A catalog "
                                    "model or a config.json gives the detailed, architecture-aware estimate.")
    _store(page, "src", src)
    if src == "params":
        widget_key, now = state.bind(page, "moe")
        moe = st.segmented_control("Model type", (False, True), default=now, required=True, key=widget_key,
                                   format_func=lambda m: "MoE" if m else "Dense")
        _store(page, "moe", moe)
        total, active = st.columns(2) if moe else (st.container(), None)
        with total:
            number(page, "params", step=1.0, fmt="%.2f")
        if moe:
            with active:
                number(page, "active", step=1.0, fmt="%.2f", placeholder="= total")
    elif src == "catalog":
        models = catalog_models()
        widget_key, now = state.bind(page, "model")
        model_id = st.selectbox(links.fields(page)["model"].label, tuple(models), index=tuple(models).index(now),
                                format_func=models.get, key=widget_key, on_change=_row_follows_checkpoint,
                                args=(page,),
                                help="Type to search. Values are read from each model's published config.json.")
        _store(page, "model", model_id)
        entry = catalog.model(model_id)
        counts = parameter_counts(entry.architecture)
        active = f", {counts.active / 1e9:,.2f} B active" if counts.active != counts.total else ""
        url = entry.source.split()[0]
        source = f" · [config.json]({url})" if url.startswith("https://") else ""
        st.caption(f"{counts.total / 1e9:,.2f} B parameters{active} · `{entry.architecture.model_type}`{source}")
    else:
        config_text(page)
    if src != "params":
        method(page)


def _row_follows_checkpoint(page: str) -> None:
    """Picking a quantized checkpoint (a catalog model, a pasted or uploaded config.json) selects its own format's
    row (the table's first) for the fit and Compare; picking another model from that row goes back to the default
    row."""
    if page != "inference":
        return
    if st.session_state.get(f"{page}.src") == "config":
        try:
            checkpoint = links.config_architecture(st.session_state.get(f"{page}.cfg", "")).checkpoint
        except ValueError:
            return  # the page shows the config's error; the row stays as it was
    else:
        checkpoint = catalog.model(st.session_state[f"{page}.model"]).architecture.checkpoint
    row_key = f"{page}.{links.ROW[page]}"
    if checkpoint is not None and checkpoint.format_id:
        st.session_state[row_key] = "checkpoint"
    elif st.session_state.get(row_key) == "checkpoint":
        st.session_state[row_key] = links.fields(page)[links.ROW[page]].default


def method(page: str) -> str:
    """Detailed (the input's "auto": the architecture is known here) or quick, for comparison."""
    spec = links.fields(page)["method"]
    widget_key, now = state.bind(page, "method", lambda value: "quick" if value == "quick" else "auto")
    value = st.radio(spec.label, tuple(METHOD_LABELS), index=tuple(METHOD_LABELS).index(now),
                     format_func=METHOD_LABELS.get, horizontal=True, key=widget_key,
                     help="Detailed counts every tensor of the architecture. Quick applies the reference document's "
                          "rule of thumb to the parameter count, for comparison.")
    return _store(page, "method", value)


def config_text(page: str) -> None:
    """Upload or paste a Hugging Face config.json; an upload fills the text box, which is what counts."""
    box, _ = state.bind(page, "cfg")
    upload = st.file_uploader("Upload config.json", type=["json"], key=f"{page}.upload",
                              help=f"At most {links.MAX_LINK_CONFIG_CHARS // 1000} KB. Nothing is downloaded or run.")
    seen = f"{page}.upload_seen"
    if upload is not None and st.session_state.get(seen) != upload.file_id:
        st.session_state[seen] = upload.file_id
        data = upload.getvalue()
        if len(data) > links.MAX_LINK_CONFIG_CHARS:
            st.error(f"{len(data):,} bytes is too large for a config.json (the limit is "
                     f"{links.MAX_LINK_CONFIG_CHARS:,}); is this the right file?")
        else:
            try:
                st.session_state[box] = data.decode("utf-8")
                _row_follows_checkpoint(page)
            except UnicodeDecodeError:
                st.error("config.json must be UTF-8 text")
    text = st.text_area("...or paste it here", value=st.session_state[box], key=box, height=180,
                        max_chars=links.MAX_LINK_CONFIG_CHARS, on_change=_row_follows_checkpoint, args=(page,),
                        placeholder='{"model_type": "llama", "hidden_size": 4096, ...}')
    _store(page, "cfg", text)
    if text.strip():
        try:
            a = links.config_architecture(text)
        except ValueError:
            return  # the page shows the error where the results would be
        counts = parameter_counts(a)
        st.caption(f"Read as `{a.model_type}` ({escape(a.name)}): {counts.total / 1e9:,.2f} B parameters, "
                   f"{a.num_layers} layers, {a.num_kv_heads} KV heads")
