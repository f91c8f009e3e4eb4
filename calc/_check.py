"""Argument validators shared by every public function of ``calc``.

Each raises ``ValueError`` with a message that names the argument and its allowed
range, e.g. ``dp must be an integer from 1 to 65536, got 0``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, TypeVar

T = TypeVar("T")

# Shared upper bounds, generous enough for any real run and small enough to catch typos.
MAX_GPUS = 65_536  # 8,192 nodes of 8 GPUs; the largest published runs use ~16k-25k GPUs
MAX_PARAMS = 1e16  # parameters
MAX_TOKENS = 1e16  # training tokens
MAX_FLOPS_PER_S = 1e18  # FLOP/s of one GPU (an H100 does ~1e15 dense bf16)
MAX_BYTES = 1e18  # bytes of one message or one GPU memory
MAX_BYTES_PER_S = 1e15  # bytes/s of one link
MAX_FLOPS = 1e30  # FLOP of one training run
MAX_SECONDS = 1e15  # seconds
MAX_SEQ_LEN = 10_000_000  # tokens per sequence
MAX_BATCH = 100_000_000  # sequences
MAX_HIDDEN = 1_000_000  # hidden size h
MAX_LAYERS = 100_000  # transformer layers
MAX_HEADS = 100_000  # attention heads
MAX_VOCAB = 100_000_000  # vocabulary size
MAX_OPTIMIZER_BYTES = 64  # K, optimizer bytes per parameter (mixed-precision Adam: 12)


def _fmt(x: float) -> str:
    """A bound as a reader writes it: 1, 65536, 0.5, 1e+12."""
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e7):
        return str(int(x))
    return f"{x:g}"


def _got(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _range_text(kind: str, lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"{kind} from {_fmt(lo)} to {_fmt(hi)}"
    if lo is not None:
        return f"{kind} of at least {_fmt(lo)}"
    if hi is not None:
        return f"{kind} of at most {_fmt(hi)}"
    return kind


def check_int(name: str, value: Any, lo: int | None, hi: int | None) -> int:
    """Return ``value`` as an ``int`` if it is a whole number in ``[lo, hi]``.

    Accepts ``int`` and integral finite ``float`` (``8.0``); rejects ``bool``, strings,
    NaN, infinities, fractions and anything out of range (``None`` = unbounded side).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    else:
        number = None
    if number is None or (lo is not None and number < lo) or (hi is not None and number > hi):
        # The message is built only on failure: checks run on every widget update.
        raise ValueError(f"{name} must be {_range_text('an integer', lo, hi)}, got {_got(value)}")
    return number


def check_real(
    name: str,
    value: Any,
    lo: float | None,
    hi: float | None,
    *,
    lo_inclusive: bool = True,
) -> float:
    """Return ``value`` as a ``float`` if it is a finite number in ``[lo, hi]``.

    With ``lo_inclusive=False`` the lower bound is excluded (``(lo, hi]``), for
    quantities that must be strictly positive. Rejects ``bool``, strings, NaN, inf.
    """
    number = None if isinstance(value, bool) or not isinstance(value, (int, float)) else float(value)
    if (
        number is None
        or not math.isfinite(number)
        or (lo is not None and (number < lo or (number == lo and not lo_inclusive)))
        or (hi is not None and number > hi)
    ):
        if lo is not None and not lo_inclusive:
            if hi is not None:
                rng = f"a number greater than {_fmt(lo)} and at most {_fmt(hi)}"
            else:
                rng = f"a number greater than {_fmt(lo)}"
        else:
            rng = _range_text("a number", lo, hi)
        raise ValueError(f"{name} must be {rng}, got {_got(value)}")
    return number


def check_choice(name: str, value: Any, choices: Iterable[T]) -> T:
    """Return the member of ``choices`` equal to ``value``.

    ``True``/``False`` never match the numbers 1/0 unless the choices are booleans.
    """
    options = tuple(choices)
    for option in options:
        if isinstance(value, bool) != isinstance(option, bool):
            continue
        if isinstance(value, str) != isinstance(option, str):
            continue
        try:
            if value == option:
                return option
        except Exception:  # pragma: no cover - exotic __eq__
            continue
    raise ValueError(f"{name} must be one of {', '.join(str(c) for c in options)}, got {_got(value)}")
