//! Numerals in both directions.
//!
//! Every VLAD number is an IEEE double, so reading and printing are about
//! getting the *same* `f64` back: decimal numerals go through Rust's
//! correctly rounded `str::parse::<f64>` (after we have checked the token
//! against VLAD's own grammar, because Rust also accepts `inf`, `NaN`, ...),
//! and printing uses Rust's shortest round-trip digits laid out the way
//! JavaScript's `Number.prototype.toString` lays them out (docs/reference.md).
//!
//! The work is done in [`crate::number_core`], which uses only `core` so
//! that the native runtime shares it (compiled programs print exactly as
//! `run` does); this module gives the reader, the interpreter, the
//! analysis and the dumps its `String` form.

pub use crate::number_core::parse_numeral;

/// The longest vector: a length or an index is a real with an integral
/// value from 0 up to this. The interpreter, the analysis and compiled code
/// (`fir::Op::IsCount`) all ask [`is_count`], so that a length is refused
/// alike in every mode.
pub const MAX_COUNT: f64 = (1u64 << 40) as f64;

/// Is `x` a length or an index: an integral real from 0 to [`MAX_COUNT`]?
pub fn is_count(x: f64) -> bool {
    x.trunc() == x && (0.0..=MAX_COUNT).contains(&x)
}

/// Prints a real the way docs/reference.md asks: the shortest digits that
/// read back to the same `f64`, laid out as JavaScript's
/// `Number.prototype.toString` lays them out.
///
/// Plain decimal when the decimal exponent `n` (value = 0.d1d2... × 10^n)
/// satisfies -6 < n <= 21, i.e. 1e-6 <= |x| < 1e21 (`0.000001`, `3`,
/// `123456789012345680000`); exponent form otherwise (`1e-7`, `1.5e-7`,
/// `1e+21`). Both zeros print `0`, as in JavaScript.
pub fn format_real(x: f64) -> String {
    crate::number_core::format_real(x).as_str().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> f64 {
        parse_numeral(s).unwrap_or_else(|| panic!("{s} should parse"))
    }

    #[test]
    fn decimal_numerals() {
        assert_eq!(p("3"), 3.0);
        assert_eq!(p("-1"), -1.0);
        assert_eq!(p("+5"), 5.0);
        assert_eq!(p("2.5"), 2.5);
        assert_eq!(p("4."), 4.0);
        assert_eq!(p(".5"), 0.5);
        assert_eq!(p("-.25"), -0.25);
        assert_eq!(p("1e-5"), 1e-5);
        assert_eq!(p("2.073e-2"), 2.073e-2);
        assert_eq!(p("1E5"), 1e5);
        assert_eq!(p("1e+5"), 1e5);
        assert_eq!(p("0.1"), 0.1);
        assert_eq!(p("-0").to_bits(), (-0.0f64).to_bits());
        assert_eq!(p("1e400"), f64::INFINITY);
        assert_eq!(p("4.e2"), 400.0);
        assert_eq!(p("007"), 7.0);
    }

    #[test]
    fn special_values() {
        assert_eq!(p("+inf.0"), f64::INFINITY);
        assert_eq!(p("-inf.0"), f64::NEG_INFINITY);
        assert!(p("+nan.0").is_nan());
        assert!(p("-nan.0").is_nan());
    }

    #[test]
    fn prefixed_numerals() {
        assert_eq!(p("#b101"), 5.0);
        assert_eq!(p("#o17"), 15.0);
        assert_eq!(p("#d10"), 10.0);
        assert_eq!(p("#xff"), 255.0);
        assert_eq!(p("#xFF"), 255.0);
        assert_eq!(p("#XfF"), 255.0);
        assert_eq!(p("#x-ff"), -255.0);
        assert_eq!(p("#b+1"), 1.0);
        assert_eq!(p("#x0"), 0.0);
        assert_eq!(p("#xffffffffffffffff"), 18446744073709551615.0);
        // 2^64 + 1 rounds to 2^64; 2^53 + 1 rounds to even.
        assert_eq!(p("#x10000000000000001"), 18446744073709551616.0);
        assert_eq!(p("#x20000000000001"), 9007199254740992.0);
        assert_eq!(p("#x20000000000003"), 9007199254740996.0);
        // Sticky bit far below the top 64 bits breaks a tie upwards.
        let tie_plus = format!("#x20000000000001{}1", "0".repeat(20));
        let want = (9007199254740994.0f64) * 2f64.powi(84);
        assert_eq!(p(&tie_plus), want);
        assert_eq!(p(&format!("#x1{}", "0".repeat(300))), f64::INFINITY);
    }

    #[test]
    fn not_numerals() {
        for s in [
            "", "+", "-", ".", "...", "e5", "1e", "1e+", "1.2.3", "inf", "nan", "infinity", "+inf",
            "#b102", "#b", "#x-", "#xg", "#q1", "#", "1/2", "--1", "a1", "1a", "0x10", "#x1.5",
            "+-1", ". 5", "#d1e5",
        ] {
            assert_eq!(parse_numeral(s), None, "{s:?} should not parse");
        }
    }

    #[test]
    fn format_plain() {
        assert_eq!(format_real(3.0), "3");
        assert_eq!(format_real(-1.0), "-1");
        assert_eq!(format_real(0.5), "0.5");
        assert_eq!(format_real(0.0001), "0.0001");
        assert_eq!(format_real(0.000001), "0.000001");
        assert_eq!(format_real(123.456), "123.456");
        assert_eq!(format_real(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(
            format_real(123456789012345680000.0),
            "123456789012345680000"
        );
        assert_eq!(format_real(1e20), "100000000000000000000");
        assert_eq!(format_real(-2.5), "-2.5");
        assert_eq!(format_real(2.073e-2), "0.02073");
    }

    #[test]
    fn format_exponent() {
        assert_eq!(format_real(4.965316230354233e-8), "4.965316230354233e-8");
        assert_eq!(format_real(1e21), "1e+21");
        assert_eq!(format_real(1.5e-7), "1.5e-7");
        assert_eq!(format_real(1e-7), "1e-7");
        assert_eq!(format_real(-1e-7), "-1e-7");
        assert_eq!(format_real(1.2345e300), "1.2345e+300");
        assert_eq!(format_real(5e-324), "5e-324");
        assert_eq!(format_real(f64::MAX), "1.7976931348623157e+308");
    }

    #[test]
    fn format_special() {
        assert_eq!(format_real(0.0), "0");
        assert_eq!(format_real(-0.0), "0");
        assert_eq!(format_real(f64::INFINITY), "+inf.0");
        assert_eq!(format_real(f64::NEG_INFINITY), "-inf.0");
        assert_eq!(format_real(f64::NAN), "+nan.0");
    }

    #[test]
    fn round_trip() {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..20000 {
            // xorshift over bit patterns: covers every exponent range.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if f.is_nan() {
                continue;
            }
            let s = format_real(f);
            let back = parse_numeral(&s).unwrap_or_else(|| panic!("{s} does not read"));
            if f == 0.0 {
                assert_eq!(back, 0.0);
            } else {
                assert_eq!(back.to_bits(), f.to_bits(), "{f:?} printed as {s}");
            }
        }
    }
}
