//! `build --lib`: exports of tests/library/gradient.vlad called from C
//! (a program compiled with `cc` here, against the shared and the static
//! library) and from Python's `ctypes` (when `python3` is present) return
//! the very bits the compiled program prints; a VLAD run-time error is a
//! return code and the compiled program's message, and the next call works;
//! a result of no fixed shape is a build error naming the export; exports
//! over vectors take and return arrays of run-time length.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const EXPORTS: &[&str] = &[
    "gradient-of-f (real real)",
    "nested real (real real)",
    "checked real",
];

/// A fresh directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stalingrad-lib-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn build_lib(src: &Path, out: &Path, exports: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(binary());
    cmd.arg("build").arg("--lib").arg(src).arg("-o").arg(out);
    for e in exports {
        cmd.arg("--export").arg(e);
    }
    cmd.output().expect("run stalingrad")
}

fn check(out: &std::process::Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The bits of every real the compiled program prints, one line per
/// top-level expression, as 16 hex digits.
fn program_bits(src: &Path, dir: &Path) -> Vec<String> {
    let exe = dir.join("prog");
    let built = Command::new(binary())
        .arg("build")
        .arg(src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run stalingrad");
    check(&built, "build");
    let printed = check(&Command::new(&exe).output().expect("run prog"), "prog");
    printed
        .lines()
        .map(|line| {
            line.replace(['(', ')'], " ")
                .split_whitespace()
                .map(|w| format!("{:016x}", w.parse::<f64>().expect("a real").to_bits()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

const C_MAIN: &str = r#"
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include "libgrad.h"

static void show(int rc, const double *r, int n) {
    if (rc != 0) {
        printf("rc=%d %s\n", rc, grad_last_error());
        return;
    }
    for (int i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &r[i], 8);
        printf(i ? " %016llx" : "%016llx", (unsigned long long)u);
    }
    printf("\n");
}

int main(void) {
    double r[8];
    double v[2] = {1.25, -0.5};
    show(grad_gradient_of_f(v, r), r, GRAD_GRADIENT_OF_F_RESULTS);
    double w[3] = {1.5, 0.1, 0.3};
    show(grad_nested(w, r), r, GRAD_NESTED_RESULTS);
    double x[1] = {2};
    show(grad_checked(x, r), r, GRAD_CHECKED_RESULTS);
    x[0] = -1;
    show(grad_checked(x, r), r, GRAD_CHECKED_RESULTS);
    /* Many calls, failing ones among them: nothing is kept between them. */
    for (int i = 0; i < 20000; i++) {
        grad_gradient_of_f(v, r);
        grad_checked(x, r);
    }
    show(grad_gradient_of_f(v, r), r, GRAD_GRADIENT_OF_F_RESULTS);
    printf("error after success: [%s]\n", grad_last_error());
    return 0;
}
"#;

const PY_MAIN: &str = r#"
import ctypes, struct, sys
lib = ctypes.CDLL(sys.argv[1])
lib.grad_last_error.restype = ctypes.c_char_p
def call(f, args, n):
    a = (ctypes.c_double * len(args))(*args)
    r = (ctypes.c_double * n)()
    rc = f(a, r)
    if rc != 0:
        print("rc=%d %s" % (rc, lib.grad_last_error().decode()))
    else:
        print(" ".join("%016x" % struct.unpack("<Q", struct.pack("<d", x))[0] for x in r))
call(lib.grad_gradient_of_f, [1.25, -0.5], 2)
call(lib.grad_nested, [1.5, 0.1, 0.3], 4)
call(lib.grad_checked, [2.0], 1)
call(lib.grad_checked, [-1.0], 1)
"#;

/// The message of `(checked -1)`, after its position in gradient.vlad.
const ERROR: &str =
    "error: pattern mismatch: `car` expects an argument matching (cons a d), found -1";

fn expect_calls(lines: &[&str], bits: &[String], how: &str) {
    assert!(lines.len() >= 4, "{how}: too little output: {lines:?}");
    assert_eq!(lines[0], bits[0], "{how}: gradient-of-f");
    assert_eq!(lines[1], bits[1], "{how}: nested");
    assert_eq!(lines[2], bits[2], "{how}: checked 2");
    assert!(
        lines[3].starts_with("rc=1 ")
            && lines[3].contains("gradient.vlad:")
            && lines[3].contains(ERROR),
        "{how}: checked -1 gave {:?}",
        lines[3]
    );
}

#[test]
fn exports_called_from_c_and_python_return_the_programs_bits() {
    let dir = scratch("calls");
    let src = repo_root().join("tests/library/gradient.vlad");
    let bits = program_bits(&src, &dir);
    assert_eq!(bits.len(), 3, "the program prints three values");
    std::fs::write(dir.join("main.c"), C_MAIN).expect("write main.c");
    for lib in ["libgrad.so", "libgrad.a"] {
        check(&build_lib(&src, &dir.join(lib), EXPORTS), "build --lib");
        let header = std::fs::read_to_string(dir.join("libgrad.h")).expect("header");
        assert!(header.contains("int grad_gradient_of_f(const double *args, double *results);"));
        assert!(
            header.contains("(nested args[0] (args[1] args[2]))"),
            "{header}"
        );
        assert!(header.contains("returns (results[0] results[1] (results[2] results[3]))"));
        let exe = dir.join("main");
        let mut cc = Command::new("cc");
        cc.arg(dir.join("main.c"))
            .arg("-I")
            .arg(&dir)
            .arg("-o")
            .arg(&exe);
        if lib.ends_with(".so") {
            cc.arg(dir.join(lib))
                .arg(format!("-Wl,-rpath,{}", dir.display()));
        } else {
            cc.arg(dir.join(lib)).args(["-lm", "-lpthread"]);
        }
        check(&cc.output().expect("run cc"), "cc");
        let out = check(&Command::new(&exe).output().expect("run main"), "main");
        let lines: Vec<&str> = out.lines().collect();
        expect_calls(&lines, &bits, lib);
        // (The message goes on with a note line.)
        let n = lines.len();
        assert_eq!(lines[n - 2], bits[0], "{lib}: gradient after many calls");
        assert_eq!(lines[n - 1], "error after success: []");
    }
    // Python's ctypes, on the shared library (built last but one: rebuild).
    let python = Command::new("python3").arg("--version").output();
    if python.map(|o| o.status.success()).unwrap_or(false) {
        check(
            &build_lib(&src, &dir.join("libgrad.so"), EXPORTS),
            "build --lib",
        );
        std::fs::write(dir.join("main.py"), PY_MAIN).expect("write main.py");
        let out = Command::new("python3")
            .arg(dir.join("main.py"))
            .arg(dir.join("libgrad.so"))
            .output()
            .expect("run python3");
        let out = check(&out, "python3");
        let lines: Vec<&str> = out.lines().collect();
        expect_calls(&lines, &bits, "ctypes");
    } else {
        eprintln!("python3 not found: the ctypes calls were not checked");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

const TAPE_VLAD: &str = "\
(define (tape n x)
  ((derivative-R (lambda (y) (let loop ((i n) (y y)) (if (> i 0) (loop (- i 1) (* y 1.0000001)) y)))) x))
";

const TAPE_C: &str = r#"
#include <stdio.h>
#include <string.h>
#include "libtape.h"

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            sscanf(line + 6, "%ld", &kib);
    if (f)
        fclose(f);
    return kib;
}

int main(void) {
    double a[2] = {300000, 1}, r[1];
    long after_few = 0;
    for (int i = 0; i < 60; i++) {
        if (tape_tape(a, r) != 0)
            return 1;
        if (i == 9)
            after_few = rss_kib();
    }
    printf("%ld %ld %.17g\n", after_few, rss_kib(), r[0]);
    return 0;
}
"#;

#[test]
fn calls_building_tapes_keep_no_memory() {
    let dir = scratch("tape");
    let src = dir.join("tape.vlad");
    std::fs::write(&src, TAPE_VLAD).expect("write");
    check(
        &build_lib(&src, &dir.join("libtape.so"), &["tape real real"]),
        "build --lib",
    );
    std::fs::write(dir.join("main.c"), TAPE_C).expect("write main.c");
    let exe = dir.join("main");
    let cc = Command::new("cc")
        .arg(dir.join("main.c"))
        .arg("-I")
        .arg(&dir)
        .arg(dir.join("libtape.so"))
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run cc");
    check(&cc, "cc");
    let out = check(&Command::new(&exe).output().expect("run main"), "main");
    let v: Vec<f64> = out
        .split_whitespace()
        .map(|w| w.parse().expect("a number"))
        .collect();
    // Each call builds a tape of 300,000 steps (megabytes of cells); 50
    // more calls after the first ten must not add to the resident size.
    assert!(
        v[1] - v[0] < 4096.0,
        "RSS grew from {} KiB to {} KiB",
        v[0],
        v[1]
    );
    assert!((v[2] - 1.0000001f64.powi(300000)).abs() < 1e-6, "{}", v[2]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_result_of_no_fixed_shape_is_a_build_error_naming_the_export() {
    let dir = scratch("shape");
    let src = dir.join("count.vlad");
    std::fs::write(
        &src,
        "(define (count n) (let loop ((i n) (acc '())) (if (> i 0) (loop (- i 1) (cons i acc)) acc)))\n\
         (define (twice x) (* 2 x))\n",
    )
    .expect("write");
    let out = build_lib(
        &src,
        &dir.join("libcount.so"),
        &["twice real", "count real"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: export `count`: its result must be reals in lists of fixed shape"),
        "{err}"
    );
    assert!(!dir.join("libcount.so").exists());
    for (spec, says) in [
        ("missing real", "has no top-level definition"),
        (
            "twice",
            "count.vlad:2:1: error: export `twice` takes 1 argument (x), but 0 shapes are given: give one shape per argument, as in --export \"twice real\"",
        ),
        (
            "twice integer",
            "a shape is neither `real`, `(vector SHAPE)` nor a list of shapes",
        ),
    ] {
        let out = build_lib(&src, &dir.join("libcount.so"), &[spec]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{spec}: {err}");
    }
    let out = build_lib(&src, &dir.join("count.dll"), &["twice real"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("must end in .so (shared) or .a (static)")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const VECTOR_EXPORTS: &[&str] = &[
    "primal (vector real)",
    "gradient (vector real)",
    "scale real (vector real)",
    "rows (vector (vector real))",
];

const VECTOR_MAIN: &str = r#"
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include "libvec.h"

static void show(int rc, const double *r, size_t n) {
    if (rc != 0) {
        printf("rc=%d %s\n", rc, vec_last_error());
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &r[i], 8);
        printf(i ? " %016llx" : "%016llx", (unsigned long long)u);
    }
    printf("\n");
}

int main(void) {
    double r[16];
    size_t n = 0;
    int rc;
    /* The call first: C evaluates a call's arguments in no fixed order. */
    double x[4] = {3, 0.5, -1, 2};
    rc = vec_primal(x, 4, r, 16, &n);
    show(rc, r, n);
    rc = vec_gradient(x, 4, r, 16, &n);
    show(rc, r, n);
    double s[5] = {1.5, 3, 1, 2, 3};
    rc = vec_scale(s, 5, r, 16, &n);
    show(rc, r, n);
    double m[9] = {2, 3, 1, 2, 3, 3, 4, 5, 6};
    rc = vec_rows(m, 9, r, 16, &n);
    show(rc, r, n);
    rc = vec_gradient(x, 4, r, 2, &n);
    printf("small rc=%d n=%zu\n", rc, n);
    rc = vec_primal(x, 3, r, 16, &n);
    show(rc, r, n);
    rc = vec_primal(x, 4, r, 16, &n);
    show(rc, r, n);
    return 0;
}
"#;

/// Exports over vectors: arrays of run-time length in and out, each
/// vector its length then its elements; the bits are the program's; a
/// result that does not fit, or arguments of the wrong length, are return
/// codes, and the next call works.
#[test]
fn exports_over_vectors_take_and_return_arrays_of_run_time_length() {
    let dir = scratch("vectors");
    let src = repo_root().join("tests/library/vectors.vlad");
    let printed = check(
        &Command::new(binary())
            .arg("run")
            .arg(&src)
            .output()
            .expect("run stalingrad"),
        "run",
    );
    // What the program prints, as the library writes it: a vector as its
    // length, then its elements.
    let bits = |text: &str| -> String {
        text.replace(['(', ')', '#'], " ")
            .split_whitespace()
            .map(|w| format!("{:016x}", w.parse::<f64>().expect("a real").to_bits()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 4, "{printed}");
    let len = |n: f64| format!("{:016x}", n.to_bits());
    let want = [
        bits(lines[0]),
        format!("{} {}", len(3.0), bits(lines[1])),
        format!("{} {}", len(3.0), bits(lines[2])),
        format!("{} {}", len(2.0), bits(lines[3])),
    ];
    check(
        &build_lib(&src, &dir.join("libvec.so"), VECTOR_EXPORTS),
        "build --lib",
    );
    let header = std::fs::read_to_string(dir.join("libvec.h")).expect("header");
    assert!(
        header.contains("/* (rows (vector (vector real)))\n *   returns (vector real)"),
        "{header}"
    );
    assert!(header.contains(
        "int vec_gradient(const double *args, size_t n_args, double *results, size_t capacity,"
    ));
    std::fs::write(dir.join("main.c"), VECTOR_MAIN).expect("write main.c");
    let exe = dir.join("main");
    check(
        &Command::new("cc")
            .arg(dir.join("main.c"))
            .arg("-I")
            .arg(&dir)
            .arg("-o")
            .arg(&exe)
            .arg(dir.join("libvec.so"))
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .output()
            .expect("run cc"),
        "cc",
    );
    let out = check(&Command::new(&exe).output().expect("run main"), "main");
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(&got[..4], &want, "{out}");
    assert_eq!(got[4], "small rc=2 n=4");
    assert!(
        got[5].starts_with("rc=1 error: the arguments array holds fewer reals"),
        "{}",
        got[5]
    );
    assert_eq!(got[6], want[0]);
    let _ = std::fs::remove_dir_all(&dir);
}
