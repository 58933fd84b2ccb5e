//! How a value is shortened in an error message, written once for the
//! interpreter, the flow analysis (messages known at compile time), the FIR
//! evaluator and the native runtime (messages that show run-time values).
//! Core-only: the runtime includes this file with `#[path]`.

/// What a compiled program prints when its recursion outgrows its stack:
/// the machine stack (the runtime's guard) or, for a recursion the FIR
/// passes made loops (`fir::passes::unrecurse`), its levels.
pub const RECURSION_TOO_DEEP: &str = "error: recursion too deep: the program ran out of stack";

/// How a message shows a part of a value that neither the analysis nor
/// code run then can print.
pub const RUN_TIME_SHAPE: &str = "#<value of run-time shape>";

/// A value's text longer than this many bytes is cut.
pub const VALUE_MAX: usize = 120;

/// What a cut value ends with.
pub const ELLIPSIS: &str = "...";

/// Where to cut `text`, the bytes of one value's printed form (UTF-8), to
/// shorten it for a message: `None` when it fits; otherwise the length to
/// keep before [`ELLIPSIS`], never inside a UTF-8 sequence.
pub fn value_cut(text: &[u8]) -> Option<usize> {
    if text.len() <= VALUE_MAX {
        return None;
    }
    let mut cut = VALUE_MAX - ELLIPSIS.len();
    while cut > 0 && (text[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    Some(cut)
}

/// A call site as compiled code holds it (the string of a `CallAt`):
/// `file:line:col`, then, where derivatives are in effect, a newline and
/// the note on them, which ends the message. Splits `site` into the
/// position and that ending (empty when there is none).
pub fn site_parts(site: &[u8]) -> (&[u8], &[u8]) {
    match site.iter().position(|&b| b == b'\n') {
        Some(i) => site.split_at(i),
        None => (site, &[]),
    }
}

/// The start of a message compiled code holds without a position of its
/// own (`read-real`'s in code of the library, such as the transformed
/// `read-real` a derivative calls): the FIR evaluator and the runtime
/// place it at the running call site, `file:line:col: ` before it and the
/// site's note after it, where the interpreter places it.
pub const UNPLACED: &str = "error: ";

/// `read-real`'s errors are its name quoted (the head, which lowering
/// places in compiled code with the position) and then one of these, so
/// that the native runtime, which holds only the head and the word read,
/// writes the same text as the interpreter. At the end of input:
pub const END_OF_INPUT: &str = "reached the end of input";

/// Around a word of input that is not a numeral.
pub const NOT_A_NUMERAL: [&str; 2] = ["expects a real, found `", "`"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_kept_and_long_ones_cut_on_a_character() {
        assert_eq!(value_cut(&[b'a'; 120]), None);
        assert_eq!(value_cut(&[b'a'; 121]), Some(117));
        let mut t = vec![b'a'; 116];
        t.extend_from_slice("é".as_bytes()); // bytes 116 and 117
        t.extend_from_slice(&[b'b'; 10]);
        assert_eq!(value_cut(&t), Some(116));
    }

    #[test]
    fn a_site_is_its_position_and_the_end_of_the_message() {
        assert_eq!(site_parts(b"a.vlad:1:2"), (&b"a.vlad:1:2"[..], &b""[..]));
        assert_eq!(
            site_parts(b"a.vlad:1:2\n  note: n"),
            (&b"a.vlad:1:2"[..], &b"\n  note: n"[..])
        );
    }
}
