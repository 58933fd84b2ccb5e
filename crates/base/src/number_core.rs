//! The allocation-free core of [`crate::number`]: reading and printing
//! numerals with nothing but `core`, so that the native runtime
//! (`runtime/src/lib.rs`, `no_std`) includes this very file with
//! `#[path]` and compiled programs read and print reals byte for byte as
//! the interpreter does. Keep it `core`-only: no `std`, no `alloc`.

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
/// not fit in 64 bits (see [`digits_to_f64`]).
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
        digits_to_f64(digits, radix)
    };
    Some(if neg { -magnitude } else { magnitude })
}

/// Converts digits of a power-of-two radix (already checked) to the
/// nearest `f64`.
///
/// Keeps the top 64 significant bits and ORs a "sticky" bit for everything
/// below into the lowest one: 64 bits leave 11 bits below the 53-bit
/// significand, so the `u64 -> f64` conversion (round to nearest even) then
/// rounds exactly as if it had seen all the bits. Scaling by a power of two
/// is exact (or overflows to infinity, which is then the right answer).
fn digits_to_f64(digits: &str, radix: u32) -> f64 {
    let bits_per_digit = radix.trailing_zeros();
    let mut top: u64 = 0;
    let mut taken = 0usize;
    let mut dropped = 0usize;
    let mut sticky = false;
    for c in digits.chars() {
        let d = c.to_digit(radix).unwrap_or(0);
        for k in (0..bits_per_digit).rev() {
            let bit = (d >> k) & 1 == 1;
            if taken == 0 && !bit {
                continue; // leading zero bit
            }
            if taken < 64 {
                top = (top << 1) | bit as u64;
                taken += 1;
            } else {
                dropped += 1;
                sticky |= bit;
            }
        }
    }
    if taken == 0 {
        return 0.0;
    }
    if sticky {
        top |= 1;
    }
    let mut x = top as f64;
    // Multiply in steps that stay finite as long as the result is finite.
    let mut shift = dropped;
    while shift > 0 && x.is_finite() {
        let step = shift.min(512);
        // 2^step, exactly: a biased exponent with an empty significand.
        x *= f64::from_bits(((1023 + step) as u64) << 52);
        shift -= step;
    }
    x
}

/// A printed real: at most 25 bytes (`-0.00000` and 17 digits).
#[derive(Clone, Copy)]
pub struct RealText {
    bytes: [u8; 32],
    len: usize,
}

impl RealText {
    fn new() -> RealText {
        RealText {
            bytes: [0; 32],
            len: 0,
        }
    }

    fn push(&mut self, b: u8) {
        if self.len < self.bytes.len() {
            self.bytes[self.len] = b;
            self.len += 1;
        }
    }

    fn push_all(&mut self, bs: &[u8]) {
        for b in bs {
            self.push(*b);
        }
    }

    fn push_n(&mut self, b: u8, n: i64) {
        for _ in 0..n.max(0) {
            self.push(b);
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII is ever pushed.
        core::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

impl core::fmt::Write for RealText {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        if self.len + s.len() > self.bytes.len() {
            return Err(core::fmt::Error);
        }
        self.push_all(s.as_bytes());
        Ok(())
    }
}

/// Prints a real; see `number::format_real` for the layout.
pub fn format_real(x: f64) -> RealText {
    let mut out = RealText::new();
    if x.is_nan() {
        out.push_all(b"+nan.0");
        return out;
    }
    if x.is_infinite() {
        out.push_all(if x > 0.0 { b"+inf.0" } else { b"-inf.0" });
        return out;
    }
    if x == 0.0 {
        out.push(b'0');
        return out;
    }
    // `{:e}` gives the shortest round-trip digits: `1.2345e-8`, `1e21`.
    let mut sci = RealText::new();
    let abs = f64::from_bits(x.to_bits() & !(1u64 << 63));
    if core::fmt::write(&mut sci, format_args!("{abs:e}")).is_err() {
        return sci; // unreachable: at most 23 bytes
    }
    let sci = sci.as_bytes();
    let e_at = match sci.iter().position(|b| *b == b'e') {
        Some(p) => p,
        None => return out, // unreachable for finite x; never panic
    };
    let exp_text = core::str::from_utf8(&sci[e_at + 1..]).unwrap_or("0");
    let exp: i64 = exp_text.parse().unwrap_or(0);
    let mut digits = [0u8; 24];
    let mut k = 0usize;
    for b in &sci[..e_at] {
        if *b != b'.' && k < digits.len() {
            digits[k] = *b;
            k += 1;
        }
    }
    let digits = &digits[..k];
    let k = k as i64;
    let n = exp + 1;
    if x < 0.0 {
        out.push(b'-');
    }
    if k <= n && n <= 21 {
        out.push_all(digits);
        out.push_n(b'0', n - k);
    } else if 0 < n && n <= 21 {
        out.push_all(&digits[..n as usize]);
        out.push(b'.');
        out.push_all(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_all(b"0.");
        out.push_n(b'0', -n);
        out.push_all(digits);
    } else {
        out.push(digits[0]);
        if k > 1 {
            out.push(b'.');
            out.push_all(&digits[1..]);
        }
        out.push(b'e');
        out.push(if n > 0 { b'+' } else { b'-' });
        let _ = core::fmt::write(&mut out, format_args!("{}", (n - 1).abs()));
    }
    out
}
