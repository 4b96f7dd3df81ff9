//! Exact arithmetic between f64 values and integer time counts.

/// Largest magnitude of a scaled value accepted by [`scaled_round_micros`]: 2^70 µs (about 37 million years).
const MAX_MICROS: f64 = 1_180_591_620_717_411_303_424.0;

/// Splits a finite f64 into (negative, mantissa, exponent) with |x| = mantissa * 2^exponent.
fn decompose(x: f64) -> (bool, u64, i32) {
    let bits = x.to_bits();
    let negative = bits >> 63 == 1;
    // Lossless: an 11-bit field.
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    if exp_bits == 0 {
        (negative, frac, -1074)
    } else {
        (negative, frac | (1u64 << 52), exp_bits - 1075)
    }
}

/// `value * factor` rounded to an integer number of microseconds, exactly as cftime does it.
///
/// cftime multiplies by the unit's length in microseconds and rounds half to even (`np.rint`);
/// for units of a second or longer (`snap_to_seconds`) a result 1 µs past or before a whole
/// second is replaced by the floor or ceiling of the exact product (cftime issue #187), which
/// snaps float noise onto whole seconds. Here the product is computed exactly (no float
/// rounding at all). Returns `None` if `value` is not finite or the result exceeds 2^70 µs.
pub(crate) fn scaled_round_micros(value: f64, factor: u64, snap_to_seconds: bool) -> Option<i128> {
    if !value.is_finite() {
        return None;
    }
    // The factor is at most 365 days in µs (< 2^45), exactly representable as f64.
    if value.abs() * factor as f64 > MAX_MICROS {
        return None;
    }
    let (negative, mant, exp) = decompose(value);
    let product = u128::from(mant) * u128::from(factor); // < 2^98
    // Magnitude: round-half-even, floor and ceiling of product * 2^exp.
    let (rint, floor, ceil) = if exp >= 0 {
        // Bounded by the MAX_MICROS check above (< 2^71).
        let v = product << exp;
        (v, v, v)
    } else {
        let shift = exp.unsigned_abs();
        if shift >= 127 {
            // product < 2^98, so the value is below 2^-29: rounds to 0.
            let c = u128::from(product != 0);
            (0, 0, c)
        } else {
            let q = product >> shift;
            let rem = product - (q << shift);
            let half = 1u128 << (shift - 1);
            let r = if rem > half || (rem == half && q & 1 == 1) {
                q + 1
            } else {
                q
            };
            (r, q, q + u128::from(rem != 0))
        }
    };
    // Lossless: all three are below 2^72.
    let (rint, floor, ceil) = if negative {
        (-(rint as i128), -(ceil as i128), -(floor as i128))
    } else {
        (rint as i128, floor as i128, ceil as i128)
    };
    let mut out = rint;
    if snap_to_seconds {
        if out.rem_euclid(1_000_000) == 1 {
            out = floor;
        }
        if out.rem_euclid(1_000_000) == 999_999 {
            out = ceil;
        }
    }
    Some(out)
}

/// Number of significant bits of `x` (0 for 0).
fn bit_len(x: u128) -> u32 {
    128 - x.leading_zeros()
}

/// `n / d` correctly rounded to the nearest f64 (ties to even); `d` must be positive.
///
/// Valid for any `n` and 0 < d < 2^72 (units are below 2^56 ns), which keeps every
/// intermediate below 2^128.
pub(crate) fn div_to_f64(n: i128, d: i128) -> f64 {
    debug_assert!(d > 0);
    let negative = n < 0;
    let n = n.unsigned_abs();
    let d = d.unsigned_abs().max(1);
    let magnitude = if n.is_multiple_of(d) {
        // Exact quotient: the integer-to-float conversion rounds correctly.
        (n / d) as f64
    } else {
        // Scale so that the quotient has at least 55 significant bits, then fold the
        // remainder into a sticky bit below the rounding position.
        let shift = (55 + bit_len(d)).saturating_sub(bit_len(n));
        let scaled = n << shift;
        let q = scaled / d;
        let sticky = u128::from(!scaled.is_multiple_of(d));
        let approx = (q | sticky) as f64;
        // Exact: multiplication by a power of two that stays in the normal range.
        approx * 2f64.powi(-(shift as i32))
    };
    if negative { -magnitude } else { magnitude }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_products() {
        assert_eq!(
            scaled_round_micros(1.0, 86_400_000_000, true),
            Some(86_400_000_000)
        );
        assert_eq!(
            scaled_round_micros(-1.5, 3_600_000_000, true),
            Some(-5_400_000_000)
        );
        assert_eq!(
            scaled_round_micros(0.1, 86_400_000_000, true),
            Some(8_640_000_000)
        );
        // Ties to even.
        assert_eq!(scaled_round_micros(0.5, 1, false), Some(0));
        assert_eq!(scaled_round_micros(1.5, 1, false), Some(2));
        assert_eq!(scaled_round_micros(2.5, 1, false), Some(2));
        assert_eq!(scaled_round_micros(-2.5, 1, false), Some(-2));
        assert_eq!(scaled_round_micros(-3.5, 1, false), Some(-4));
        // cftime's snap onto whole seconds.
        assert_eq!(
            scaled_round_micros(1.000_000_6, 1_000_000, true),
            Some(1_000_000)
        );
        assert_eq!(
            scaled_round_micros(0.999_999_4, 1_000_000, true),
            Some(1_000_000)
        );
        assert_eq!(
            scaled_round_micros(-1.000_000_6, 1_000_000, true),
            Some(-1_000_000)
        );
        // 1.000001 is 1000000.99999999990... µs: cftime floors it onto the second.
        assert_eq!(
            scaled_round_micros(1.000_001, 1_000_000, true),
            Some(1_000_000)
        );
        assert_eq!(
            scaled_round_micros(2.000_001, 1_000_000, true),
            Some(2_000_001)
        );
        assert_eq!(
            scaled_round_micros(1.000_002, 1_000_000, true),
            Some(1_000_002)
        );
        assert_eq!(
            scaled_round_micros(0.999_999, 1_000_000, true),
            Some(999_999)
        );
        assert_eq!(
            scaled_round_micros(1.000_000_6, 1_000_000, false),
            Some(1_000_001)
        );
        // Tiny and huge values.
        assert_eq!(scaled_round_micros(f64::MIN_POSITIVE, 1, true), Some(0));
        assert_eq!(scaled_round_micros(5e-324, 1, true), Some(0));
        assert_eq!(scaled_round_micros(-0.0, 1, true), Some(0));
        assert_eq!(scaled_round_micros(1e300, 86_400_000_000, true), None);
        assert_eq!(scaled_round_micros(f64::MAX, 1, true), None);
        assert_eq!(scaled_round_micros(f64::NAN, 1, true), None);
        assert_eq!(
            scaled_round_micros(2f64.powi(60), 1, true),
            Some(1i128 << 60)
        );
    }

    #[test]
    fn correctly_rounded_division() {
        assert_eq!(div_to_f64(1, 10), 0.1);
        assert_eq!(div_to_f64(-1, 3), -1.0 / 3.0);
        assert_eq!(div_to_f64(2, 3), 2.0 / 3.0);
        assert_eq!(div_to_f64(86_400, 86_400), 1.0);
        assert_eq!(div_to_f64(0, 7), 0.0);
        // Large numerators beyond 2^53.
        let n: i128 = (1 << 60) + 1;
        assert_eq!(div_to_f64(n, 1), n as f64);
        assert_eq!(div_to_f64(3 * n, 3), n as f64);
        // Compare with f64 division where it is exact for operands below 2^53.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x >> 12) as i128 - (1 << 51);
            let d = ((x >> 40) as i128).max(1);
            assert_eq!(div_to_f64(n, d), n as f64 / d as f64, "{n}/{d}");
        }
    }
}
