"""The low-precision number formats of CDNA3 and CDNA4 and their conversions, lane-wise over numpy arrays.

gfx942 (MI300) has the FNUZ 8-bit floats: e4m3 bias 8 and e5m2 bias 16, no infinity, 0x80 the only NaN, no
negative zero. gfx950 (MI350) has the OCP ones (OFP8: e4m3fn bias 7, S.1111.111 NaN; e5m2 bias 15, IEEE-like) and
the OCP MX element formats fp6 e2m3, bf6 e3m2 and fp4 e2m1, which have neither infinity nor NaN, with E8M0 scales.

Conversions to a format round to nearest even, or stochastically: the random bits are added below the kept
mantissa bits, aligned to the result's last place, then the magnitude is truncated (AMD's host model of gfx950's
conversions, amd_hip_ocp_host.hpp; CDNA3's V_CVT_SR_FP8_F32 adds S1[31:12] to an f32's mantissa, the same
alignment). Out of range (past the largest finite value after rounding, or infinite): no conversion saturates —
HIP and tinygrad clamp in software first where they want that — so FNUZ formats and OCP e4m3 give NaN, OCP e5m2 and
the IEEE formats (f16, bf16, f32 results) infinity (tinygrad's gfx950 hardware test: V_CVT_PK_BF8_F32 of 61440 or
±inf is ±inf); only the MX formats fp6, bf6 and fp4, which have neither, give their largest value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Format:
    exp: int  # exponent bits
    man: int  # mantissa bits
    bias: int
    special: str  # "ieee" (all-ones exponent: inf, NaN), "fn" (S.1..1.1..1 is NaN), "fnuz" (0x80 NaN), "none"

    @property
    def bits(self) -> int:
        return 1 + self.exp + self.man

    @property
    def top(self) -> int:
        """The largest finite magnitude's code."""
        top_exp = (1 << self.exp) - 1 - (self.special == "ieee")
        return (top_exp << self.man) | ((1 << self.man) - 1 - (self.special == "fn"))

    @property
    def largest(self) -> float:
        return float(decode(np.asarray([self.top]), self)[0])


FORMATS = {
    "fp8_fnuz": Format(4, 3, 8, "fnuz"), "bf8_fnuz": Format(5, 2, 16, "fnuz"),
    "fp8": Format(4, 3, 7, "fn"), "bf8": Format(5, 2, 15, "ieee"),
    "fp6": Format(2, 3, 1, "none"), "bf6": Format(3, 2, 3, "none"), "fp4": Format(2, 1, 1, "none"),
    "f16": Format(5, 10, 15, "ieee"), "bf16": Format(8, 7, 127, "ieee"), "f32": Format(8, 23, 127, "ieee"),
}


def decode(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """The value (float64) of each code's low fmt.bits bits."""
    u = np.asarray(codes).astype(np.int64) & ((1 << fmt.bits) - 1)
    e, m = (u >> fmt.man) & ((1 << fmt.exp) - 1), u & ((1 << fmt.man) - 1)
    neg = (u >> (fmt.bits - 1)) != 0
    mag = np.where(e == 0, m * 2.0 ** (1 - fmt.bias - fmt.man), (1 + m / 2.0**fmt.man) * np.exp2(e - fmt.bias))
    all_e, all_m = e == (1 << fmt.exp) - 1, m == (1 << fmt.man) - 1
    if fmt.special == "ieee":
        mag = np.where(all_e, np.where(m == 0, np.inf, np.nan), mag)
    elif fmt.special == "fn":
        mag = np.where(all_e & all_m, np.nan, mag)
    elif fmt.special == "fnuz":
        mag = np.where(u == 1 << (fmt.bits - 1), np.nan, mag)
        neg = neg & (u != 1 << (fmt.bits - 1))
    return np.where(neg, -mag, mag)


def encode(x: np.ndarray, fmt: Format, noise: np.ndarray | None = None, source_man: int = 23) -> np.ndarray:
    """Values (any float array) to fmt's codes (uint32): round to nearest even, or stochastically with 32 noise
    bits per value (the top bits that fit below the result's last place of a source with source_man mantissa
    bits: f32 23, f16 10, bf16 7)."""
    x = np.asarray(x, np.float64)
    sign = np.signbit(x).astype(np.uint32) << np.uint32(fmt.bits - 1)
    ax = np.abs(x)
    finite = np.isfinite(ax)
    exp = np.maximum(np.frexp(np.where(finite & (ax > 0), ax, 1.0))[1] - 1, 1 - fmt.bias)
    scaled = np.where(finite, ax, 0.0) / np.exp2(exp - fmt.man)  # the value in units of its last place: exact
    if noise is None:
        q = np.rint(scaled)
    else:
        kept = source_man - fmt.man  # the random bits that fit below the last place
        fraction = np.floor(scaled * 2.0**kept)
        random = (np.asarray(noise).astype(np.uint64) >> np.uint64(32 - kept)).astype(np.float64)
        q = np.floor((fraction + random) / 2.0**kept)
    mag = q * np.exp2(exp - fmt.man)
    normal = mag >= 2.0 ** (1 - fmt.bias)
    e2 = np.maximum(np.frexp(np.where(mag > 0, mag, 1.0))[1] - 1, 1 - fmt.bias)
    code = np.where(normal, ((e2 + fmt.bias) << fmt.man) + mag / np.exp2(e2 - fmt.man) - (1 << fmt.man),
                    mag / 2.0 ** (1 - fmt.bias - fmt.man))
    code = np.where(finite, code, 0).astype(np.uint32)
    over = ~finite | (mag > fmt.largest)
    code = np.where(over, _overflow(fmt), code)
    code = np.where(np.isnan(x), _nan(fmt), code)
    if fmt.special == "fnuz":  # one zero, and a sign only where the code is not NaN or zero
        return np.where((code == 0) | (code == 0x80), code, code | sign).astype(np.uint32)
    return (code | sign).astype(np.uint32)


def _overflow(fmt: Format) -> int:
    """The code (without sign) of a finite value past the largest, or of an infinity."""
    if fmt.special == "none":
        return fmt.top
    return ((1 << fmt.exp) - 1) << fmt.man if fmt.special == "ieee" else _nan(fmt)


def _nan(fmt: Format) -> int:
    """A NaN's code (without sign): quiet NaN, FNUZ's 0x80; the NaN-less MX formats give their largest value."""
    return {"ieee": (((1 << fmt.exp) - 1) << fmt.man) | (1 << (fmt.man - 1)), "fn": (1 << (fmt.bits - 1)) - 1,
            "fnuz": 1 << (fmt.bits - 1), "none": fmt.top}[fmt.special]


def e8m0(scale_bits: np.ndarray) -> np.ndarray:
    """An E8M0 scale (the exponent field of an f32 operand, as gfx950 takes it) as its value, 2**(e - 127);
    0xFF is NaN."""
    e = np.asarray(scale_bits).astype(np.int64) & 0xFF
    return np.where(e == 0xFF, np.nan, np.exp2((e - 127).astype(np.float64)))
