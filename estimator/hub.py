"""Any model on the Hugging Face Hub by its id: `org/name`, `org/name@revision`, `org/repo:Q4_K_M` (a GGUF quant).

A model id resolves from the catalog first (estimator/catalog.py), then from the Hub through `huggingface_hub`
(imported here only when the Hub is asked, so the core stays standard library only), which honours `HF_ENDPOINT`,
`HF_TOKEN`, `HF_HUB_OFFLINE` and its cache (`HF_HOME` / `HF_HUB_CACHE`). What is read:
    /api/models/{id}[/revision/{rev}]   the commit the revision points at, and the Hub's `safetensors` metadata:
                                        stored elements per dtype, so the exact stored bytes are known (tied
                                        embeddings, MTP modules, vision towers and packed quantized tensors
                                        included) -- huggingface_hub `HfApi.model_info`, `ModelInfo.safetensors`
    /{id}/resolve/{rev}/config.json     the config (hf_hub_download, after a HEAD that gives its size), read by
                                        the same reader as a pasted one (hf_config.py)
    safetensors headers                 where an endpoint gives no safetensors metadata: model.safetensors.index.json
                                        and each shard's header, by range requests (`safetensors_stored`)
    GGUF repos (`:QUANT`): the repo's file list (model_info), then the header of the quant's `.gguf` file (every
                                        shard of a split file, and its mmproj projector) by range requests
                                        (estimator/gguf.py), never the file
    /api/models?search=...              the app's model box: ids like the one typed (HfApi.list_models' route)
Everything the Hub returns is untrusted input, exactly like an upload: the same size limits, no
`trust_remote_code`, no code run. Requests go only to the configured endpoint, with timeouts (HUB_TIMEOUT_S; for
huggingface.co a GGUF range read follows its redirect to its own storage host, without the token), and what was
fetched once is read back from huggingface_hub's cache (keyed by id and commit, with the revision's ref) when the
Hub cannot be reached. Nothing but the model id is ever put in a message.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from . import catalog
from .architecture import Architecture
from .hf_config import MAX_CONFIG_CHARS, architecture_from_config, parse_config_text

DEFAULT_ENDPOINT = "https://huggingface.co"  # huggingface_hub constants._HF_DEFAULT_ENDPOINT
# Seconds to wait for one answer (huggingface_hub's default is 10): the Hub's API answers in well under a second, and
# an unreachable Hub must be one line within seconds, not a hung page
HUB_TIMEOUT_S = 5.0
MAX_REPO_ID_CHARS = 96  # huggingface_hub utils/_validators.py: "Repo id must be ... max length is 96"
MAX_REVISION_CHARS = 200
# A repo id as huggingface_hub validates it (utils/_validators.py REPO_ID_REGEX: letters, digits, "-", "_", "."),
# with a namespace; then an optional @revision (branch, tag or commit) and an optional :quant tag (llama.cpp `-hf`,
# Ollama `hf.co/org/repo:Q4_K_M`)
MODEL_REF = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+?)(?:@(?P<rev>[\w./-]+?))?(?::(?P<quant>[\w.-]+))?",
                       re.ASCII)
INSTALL_HINT = "pip install huggingface_hub (or give a config.json with --config PATH, a catalog id, or --params)"
TOKEN_HINT = ("set HF_TOKEN to a token of an account that accepted its terms (https://huggingface.co/settings/tokens;"
              " in a deployed app: an HF_TOKEN secret)")


class HubError(ValueError):
    """A model id the Hub could not answer for: one line for the user (CLI: stderr, exit 2; page: a message)."""


@dataclass(frozen=True)
class ModelRef:
    """A Hub model reference: `repo_id`, `revision` ("" = the default branch), `quant` ("" = none)."""

    repo_id: str
    revision: str = ""
    quant: str = ""

    def __str__(self) -> str:
        return self.repo_id + (f"@{self.revision}" if self.revision else "") + (f":{self.quant}" if self.quant else "")


def parse_ref(text: str) -> ModelRef | None:
    """`org/name[@revision][:QUANT]` as a ModelRef; None when the text is not shaped like a Hub id."""
    text = str(text).strip()
    found = MODEL_REF.fullmatch(text)
    if found is None or len(found["repo"]) > MAX_REPO_ID_CHARS or len(found["rev"] or "") > MAX_REVISION_CHARS:
        return None
    repo = found["repo"]
    if ".." in repo or "--" in repo or repo.endswith((".", "-")) or ".." in (found["rev"] or ""):
        return None  # huggingface_hub refuses these ids; ".." in a revision would walk the URL path
    return ModelRef(repo, found["rev"] or "", found["quant"] or "")


CATALOG, HUB, HUB_CACHE, GGUF_FILE = "catalog", "Hub", "Hub cache (offline)", "GGUF file"  # ResolvedModel.source


@dataclass(frozen=True)
class ResolvedModel:
    """A model by id: its architecture and where it came from (the catalog, the Hub, a GGUF file)."""

    architecture: Architecture
    ref: ModelRef  # the id as resolved: a catalog model's id, or the Hub id with its revision and quant
    commit: str  # the commit the revision resolved to ("" for the catalog, or when read from the cache offline)
    source: str  # CATALOG, HUB, HUB_CACHE or GGUF_FILE
    stored_bytes: tuple[tuple[str, int], ...] = ()  # (dtype, bytes) of the checkpoint's tensors, when known

    @property
    def stored_total(self) -> int:
        return sum(size for _, size in self.stored_bytes)

    @property
    def label(self) -> str:
        """'Qwen/Qwen3-8B @ 1a2b3c4' : the id and the commit the numbers come from."""
        return f"{self.ref} @ {self.commit[:7]}" if self.commit else f"{self.ref} ({self.source})"


def model_id(text: str) -> str:
    """The id a user typed, checked: a catalog id as the catalog spells it, else a Hub id (`org/name[@rev][:QUANT]`);
    ValueError with the catalog's suggestions when it is neither. Nothing is downloaded."""
    ref = parse_ref(text)
    if ref is not None and (ref.revision or ref.quant):
        return str(ref)
    try:
        return catalog.model(text).id
    except ValueError:
        if ref is None:
            raise
        return str(ref)


def resolve(text: str, token: str | None = None) -> ResolvedModel:
    """A model by id: the catalog first, then the Hub (`fetch`). HubError / ValueError in one line otherwise."""
    found = model_id(text)
    ref = parse_ref(found)
    if ref is not None and not (ref.revision or ref.quant):
        try:
            entry = catalog.model(found)
            return ResolvedModel(architecture=entry.architecture, ref=ModelRef(entry.id), commit="", source=CATALOG)
        except ValueError:
            pass
    return fetch(ref, token)


@dataclass(frozen=True)
class Settings:
    """huggingface_hub's settings, read from the environment at each call (its constants are read at import)."""

    endpoint: str
    cache_dir: str
    offline: bool
    token: str | None


def settings(token: str | None = None) -> Settings:
    env = os.environ
    home = env.get("HF_HOME") or str(Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface")
    offline = (env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE") or "").upper() in ("1", "ON", "YES", "TRUE")
    return Settings(endpoint=(env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
                    cache_dir=env.get("HF_HUB_CACHE") or str(Path(home) / "hub"), offline=offline,
                    token=token or env.get("HF_TOKEN") or None)


def _library():
    try:
        import huggingface_hub
        import huggingface_hub.errors  # noqa: F401  (huggingface_hub.errors is not loaded by the package)
    except ImportError:
        raise HubError(f"reading a model from the Hugging Face Hub needs huggingface_hub: {INSTALL_HINT}") from None
    return huggingface_hub


def _transport_errors(hf) -> tuple[type[BaseException], ...]:
    """Errors meaning 'the Hub could not be reached' (no answer, timeout, offline mode)."""
    errors: list[type[BaseException]] = [hf.errors.OfflineModeIsEnabled, ConnectionError, TimeoutError]
    for name in ("httpx2", "httpx"):  # huggingface_hub 2.x talks through httpx2, 1.x through httpx
        try:
            errors.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            pass
    return tuple(errors)


def _hub_error(err: BaseException, ref: ModelRef, hf, what: str = "") -> HubError:
    """One line for a Hub answer that is not the file: gated, not found, bad revision, other status."""
    e = hf.errors
    if isinstance(err, e.GatedRepoError):
        return HubError(f"{ref.repo_id} is a gated model on the Hub: {TOKEN_HINT}")
    if isinstance(err, e.RevisionNotFoundError):
        return HubError(f"{ref.repo_id} has no revision {ref.revision!r} on the Hub")
    if isinstance(err, e.RepositoryNotFoundError):
        return HubError(f"{ref.repo_id} is not in the catalog nor a model on the Hub (a private one needs HF_TOKEN); "
                        "check the id, or run `python -m estimator models` for the catalog")
    if isinstance(err, e.RemoteEntryNotFoundError):
        return HubError(f"{ref.repo_id} has no {what or 'such file'} on the Hub; give a config.json "
                        "(--config PATH) instead")
    status = getattr(getattr(err, "response", None), "status_code", "?")
    return HubError(f"the Hub answered {status} for {ref.repo_id}; try again later or give a config.json "
                    "(--config PATH)")


def fetch(text: str | ModelRef, token: str | None = None) -> ResolvedModel:
    """Read a model from the Hub: its config.json (and the stored bytes per dtype) at the requested revision.
    Offline or unreachable: the cached config of that id and revision, else HubError in one line."""
    ref = text if isinstance(text, ModelRef) else parse_ref(text)
    if ref is None:
        raise HubError(f"{str(text)[:80]!r} is not a Hub model id (org/name, org/name@revision, org/repo:QUANT)")
    if ref.quant:
        return fetch_gguf(ref, token)
    hf, conf = _library(), settings(token)
    unreachable = _transport_errors(hf)
    info = None
    if not conf.offline:
        try:
            info = hf.HfApi(endpoint=conf.endpoint, token=conf.token or False).model_info(
                ref.repo_id, revision=ref.revision or None, timeout=HUB_TIMEOUT_S)
        except unreachable:
            info = None
        except hf.errors.HfHubHTTPError as err:
            raise _hub_error(err, ref, hf) from None
        except (KeyError, TypeError, ValueError, AttributeError):  # huggingface_hub could not read the answer
            raise HubError(f"the Hub's answer for {ref.repo_id} is malformed; give a config.json (--config PATH) "
                           "instead") from None
    commit = getattr(info, "sha", None) or ""
    path = download(ref, "config.json", conf, limit=MAX_CONFIG_CHARS, cached_only=info is None)
    config = parse_config_text(_read_capped(path, MAX_CONFIG_CHARS, ref, "config.json"))
    a = architecture_from_config(config, ref.repo_id)
    stored = stored_bytes(getattr(info, "safetensors", None))
    if info is not None and not stored:  # an endpoint without the Hub's safetensors metadata: the files' headers
        names = [str(getattr(s, "rfilename", "")) for s in (getattr(info, "siblings", None) or ())]
        stored = safetensors_stored(hf, conf, ref, commit, names)
    source = HUB if info is not None else HUB_CACHE
    where = f"{ref.repo_id} at commit {commit[:7]}" if commit else f"{ref} from the local Hub cache (offline)"
    note = f"Model: config.json of {where} (Hugging Face Hub)"
    if stored:
        note += "; its safetensors store " + ", ".join(f"{size:,} bytes {dtype}" for dtype, size in stored)
        note += _stored_difference(a, sum(size for _, size in stored))
    a = dataclasses.replace(a, notes=(note, *a.notes))
    return ResolvedModel(architecture=a, ref=ref, commit=commit, source=source, stored_bytes=stored)


STORED_TOLERANCE = 0.01  # a checkpoint within 1% of the config's tensors is said to match (scales, buffers)


def _stored_difference(a: Architecture, stored: int) -> str:
    """Words comparing the checkpoint's stored bytes with the config's tensors in the checkpoint's own format (towers
    16-bit): a checkpoint holds more when it keeps MTP modules, a tower or tensors the config does not describe."""
    from .formats import weight_bytes
    from .units import BF16_BYTES

    counted = (a.checkpoint.weight_bytes(a) if a.checkpoint is not None else weight_bytes(a, "bf16")).total + \
        BF16_BYTES * a.tower_parameters
    if abs(stored - counted) <= STORED_TOLERANCE * counted:
        return f", which the config's tensors match ({counted:,} bytes counted)"
    return (f"; the config's tensors come to {counted:,} bytes, so the checkpoint holds "
            f"{abs(stored - counted):,} bytes {'more' if stored > counted else 'less'} than the estimate counts "
            "(MTP modules, a tower or tensors the config does not describe)")


def download(ref: ModelRef, filename: str, conf: Settings, *, limit: int, cached_only: bool = False) -> str:
    """A small file of the repo through huggingface_hub's cache (keyed by id, and by commit with the revision's
    ref recorded, so the same id and revision is found offline), refused before it is downloaded when the Hub
    says it is larger than `limit`. `cached_only`: the Hub did not answer; the cache only."""
    hf = _library()
    unreachable = _transport_errors(hf)
    where = dict(repo_id=ref.repo_id, filename=filename, revision=ref.revision or None,
                 cache_dir=conf.cache_dir, endpoint=conf.endpoint, token=conf.token or False,
                 etag_timeout=HUB_TIMEOUT_S)
    if cached_only or conf.offline:
        try:
            return hf.hf_hub_download(**where, local_files_only=True)
        except (hf.errors.LocalEntryNotFoundError, *unreachable):
            why = "HF_HUB_OFFLINE is set" if conf.offline else f"the Hub ({conf.endpoint}) cannot be reached"
            raise HubError(f"{ref} is not in the catalog nor in the local Hub cache, and {why}; connect, or give a "
                           "config.json (--config PATH) or a catalog id") from None
    try:
        planned = hf.hf_hub_download(**where, dry_run=True)
        if planned.file_size is not None and planned.file_size > limit:
            raise HubError(f"{ref.repo_id}: {filename} is too large ({planned.file_size:,} bytes; the limit is "
                           f"{limit:,})")
        return hf.hf_hub_download(**where)
    except unreachable:
        return download(ref, filename, conf, limit=limit, cached_only=True)
    except hf.errors.HfHubHTTPError as err:
        raise _hub_error(err, ref, hf, filename) from None


def _read_capped(path: str, limit: int, ref: ModelRef, filename: str) -> bytes:
    """The cached file's bytes, at most `limit` (a server may send more than it announced)."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise HubError(f"{ref.repo_id}: {filename} is too large (over {limit:,} bytes)")
    return data


# Bytes per element of the safetensors dtypes (huggingface/safetensors `safetensors/src/tensor.rs` Dtype::bitsize);
# a report naming any other dtype (F4, F6_E2M3, ...) is left unknown rather than guessed
SAFETENSORS_DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
                           "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1}
MAX_STORED_ELEMENTS = 10**14  # 100 T elements: larger than any checkpoint; a bigger count is refused


def stored_bytes(safetensors: object) -> tuple[tuple[str, int], ...]:
    """(dtype, bytes) pairs from the Hub's safetensors metadata (`parameters`: stored elements per dtype),
    largest first; () when absent, or when a dtype or count is not one this table knows (then nothing is claimed)."""
    parameters = getattr(safetensors, "parameters", None)
    if not isinstance(parameters, dict) or not parameters:
        return ()
    out = []
    for dtype, count in parameters.items():
        size = SAFETENSORS_DTYPE_BYTES.get(str(dtype).upper())
        if size is None or isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= \
                MAX_STORED_ELEMENTS:
            return ()
        out.append((str(dtype).upper(), count * size))
    return tuple(sorted(out, key=lambda item: (-item[1], item[0])))


SAFETENSORS_SINGLE, SAFETENSORS_INDEX = "model.safetensors", "model.safetensors.index.json"  # transformers' names
MAX_INDEX_BYTES = 20_000_000  # an index names every tensor once: a few MB for the largest MoE checkpoints
# A shard's header lists its tensors' names, dtypes and offsets: well under 1 MB in published checkpoints (safetensors
# itself refuses over 100,000,000 bytes); 25 MB bounds what an endpoint can make one read take
MAX_SAFETENSORS_HEADER = 25_000_000
MAX_SAFETENSORS_SHARDS = 64  # more shards than this: the stored bytes are left unknown (one request per shard)


def safetensors_stored(hf, conf: Settings, ref: ModelRef, commit: str,
                       names: list[str]) -> tuple[tuple[str, int], ...]:
    """(dtype, bytes) of a repo's safetensors read from their headers (8-byte little-endian length, then JSON
    {tensor: {dtype, shape, data_offsets: [begin, end]}}; huggingface/safetensors README "Format"): each tensor's
    bytes are end - begin. The index (`weight_map`) names the shards. () when there are none, too many, or a header
    that does not parse: the stored bytes are then unknown, never guessed."""
    import struct

    if SAFETENSORS_SINGLE in names:
        shards = [SAFETENSORS_SINGLE]
    elif SAFETENSORS_INDEX in names:
        try:
            path = download(ref, SAFETENSORS_INDEX, conf, limit=MAX_INDEX_BYTES)
            weight_map = json.loads(_read_capped(path, MAX_INDEX_BYTES, ref, SAFETENSORS_INDEX))["weight_map"]
            shards = sorted({str(shard) for shard in weight_map.values()})
        except (ValueError, KeyError, TypeError, AttributeError):  # HubError included: too large, gone
            return ()
    else:
        return ()
    if len(shards) > MAX_SAFETENSORS_SHARDS or any(shard not in names for shard in shards):
        return ()
    totals: dict[str, int] = {}
    try:
        for shard in shards:
            read = _range_reader(hf, conf, ref, shard, commit)
            (length,) = struct.unpack("<Q", read(0, 8))
            if length > MAX_SAFETENSORS_HEADER:
                return ()
            header = json.loads(read(8, length))
            for name, entry in header.items():
                if name == "__metadata__":
                    continue
                begin, end = entry["data_offsets"]
                dtype = str(entry["dtype"]).upper()
                if dtype not in SAFETENSORS_DTYPE_BYTES or not 0 <= begin <= end:
                    return ()
                totals[dtype] = totals.get(dtype, 0) + end - begin
    except (ValueError, KeyError, TypeError, AttributeError, struct.error):
        return ()
    return tuple(sorted(totals.items(), key=lambda item: (-item[1], item[0])))


MAX_SEARCH_BYTES = 1_000_000  # a search answer of `limit` models is a few kB


def search(query: str, limit: int = 10, token: str | None = None) -> tuple[str, ...]:
    """Model ids on the Hub whose name contains `query` (the /api/models?search= route), most downloaded first;
    () when the Hub cannot be reached or huggingface_hub is missing (the catalog still answers)."""
    query = str(query).strip()[:MAX_REPO_ID_CHARS]
    if len(query) < 2:
        return ()
    try:
        hf = _library()
    except HubError:
        return ()
    conf = settings(token)
    if conf.offline:
        return ()
    # The route of HfApi.list_models(search=..., sort="downloads", limit=...), asked through huggingface_hub's own
    # session and headers with a timeout and no retries: list_models has no timeout and retries a network error with
    # backoff (huggingface_hub utils/_pagination.py uses http_backoff), which would hold a page for half a minute
    params = {"search": query, "sort": "downloads", "direction": "-1", "limit": str(limit)}
    try:
        with hf.get_session().stream("GET", f"{conf.endpoint}/api/models", params=params, timeout=HUB_TIMEOUT_S,
                                     headers=hf.utils.build_hf_headers(token=conf.token or False),
                                     follow_redirects=False) as answer:
            if answer.status_code != 200:
                return ()
            body = b""
            for chunk in answer.iter_bytes():
                body += chunk
                if len(body) > MAX_SEARCH_BYTES:
                    return ()
        found = json.loads(body)
    except (ValueError, *_transport_errors(hf)):
        return ()
    ids = [str(m.get("id") or m.get("modelId") or "") for m in found if isinstance(m, dict)] \
        if isinstance(found, list) else []
    return tuple(i for i in ids if parse_ref(i))[:limit]


GGUF_SHARD = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$")  # llama.cpp gguf-split names: model-00001-of-00003.gguf
MAX_GGUF_SHARDS = 256
MAX_REDIRECTS = 3
HUB_CDN_HOSTS = (".hf.co", ".huggingface.co")  # where huggingface.co redirects large files (its Xet / LFS storage)


def gguf_files(names: list[str], quant: str) -> list[str]:
    """The .gguf files of `quant` among a repo's files (every shard of a split file, in order), not mmproj ones:
    the name holds the tag as a word (`Qwen3-8B-Q4_K_M.gguf`, `UD-Q4_K_XL/...-00001-of-00002.gguf`), any case."""
    tag = re.compile(rf"(?<![A-Za-z0-9]){re.escape(quant)}(?![A-Za-z0-9_])", re.IGNORECASE)  # Q4_K is not Q4_K_M
    found = sorted(n for n in names if n.lower().endswith(".gguf") and "mmproj" not in n.lower() and tag.search(n))
    first = GGUF_SHARD.search(found[0]) if found else None
    if first:  # the shards of the first split file only
        stem = found[0][:first.start()]
        found = [n for n in found if n.startswith(stem) and GGUF_SHARD.search(n)]
    return found


def mmproj_file(names: list[str], quant: str) -> str:
    """A GGUF repo's vision projector: the mmproj file of the same quant tag, else its F16, BF16 or first one."""
    found = sorted(n for n in names if n.lower().endswith(".gguf") and "mmproj" in n.lower().rsplit("/", 1)[-1])
    for wanted in (quant, "F16", "BF16"):
        tag = re.compile(rf"(?<![A-Za-z0-9]){re.escape(wanted)}(?![A-Za-z0-9_])", re.IGNORECASE)
        same = [n for n in found if tag.search(n)]
        if same:
            return same[0]
    return found[0] if found else ""


def _range_reader(hf, conf: Settings, ref: ModelRef, filename: str, commit: str):
    """`read(offset, size)` of a file on the Hub by HTTP range requests through huggingface_hub's session: at most
    `size` bytes are taken from any answer (a server that ignores the range is cut off), redirects are followed
    only to the endpoint's host (or, for huggingface.co, to its own storage hosts)."""
    from urllib.parse import urljoin, urlsplit

    url = hf.hf_hub_url(ref.repo_id, filename, revision=commit or ref.revision or None, endpoint=conf.endpoint)
    headers = hf.utils.build_hf_headers(token=conf.token or False)
    home = urlsplit(conf.endpoint).hostname or ""
    hub_home = conf.endpoint == DEFAULT_ENDPOINT

    def allowed(target: str) -> bool:
        host = urlsplit(target).hostname or ""
        return host == home or (hub_home and host.endswith(HUB_CDN_HOSTS))

    def read(offset: int, size: int) -> bytes:
        target, wanted = url, {**headers, "range": f"bytes={offset}-{offset + size - 1}"}
        for _ in range(MAX_REDIRECTS + 1):
            with hf.get_session().stream("GET", target, headers=wanted, timeout=HUB_TIMEOUT_S,
                                         follow_redirects=False) as answer:
                if answer.is_redirect:
                    target = urljoin(target, answer.headers.get("location", ""))
                    if not allowed(target):
                        raise HubError(f"{ref.repo_id}: the Hub redirected {filename} to another host; not followed")
                    if urlsplit(target).hostname != home:
                        wanted = {"range": wanted["range"]}  # the token goes only to the endpoint
                    continue
                if answer.status_code >= 400:
                    raise _status_error(answer, ref, filename)
                chunks, got = [], 0
                for chunk in answer.iter_bytes():
                    chunks.append(chunk)
                    got += len(chunk)
                    if got >= size:
                        break
                return b"".join(chunks)[:size]
        raise HubError(f"{ref.repo_id}: too many redirects for {filename}")
    return read


def _status_error(answer, ref: ModelRef, filename: str) -> HubError:
    """The one line for an error answer to a range request, from its X-Error-Code (the body is not read)."""
    code = answer.headers.get("x-error-code", "")
    if code == "GatedRepo" or (answer.status_code in (401, 403) and code != "RepoNotFound"):
        return HubError(f"{ref.repo_id} is a gated model on the Hub: {TOKEN_HINT}")
    if code == "EntryNotFound":
        return HubError(f"{ref.repo_id} has no {filename} on the Hub")
    if code == "RevisionNotFound":
        return HubError(f"{ref.repo_id} has no revision {ref.revision!r} on the Hub")
    if answer.status_code == 404:
        return HubError(f"{ref.repo_id} is not in the catalog nor a model on the Hub")
    return HubError(f"the Hub answered {answer.status_code} for {ref.repo_id}; try again later")


def fetch_gguf(ref: ModelRef, token: str | None = None) -> ResolvedModel:
    """A Hub GGUF repo's file of `ref.quant`, read from its header by range requests (every shard's header for a
    split file: each holds its own tensors); the architecture and the exact stored weights (estimator/gguf.py)."""
    from .gguf import GgufHeader, architecture_from_gguf, read_header, with_projector

    hf, conf = _library(), settings(token)
    if conf.offline:
        raise HubError(f"{ref} is a GGUF file on the Hub, read by range requests, and HF_HUB_OFFLINE is set; "
                       "give --gguf PATH for a local file")
    try:
        info = hf.HfApi(endpoint=conf.endpoint, token=conf.token or False).model_info(
            ref.repo_id, revision=ref.revision or None, timeout=HUB_TIMEOUT_S)
    except _transport_errors(hf):
        raise HubError(f"{ref} is not in the catalog, and the Hub ({conf.endpoint}) cannot be reached to read its "
                       "GGUF header; connect, or give --gguf PATH") from None
    except hf.errors.HfHubHTTPError as err:
        raise _hub_error(err, ref, hf) from None
    except (KeyError, TypeError, ValueError, AttributeError):
        raise HubError(f"the Hub's answer for {ref.repo_id} is malformed") from None
    names = [str(getattr(s, "rfilename", "")) for s in (getattr(info, "siblings", None) or ())]
    files = gguf_files(names, ref.quant)
    if not files:
        quants = sorted({m[1].upper() for n in names if n.lower().endswith(".gguf") and "mmproj" not in n.lower()
                         for m in [re.search(r"((?:UD-)?I?Q\d\w*|[BF]F?16|F32)(?:-\d{5}-of-\d{5})?\.gguf$", n,
                                             re.IGNORECASE)] if m})
        raise HubError(f"{ref.repo_id} has no .gguf file of {ref.quant!r}" +
                       (f"; it has {', '.join(quants[:12])}" if quants else "; it has no .gguf files"))
    if len(files) > MAX_GGUF_SHARDS:
        raise HubError(f"{ref.repo_id}: {len(files)} GGUF shards; the limit is {MAX_GGUF_SHARDS}")
    commit = str(getattr(info, "sha", "") or "")
    try:
        headers = [read_header(_range_reader(hf, conf, ref, name, commit)) for name in files]
    except _transport_errors(hf):
        raise HubError(f"the Hub ({conf.endpoint}) stopped answering while {ref} was read; try again") from None
    first = headers[0]
    merged = GgufHeader(first.version, first.metadata, tuple(t for h in headers for t in h.tensors),
                        sum(h.header_bytes for h in headers))
    a = architecture_from_gguf(merged, f"{ref.repo_id}:{ref.quant}")
    projector = mmproj_file(names, ref.quant)
    if projector:  # llama.cpp loads a repo's mmproj file with the model for images (llama-server -hf does)
        a = with_projector(a, read_header(_range_reader(hf, conf, ref, projector, commit)), projector)
    where = f"{files[0]}" + (f" (+{len(files) - 1} shards)" if len(files) > 1 else "")
    note = f"Model: the GGUF header of {ref.repo_id}/{where} at commit {commit[:7]} (Hugging Face Hub)"
    a = dataclasses.replace(a, notes=(note, *a.notes))
    return ResolvedModel(architecture=a, ref=ref, commit=commit, source=HUB, stored_bytes=merged.bytes_by_type())


def read_gguf_file(path: str, mmproj: str | None = None) -> ResolvedModel:
    """A local .gguf file (CLI --gguf), read from its header; `mmproj`: its vision projector file (--mmproj)."""
    from .gguf import file_reader, read_header

    def header_of(name: str):
        try:
            return read_header(file_reader(name))
        except OSError as err:
            raise ValueError(f"cannot read {name}: {err.strerror}") from None

    header = header_of(path)
    projector = header_of(mmproj) if mmproj else None
    return gguf_model(header, Path(path).name, projector, Path(mmproj).name if mmproj else "")


def gguf_model(header, file_name: str, projector=None, projector_name: str = "") -> ResolvedModel:
    """The model of a GGUF file's parsed header (estimator/gguf.py `read_header`), named by its general.name or
    else by `file_name` without `.gguf`; `projector`: the header of its vision projector file (mmproj). One path
    for a local file (the CLI's --gguf) and a file opened in the app, which hands over only its header's bytes."""
    from .gguf import architecture_from_gguf, with_projector

    a = architecture_from_gguf(header, "" if header.get("general.name") else file_name.removesuffix(".gguf"))
    if projector is not None:
        a = with_projector(a, projector, projector_name)
    return ResolvedModel(architecture=a, ref=ModelRef(file_name), commit="", source=GGUF_FILE,
                         stored_bytes=header.bytes_by_type())
