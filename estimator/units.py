"""Byte units and their display.

The estimator counts integer bytes everywhere. For display it uses GB = 10^9 bytes, as the reference
document (Alibaba Cloud PAI, "GPU memory estimation for LLMs") does, and GiB = 2^30 bytes on request,
which is what `nvidia-smi` and PyTorch report. The element sizes every module multiplies by live here too.
"""

from __future__ import annotations

import functools
from fractions import Fraction

GB = 10**9  # decimal gigabyte, the reference document's unit
GiB = 2**30  # binary gibibyte, the unit of nvidia-smi and torch.cuda
BF16_BYTES = 2  # bytes of a 16-bit element (bf16 / fp16 weight, gradient or activation)
FP32_BYTES = 4  # bytes of an fp32 element (master weights, optimizer states, norm upcasts, logits)

UNITS = {"GB": GB, "GiB": GiB}


@functools.lru_cache(maxsize=256)
def bytes_from_gb(gigabytes: float) -> int:
    """Whole bytes in `gigabytes` decimal GB, exact for decimal input (1.4 -> 1,400,000,000)."""
    return round(Fraction(str(gigabytes)) * GB)


def in_unit(num_bytes: int, unit: str = "GB") -> float:
    """`num_bytes` expressed in `unit` ("GB" or "GiB")."""
    return num_bytes / UNITS[unit]


def format_bytes(num_bytes: int, unit: str = "GB", digits: int = 2) -> str:
    """Human text such as '18.80 GB'."""
    return f"{in_unit(num_bytes, unit):,.{digits}f} {unit}"
