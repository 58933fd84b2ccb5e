//! Stress tests of the expander: deep nesting and long programs.

use super::*;

/// Expansion recurses once per nesting level: these tests run it on a
/// stack as deep as the driver's smallest (the test harness's threads have
/// 2 MiB).
fn try_load(src: &str) -> Result<Program, Diagnostic> {
    let src = src.to_string();
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut map = SourceMap::new();
            load_source(&mut map, Path::new("stress.vlad"), src, &Options::default())
        })
        .expect("a thread for the expander")
        .join()
        .expect("expansion does not panic")
}

#[test]
fn deepest_nesting_fits_the_stack() {
    let d = crate::reader::MAX_DEPTH - 3;
    let forms = [
        format!("{}1{}", "(f ".repeat(d), ")".repeat(d)),
        format!("{}x{}", "(lambda (x) ".repeat(d), ")".repeat(d)),
        format!("{}x{}", "(let ((x 1)) ".repeat(d), ")".repeat(d)),
        format!("{}x{}", "(let* ((x 1)) ".repeat(d), ")".repeat(d)),
        format!("{}1{}", "(or a ".repeat(d), ")".repeat(d)),
        format!(
            "{}1{}",
            "(cond (a ".repeat(d / 2),
            ") (else 1))".repeat(d / 2)
        ),
        format!("'{}1{}", "(".repeat(d - 1), ")".repeat(d - 1)),
        format!(
            "(lambda ({}x{}) x)",
            "(cons 1 ".repeat(d - 2),
            ")".repeat(d - 2)
        ),
    ];
    for src in &forms {
        if let Err(e) = try_load(src) {
            panic!("{}: {e:?}", &src[..40.min(src.len())]);
        }
    }
}

#[test]
fn long_lists() {
    let n = 20000;
    let nums: String = (0..n).map(|i| format!("{i} ")).collect();
    for src in [
        format!("(list {nums})"),
        format!("'({nums})"),
        format!("(f {nums})"),
        format!(
            "(lambda ({}) 1)",
            (0..n).map(|i| format!("x{i} ")).collect::<String>()
        ),
    ] {
        assert!(try_load(&src).is_ok());
    }
}

#[test]
fn random_programs_do_not_panic() {
    let words = [
        "(", ")", "(", ")", "define", "lambda", "let", "let*", "letrec", "if", "cond", "else",
        "and", "or", "cons", "list", "cons*", "quote", "'", "x", "y", "f", "1", "#t", "===>", ".",
        "include", "\"s\"", "car", "map", "[", "]", "loop", "()", "=>",
    ];
    let mut s: u64 = 0x2545f4914f6cdd1d;
    for _ in 0..1000 {
        let mut src = String::new();
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let len = s % 30;
        for _ in 0..len {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            src.push_str(words[(s % words.len() as u64) as usize]);
            src.push(' ');
        }
        // Close what is open, so that more programs get past the reader.
        let opens = src
            .matches('(')
            .count()
            .saturating_sub(src.matches(')').count());
        src.push_str(&")".repeat(opens));
        let _ = try_load(&src);
    }
}
