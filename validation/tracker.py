"""Live tensor bytes by category: a TorchDispatchMode that sees every storage an op creates.

Every op output's storage is counted once (deduplicated by its StorageImpl address, which FakeTensors
have too) and uncounted when a weakref finalizer sees the storage die. Each storage carries a category:
the one in force when it was created (`tracker.category(...)`), or one set later (`retag`, e.g. when
autograd turns a backward buffer into a parameter's `.grad`). Per named phase the tracker keeps the peak
total and the per-category totals at that moment, so "what is live at the peak" needs no private
torch internals (unlike `torch.distributed._tools.mem_tracker.MemTracker`).

Bytes are storage bytes: a view costs nothing, a slice keeps its whole base storage alive.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import defaultdict
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map_only

# Categories. The first six are named like the estimator's components.
WEIGHTS = "weights"  # parameters
BUFFERS = "buffers"  # registered buffers (rotary inv_freq, ...)
GRADIENTS = "gradients"  # .grad of trainable parameters
OPTIMIZER_STATES = "optimizer_states"  # tensors in optimizer.state (incl. AdamW's fp32 `step` scalars)
ACTIVATIONS = "activations"  # created by the forward pass of the decoder (outside the loss head)
LOGITS = "logits"  # created from the lm_head call on: logits, their fp32 upcast, loss buffers
KV_CACHE = "kv_cache"  # created inside a cache layer's update()
INPUTS = "inputs"  # token ids and labels
TEMPORARIES = "temporaries"  # created during backward (not yet a .grad)
OPTIMIZER_TEMPORARIES = "optimizer_temporaries"  # created inside optimizer.step()
CATEGORIES = (WEIGHTS, BUFFERS, GRADIENTS, OPTIMIZER_STATES, ACTIVATIONS, LOGITS, KV_CACHE, INPUTS, TEMPORARIES,
              OPTIMIZER_TEMPORARIES)


@dataclass
class PhasePeak:
    """The largest total seen during one phase and the per-category bytes at that moment."""

    total: int = -1
    by_category: dict[str, int] = field(default_factory=dict)


class MemoryTracker(TorchDispatchMode):
    """Counts the bytes of live tensor storages by category; keeps a peak per phase.

        tr = MemoryTracker()
        tr.register(model=model, optimizer=opt, inputs=(ids,))
        with tr:
            with tr.phase("forward"):
                loss = model(ids, labels=ids).loss
    """

    def __init__(self, record_origin: bool = False, record_peak_live: bool = False) -> None:
        super().__init__()
        self.record_origin = record_origin or record_peak_live  # keep each storage's origin: `live_tensors()`
        self.record_peak_live = record_peak_live  # list the live storages at every new phase peak (slow)
        self._origin: dict[int, tuple] = {}
        self._op = "external"
        self.label = ""  # free text stored with each storage's origin (e.g. the decoder layer running)
        self.peak_live: dict[str, list] = {}  # record_peak_live: live_tensors() at each phase's peak
        self._live: dict[int, list] = {}  # storage key -> [nbytes, category]
        self._refs: dict[int, weakref.ref] = {}
        self.totals: dict[str, int] = defaultdict(int)
        self.category_peaks: dict[str, int] = defaultdict(int)  # largest live bytes each category reached
        self.current = 0
        self.peaks: dict[str, PhasePeak] = {}
        self._phase = "setup"
        self._category = ACTIVATIONS
        self.ops = 0

    # -- bookkeeping -------------------------------------------------------------------------------------
    @staticmethod
    def _key(storage: torch.UntypedStorage) -> int:
        return storage._cdata  # address of the C++ StorageImpl: same for every view, works for FakeTensors

    def add(self, tensor: torch.Tensor, category: str | None = None) -> None:
        """Count `tensor`'s storage (once) under `category` (default: the category in force)."""
        if not isinstance(tensor, torch.Tensor):
            return
        storage = tensor.untyped_storage()
        key, nbytes = self._key(storage), storage.nbytes()
        entry = self._live.get(key)
        if entry is not None:
            if nbytes != entry[0]:  # resized in place
                self._move(entry[1], nbytes - entry[0])
                entry[0] = nbytes
            return
        category = category or self._category
        self._live[key] = [nbytes, category]
        if self.record_origin:
            self._origin[key] = (self._op, tuple(tensor.shape), str(tensor.dtype).replace("torch.", ""),
                                 f"{self._phase} {self.label}".strip())
        self._refs[key] = weakref.ref(storage, lambda _ref, key=key: self._free(key))
        self._move(category, nbytes)

    def retag(self, tensor: torch.Tensor | None, category: str) -> None:
        """Move `tensor`'s storage to `category` (counting it first if it is new)."""
        if tensor is None:
            return
        entry = self._live.get(self._key(tensor.untyped_storage()))
        if entry is None:
            self.add(tensor, category)
        elif entry[1] != category:
            self.totals[entry[1]] -= entry[0]
            entry[1] = category
            self.totals[category] += entry[0]
            self.category_peaks[category] = max(self.category_peaks[category], self.totals[category])

    def _move(self, category: str, delta: int) -> None:
        self.totals[category] += delta
        self.current += delta
        if delta > 0:
            if self.totals[category] > self.category_peaks[category]:
                self.category_peaks[category] = self.totals[category]
            peak = self.peaks.setdefault(self._phase, PhasePeak())
            if self.current > peak.total:
                peak.total = self.current
                peak.by_category = {k: v for k, v in self.totals.items() if v}
                if self.record_peak_live:
                    self.peak_live[self._phase] = self.live_tensors()

    def _free(self, key: int) -> None:
        entry = self._live.pop(key, None)
        self._refs.pop(key, None)
        self._origin.pop(key, None)
        if entry is not None:
            self.totals[entry[1]] -= entry[0]
            self.current -= entry[0]

    def register(self, model: torch.nn.Module | None = None, optimizer: torch.optim.Optimizer | None = None,
                 inputs: object = ()) -> None:
        """Count tensors that exist before tracking starts: parameters, buffers, optimizer state, inputs."""
        if model is not None:
            for p in model.parameters():
                self.add(p, WEIGHTS)
            for b in model.buffers():
                self.add(b, BUFFERS)
        if optimizer is not None:
            for state in optimizer.state.values():
                for value in state.values():
                    self.add(value, OPTIMIZER_STATES)
        tree_map_only(torch.Tensor, lambda t: self.add(t, INPUTS), inputs)

    def live_bytes(self, category: str) -> int:
        return self.totals.get(category, 0)

    def snapshot(self) -> dict[str, int]:
        """Per-category bytes now (categories with bytes only) plus 'total'."""
        return {**{k: v for k, v in self.totals.items() if v}, "total": self.current}

    # -- context ---------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def phase(self, name: str, category: str = ACTIVATIONS):
        """Allocations inside belong to phase `name` (its own peak) and default to `category`."""
        previous = self._phase, self._category
        self.enter_phase(name, category)
        try:
            yield
        finally:
            self._phase, self._category = previous

    def enter_phase(self, name: str, category: str) -> None:
        """Switch phase without a `with` block (from a hook); what is live now counts toward its peak."""
        self._phase, self._category = name, category
        peak = self.peaks.setdefault(name, PhasePeak())
        if self.current > peak.total:
            peak.total, peak.by_category = self.current, {k: v for k, v in self.totals.items() if v}

    def set_category(self, category: str) -> None:
        """Change the default category for the rest of the current phase (e.g. from the lm_head on)."""
        self._category = category

    @contextlib.contextmanager
    def category(self, category: str):
        previous = self._category
        self._category = category
        try:
            yield
        finally:
            self._category = previous

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops += 1
        if self.record_origin:
            self._op = str(func.overloadpacket.__name__)
        tree_map_only(torch.Tensor, self.add, out)
        return out

    def live_tensors(self, category: str | None = None) -> list[tuple[int, str, tuple, str, str, str]]:
        """(bytes, category, shape, dtype, op, phase and label) of every live storage, largest first
        (the origin fields need record_origin=True)."""
        rows = [(n, cat, *self._origin.get(k, ("?", (), "?", "?"))[1:3], self._origin.get(k, ("?",))[0],
                 self._origin.get(k, ("?", (), "?", "?"))[3]) for k, (n, cat) in self._live.items()
                if category is None or cat == category]
        return sorted(rows, key=lambda r: -r[0])

    # -- results ---------------------------------------------------------------------------------------
    def peak(self, *phases: str) -> tuple[str, PhasePeak]:
        """(phase, PhasePeak) of the largest peak among `phases` (all phases when none are named)."""
        names = phases or tuple(self.peaks)
        found = [(n, self.peaks[n]) for n in names if n in self.peaks]
        return max(found, key=lambda item: item[1].total)

