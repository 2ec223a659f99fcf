"""Input widgets shared by the Inference and Fine-tuning pages.

Each widget takes its label, help, range or choices and default from the input's declaration
(`estimator.inputs.Input`, via `ui.links.fields`), so the form, the link codec and the CLI cannot disagree. A
widget reads and writes the page state through `ui.state.bind`; invalid combinations are reported by the page,
never by resetting what the user typed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import streamlit as st

from estimator import catalog, hub, parameter_counts
from estimator.architecture import Architecture
from estimator.scenarios import LORA_SHORT_NAMES, canonical_lora_targets
from estimator.training import LORA_ROLES, LORA_TARGET_PRESETS
from estimator.units import in_unit
from estimator.vision import image_tokens
from ui import links, state
from ui.text import escape

SOURCE_LABELS = {"params": "Parameters", "catalog": "Catalog", "config": "config.json", "gguf": "GGUF"}
# "auto" is detailed whenever the method choice shows (a catalog model or a config.json)
METHOD_LABELS = {"auto": "Detailed (from the architecture)", "quick": "Quick (reference rule of thumb)"}


@st.cache_data(show_spinner=False)
def catalog_models() -> dict[str, str]:
    """Catalog model id -> 'name (id)', for the searchable picker."""
    return {m.id: f"{m.name} ({m.id})" for m in catalog.models()}


GPU_GROUPS = ("consumer", "workstation", "datacenter", "apple")  # the order of the GPU picker's groups
GPU_VENDORS = ("NVIDIA", "AMD", "Apple")  # and of the vendors within a group


@st.cache_data(show_spinner=False)
def catalog_gpus(unit: str = "GB") -> dict[str, str]:
    """GPU id -> 'name · usable memory' in the unit shown (GB or GiB): grouped by kind (consumer cards, workstation
    cards, datacenter, Apple silicon) and vendor, smallest first within a group."""
    def rank(value: str, order: tuple[str, ...]) -> int:
        return order.index(value) if value in order else len(order)
    gpus = sorted(catalog.gpus(), key=lambda g: (rank(g.kind, GPU_GROUPS), rank(g.vendor, GPU_VENDORS),
                                                 g.memory_bytes, g.name))
    return {g.id: f"{g.name} · {in_unit(g.memory_bytes, unit):.1f} {unit}" for g in gpus}


def _store(page: str, key: str, value: object) -> object:
    state.page_state(page)[key] = value
    return value


def number(page: str, name: str, *, step: float, fmt: str | None = None, placeholder: str | None = None) -> object:
    """A number input for the input's range; floats or whole numbers as the input's default.

    The widget itself has no bounds: a browser number box refuses an out-of-range value without a word (the field
    turns red and Enter does nothing, while the results keep the old value). Whatever is typed is kept and used,
    and a value outside the declared range is named under the field with the range ("Total parameters (B) must
    be between 0.001 and 20,000, got 70,000"), as the CLI says it; the results then say why there is no estimate
    instead of showing the previous one. The help gives the range too."""
    spec = links.fields(page)[name]
    kind = spec.kind
    widget_key, now = state.bind(page, name)
    shown_range = f" Valid: {spec.range_text}{' ' + spec.unit if spec.unit and spec.unit != 'B' else ''}." \
        if spec.range_text else ""
    value = st.number_input(spec.label, value=now, step=kind(step), format=fmt, help=spec.help + shown_range,
                            placeholder=placeholder, key=widget_key)
    problem = spec.out_of_range(value)
    if problem:
        st.error(problem, icon=":material/error:")
    return _store(page, name, value)


def number_pair(page: str, left: tuple[str, float], right: tuple[str, float]) -> None:
    """Two whole-number inputs side by side, each given as (name, step)."""
    for column, (name, step) in zip(st.columns(2), (left, right)):
        with column:
            number(page, name, step=step)


def choice(page: str, name: str, labels: Mapping | None = None, *, radio: bool = False,
           disabled: bool = False, on_change: Callable | None = None) -> object:
    """A select box (or horizontal radio) over the input's choices (led by None when it may be left unset);
    `on_change(page)` runs when the user picks another."""
    spec = links.fields(page)[name]
    options = ((None,) if spec.optional else ()) + tuple(spec.choices)
    show: Callable[[object], str] = (lambda value: labels.get(value, str(value))) if labels else str
    widget = st.radio if radio else st.selectbox
    # a select box shows a None value as its placeholder ("Choose an option" unless told): the None label instead
    extra = {"horizontal": True} if radio else {"placeholder": show(None)} if spec.optional else {}
    widget_key, now = state.bind(page, name)
    if on_change is not None:
        extra.update(on_change=on_change, args=(page,))
    value = widget(spec.label, options, index=options.index(now), format_func=show, help=spec.help,
                   disabled=disabled, key=widget_key, **extra)
    return _store(page, name, value)


def framework_changed(page: str) -> None:
    """A framework preset sets the inputs it names (estimator.frameworks, for the selected row's technique):
    those the previous preset set go back to their defaults first, then the new preset's values are written into
    the page state, and their widgets are seeded again from it. Every input stays editable afterwards."""
    values, chosen = state.page_state(page), st.session_state[f"{page}.framework"]
    fresh = links.defaults(page)
    before = links.preset_defaults(page, values)
    for name in before:
        values[name] = fresh[name]
    values["framework"] = chosen
    after = links.preset_defaults(page, values)
    values.update(after)
    for name in {*before, *after}:
        st.session_state.pop(f"{page}.{name}", None)
    if "lora_targets" in {*before, *after}:
        st.session_state.pop(f"{page}.lora_preset", None)


def flag(page: str, name: str) -> bool:
    """A toggle. Inputs that apply to some models only (`ONLY_FOR`) show only for those; otherwise the saved
    value is kept as it is (it changes nothing for this model)."""
    spec = links.fields(page)[name]
    if not applies(page, name):
        return state.page_state(page)[name]
    widget_key, now = state.bind(page, name)
    return _store(page, name, st.toggle(spec.label, value=now, help=spec.help, key=widget_key))


def _architecture(page: str) -> Architecture | None:
    """The page's model architecture (None for a parameter count or a config.json that does not read)."""
    inputs = state.page_state(page)
    if inputs["src"] == "params":
        return None
    try:
        model = links.model_of(inputs)
    except ValueError:
        return None
    return model if isinstance(model, Architecture) else None


def _multimodal(a: Architecture | None) -> bool:
    return a is not None and a.vision_tower is not None


# inputs that mean something only for some architectures: shown only for those
ONLY_FOR: dict[str, Callable[[Architecture | None], bool]] = {
    "mla_latent_cache": lambda a: a is not None and a.is_mla,  # DeepSeek-style multi-head latent attention
    "images": _multimodal, "image_width": _multimodal, "image_height": _multimodal,  # an image processor is known
}


def image_tokens_caption(page: str) -> None:
    """How many context tokens the images become, in the model's own processor ('' when an input is invalid)."""
    inputs, a = state.page_state(page), _architecture(page)
    try:
        per_image = image_tokens(a.vision_tower, inputs["image_width"], inputs["image_height"])
    except (AttributeError, TypeError, ValueError):  # no tower, or a size the field already names as invalid
        return
    count = inputs["images"]
    total = f"; {count} per sequence add {count * per_image:,} tokens to it" if isinstance(count, int) and count else ""
    st.caption(f"An image of this size is {per_image:,} tokens in the model's image processor{total}.")


def applies(page: str, name: str) -> bool:
    """Whether an input means something for the page's model (`ONLY_FOR`); the others are not drawn, and keep
    their saved value."""
    test = ONLY_FOR.get(name)
    return test is None or test(_architecture(page))


# The objective's own inputs (estimator/objectives.py) and the objectives they apply to: the page shows them only then
OBJECTIVE_INPUTS = {"precompute_ref_log_probs": ("dpo", "kto"), "num_generations": ("grpo",),
                    "max_completion_length": ("grpo",), "beta": ("grpo",), "vllm_gpu_memory_utilization": ("grpo",),
                    "vllm_gpu_gb": ("grpo",)}


def objective_shows(objective: str, name: str) -> bool:
    """Whether the objective's input `name` applies to `objective` (the page keeps the others' values as they are)."""
    return objective in OBJECTIVE_INPUTS[name]


def unit(page: str) -> str:
    """GB / GiB toggle (a view setting shared by all pages)."""
    widget_key, now = state.bind(page, "unit")
    value = st.segmented_control("Unit", ("GB", "GiB"), default=now, required=True, key=widget_key,
                                 label_visibility="collapsed",
                                 help="GB = 10^9 bytes (the reference document); GiB = 2^30 bytes (nvidia-smi)")
    state.view()["unit"] = value
    return value


def target_gpu(page: str) -> str:
    """The GPU the fit numbers and the solid chart line refer to (a view setting shared by all pages). Its
    options give the usable memory in the unit shown; typing searches the names by substring ('A100' lists the
    A100s, not every name with the letters a, 1, 0, 0 in order, as the default fuzzy search does)."""
    unit = st.session_state.get(f"{page}.unit", state.view()["unit"])  # the unit toggle may be drawn below
    gpus = catalog_gpus(unit if unit in ("GB", "GiB") else "GB")
    widget_key, now = state.bind(page, "gpu")
    value = st.selectbox("Target GPU", tuple(gpus), index=tuple(gpus).index(now), format_func=gpus.get, key=widget_key,
                         filter_mode="contains",
                         help="Drawn as a solid line on the charts. Memory is what frameworks can allocate "
                              "(an '80GB' H100 has 79.2 GiB usable). Type to search by name.")
    state.view()["gpu"] = value
    return value


LORA_PRESET_LABELS = {"q,v": "q, v", "attention": "Attention", "all-linear": "All linear", "custom": "Custom"}
LORA_PRESETS = {name: canonical_lora_targets(name) for name in LORA_TARGET_PRESETS}  # preset -> 'q,k,v,...'
MOE_ONLY_TARGETS = ("experts", "router")


def lora_preset_of(targets: str) -> str:
    """The preset a targets value is ('q,v', 'attention', 'all-linear'), else 'custom'."""
    return next((name for name, value in LORA_PRESETS.items() if value == targets), "custom")


def lora_targets(page: str) -> str:
    """The adapted projections: a preset (PEFT's q, v default, attention, all-linear) or a custom list of q, k, v,
    o, gate, up, down (and, for a MoE model, experts and router)."""
    short_to_hf = dict(zip(LORA_SHORT_NAMES, LORA_ROLES))
    spec = links.fields(page)["lora_targets"]
    saved = state.page_state(page)["lora_targets"]
    preset_key = f"{page}.lora_preset"
    if preset_key not in st.session_state:
        st.session_state[preset_key] = lora_preset_of(saved)
    preset = st.segmented_control(  # the default is the value, as `state.bind` explains
        spec.label, tuple(LORA_PRESET_LABELS), format_func=LORA_PRESET_LABELS.get, required=True, key=preset_key,
        default=st.session_state[preset_key],
        on_change=_lora_preset_changed, args=(page,),
        help="Linear layers that get adapters. q, v: PEFT's default for Llama-style models (q_proj, v_proj); "
             "Attention: q, k, v, o; All linear: PEFT's 'all-linear', every projection (on a MoE model also the "
             "routed experts and the router); Custom: choose them.")
    if preset != "custom":
        return _store(page, "lora_targets", LORA_PRESETS[preset])
    a = _architecture(page)
    names = [n for n in LORA_SHORT_NAMES if n not in MOE_ONLY_TARGETS or a is None or a.is_moe]  # roles it has
    widget_key, now = state.bind(page, "lora_targets", lambda text: text.split(",") if text else [])
    chosen = st.multiselect("Projections", names, default=[n for n in now if n in names], format_func=short_to_hf.get,
                            key=widget_key, placeholder="Choose the projections",
                            help="The projections that get adapters (PEFT's target_modules).")
    return _store(page, "lora_targets", ",".join(name for name in LORA_SHORT_NAMES if name in chosen))


def _lora_preset_changed(page: str) -> None:
    """A preset sets the targets; Custom starts from the targets in use, so they can be edited."""
    preset = st.session_state[f"{page}.lora_preset"]
    if preset != "custom":
        state.page_state(page)["lora_targets"] = LORA_PRESETS[preset]
    st.session_state[f"{page}.lora_targets"] = [n for n in state.page_state(page)["lora_targets"].split(",") if n]


def model_source(page: str) -> None:
    """Where the model comes from: a parameter count (quick method), a catalog model, a config.json or a local
    .gguf file (detailed method), with the inputs of that source."""
    widget_key, now = state.bind(page, "src")
    src = st.segmented_control("Model", links.SOURCES, default=now, format_func=SOURCE_LABELS.get, required=True,
                               key=widget_key, width="stretch",
                               help="A parameter count uses the reference document's rule of thumb. A catalog "
                                    "model, a config.json or a .gguf file (read from its header only) gives the "
                                    "detailed, architecture-aware estimate.")
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
        model_box(page)
    elif src == "config":
        config_text(page)
    else:
        gguf_source(page)
    if src != "params":
        method(page)


@st.cache_data(show_spinner=False, ttl=3600, max_entries=256)
def hub_search(query: str) -> tuple[str, ...]:
    """Hub model ids matching `query` (estimator/hub.search; () offline or unreachable), cached for an hour."""
    return hub.search(query)


def _hub_token_from_secrets() -> None:
    """A deployment's HF_TOKEN secret (Streamlit secrets) as huggingface_hub's environment variable, for gated and
    private models; the environment's own HF_TOKEN wins. Never shown, logged or put in a link."""
    if os.environ.get("HF_TOKEN"):
        return
    try:
        token = st.secrets.get("HF_TOKEN") if st.secrets.load_if_toml_exists() else None
    except Exception:  # noqa: BLE001 - a secrets file Streamlit cannot read: run without a token
        return
    if token:
        os.environ["HF_TOKEN"] = str(token)


def model_box(page: str) -> None:
    """The model box: type to search the catalog, or type a Hugging Face Hub id (org/name, org/name@revision,
    org/repo:Q4_K_M) and press Enter; under it, the resolved architecture and where it came from."""
    _hub_token_from_secrets()
    models = dict(catalog_models())
    widget_key, now = state.bind(page, "model")
    ref = hub.parse_ref(now) if now not in models else None
    if now not in models:
        models[now] = now  # a Hub id, shown as typed
    if ref is not None:  # similar ids on the Hub, when it can be reached
        models.update((found, found) for found in hub_search(ref.repo_id.split("/")[-1]) if found not in models)
    model_id = st.selectbox(links.fields(page)["model"].label, tuple(models), index=tuple(models).index(now),
                            format_func=lambda m: models.get(m, m), key=widget_key, accept_new_options=True,
                            on_change=_row_follows_checkpoint, args=(page,),
                            help="Type to search the catalog, or type any Hugging Face Hub id (org/name, "
                                 "org/name@revision, or org/repo:Q4_K_M for a GGUF quant) and press Enter: its "
                                 "config.json (or GGUF header) is read from the Hub. Set HF_TOKEN for gated models.")
    try:
        model_id = hub.model_id(model_id)
    except ValueError:
        pass  # the results name what is wrong with it
    _store(page, "model", model_id)
    try:
        with st.spinner("Reading the model from the Hugging Face Hub..."):
            resolved = links.resolved_model(model_id)
    except ValueError:
        return  # the results show the error
    st.caption(model_summary(resolved))


def model_summary(m: hub.ResolvedModel) -> str:
    """One line under the model box: parameters, family, layers, heads, stored bytes and the source."""
    a = m.architecture
    counts = parameter_counts(a)
    active = f", {counts.active / 1e9:,.2f} B active" if counts.active != counts.total else ""
    shape = f"`{a.model_type}` · {a.num_layers} layers · {a.num_heads} heads ({a.num_kv_heads} KV)"
    stored = f" · stored {m.stored_total / 1e9:,.2f} GB ({', '.join(d for d, _ in m.stored_bytes)})" \
        if m.stored_bytes else ""
    if m.source == hub.GGUF_FILE:  # bytes by ggml type: a quant mix is the point of a GGUF file
        kinds = ", ".join(f"{kind} {_size(size)}" for kind, size in m.stored_bytes)
        stored = f" · stored {_size(m.stored_total)} ({kinds})"
        source = f" · uploaded file {escape(m.ref.repo_id)}"
    elif m.source == hub.CATALOG:
        url = catalog.model(m.ref.repo_id).source.split()[0]
        source = f" · catalog, [config.json]({url})" if url.startswith("https://") else " · catalog"
    else:
        page_url = f"{hub.settings().endpoint}/{m.ref.repo_id}"
        commit = f" @ `{m.commit[:7]}`" if m.commit else ""
        source = f" · {escape(m.source)}: [{escape(m.ref.repo_id)}]({page_url}){commit}"
    return f"{counts.total / 1e9:,.2f} B parameters{active} · {shape}{stored}{source}"


def _size(n: int) -> str:
    """Bytes in GB, or MB below 1 GB (a small file's types would all read 0.00 GB)."""
    return f"{n / 1e9:,.2f} GB" if n >= 1e9 else f"{n / 1e6:,.2f} MB"


def gguf_source(page: str) -> None:
    """A local .gguf file (and its vision projector), read from its header only (ui/gguf_file.py); under it the
    resolved model, and what a share link carries of it."""
    from ui import gguf_file

    inputs = state.page_state(page)
    gguf_file.picker(page, links.GGUF, "Open a .gguf file")
    try:
        resolved = links.gguf_resolved(inputs[links.GGUF], inputs[links.MMPROJ]) if inputs[links.GGUF] else None
    except ValueError:
        resolved = None  # the results say why
    if resolved is not None:
        st.caption(model_summary(resolved))
    with st.expander("Vision projector (mmproj), optional", icon=":material/image:",
                     expanded=bool(inputs[links.MMPROJ])):
        gguf_file.picker(page, links.MMPROJ, "Open an mmproj .gguf file")
        if inputs[links.MMPROJ]:
            st.button("Remove the projector", key=f"{page}.mmproj_remove", on_click=_remove_projector, args=(page,))
    st.caption("Only the header's bytes leave your computer (a few MB), never the file. A share link cannot carry "
               "the file: it carries the architecture read from the header and the file's llama.cpp recipe as the "
               "weight format, not the exact per-tensor bytes nor the projector.")


def _remove_projector(page: str) -> None:
    state.page_state(page)[links.MMPROJ] = ""


def row_follows(page: str, checkpoint) -> None:
    """Select the checkpoint's own row when it has a quantized format, else leave the checkpoint row."""
    if page != "inference":
        return
    row_key = f"{page}.{links.ROW[page]}"
    if checkpoint is not None and checkpoint.format_id:
        st.session_state[row_key] = "checkpoint"
    elif st.session_state.get(row_key) == "checkpoint":
        st.session_state[row_key] = links.fields(page)[links.ROW[page]].default


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
        try:
            checkpoint = links.resolved_model(hub.model_id(st.session_state[f"{page}.model"])).architecture.checkpoint
        except ValueError:
            return
    row_follows(page, checkpoint)


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
