//! Numerals in both directions.
//!
//! Every VLAD number is an IEEE double, so reading and printing are about
//! getting the *same* `f64` back: decimal numerals go through Rust's
//! correctly rounded `str::parse::<f64>` (after we have checked the token
//! against VLAD's own grammar, because Rust also accepts `inf`, `NaN`, ...),
//! and printing uses Rust's shortest round-trip digits laid out the way
//! JavaScript's `Number.prototype.toString` lays them out (VLAD.md section 8).

/// Reads a numeral token, or `None` when `tok` is not a VLAD numeral.
///
/// Accepted: an optional sign, digits with an optional fraction (`3`, `-1`,
/// `2.5`, `4.`, `.5`, `-.25`, `+5`), an optional exponent (`1e-5`, `1E5`);
/// the integer prefixes `#b #o #d #x` followed by an optional sign and
/// digits of that radix (`#x-ff`); and the special values `+inf.0`,
/// `-inf.0`, `+nan.0`, `-nan.0`, so that everything [`format_real`] prints
/// reads back.
pub fn parse_numeral(tok: &str) -> Option<f64> {
    match tok {
        "+inf.0" => return Some(f64::INFINITY),
        "-inf.0" => return Some(f64::NEG_INFINITY),
        "+nan.0" | "-nan.0" => return Some(f64::NAN),
        _ => {}
    }
    if let Some(rest) = tok.strip_prefix('#') {
        let mut chars = rest.chars();
        let radix = match chars.next()?.to_ascii_lowercase() {
            'b' => 2,
            'o' => 8,
            'd' => 10,
            'x' => 16,
            _ => return None,
        };
        return parse_prefixed(chars.as_str(), radix);
    }
    if is_decimal(tok) {
        tok.parse::<f64>().ok()
    } else {
        None
    }
}

/// Checks `[+-]? (d+ (. d*)? | . d+) ([eE] [+-]? d+)?`: the decimal numeral
/// grammar. Needed because `f64::from_str` is more permissive (`inf`, `nan`,
/// `infinity`) and those must stay symbols or errors in VLAD.
fn is_decimal(tok: &str) -> bool {
    let b = tok.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut mantissa_digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        mantissa_digits += i - frac_start;
    }
    if mantissa_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

/// Reads the part after `#b`/`#o`/`#d`/`#x`: an optional sign and at least
/// one digit of `radix`. The value is correctly rounded even when it does
/// not fit in 64 bits (see [`bits_to_f64`]).
fn parse_prefixed(s: &str, radix: u32) -> Option<f64> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = if radix == 10 {
        // Decimal integers: the standard parser rounds correctly.
        digits.parse::<f64>().ok()?
    } else {
        let bits_per_digit = radix.trailing_zeros();
        let mut bits = Vec::with_capacity(digits.len() * bits_per_digit as usize);
        for c in digits.chars() {
            let d = c.to_digit(radix)?;
            for k in (0..bits_per_digit).rev() {
                bits.push((d >> k) & 1 == 1);
            }
        }
        bits_to_f64(&bits)
    };
    Some(if neg { -magnitude } else { magnitude })
}

/// Converts a big-endian bit string to the nearest `f64`.
///
/// Keeps the top 64 significant bits and ORs a "sticky" bit for everything
/// below into the lowest one: 64 bits leave 11 bits below the 53-bit
/// significand, so the `u64 -> f64` conversion (round to nearest even) then
/// rounds exactly as if it had seen all the bits. Scaling by a power of two
/// is exact (or overflows to infinity, which is then the right answer).
fn bits_to_f64(bits: &[bool]) -> f64 {
    let first_one = match bits.iter().position(|&b| b) {
        Some(p) => p,
        None => return 0.0,
    };
    let sig = &bits[first_one..];
    let take = sig.len().min(64);
    let mut top: u64 = 0;
    for &b in &sig[..take] {
        top = (top << 1) | b as u64;
    }
    let dropped = sig.len() - take;
    if sig[take..].iter().any(|&b| b) {
        top |= 1;
    }
    let mut x = top as f64;
    // Multiply in steps that stay finite as long as the result is finite.
    let mut shift = dropped;
    while shift > 0 && x.is_finite() {
        let step = shift.min(512);
        x *= 2f64.powi(step as i32);
        shift -= step;
    }
    x
}

/// Prints a real the way VLAD.md section 8 asks: the shortest digits that
/// read back to the same `f64`, laid out as JavaScript's
/// `Number.prototype.toString` lays them out.
///
/// Plain decimal when the decimal exponent `n` (value = 0.d1d2... × 10^n)
/// satisfies -6 < n <= 21, i.e. 1e-6 <= |x| < 1e21 (`0.000001`, `3`,
/// `123456789012345680000`); exponent form otherwise (`1e-7`, `1.5e-7`,
/// `1e+21`). Both zeros print `0`, as in JavaScript.
pub fn format_real(x: f64) -> String {
    if x.is_nan() {
        return "+nan.0".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "+inf.0" } else { "-inf.0" }.to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    // `{:e}` gives the shortest round-trip digits: `-1.2345e-8`, `1e21`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = match sci.split_once('e') {
        Some(p) => p,
        None => return sci, // unreachable for finite x; never panic
    };
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i64;
    let n = exp + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
    out
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
