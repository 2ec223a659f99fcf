"""Checks that input dataclasses run on construction (not to be confused with the `validation` package, which
compares the estimates with traces of the real model code).

Every check raises `ValueError` with a message that names the field and the valid range, so the page,
the CLI and the API can show the same words to the user.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def require_int(field: str, value: object, low: int, high: int) -> None:
    """`value` must be an integer (not a bool, not a float) with low <= value <= high."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{field} must be a whole number between {low:,} and {high:,}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{field} must be between {low:,} and {high:,}, got {value:,}")


def require_number(field: str, value: object, low: float, high: float) -> None:
    """`value` must be a finite real number in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{field} must be a finite number between {shown_number(low)} and {shown_number(high)}, "
                         f"got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{field} must be between {shown_number(low)} and {shown_number(high)}, "
                         f"got {shown_number(value)}")


def shown_number(value: float) -> str:
    """A bound as people write it: 10,000,000 (not 1e+07), 0.001, 1,000."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,g}"


def require_choice(field: str, value: object, choices: Iterable[object]) -> None:
    """`value` must be one of `choices`, of the same type (True is not 1 and 16.0 is not 16 here)."""
    options = list(choices)
    if type(value) not in {type(option) for option in options} or value not in options:
        raise ValueError(f"{field} must be one of {', '.join(map(str, options))}; got {quoted(value)}")


def quoted(value: object, limit: int = 40) -> str:
    """A user's value for an error message, cut short: a message must not echo megabytes back."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def require_bool(field: str, value: object) -> None:
    """`value` must be True or False."""
    if not isinstance(value, bool):
        raise ValueError(f"{field} must be true or false, got {value!r}")


def printable_text(text: str, limit: int) -> str:
    """A user's name for something (a model, a scenario), as the app and the CLI show it: printable characters
    only (no control, format or lone surrogate characters, which cannot be sent to a browser or a terminal),
    trimmed, at most `limit` characters."""
    return "".join(ch for ch in text if ch.isprintable()).strip()[:limit]
