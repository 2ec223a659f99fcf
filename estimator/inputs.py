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
from .formats import aliases_of, resolve_word

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
            if text in self.choices:
                return text
            resolved = resolve_word(text, self.choices)  # 'FP16', 'Q4_K_M', 'half', '4bit' (formats.ALIASES)
            if resolved is None:
                raise ValueError(f"{self.label} must be one of {', '.join(self.choices)}")
            return resolved
        try:
            value = int(text) if kind is int else float(text)
        except ValueError:
            raise ValueError(f"{self.label} must be a {'whole ' if kind is int else ''}number") from None
        if self.choices and value not in self.choices:
            raise ValueError(f"{self.label} must be one of {', '.join(map(str, self.choices))}")
        out_of_range = self.low is not None and not self.low <= value <= self.high
        if (kind is float and not math.isfinite(value)) or out_of_range:
            raise ValueError(f"{self.label} must be {self.range_text}")
        return value

    @property
    def range_text(self) -> str:
        """The valid range of a number in words, e.g. 'between 0.001 and 20,000' ('' without bounds)."""
        if self.low is None or self.high is None:
            return ""
        return f"between {shown_number(self.low)} and {shown_number(self.high)}"

    def out_of_range(self, value: object) -> str | None:
        """The message for a number outside the bounds, naming the input and its range ('Total parameters (B)
        must be between 0.001 and 20,000, got 70,000'); None for a valid value or a non-number input."""
        if self.low is None or self.high is None or value is None or isinstance(value, bool) \
                or not isinstance(value, (int, float)):
            return None
        if math.isfinite(value) and self.low <= value <= self.high and (self.kind is not int or value == int(value)):
            return None
        shown = shown_number(value) if math.isfinite(value) else str(value)
        return f"{self.label} must be {self.range_text}, got {shown}"

    @property
    def aliases(self) -> dict[str, str]:
        """Other words the input accepts for its choices (alias -> choice; `formats.ALIASES`)."""
        return aliases_of(self.choices) if self.kind is str and self.choices else {}

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
        reports them). Another spelling of a choice ('FP16', 'half') is valid: see `checker`."""
        self.checker(name)(value)

    def checker(self, name: str) -> Callable[[object], object]:
        """`check` for field `name`, with its branch chosen once (scenarios are built by the thousand in sweeps).
        The check returns None, or for another spelling of a text choice the choice it stands for."""
        if self.text is not None:
            parse = self.text

            def check_text(value: object) -> None:
                if not isinstance(value, str):
                    raise ValueError(f"{name} must be text, got {quoted(value)}")
                parse(value)
            return check_text
        if self.choices:
            allowed, choices = {(type(c), c) for c in self.choices}, self.choices

            def check_choice(value: object) -> object:
                try:
                    if (type(value), value) in allowed:  # of the same type: True is not 1, 16.0 is not 16
                        return None
                except TypeError:  # unhashable
                    pass
                resolved = resolve_word(value, choices) if isinstance(value, str) else None
                if resolved is not None:
                    return resolved  # another spelling or an alias: the scenario keeps the choice it stands for
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
    """Validate every declared field of a scenario (called by its __post_init__); a choice given in another
    spelling or by an alias (`weights="fp16"`) is replaced by the choice it stands for ("bf16")."""
    for name, check in _checkers(type(obj)):
        resolved = check(getattr(obj, name))
        if resolved is not None:
            object.__setattr__(obj, name, resolved)  # the scenarios are frozen; this runs in __post_init__


@functools.lru_cache(maxsize=None)
def _checkers(cls: type) -> tuple[tuple[str, Callable[[object], object]], ...]:
    return tuple((name, spec.checker(name)) for name, spec in _declared(cls))

