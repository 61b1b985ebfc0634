"""What hosted models cost in money: the price table (``judge/accounting/prices.toml``, each row with the day it was
checked and its source), a user's own table over it (``--prices FILE``), and dollars from token counts.

A model the table does not list has no price: every caller says so instead of guessing one, because a
made-up figure next to a real one reads as real. Prices are per million tokens, in US dollars, split as
providers bill them: prompt tokens, prompt tokens served from the provider's prompt cache, answer tokens,
and the share the Batch API takes off all of them.
"""

from __future__ import annotations

import datetime as dt
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..core.errors import InputError

#: The shipped table.
SHIPPED = "prices.toml"


@dataclass(frozen=True)
class Price:
    """One model's prices in US dollars per million tokens."""

    model: str
    input: float
    cached_input: float
    output: float
    #: Share taken off every price for Batch API requests (0.5: half price; 0: no batch price known).
    batch_discount: float
    checked: str
    source: str

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0, *, batch: bool = False) -> float:
        """Dollars for this usage; ``cached_tokens`` are the part of ``prompt_tokens`` the provider's prompt
        cache served (OpenAI reports them inside ``prompt_tokens``)."""
        cached = min(max(0, cached_tokens), prompt_tokens)
        dollars = ((prompt_tokens - cached) * self.input + cached * self.cached_input
                   + completion_tokens * self.output) / 1_000_000
        return dollars * (1 - self.batch_discount) if batch else dollars

    def describe(self) -> str:
        """The row as a person reads it, with its date and source."""
        batch = f", batch {self.batch_discount:.0%} off" if self.batch_discount else ", no batch price"
        return (f"{self.model}: ${self.input:g} input, ${self.cached_input:g} cached input, ${self.output:g} output "
                f"per 1M tokens{batch} (checked {self.checked}; {self.source})")


class PriceTable:
    """Prices by model name (a row's aliases included)."""

    def __init__(self, rows: Mapping[str, Price], origin: str) -> None:
        self._rows = dict(rows)
        #: Where the rows came from, for messages ("judge/accounting/prices.toml", "judge/accounting/prices.toml + mine.toml").
        self.origin = origin

    def get(self, model: str) -> Price | None:
        """The price of ``model``, or None: the table does not know it (never a guess)."""
        return self._rows.get(model)

    def models(self) -> list[str]:
        return sorted(self._rows)

    def missing(self, model: str) -> str:
        """The message for a model without a row."""
        return (f"no price for model '{model}' in {self.origin}: judge does not guess one "
                "(give it with --prices FILE, rows of model, input, cached_input, output, batch_discount)")


def dollars(amount: float) -> str:
    """``$0.0123``: four decimals, more for amounts below a hundredth of a cent (two significant digits)."""
    if amount <= 0:
        return "$0.0000"
    places = max(4, 1 - math.floor(math.log10(amount)))
    return f"${amount:.{places}f}"


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The shipped table, with the rows of ``path`` (a user's TOML file) replacing or adding to its own."""
    shipped = files("judge.accounting").joinpath(SHIPPED).read_text(encoding="utf-8")
    rows = _rows(tomllib.loads(shipped), f"judge/accounting/{SHIPPED}", shipped_file=True)
    origin = f"judge/accounting/{SHIPPED}"
    if path is not None:
        p = Path(path).expanduser()
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"cannot read the price file: {exc.strerror or exc}", file=str(p)) from None
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not a TOML file: {exc}", file=str(p)) from None
        rows.update(_rows(data, str(p), shipped_file=False))
        origin += f" + {p}"
    return PriceTable(rows, origin)


def _rows(data: dict[str, Any], where: str, *, shipped_file: bool) -> dict[str, Price]:
    models = data.get("models")
    if not isinstance(models, list) or not models:
        raise InputError("expects [[models]] tables (model, input, cached_input, output, batch_discount)",
                         file=where, field="models")
    out: dict[str, Price] = {}
    for i, row in enumerate(models):
        price = _price(row, where, i, shipped_file)
        aliases = row.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise InputError("must be a list of model names", file=where, record=f"models[{i}]", field="aliases")
        for name in [price.model, *aliases]:
            out[name] = price
    return out


def _price(row: Any, where: str, i: int, shipped_file: bool) -> Price:
    record = f"models[{i}]"
    if not isinstance(row, dict):
        raise InputError("expects a table", file=where, record=record)
    known = {"model", "aliases", "input", "cached_input", "output", "batch_discount", "checked", "source"}
    unknown = sorted(set(row) - known)
    if unknown:
        raise InputError(f"unknown key (known: {', '.join(sorted(known))})", file=where, record=record,
                         field=unknown[0])
    model = row.get("model")
    if not isinstance(model, str) or not model:
        raise InputError("must be a model name", file=where, record=record, field="model")
    # The shipped rows must each say when and where their prices were read; a user's file may leave them out.
    required = ("input", "output", "cached_input", "batch_discount", "checked", "source") if shipped_file else \
        ("input", "output")
    for key in required:
        if key not in row:
            raise InputError("is required", file=where, record=f"{record} ({model})", field=key)
    values = {key: _number(row, key, where, f"{record} ({model})") for key in ("input", "cached_input", "output",
                                                                               "batch_discount") if key in row}
    discount = values.get("batch_discount", 0.0)
    if discount >= 1:
        raise InputError(f"must be below 1 (a share of the price), got {discount}", file=where,
                         record=f"{record} ({model})", field="batch_discount")
    checked = row.get("checked", "not given")
    if isinstance(checked, dt.date):
        checked = checked.isoformat()
    return Price(model, values["input"], values.get("cached_input", values["input"]), values["output"], discount,
                 str(checked), str(row.get("source", where)))


def _number(row: dict[str, Any], key: str, where: str, record: str) -> float:
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or not math.isfinite(value):
        raise InputError(f"must be a number >= 0 (dollars per 1M tokens), got {value!r}", file=where, record=record,
                         field=key)
    return float(value)
