"""Number formats of mixed-precision training, rounding to them, loss scaling, and the
bytes per parameter of the training recipes in use.

Formats are data (sign, exponent and mantissa bits, bias, whether the top exponent is
reserved for infinities); every property is computed from the bits:

* IEEE 754-2008, Sec. 3.3 and Table 3.5: binary32 (fp32) and binary16 (fp16); the
  largest finite value (2 − 2^(1−p))·2^emax, the smallest normal 2^emin, the smallest
  subnormal 2^(emin − m), with emax = bias, emin = 1 − bias, m mantissa bits, p = m + 1.
* bfloat16: fp32's sign and 8 exponent bits with 7 mantissa bits (Kalamkar et al. 2019,
  "A Study of BFLOAT16 for Deep Learning Training", Sec. 2), IEEE-like otherwise.
* FP8 E4M3 and E5M2: Micikevicius et al. 2022, "FP8 Formats for Deep Learning",
  Table 1 and Sec. 3.1, and the OCP 8-bit Floating Point Specification (OFP8) rev. 1.0.
  E5M2 is IEEE-like (max 57344, inf at exponent 11111). E4M3 has no infinities and only
  one NaN mantissa pattern (S.1111.111), so its top exponent holds normal numbers and its
  largest value is 1.75·2^8 = 448. OFP8 defines two conversion modes for a value that
  rounds beyond it: saturating (to ±448; "Values that overflow are then saturated to the
  maximum representable value", Micikevicius et al. 2022, Sec. 2, what FP8 training
  recipes use) and non-saturating (to NaN for E4M3, ±inf for E5M2). `round_to` models
  the saturating mode for E4M3; an unclamped cast (PyTorch's eager
  `tensor.to(torch.float8_e4m3fn)` before pytorch/pytorch#178817) gives NaN instead.

Loss scaling: Micikevicius et al. 2018, "Mixed Precision Training", Sec. 3.2 and Fig. 3:
activation gradients below fp16's smallest subnormal 2^-24 become zero; multiplying the
loss by λ multiplies every gradient by λ (chain rule), lifting them into range; the
gradients are divided by λ again (in fp32) before the update. Sec. 3.2 reports that
λ = 8 sufficed for the Multibox SSD detector.

Recipes: bytes per parameter of the training state (weights, gradients, master weights,
optimizer moments) for the mixed-precision setups in use, and which of those parts a
distributed optimizer shards over the N_d = ``dp`` data-parallel ranks. See ``RECIPES``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._check import MAX_GPUS, MAX_PARAMS, check_choice, check_int, check_real

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "Encoding",
    "Format",
    "LossScaled",
    "MAX_LOSS_SCALE",
    "PARTS",
    "RECIPES",
    "RECIPE_NAMES",
    "Recipe",
    "RecipeBytes",
    "decimal_digits",
    "encode",
    "epsilon",
    "loss_scaled",
    "max_finite",
    "min_normal",
    "min_subnormal",
    "optimizer_bytes",
    "recipe_bytes",
    "relative_error",
    "round_to",
    "spacing",
    "state_bytes",
    "state_bytes_per_param",
    "unsharded_bytes_per_param",
]


# -- formats --------------------------------------------------------------------------


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: 1 sign bit, ``exponent_bits``, ``mantissa_bits``
    (the stored fraction, without the implicit leading 1) and the exponent ``bias``.

    ``has_inf``: the all-ones exponent is reserved for ±inf and NaN (IEEE 754). Without
    it (E4M3), that exponent holds normal numbers and only the all-ones mantissa there
    is NaN, so one mantissa pattern less is finite; `round_to` saturates an overflow
    (OFP8's saturating conversion mode)."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    has_inf: bool

    @property
    def bits(self) -> int:
        """Total width: sign + exponent + mantissa."""
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bytes(self) -> float:
        """Storage per element: bits / 8."""
        return self.bits / 8

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number, 1 − bias (IEEE 754 Sec. 3.3)."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite number: (2^E − 2) − bias when the top exponent
        is reserved (IEEE: emax = bias), (2^E − 1) − bias when it is not (E4M3: 8)."""
        top = 2**self.exponent_bits - (2 if self.has_inf else 1)
        return top - self.bias


FORMATS: dict[str, Format] = {
    # IEEE 754-2008 Table 3.5, binary32: p = 24, emax = 127.
    "fp32": Format("fp32", exponent_bits=8, mantissa_bits=23, bias=127, has_inf=True),
    # IEEE 754-2008 Table 3.5, binary16: p = 11, emax = 15.
    "fp16": Format("fp16", exponent_bits=5, mantissa_bits=10, bias=15, has_inf=True),
    # bfloat16: fp32's exponent, 7 mantissa bits (Kalamkar et al. 2019, Sec. 2).
    "bf16": Format("bf16", exponent_bits=8, mantissa_bits=7, bias=127, has_inf=True),
    # FP8 E4M3, bias 7, no infinities (Micikevicius et al. 2022, Table 1 and Sec. 3.1).
    "e4m3": Format("e4m3", exponent_bits=4, mantissa_bits=3, bias=7, has_inf=False),
    # FP8 E5M2, bias 15, IEEE-like (Micikevicius et al. 2022, Table 1 and Sec. 3.1).
    "e5m2": Format("e5m2", exponent_bits=5, mantissa_bits=2, bias=15, has_inf=True),
}
FORMAT_NAMES = tuple(FORMATS)


def _format(fmt: str) -> Format:
    return FORMATS[check_choice("fmt", fmt, FORMAT_NAMES)]


def max_finite(fmt: str) -> float:
    """Largest finite value: (2 − 2^−m)·2^emax with the top exponent reserved (IEEE 754
    Sec. 3.3), (2 − 2^(1−m))·2^emax when only the all-ones mantissa is NaN (E4M3).
    fp32 3.4028235e38, fp16 65504, bf16 3.3895314e38, E4M3 448, E5M2 57344."""
    f = _format(fmt)
    lost = 1 if f.has_inf else 2  # ulps below 2 of the largest finite mantissa
    return math.ldexp(2.0 - lost * 2.0**-f.mantissa_bits, f.emax)


def min_normal(fmt: str) -> float:
    """Smallest positive normal value 2^emin = 2^(1 − bias): fp32 and bf16 2^-126,
    fp16 and E5M2 2^-14, E4M3 2^-6."""
    return math.ldexp(1.0, _format(fmt).emin)


def min_subnormal(fmt: str) -> float:
    """Smallest positive subnormal 2^(emin − m): fp32 2^-149, fp16 2^-24, bf16 2^-133,
    E4M3 2^-9, E5M2 2^-16."""
    f = _format(fmt)
    return math.ldexp(1.0, f.emin - f.mantissa_bits)


def epsilon(fmt: str) -> float:
    """Machine epsilon, the gap between 1 and the next larger value: 2^−m. fp32 2^-23,
    fp16 2^-10, bf16 2^-7, E4M3 2^-3, E5M2 2^-2. Round to nearest keeps the relative
    error of a normal number within epsilon/2."""
    return math.ldexp(1.0, -_format(fmt).mantissa_bits)


def decimal_digits(fmt: str) -> float:
    """Significant decimal digits of the p = m + 1 bit significand: p·log10(2).
    fp32 7.22, fp16 3.31, bf16 2.41, E4M3 1.20, E5M2 0.90."""
    return (_format(fmt).mantissa_bits + 1) * math.log10(2.0)


def _quantum(magnitude: float, f: Format) -> float:
    """Spacing of the format's values around ``magnitude`` > 0: 2^(E − m) in the binade
    [2^E, 2^(E+1)), and the fixed subnormal spacing 2^(emin − m) below 2^emin."""
    exponent = max(math.frexp(magnitude)[1] - 1, f.emin)
    return math.ldexp(1.0, exponent - f.mantissa_bits)


def spacing(value: float, fmt: str) -> float:
    """Gap between adjacent values of ``fmt`` around |``value``| > 0: 2^(E − m) in the
    binade [2^E, 2^(E+1)), the fixed subnormal spacing 2^(emin − m) below the smallest
    normal (IEEE 754-2008 Sec. 3.3). E4M3 between 2^8 and 2^9: 2^(8−3) = 32; E5M2: 64;
    at 1 it is epsilon."""
    f = _format(fmt)
    x = check_real("value", value, None, None)
    if x == 0.0:
        raise ValueError("value must be nonzero (the spacing at 0 is the smallest subnormal)")
    return _quantum(abs(x), f)


def round_to(value: float, fmt: str) -> float:
    """``value`` rounded to the nearest value of ``fmt``, ties to even (IEEE 754 Sec. 4.3.1,
    roundTiesToEven), as a float.

    Below the smallest normal the spacing stays 2^(emin − m) (gradual underflow to
    subnormals, then to a signed zero). Above the largest finite value: ±inf for formats
    with infinities (IEEE 754 Sec. 7.4: a result that rounds beyond the largest finite
    value overflows; OFP8's non-saturating mode for E5M2), ±max for E4M3, which has none:
    OFP8's saturating conversion mode, as FP8 training uses it (Micikevicius et al. 2022,
    Sec. 2). The non-saturating mode would give NaN there.
    ``value`` must be finite."""
    f = _format(fmt)
    x = check_real("value", value, None, None)
    top = max_finite(fmt)
    if x == 0.0:
        return x
    magnitude = abs(x)
    quantum = _quantum(magnitude, f)
    # magnitude / quantum is exact (a power of two); round() on a float rounds half to even.
    rounded = round(magnitude / quantum) * quantum
    if rounded > top:
        rounded = top if not f.has_inf else math.inf
    return math.copysign(rounded, x)


def relative_error(value: float, fmt: str) -> float:
    """|round_to(value) − value| / |value|: at most epsilon/2 for normal numbers, 1 when
    the value underflows to zero, 0 for an exact value or zero. An overflow to inf gives
    inf."""
    x = check_real("value", value, None, None)
    return _relative(x, round_to(x, fmt))


def _relative(exact: float, stored: float) -> float:
    """|stored − exact| / |exact|, 0 for an exact zero."""
    return 0.0 if exact == 0.0 else abs(stored - exact) / abs(exact)


@dataclass(frozen=True)
class Encoding:
    """The three bit fields of a value's encoding: sign (0/1), the biased exponent field
    and the mantissa field, as unsigned integers (exponent 0 = zero or subnormal)."""

    sign: int
    exponent: int
    mantissa: int
    subnormal: bool

    def unbiased_exponent(self, fmt: str) -> int:
        """e − bias for a normal value, emin for zero and subnormals (their scale)."""
        f = _format(fmt)
        return f.emin if self.subnormal or self.exponent == 0 else self.exponent - f.bias

    def bits(self, fmt: str) -> str:
        """The fields as a string of 0/1, sign first."""
        f = _format(fmt)
        return (f"{self.sign}{self.exponent:0{f.exponent_bits}b}"
                f"{self.mantissa:0{f.mantissa_bits}b}")


def encode(value: float, fmt: str) -> Encoding:
    """The bit fields of ``value`` after rounding to ``fmt``: for a normal value
    |v| = (1 + M/2^m)·2^(e − bias), for a subnormal |v| = (M/2^m)·2^emin with e = 0
    (IEEE 754 Sec. 3.4). A value that overflows to ±inf (IEEE-like formats) is the
    all-ones exponent with a zero mantissa."""
    f = _format(fmt)
    x = round_to(value, fmt)
    sign = 1 if math.copysign(1.0, x) < 0 else 0
    magnitude = abs(x)
    if math.isinf(magnitude):
        return Encoding(sign, 2**f.exponent_bits - 1, 0, False)
    if magnitude == 0.0:
        return Encoding(sign, 0, 0, False)
    exponent = math.frexp(magnitude)[1] - 1
    if exponent < f.emin:
        mantissa = round(magnitude / math.ldexp(1.0, f.emin - f.mantissa_bits))
        return Encoding(sign, 0, int(mantissa), True)
    mantissa = round((magnitude / math.ldexp(1.0, exponent) - 1.0) * 2**f.mantissa_bits)
    return Encoding(sign, exponent + f.bias, int(mantissa), False)


# -- loss scaling ---------------------------------------------------------------------

MAX_LOSS_SCALE = 2.0**24  # generous: PyTorch's GradScaler starts at 2^16 (init_scale=65536.0)


@dataclass(frozen=True)
class LossScaled:
    """One gradient through fp16 with loss scale λ (Micikevicius et al. 2018, Sec. 3.2).

    ``scaled``: λ·g rounded to fp16 (what backward stores); ``overflow``: λ·g rounded to
    inf, so a dynamic loss scaler skips the step and lowers λ; ``recovered``: the
    fp16 value divided by λ in fp32 (exact, λ a power of two), what the optimizer gets
    (0 when the step is skipped); ``recovered_error``: |recovered − g|/|g| (1 for a
    skipped step or a gradient lost to underflow)."""

    scaled: float
    overflow: bool
    recovered: float
    recovered_error: float


def loss_scaled(gradient: float, loss_scale: float, fmt: str = "fp16") -> LossScaled:
    """Gradient ``gradient`` under loss scale ``loss_scale`` (λ): round_to(λ·g, fmt), then
    ÷ λ. With λ = 1 this is plain fp16 storage; Fig. 3 of Micikevicius et al. 2018 shows
    that many activation gradients of SSD lie below 2^-24 and become zero without it."""
    g = check_real("gradient", gradient, -1e30, 1e30)
    s = check_real("loss_scale", loss_scale, 1, MAX_LOSS_SCALE)
    if math.frexp(s)[0] != 0.5:
        raise ValueError(f"loss_scale must be a power of two from 1 to {MAX_LOSS_SCALE:g}, got {loss_scale}")
    scaled = round_to(g * s, fmt)
    if math.isinf(scaled):
        return LossScaled(scaled=scaled, overflow=True, recovered=0.0, recovered_error=_relative(g, 0.0))
    recovered = round_to(scaled / s, "fp32")
    return LossScaled(scaled=scaled, overflow=False, recovered=recovered, recovered_error=_relative(g, recovered))


# -- recipes: bytes per parameter -----------------------------------------------------

PARTS = ("weights", "grads", "master", "moments")


@dataclass(frozen=True)
class Recipe:
    """Bytes per parameter of each part of the training state, and the parts that a
    distributed optimizer shards over the dp ranks (divided by N_d)."""

    weights: float  # the model's working copy, read by forward and backward
    grads: float  # the gradient buffer that backward accumulates into
    master: float  # the optimizer's high-precision copy of the weights (0 if none)
    moments: float  # Adam's m and v
    sharded: tuple[str, ...] = ()


RECIPES: dict[str, Recipe] = {
    # Plain fp32 training with Adam: 4 + 4 + 8 = 16 (Megatron-Core dist_optimizer.md table,
    # row "fp32 param, fp32 grads": 16 non-distributed). No master copy: the weights are it.
    "fp32": Recipe(weights=4, grads=4, master=0, moments=8),
    # ZeRO Sec. 3.1: fp16 weights 2Ψ, fp16 gradients 2Ψ, fp32 master + momentum + variance
    # KΨ with K = 12: 16Ψ. The book's default (calc.memory WEIGHT_BYTES, GRAD_BYTES,
    # OPTIMIZER_BYTES).
    "zero-paper": Recipe(weights=2, grads=2, master=4, moments=8),
    # Megatron-LM bf16: bf16 weights 2, gradients accumulated in fp32 (main_grad) 4,
    # fp32 master 4, Adam 8: 18 (Megatron-Core docs/source/api-guide/dist_optimizer.md,
    # table row "float16 param, fp32 grads", non-distributed: 18).
    "megatron-bf16": Recipe(weights=2, grads=4, master=4, moments=8),
    # The same with Megatron's distributed optimizer: master weights and Adam state sharded
    # over d ranks, weights and fp32 gradients kept whole: 6 + 12/d (same table,
    # "Distributed optim" column).
    "megatron-distopt": Recipe(weights=2, grads=4, master=4, moments=8, sharded=("master", "moments")),
    # FP8 with Transformer Engine on top of Megatron bf16: "weights are stored in high
    # precision and quantized to low precision before the GEMM" (TE docs, Low precision
    # training, Introduction, "Linear layer data flow"), so the FP8 copies are transient
    # and the persistent state is the bf16 recipe's 18.
    "fp8-te": Recipe(weights=2, grads=4, master=4, moments=8),
    # DeepSeek-V3 (technical report, Sec. 3.3.1 and 3.3.3): FP8 GEMMs; master weights and
    # gradients "retained in FP32"; AdamW's first and second moments in BF16 (2 + 2). The
    # report does not state the working copy's format; counted as BF16 (2), like Megatron.
    "fp8-deepseek": Recipe(weights=2, grads=4, master=4, moments=4),
}
RECIPE_NAMES = tuple(RECIPES)


@dataclass(frozen=True)
class RecipeBytes:
    """Bytes per parameter on one GPU of each part, after sharding over dp.

    Maps onto ``calc.memory.StateBytes`` and ``calc.zero.state_per_gpu(...)``: weights
    (WEIGHT_BYTES), grads (GRAD_BYTES) and ``optimizer`` = master + moments, ZeRO's K
    (``optimizer_bytes``)."""

    weights: float
    grads: float
    master: float
    moments: float

    @property
    def optimizer(self) -> float:
        """master + moments: K in ZeRO's notation (12 for mixed-precision Adam)."""
        return math.fsum((self.master, self.moments))

    @property
    def total(self) -> float:
        """weights + grads + master + moments."""
        return math.fsum((self.weights, self.grads, self.master, self.moments))


def _recipe(recipe: str) -> Recipe:
    return RECIPES[check_choice("recipe", recipe, RECIPE_NAMES)]


def recipe_bytes(recipe: str, *, dp: int = 1) -> RecipeBytes:
    """Per-GPU bytes per parameter of each part of ``recipe``, the parts the recipe's
    distributed optimizer shards divided by N_d = ``dp`` (Megatron-Core
    dist_optimizer.md: 6 + 12/d for bf16 params with fp32 grads). Recipes without a
    distributed optimizer ignore dp (plain data parallelism replicates the state; ZeRO's
    stages are ``calc.zero``)."""
    r = _recipe(recipe)
    n = check_int("dp", dp, 1, MAX_GPUS)
    parts = {part: getattr(r, part) / (n if part in r.sharded else 1) for part in PARTS}
    return RecipeBytes(**parts)


def state_bytes_per_param(recipe: str, *, dp: int = 1) -> float:
    """Training state bytes per parameter on one GPU: zero-paper 16, megatron-bf16 18,
    megatron-distopt 6 + 12/d, fp8-te 18, fp8-deepseek 14, fp32 16."""
    return recipe_bytes(recipe, dp=dp).total


def unsharded_bytes_per_param(recipe: str) -> float:
    """Bytes per parameter that ``recipe`` keeps whole on every GPU, whatever dp: the
    limit of ``state_bytes_per_param`` as d grows. megatron-distopt: bf16 weights 2 +
    fp32 gradients 4 = 6 (Megatron-Core dist_optimizer.md, 6 + 12/d); recipes without a
    distributed optimizer keep everything (zero-paper 16)."""
    r = _recipe(recipe)
    return math.fsum(getattr(r, part) for part in PARTS if part not in r.sharded)


def optimizer_bytes(recipe: str) -> float:
    """K of ``recipe`` (master + moments, unsharded), for ``calc.zero``'s and
    ``calc.memory``'s ``optimizer_bytes`` argument: 12 for zero-paper."""
    return recipe_bytes(recipe).optimizer


def state_bytes(params: float, recipe: str, *, dp: int = 1) -> float:
    """Training state of Ψ = ``params`` parameters on one GPU: Ψ × bytes per parameter.
    Llama 2 7B, megatron-bf16: 121.3e9."""
    p = check_real("params", params, 0, MAX_PARAMS)
    return p * state_bytes_per_param(recipe, dp=dp)
