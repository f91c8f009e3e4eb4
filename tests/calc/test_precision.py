"""Number formats, rounding, loss scaling and recipe bytes against their published values."""

from __future__ import annotations

import math
import random
import struct

import pytest

from calc import memory, zero
from calc import precision as prec

# (max finite, smallest normal, smallest subnormal, epsilon) as published:
PUBLISHED = {
    # IEEE 754-2008 Table 3.5 (binary32: emax 127, p 24); FLT_MAX = 3.40282347e38.
    "fp32": (3.4028234663852886e38, 2.0**-126, 2.0**-149, 2.0**-23),
    # IEEE 754-2008 Table 3.5 (binary16: emax 15, p 11): 65504, 2^-14, 2^-24.
    "fp16": (65504.0, 2.0**-14, 2.0**-24, 2.0**-10),
    # bfloat16 (Kalamkar et al. 2019, Sec. 2; torch.finfo(torch.bfloat16).max 3.3895e38,
    # eps 0.0078125 = 2^-7, tiny 1.1755e-38).
    "bf16": (3.3895313892515355e38, 2.0**-126, 2.0**-133, 2.0**-7),
    # Micikevicius et al. 2022, Table 1: E4M3 max 448, min normal 2^-6, min subnormal 2^-9.
    "e4m3": (448.0, 2.0**-6, 2.0**-9, 2.0**-3),
    # Micikevicius et al. 2022, Table 1: E5M2 max 57344, min normal 2^-14, min subnormal 2^-16.
    "e5m2": (57344.0, 2.0**-14, 2.0**-16, 2.0**-2),
}


@pytest.mark.parametrize("fmt", PUBLISHED)
def test_range_and_precision_match_the_published_values(fmt: str) -> None:
    top, normal, subnormal, eps = PUBLISHED[fmt]
    assert prec.max_finite(fmt) == pytest.approx(top, rel=1e-15)
    assert prec.min_normal(fmt) == normal
    assert prec.min_subnormal(fmt) == subnormal
    assert prec.epsilon(fmt) == eps


def test_bf16_keeps_fp32s_range_and_fp16_does_not() -> None:
    """bf16 has fp32's 8 exponent bits: same smallest normal, max within 0.4%."""
    assert prec.min_normal("bf16") == prec.min_normal("fp32")
    assert prec.max_finite("bf16") / prec.max_finite("fp32") == pytest.approx(1 - 2**-8, rel=1e-6)
    assert prec.max_finite("fp16") < 1e5 and prec.min_subnormal("fp16") > 1e-8


def test_widths_and_digits() -> None:
    assert [prec.FORMATS[f].bits for f in ("fp32", "fp16", "bf16", "e4m3", "e5m2")] == [32, 16, 16, 8, 8]
    # p·log10(2): 7.22 (binary32) and 3.31 (binary16) decimal digits.
    assert prec.decimal_digits("fp32") == pytest.approx(7.22, abs=0.005)
    assert prec.decimal_digits("fp16") == pytest.approx(3.31, abs=0.005)
    assert prec.decimal_digits("bf16") == pytest.approx(2.41, abs=0.005)


def _struct_round(value: float, code: str) -> float:
    return struct.unpack(code, struct.pack(code, value))[0]


@pytest.mark.parametrize(("fmt", "code"), [("fp16", "e"), ("fp32", "f")])
def test_round_to_matches_the_hardware_conversion_of_struct(fmt: str, code: str) -> None:
    """struct's 'e' and 'f' round to nearest even like IEEE 754; compare over many
    magnitudes, including subnormals and ties."""
    rng = random.Random(7)
    top = prec.max_finite(fmt)
    samples = [rng.uniform(-1, 1) * 2.0 ** rng.randint(-160, 130) for _ in range(4000)]
    # Exact ties between two fp16 values (1 + 2^-11 is half-way between 1 and 1 + 2^-10).
    samples += [1 + 2**-11, 1 + 3 * 2**-11, 2**-25, 3 * 2**-25, 2048 + 1, 2048 + 3]
    for x in samples:
        if abs(x) >= top:
            continue
        assert prec.round_to(x, fmt) == _struct_round(x, code), x


def test_round_to_ties_to_even_underflows_and_overflows() -> None:
    assert prec.round_to(1 + 2**-11, "fp16") == 1.0  # tie, down to the even mantissa
    assert prec.round_to(1 + 3 * 2**-11, "fp16") == 1 + 2 * 2**-10  # tie, up to even
    assert prec.round_to(2**-25, "fp16") == 0.0  # half the smallest subnormal: tie to 0
    assert prec.round_to(1e-8, "fp16") == 0.0
    assert prec.round_to(1e-8, "bf16") == pytest.approx(1e-8, rel=2**-8)
    assert prec.round_to(65519.99, "fp16") == 65504.0
    assert prec.round_to(65520.0, "fp16") == math.inf  # the tie above max overflows
    assert prec.round_to(-1e5, "e5m2") == -math.inf
    assert prec.round_to(1e5, "e4m3") == 448.0  # no infinity: saturates
    assert prec.round_to(464.0, "e4m3") == 448.0
    assert prec.round_to(300.0, "e4m3") == 288.0  # spacing 32 in [256, 448]


@pytest.mark.parametrize("fmt", PUBLISHED)
def test_every_normal_value_has_relative_error_at_most_half_epsilon(fmt: str) -> None:
    rng = random.Random(3)
    lo, hi = math.log2(prec.min_normal(fmt)), math.log2(prec.max_finite(fmt))
    for _ in range(500):
        x = 2.0 ** rng.uniform(lo, hi - 0.01)
        assert prec.relative_error(x, fmt) <= prec.epsilon(fmt) / 2


def test_encoding_of_known_values() -> None:
    assert prec.encode(0.1, "fp16").bits("fp16") == "0010111001100110"  # 0x2E66
    assert prec.encode(1.0, "fp32").bits("fp32") == "0" + "01111111" + "0" * 23
    assert prec.encode(-2.0, "bf16").bits("bf16") == "1100000000000000"  # 0xC000
    assert prec.encode(448.0, "e4m3").bits("e4m3") == "01111110"  # S.1111.110, Table 1
    assert prec.encode(57344.0, "e5m2").bits("e5m2") == "01111011"  # S.11110.11, Table 1
    sub = prec.encode(2.0**-9, "e4m3")
    assert sub.subnormal and sub.bits("e4m3") == "00000001"
    for x in (0.1, 1e-6, 3.0e4, -7.5):  # the fields rebuild the value
        e = prec.encode(x, "fp16")
        assert int(e.bits("fp16"), 2) == struct.unpack("<H", struct.pack("<e", x))[0]


def test_loss_scaling_rescues_small_gradients_in_fp16() -> None:
    """Micikevicius et al. 2018, Sec. 3.2: gradients below 2^-24 vanish in fp16; S lifts them."""
    g = 1e-8
    assert prec.loss_scaled(g, 1).recovered == 0.0
    rescued = prec.loss_scaled(g, 1024)
    assert not rescued.overflow and rescued.recovered == pytest.approx(g, rel=2e-3)
    # SSD's S = 8 shifts exponents by 3: 2^-27 becomes the smallest subnormal, exactly.
    assert prec.loss_scaled(2.0**-27, 8).recovered == 2.0**-27
    # Too large a scale overflows and the step is skipped.
    big = prec.loss_scaled(1.0, 2.0**16)
    assert big.overflow and big.recovered == 0.0
    with pytest.raises(ValueError, match="loss_scale"):
        prec.loss_scaled(g, 1000)


def test_zero_paper_recipe_is_the_books_16_bytes() -> None:
    """Rajbhandari et al. 2020, Sec. 3.1: 2 + 2 + K with K = 12 (calc.memory constants)."""
    r = prec.recipe_bytes("zero-paper")
    assert (r.weights, r.grads, r.optimizer) == (memory.WEIGHT_BYTES, memory.GRAD_BYTES, memory.OPTIMIZER_BYTES)
    assert prec.state_bytes_per_param("zero-paper") == memory.STATE_BYTES == 16
    assert prec.optimizer_bytes("zero-paper") == 12
    # The breakdown drives calc.zero through its K argument.
    assert zero.state_per_gpu_bytes(params=7.5e9, dp=64, zero_stage=0,
                                    optimizer_bytes=prec.optimizer_bytes("zero-paper")) == pytest.approx(120e9)


@pytest.mark.parametrize("d", [1, 2, 4, 8, 64, 1024])
def test_megatron_distributed_optimizer_table(d: int) -> None:
    """Megatron-Core docs/source/api-guide/dist_optimizer.md: bf16 param with fp32 grads
    is 18 bytes without and 6 + 12/d with the distributed optimizer; fp32 is 16."""
    assert prec.state_bytes_per_param("megatron-bf16", dp=d) == 18
    assert prec.state_bytes_per_param("megatron-distopt", dp=d) == pytest.approx(6 + 12 / d)
    assert prec.state_bytes_per_param("fp32", dp=d) == 16


def test_fp8_recipes() -> None:
    """TE keeps weights in high precision (FP8 copies are per GEMM): the bf16 recipe's 18.
    DeepSeek-V3 Sec. 3.3.3: BF16 AdamW moments, FP32 master weights and gradients."""
    assert prec.state_bytes_per_param("fp8-te") == prec.state_bytes_per_param("megatron-bf16") == 18
    ds = prec.recipe_bytes("fp8-deepseek")
    assert (ds.grads, ds.master, ds.moments) == (4, 4, 4)
    assert prec.state_bytes_per_param("fp8-deepseek") == 14


def test_state_bytes_of_llama2_7b() -> None:
    from calc.models import MODELS, param_count

    params = param_count(MODELS["llama2-7b"])
    assert prec.state_bytes(params, "zero-paper") == pytest.approx(107.8e9, rel=1e-3)
    assert prec.state_bytes(params, "megatron-bf16") == pytest.approx(121.3e9, rel=1e-3)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: prec.max_finite("fp64"), "fmt"),
    (lambda: prec.round_to(math.nan, "fp16"), "value"),
    (lambda: prec.round_to("1", "fp16"), "value"),
    (lambda: prec.state_bytes_per_param("adam"), "recipe"),
    (lambda: prec.state_bytes_per_param("megatron-distopt", dp=0), "dp"),
    (lambda: prec.loss_scaled(1e-8, 0.5), "loss_scale"),
])
def test_bad_arguments_name_themselves(call, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("fmt", PUBLISHED)
def test_spacing_is_epsilon_at_one_and_the_subnormal_step_below_normal(fmt: str) -> None:
    """At 1 the gap is epsilon 2^-m; below the smallest normal it is the smallest
    subnormal (Table 1 of Micikevicius et al. 2022, IEEE 754-2008 Table 3.5)."""
    _, min_normal, min_subnormal, eps = PUBLISHED[fmt]
    assert prec.spacing(1.0, fmt) == eps
    assert prec.spacing(min_normal / 3, fmt) == min_subnormal
    assert prec.spacing(-1.0, fmt) == eps


def test_spacing_of_e4m3_and_e5m2_near_300() -> None:
    """E4M3 between 2^8 and 2^9: 2^(8−3) = 32, so 300 rounds to 288; E5M2: 64, to 320."""
    assert prec.spacing(300.0, "e4m3") == 32.0
    assert prec.spacing(300.0, "e5m2") == 64.0
    assert prec.round_to(300.0, "e4m3") == 288.0 and prec.round_to(300.0, "e5m2") == 320.0
    with pytest.raises(ValueError, match="nonzero"):
        prec.spacing(0.0, "fp16")


def test_unsharded_bytes_are_the_distributed_optimizer_floor() -> None:
    """Megatron-Core dist_optimizer.md: 6 + 12/d, so 6 bytes stay whatever d."""
    assert prec.unsharded_bytes_per_param("megatron-distopt") == 6.0
    assert prec.state_bytes_per_param("megatron-distopt", dp=64) > prec.unsharded_bytes_per_param("megatron-distopt")
    assert prec.unsharded_bytes_per_param("zero-paper") == 16.0
