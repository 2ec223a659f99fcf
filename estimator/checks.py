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


def require_number(field: str, value: object, low: float, high: float, *, allow_low: bool = True) -> None:
    """`value` must be a finite real number in [low, high] (or (low, high] when allow_low is False)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{field} must be a finite number between {low:g} and {high:g}, got {value!r}")
    too_low = value < low if allow_low else value <= low
    if too_low or value > high:
        bound = "between" if allow_low else "greater than"
        rng = f"{low:g} and {high:g}" if allow_low else f"{low:g} and at most {high:g}"
        raise ValueError(f"{field} must be {bound} {rng}, got {value:g}")


def require_choice(field: str, value: object, choices: Iterable[object]) -> None:
    """`value` must be one of `choices`, of the same type (True is not 1 and 16.0 is not 16 here)."""
    options = list(choices)
    if type(value) not in {type(option) for option in options} or value not in options:
        raise ValueError(f"{field} must be one of {', '.join(map(str, options))}; got {_quoted(value)}")


def _quoted(value: object, limit: int = 40) -> str:
    """A user's value for an error message, cut short: a message must not echo megabytes back."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def require_bool(field: str, value: object) -> None:
    """`value` must be True or False."""
    if not isinstance(value, bool):
        raise ValueError(f"{field} must be true or false, got {value!r}")
