"""The commands (thin: parse, call the library, print), and the option types and output
helper every command shares.

Each module defines commands that :mod:`distprivacy.cli` registers: ``calibrate``,
``release``, ``audit`` (Chen & Ohrimenko; their shared options in :mod:`._common`) and
``reproduce``, and one click group per other framework: ``attribute`` (Zhang, Ohrimenko &
Cummings), ``local`` (Kawamoto & Murakami) and ``models`` (Suri & Evans). Bad input raises
:class:`distprivacy.DistPrivacyError`, which the entry point prints as one line with exit
status 2.

Numeric options use :class:`Number` (and seeds :data:`SEED`), which parse the text and hand the
value to :mod:`distprivacy.accounting`'s ``check_*`` — the one place numbers are validated — so
``--delta nan``, ``--grid -3`` or ``--seed -1`` are refused before any work with one line naming
the option and its valid range. JSON goes out through :func:`dumps_json` only: never ``NaN`` or
``Infinity`` (invalid JSON).
"""

from __future__ import annotations

import math
from typing import Any

import click

from distprivacy.checks import check_int, check_number, check_seed
from distprivacy.exceptions import DistPrivacyError

#: ``--data DIR``: where the Adult files are (default: fetched, verified and cached).
adult_data_option = click.option(
    "--data",
    type=click.Path(),
    default=None,
    help="Directory with adult.data/adult.test (default: fetched and cached).",
)


def _option_name(param: click.Parameter | None) -> str:
    if param is None:
        return "the value"
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")]
    return max(opts, key=len) if opts else (param.name or "the value")


def parse_integer(text: str, name: str) -> int:
    """``"1000"`` or ``"1e9"`` (an exactly integral number) → int; otherwise DistPrivacyError."""
    try:
        return int(text.strip().replace("_", ""))
    except ValueError:
        pass
    try:
        f = float(text)
    except ValueError:
        raise DistPrivacyError(f"{name}: {text!r} is not a valid integer") from None
    if not (math.isfinite(f) and f.is_integer()):
        raise DistPrivacyError(f"{name}: {text!r} is not a valid integer")
    return int(f)


def parse_float(text: str, name: str) -> float:
    """The text as a float (range checks are the caller's); DistPrivacyError when not a number."""
    try:
        return float(text)
    except ValueError:
        raise DistPrivacyError(f"{name}: {text!r} is not a valid float") from None


def parse_floats(text: str, name: str, *, example: str = "0.45,0.55") -> list[float]:
    """``"0.45,0.55"`` → [0.45, 0.55] (an empty item, as in ``0.45,,0.55``, is refused), each
    a finite number
    (:func:`~distprivacy.checks.check_number`); DistPrivacyError naming ``name`` and showing
    ``example`` when an item is not a number."""
    items = text.strip().split(",")
    if not text.strip() or any(not x.strip() for x in items):
        raise DistPrivacyError(
            f"{name} {text!r} has an empty item; give comma-separated numbers, e.g. {example}"
        )
    try:
        vals = [float(x) for x in items]
    except ValueError:
        raise DistPrivacyError(
            f"cannot read {name} {text!r}; give comma-separated numbers, e.g. {example}"
        ) from None
    return [check_number(v, name) for v in vals]


class Number(click.ParamType):
    """A numeric option validated by :func:`distprivacy.checks.check_number` /
    :func:`~distprivacy.checks.check_int` (NaN, ±inf and out-of-range values refused).

    Parameters
    ----------
    integer : bool
        An integer option (``1e9`` is accepted as 1000000000).
    low, high, low_open, high_open
        The valid range, as for :func:`~distprivacy.checks.check_number`.
    """

    def __init__(
        self,
        *,
        integer: bool = False,
        low: float | None = None,
        high: float | None = None,
        low_open: bool = False,
        high_open: bool = False,
    ) -> None:
        self.integer = integer
        self.name = "integer" if integer else "float"
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self._convert(value, _option_name(param))
        except DistPrivacyError as e:  # a usage error: one line with the command's --help
            raise click.UsageError(str(e), ctx) from None

    def _convert(self, value: Any, name: str) -> Any:
        if isinstance(value, str):
            value = parse_integer(value, name) if self.integer else parse_float(value, name)
        if self.integer:
            low = None if self.low is None else math.ceil(self.low + (1 if self.low_open else 0))
            high = (
                None if self.high is None else math.floor(self.high - (1 if self.high_open else 0))
            )
            return check_int(value, name, low=low, high=high)
        return check_number(
            value,
            name,
            low=self.low,
            high=self.high,
            low_open=self.low_open,
            high_open=self.high_open,
        )


class Seed(click.ParamType):
    """A ``--seed`` option: :func:`distprivacy.checks.check_seed` ([0, 2³² − 1])."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        name = _option_name(param)
        try:
            if isinstance(value, str):
                value = parse_integer(value, name)
            return check_seed(value, name)
        except DistPrivacyError as e:
            raise click.UsageError(str(e), ctx) from None


#: Shared instances. FLOAT and INTEGER only refuse what is not a finite number (NaN, ±inf,
#: text): for them the library's own check gives the range (and the message the tests pin).
SEED = Seed()
FLOAT = Number()
INTEGER = Number(integer=True)
POSITIVE = Number(low=0, low_open=True)
NON_NEGATIVE = Number(low=0)
PROBABILITY_OPEN = Number(low=0, high=1, low_open=True, high_open=True)
DELTA = Number(low=0, high=1, high_open=True)
UNIT = Number(low=0, high=1)
POSITIVE_INT = Number(integer=True, low=1)
NON_NEGATIVE_INT = Number(integer=True, low=0)

#: ``--allow-exact``: the explicit consent to publish true statistics (zero-noise calibrations).
allow_exact_option = click.option(
    "--allow-exact",
    is_flag=True,
    help="Release even when the calibration adds no noise, i.e. print the TRUE statistics "
    "(Chen & Ohrimenko 2023, Theorem 4.4: the model's own randomness is the guarantee). "
    "Without it such a release is refused (exit 2).",
)

from distprivacy._json import dumps_json, jsonable  # noqa: E402  (re-exported)

__all__ = [
    "DELTA",
    "FLOAT",
    "INTEGER",
    "NON_NEGATIVE",
    "NON_NEGATIVE_INT",
    "POSITIVE",
    "POSITIVE_INT",
    "PROBABILITY_OPEN",
    "SEED",
    "UNIT",
    "Number",
    "Seed",
    "adult_data_option",
    "allow_exact_option",
    "dumps_json",
    "jsonable",
    "parse_float",
    "parse_floats",
    "parse_integer",
]
