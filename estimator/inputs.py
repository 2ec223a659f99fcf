"""Every input a user can set, declared once.

An `Input` says what a value is called (label, help, unit), what it accepts (bounds or choices, or a parser for
free text) and how the interfaces spell it (its share-link key and its CLI flag). The scenario dataclasses carry
one in each field's metadata (`declare`); the scenarios validate themselves with it (`check_inputs`), and the
CLI options (`estimator/cli.py`), the share-link codec and the widgets' bounds (`ui/links.py`, `ui/form.py`)
are derived from it. So the same text is accepted, with the same bounds, wherever a user types it.

    seq_len: int = declare(SEQ_LEN)    # Input("Sequence length", link="seq", flag="--seq-len", low=1, ...)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .checks import quoted, require_bool, require_choice, require_int, require_number, shown_number

INPUT = "input"  # the metadata key of a declared dataclass field


@dataclass(frozen=True)
class Input:
    """One input. The value's type is the default's (float when the default is None)."""

    label: str  # how the page and the messages name it, e.g. "Sequence length"
    default: object  # the value when nobody sets it
    link: str = ""  # its key in share links (short and stable: links of version 1 use these keys)
    flag: str = ""  # its command-line option, e.g. "--seq-len" ("" = not on the command line)
    help: str = ""  # one sentence for the widget's tooltip and the CLI's --help
    unit: str = ""  # e.g. "tokens", "GB", "B parameters"
    low: float | None = None  # inclusive bounds of a number
    high: float | None = None
    choices: tuple = ()  # the accepted values, when they are a fixed list
    text: Callable[[str], object] | None = None  # parser of free text (LoRA targets, model and GPU ids)
    optional: bool = False  # the interfaces may leave it unset (None; "" in a link): e.g. no extra weight format

    @property
    def kind(self) -> type:
        return type(self.default) if self.default is not None else float

    def parse(self, text: str) -> object:
        """The value a typed text stands for (a link value, a command-line argument); ValueError naming the
        valid values otherwise."""
        if self.optional and text == "":
            return None
        if self.text is not None:
            return self.text(text)
        kind = self.kind
        if kind is bool:
            if text not in ("1", "0", "true", "false"):
                raise ValueError(f"{self.label} must be 1 or 0")
            return text in ("1", "true")
        if kind is str:
            if text not in self.choices:
                raise ValueError(f"{self.label} must be one of {', '.join(self.choices)}")
            return text
        try:
            value = int(text) if kind is int else float(text)
        except ValueError:
            raise ValueError(f"{self.label} must be a {'whole ' if kind is int else ''}number") from None
        if self.choices and value not in self.choices:
            raise ValueError(f"{self.label} must be one of {', '.join(map(str, self.choices))}")
        out_of_range = self.low is not None and not self.low <= value <= self.high
        if (kind is float and not math.isfinite(value)) or out_of_range:
            raise ValueError(f"{self.label} must be between {shown_number(self.low)} and {shown_number(self.high)}")
        return value

    def format(self, value: object) -> str:
        """The text of a value (the inverse of `parse`)."""
        if value is None:
            return ""
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, float):
            text = repr(value)
            return text[:-2] if text.endswith(".0") else text
        return str(value)

    def check(self, name: str, value: object) -> None:
        """ValueError unless `value` is a valid value of field `name` (the messages name the field, as the API
        reports them)."""
        self.checker(name)(value)

    def checker(self, name: str) -> Callable[[object], None]:
        """`check` for field `name`, with its branch chosen once (scenarios are built by the thousand in sweeps)."""
        if self.text is not None:
            parse = self.text

            def check_text(value: object) -> None:
                if not isinstance(value, str):
                    raise ValueError(f"{name} must be text, got {quoted(value)}")
                parse(value)
            return check_text
        if self.choices:
            allowed, choices = {(type(c), c) for c in self.choices}, self.choices

            def check_choice(value: object) -> None:
                try:
                    if (type(value), value) in allowed:  # of the same type: True is not 1, 16.0 is not 16
                        return
                except TypeError:  # unhashable
                    pass
                require_choice(name, value, choices)  # raises, naming the choices
            return check_choice
        if self.kind is bool:
            return functools.partial(require_bool, name)
        if self.kind is int:
            return functools.partial(require_int, name, low=int(self.low), high=int(self.high))
        return functools.partial(require_number, name, low=self.low, high=self.high)


def declare(spec: Input, **changes: object) -> dataclasses.Field:
    """A dataclass field whose default and metadata come from `spec` (with `changes`, e.g. another help)."""
    spec = dataclasses.replace(spec, **changes) if changes else spec
    return dataclasses.field(default=spec.default, metadata={INPUT: spec})


def inputs(cls: type) -> dict[str, Input]:
    """The declared inputs of a scenario class (or instance), by field name, in field order."""
    return dict(_declared(cls))


def _declared(cls: type) -> Iterator[tuple[str, Input]]:
    for f in dataclasses.fields(cls):
        if INPUT in f.metadata:
            yield f.name, f.metadata[INPUT]


def check_inputs(obj: object) -> None:
    """Validate every declared field of a scenario (called by its __post_init__)."""
    for name, check in _checkers(type(obj)):
        check(getattr(obj, name))


@functools.lru_cache(maxsize=None)
def _checkers(cls: type) -> tuple[tuple[str, Callable[[object], None]], ...]:
    return tuple((name, spec.checker(name)) for name, spec in _declared(cls))

