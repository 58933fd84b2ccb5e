//! Hand-built FIR modules compiled to executables: their output, errors,
//! exit status and operation counts must equal the FIR evaluator's.

use base::EntityRef;
use fir::eval;
use fir::*;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use Ty::{Bool as B, F64 as F};

// ------------------------------------------------------------ a builder

/// Builds one function: instructions go to the innermost open block.
struct Fb {
    name: String,
    params: Vec<Ty>,
    returns: Vec<Ty>,
    types: Vec<Ty>,
    blocks: Vec<Vec<Inst>>,
}

impl Fb {
    fn new(name: &str, params: &[Ty], returns: &[Ty]) -> Fb {
        Fb {
            name: name.into(),
            params: params.to_vec(),
            returns: returns.to_vec(),
            types: params.to_vec(),
            blocks: vec![Vec::new()],
        }
    }
    fn param(&self, i: u32) -> Val {
        Val::from_number(i)
    }
    fn fresh(&mut self, t: Ty) -> Val {
        self.types.push(t);
        Val::new(self.types.len() - 1)
    }
    fn emit(&mut self, tys: &[Ty], op: Op) -> Vec<Val> {
        let results: Vec<Val> = tys.iter().map(|t| self.fresh(*t)).collect();
        self.blocks.last_mut().unwrap().push(Inst {
            results: results.clone(),
            op,
        });
        results
    }
    fn emit1(&mut self, t: Ty, op: Op) -> Val {
        self.emit(&[t], op)[0]
    }
    fn num(&mut self, x: f64) -> Val {
        self.emit1(F, Op::F64Const(x))
    }
    fn bool(&mut self, b: bool) -> Val {
        self.emit1(B, Op::BoolConst(b))
    }
    fn bin(&mut self, op: FBin, x: Val, y: Val) -> Val {
        self.emit1(F, Op::FBin(op, x, y))
    }
    fn un(&mut self, op: FUn, x: Val) -> Val {
        self.emit1(F, Op::FUn(op, x))
    }
    fn cmp(&mut self, c: Cmp, x: Val, y: Val) -> Val {
        self.emit1(B, Op::FCmp(c, x, y))
    }
    fn call(&mut self, f: u32, tys: &[Ty], args: &[Val]) -> Vec<Val> {
        self.emit(tys, Op::Call(FuncId::new(f as usize), args.to_vec()))
    }
    fn print_real(&mut self, x: Val) {
        self.emit(&[], Op::PrintReal(x));
    }
    fn print_bool(&mut self, x: Val) {
        self.emit(&[], Op::PrintBool(x));
    }
    fn print_str(&mut self, s: u32) {
        self.emit(&[], Op::PrintStr(StrId::new(s as usize)));
    }
    /// `if cond { then } else { else_ }`; each arm returns its terminator.
    fn if_(
        &mut self,
        cond: Val,
        tys: &[Ty],
        then_: impl FnOnce(&mut Fb) -> Term,
        else_: impl FnOnce(&mut Fb) -> Term,
    ) -> Vec<Val> {
        self.blocks.push(Vec::new());
        let t = then_(self);
        let then_b = Block {
            insts: self.blocks.pop().unwrap(),
            term: t,
        };
        self.blocks.push(Vec::new());
        let e = else_(self);
        let else_b = Block {
            insts: self.blocks.pop().unwrap(),
            term: e,
        };
        self.emit(
            tys,
            Op::If {
                cond,
                then_: then_b,
                else_: else_b,
            },
        )
    }
    fn finish(mut self, term: Term) -> Func {
        Func {
            name: self.name,
            params: self.params,
            returns: self.returns,
            types: self.types,
            body: Block {
                insts: self.blocks.pop().unwrap(),
                term,
            },
        }
    }
}

/// String 0 is always "\n".
fn module(funcs: Vec<Func>, mut strings: Vec<&str>) -> Module {
    strings.insert(0, "\n");
    Module {
        funcs,
        main: Some(FuncId::new(0)),
        vectors: Default::default(),
        strings: strings.into_iter().map(String::from).collect(),
        cells: Default::default(),
    }
}

// ------------------------------------------------------------ harness

struct Run {
    stdout: String,
    stderr: String,
    status: i32,
}

fn temp_exe(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codegen-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn build(m: &Module, name: &str, count_ops: bool) -> PathBuf {
    let out = codegen::compile(
        m,
        &codegen::Options {
            count_ops,
            want_clif: false,
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", fir::print::module(m)));
    let exe = temp_exe(name);
    codegen::link(&out.object, &exe, false).unwrap();
    exe
}

fn run_exe(exe: &PathBuf, input: &str, shell_prefix: Option<&str>) -> Run {
    let mut cmd = match shell_prefix {
        Some(p) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!("{p} \"$0\"")).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Run {
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
        status: o.status.code().unwrap_or(-1),
    }
}

/// Compiles, runs and compares with the evaluator (stdout, error, status,
/// and the counters); returns the executable's output.
fn check(m: &Module, name: &str, input: &str) -> String {
    let mut want = Vec::new();
    let mut counts = eval::Counts::default();
    let r = eval::run_counting(m, &mut input.as_bytes(), &mut want, &mut counts);
    let want = String::from_utf8(want).unwrap();
    let (want_err, want_status) = match &r {
        Ok(()) => (String::new(), 0),
        Err(msg) => (format!("{msg}\n"), 1),
    };
    let exe = build(m, name, false);
    let got = run_exe(&exe, input, None);
    assert_eq!(got.stdout, want, "stdout of {name}");
    assert_eq!(got.stderr, want_err, "stderr of {name}");
    assert_eq!(got.status, want_status, "status of {name}");
    let exe = build(m, &format!("{name}-counted"), true);
    let got = run_exe(&exe, input, None);
    assert_eq!(got.stdout, want, "stdout of counted {name}");
    assert_eq!(
        got.stderr,
        format!("{want_err}{}\n", counts.json()),
        "stderr of counted {name}"
    );
    got.stdout
}

// ------------------------------------------------------------ tests

#[test]
fn prints_reals_and_booleans() {
    let mut f = Fb::new("main", &[], &[]);
    for x in [
        3.0,
        -1.0,
        0.5,
        0.1,
        1e21,
        1e-7,
        123456789012345680000.0,
        4.965316230354233e-8,
        -0.0,
        5e-324,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ] {
        let v = f.num(x);
        f.print_real(v);
        f.print_str(0);
    }
    let a = f.num(0.1);
    let b = f.num(0.2);
    let s = f.bin(FBin::Add, a, b);
    f.print_real(s);
    f.print_str(0);
    let t = f.bool(true);
    f.print_bool(t);
    let n = f.emit1(B, Op::Not(t));
    f.print_bool(n);
    let nan = f.num(f64::NAN);
    for c in [Cmp::Eq, Cmp::Lt, Cmp::Gt, Cmp::Le, Cmp::Ge] {
        let x = f.cmp(c, a, b);
        f.print_bool(x);
        let y = f.cmp(c, a, a);
        f.print_bool(y);
        let z = f.cmp(c, nan, nan);
        f.print_bool(z);
    }
    f.print_str(1);
    f.print_str(0);
    let main = f.finish(Term::Return(vec![]));
    let out = check(&module(vec![main], vec!["(hello \"world\")"]), "print", "");
    assert!(out.starts_with("3\n-1\n0.5\n0.1\n1e+21\n1e-7\n"), "{out}");
    assert!(out.contains("0.30000000000000004\n#t#f"), "{out}");
}

#[test]
fn arithmetic_and_libm() {
    let mut f = Fb::new("main", &[], &[]);
    let xs = [0.3, -2.5, 1e-300, 7.0, 1e6, -0.0, f64::INFINITY];
    for (i, x) in xs.iter().enumerate() {
        let y = xs[(i + 3) % xs.len()];
        let (x, y) = (f.num(*x), f.num(y));
        for op in [FBin::Add, FBin::Sub, FBin::Mul, FBin::Div, FBin::Atan2] {
            let r = f.bin(op, x, y);
            f.print_real(r);
            f.print_str(0);
        }
        for op in [FUn::Sqrt, FUn::Exp, FUn::Log, FUn::Sin, FUn::Cos] {
            let r = f.un(op, x);
            f.print_real(r);
            f.print_str(0);
        }
    }
    // A value computed at run time (from input), so nothing is folded.
    let x = f.emit1(F, Op::ReadReal(StrId::new(1)));
    for op in [FUn::Sqrt, FUn::Exp, FUn::Log, FUn::Sin, FUn::Cos] {
        let r = f.un(op, x);
        f.print_real(r);
        f.print_str(0);
    }
    let main = f.finish(Term::Return(vec![]));
    check(
        &module(
            vec![main],
            vec!["error: `read-real` reached the end of input"],
        ),
        "arith",
        "1.2345",
    );
}

/// `if` with several results of both types, nested.
#[test]
fn if_with_results() {
    // pick(x) = if x < 1 { (x, #t, 1) } else { if x < 2 { (x*2, #f, 2) } else { (0, #t, 3) } }
    let mut g = Fb::new("pick", &[F], &[F, B, F]);
    let x = g.param(0);
    let one = g.num(1.0);
    let c = g.cmp(Cmp::Lt, x, one);
    let r = g.if_(
        c,
        &[F, B, F],
        |fb| {
            let t = fb.bool(true);
            let k = fb.num(1.0);
            Term::Yield(vec![Val::new(0), t, k])
        },
        |fb| {
            let two = fb.num(2.0);
            let c2 = fb.cmp(Cmp::Lt, Val::new(0), two);
            let inner = fb.if_(
                c2,
                &[F, B, F],
                |fb| {
                    let d = fb.bin(FBin::Mul, Val::new(0), two);
                    let f = fb.bool(false);
                    Term::Yield(vec![d, f, two])
                },
                |fb| {
                    let z = fb.num(0.0);
                    let t = fb.bool(true);
                    let k = fb.num(3.0);
                    Term::Yield(vec![z, t, k])
                },
            );
            Term::Yield(inner)
        },
    );
    let pick = g.finish(Term::Return(r));
    let mut f = Fb::new("main", &[], &[]);
    for x in [0.5, 1.5, 2.5] {
        let x = f.num(x);
        let r = f.call(1, &[F, B, F], &[x]);
        f.print_real(r[0]);
        f.print_bool(r[1]);
        f.print_real(r[2]);
        f.print_str(0);
    }
    let main = f.finish(Term::Return(vec![]));
    let out = check(&module(vec![main, pick], vec![]), "if", "");
    assert_eq!(out, "0.5#t1\n3#f2\n0#t3\n");
}

/// `sum(i, acc) = if i <= 0 { acc } else { sum(i - 1, acc + i) }`.
fn sum_loop(n: f64) -> Module {
    let mut g = Fb::new("sum", &[F, F], &[F]);
    let zero = g.num(0.0);
    let c = g.cmp(Cmp::Le, Val::new(0), zero);
    let r = g.if_(
        c,
        &[F],
        |_| Term::Yield(vec![Val::new(1)]),
        |fb| {
            let one = fb.num(1.0);
            let i = fb.bin(FBin::Sub, Val::new(0), one);
            let acc = fb.bin(FBin::Add, Val::new(1), Val::new(0));
            Term::TailCall(FuncId::new(1), vec![i, acc])
        },
    );
    let sum = g.finish(Term::Return(r));
    let mut f = Fb::new("main", &[], &[]);
    let n = f.num(n);
    let z = f.num(0.0);
    let r = f.call(1, &[F], &[n, z]);
    f.print_real(r[0]);
    f.print_str(0);
    let main = f.finish(Term::Return(vec![]));
    module(vec![main, sum], vec![])
}

/// Runs the program on a 64 KiB stack: see `self_tail_loop_runs_in_constant_stack`.
const SMALL_STACK: &str = "ulimit -v 1000000; ulimit -s 64;";

#[test]
fn self_tail_loop_runs_in_constant_stack() {
    let m = sum_loop(1e7);
    let exe = build(&m, "loop", false);
    let start = Instant::now();
    // 64 KiB of stack is plenty for a loop. (Limiting the address space
    // makes the runtime's 4 GiB program thread fail, so the program runs
    // on the 64 KiB main stack.)
    let got = run_exe(&exe, "", Some(SMALL_STACK));
    let t = start.elapsed();
    assert_eq!(got.stdout, "50000005000000\n");
    assert_eq!(got.status, 0);
    eprintln!("10^7 iterations: {t:?}");
    check(&sum_loop(1000.0), "loop-small", "");
}

/// `even(n) = if n == 0 { #t } else { odd(n - 1) }`, `odd` likewise:
/// 10^7 mutual tail calls through `return_call`.
#[test]
fn mutual_tail_calls() {
    let mk = |name: &str, other: u32, base: bool| {
        let mut g = Fb::new(name, &[F], &[B]);
        let zero = g.num(0.0);
        let c = g.cmp(Cmp::Eq, Val::new(0), zero);
        let r = g.if_(
            c,
            &[B],
            |fb| {
                let b = fb.bool(base);
                Term::Yield(vec![b])
            },
            |fb| {
                let one = fb.num(1.0);
                let n = fb.bin(FBin::Sub, Val::new(0), one);
                Term::TailCall(FuncId::new(other as usize), vec![n])
            },
        );
        g.finish(Term::Return(r))
    };
    let even = mk("even", 2, true);
    let odd = mk("odd", 1, false);
    let build_main = |n: f64| {
        let mut f = Fb::new("main", &[], &[]);
        let n = f.num(n);
        let r = f.call(1, &[B], &[n]);
        f.print_bool(r[0]);
        f.print_str(0);
        f.finish(Term::Return(vec![]))
    };
    let m = module(
        vec![build_main(1e7 + 1.0), even.clone(), odd.clone()],
        vec![],
    );
    let exe = build(&m, "evenodd", false);
    let start = Instant::now();
    let got = run_exe(&exe, "", Some(SMALL_STACK));
    eprintln!("10^7 mutual tail calls: {:?}", start.elapsed());
    assert_eq!(got.stdout, "#f\n");
    assert_eq!(got.status, 0);
    check(
        &module(vec![build_main(10.0), even, odd], vec![]),
        "evenodd-small",
        "",
    );
}

/// Reads reals until a negative sentinel, summing them.
#[test]
fn read_real_until_sentinel() {
    let mut g = Fb::new("loop", &[F], &[F]);
    let x = g.emit1(F, Op::ReadReal(StrId::new(1)));
    let zero = g.num(0.0);
    let c = g.cmp(Cmp::Lt, x, zero);
    let r = g.if_(
        c,
        &[F],
        |_| Term::Yield(vec![Val::new(0)]),
        |fb| {
            let acc = fb.bin(FBin::Add, Val::new(0), x);
            Term::TailCall(FuncId::new(1), vec![acc])
        },
    );
    let lp = g.finish(Term::Return(r));
    let mut f = Fb::new("main", &[], &[]);
    let z = f.num(0.0);
    let r = f.call(1, &[F], &[z]);
    f.print_real(r[0]);
    f.print_str(0);
    let main = f.finish(Term::Return(vec![]));
    let m = module(
        vec![main, lp],
        vec!["prog.vlad:4:9: error: `read-real` reached the end of input"],
    );
    assert_eq!(check(&m, "read", "1 2\n  3.5\t#x10 -1 7"), "22.5\n");
    check(&m, "read-eof", "1 2\n");
    check(&m, "read-bad", "1 2 three 4 -1");
    check(&m, "read-empty", "");
    // A long input through the buffer boundaries.
    let mut input = String::new();
    for i in 0..20000 {
        input.push_str(&format!("{}.25 ", i % 97));
    }
    input.push_str("-1\n");
    check(&m, "read-long", &input);
}

/// More results than registers (a return area), forwarded by a tail call,
/// and more parameters than registers.
#[test]
fn many_values() {
    const N: usize = 12;
    // spread(x) returns x+0, x+1, ..., and a bool, tail-called by via(x).
    let mut tys = vec![F; N];
    tys.push(B);
    let mut g = Fb::new("spread", &[F], &tys);
    let mut rs = Vec::new();
    for k in 0..N {
        let c = g.num(k as f64);
        rs.push(g.bin(FBin::Add, Val::new(0), c));
    }
    let c = g.cmp(Cmp::Gt, Val::new(0), rs[1]);
    rs.push(c);
    let spread = g.finish(Term::Return(rs));
    let mut g = Fb::new("via", &[F], &tys);
    let two = g.num(2.0);
    let y = g.bin(FBin::Mul, Val::new(0), two);
    let via = g.finish(Term::TailCall(FuncId::new(1), vec![y]));
    // sum20(a0..a19) = a0 - a1 + a2 - ... with many stack arguments.
    let mut g = Fb::new("alt", &[F; 20], &[F]);
    let mut acc = Val::new(0);
    for k in 1..20 {
        acc = g.bin(
            if k % 2 == 1 { FBin::Sub } else { FBin::Add },
            acc,
            Val::from_number(k),
        );
    }
    let alt = g.finish(Term::Return(vec![acc]));
    let mut f = Fb::new("main", &[], &[]);
    let x = f.num(1.5);
    let r = f.call(2, &tys, &[x]);
    for v in &r[..N] {
        f.print_real(*v);
        f.print_str(2);
    }
    f.print_bool(r[N]);
    f.print_str(0);
    let args: Vec<Val> = (0..20).map(|k| f.num(k as f64 * 1.25)).collect();
    let r = f.call(3, &[F], &args);
    f.print_real(r[0]);
    f.print_str(0);
    let main = f.finish(Term::Return(vec![]));
    let m = module(vec![main, spread, via, alt], vec!["", " "]);
    let out = check(&m, "many", "");
    assert_eq!(out, "3 4 5 6 7 8 9 10 11 12 13 14 #f\n-12.5\n");
}

/// `depth(n) = if n == 0 { 0 } else { 1 + depth(n - 1) }`: non-tail
/// recursion 10^6 deep needs more than the default 8 MiB stack.
#[test]
fn deep_non_tail_recursion() {
    let mut g = Fb::new("depth", &[F], &[F]);
    let zero = g.num(0.0);
    let c = g.cmp(Cmp::Eq, Val::new(0), zero);
    let r = g.if_(
        c,
        &[F],
        |_| Term::Yield(vec![Val::new(0)]),
        |fb| {
            let one = fb.num(1.0);
            let n = fb.bin(FBin::Sub, Val::new(0), one);
            let d = fb.call(1, &[F], &[n]);
            let d = fb.bin(FBin::Add, d[0], one);
            Term::Yield(vec![d])
        },
    );
    let depth = g.finish(Term::Return(r));
    let mut f = Fb::new("main", &[], &[]);
    let n = f.num(1e6);
    let r = f.call(1, &[F], &[n]);
    f.print_real(r[0]);
    let main = f.finish(Term::Return(vec![]));
    let exe = build(&module(vec![main, depth], vec![]), "deep", false);
    let got = run_exe(&exe, "", None);
    assert_eq!((got.stdout.as_str(), got.status), ("1000000", 0));
}

#[test]
fn run_time_errors() {
    let mut f = Fb::new("main", &[], &[]);
    let x = f.num(2.0);
    f.print_real(x);
    f.print_str(0);
    let c = f.cmp(Cmp::Gt, x, x);
    f.if_(
        c,
        &[],
        |_| Term::Yield(vec![]),
        |_| Term::Error(StrId::new(1)),
    );
    f.print_real(x);
    let main = f.finish(Term::Return(vec![]));
    let m = module(
        vec![main],
        vec!["e.vlad:3:1: error: `car` expects a pair, found 2"],
    );
    check(&m, "error", "");
    // An `if` both of whose arms leave the function.
    let mut f = Fb::new("main", &[], &[]);
    let t = f.bool(true);
    let r = f.if_(
        t,
        &[F],
        |_| Term::Error(StrId::new(1)),
        |_| Term::Return(vec![]),
    );
    f.print_real(r[0]);
    let main = f.finish(Term::Return(vec![]));
    check(&module(vec![main], vec!["error: first"]), "error2", "");
}

#[test]
fn clif_text_and_no_main() {
    let m = sum_loop(3.0);
    let out = codegen::compile(
        &m,
        &codegen::Options {
            count_ops: false,
            want_clif: true,
        },
    )
    .unwrap();
    assert!(
        out.clif
            .contains("; sum\nfunction u0:1(f64, f64) -> f64 tail {"),
        "{}",
        out.clif
    );
    assert!(out.clif.contains("; vlad_main\n"), "{}", out.clif);
    let empty = Module::default();
    let exe = build(&empty, "empty", true);
    let got = run_exe(&exe, "", None);
    assert_eq!((got.stdout.as_str(), got.status), ("", 0));
    assert!(got.stderr.contains("\"arithmetic_total\":0"));
}

#[test]
fn link_failure_is_an_error() {
    let out = codegen::compile(&sum_loop(1.0), &codegen::Options::default()).unwrap();
    let r = codegen::link(&out.object, &PathBuf::from("/nonexistent-dir/prog"), false);
    let e = r.unwrap_err();
    assert!(e.contains("linking with `cc` failed"), "{e}");
}

// ------------------------------------------------------------ vectors

/// The module of a FIR text file, the part before any `; expect:` line
/// (a filetest's expectation).
fn read_fir(path: &str) -> Module {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.split("\n; expect:\n").next().unwrap();
    let m = fir::read::module(text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    fir::verify::verify(&m).unwrap();
    m
}

/// What `VLAD_GC_STATS` reports: collections and heap bytes.
fn gc_stats(exe: &PathBuf) -> (String, usize, usize) {
    let got = run_exe(exe, "", Some("VLAD_GC_STATS=1"));
    assert_eq!(got.status, 0, "{}", got.stderr);
    let line = got.stderr.lines().find(|l| l.starts_with("gc: ")).unwrap();
    let words: Vec<&str> = line.split(' ').collect();
    let collections = words[1].parse().unwrap();
    let heap = words[5].parse().unwrap();
    (got.stdout, collections, heap)
}

#[test]
fn every_vector_operation_as_evaluated() {
    let m = read_fir("../fir/tests/filetests/eval/vectors.fir");
    check(&m, "vector-ops", "");
    // An error in a `vec_build`'s callee names the build's position.
    let m = read_fir("../fir/tests/filetests/eval/build-error-at-site.fir");
    check(&m, "vector-build-error", "");
    // A build threading a state (a list's rest) through its calls.
    let m = read_fir("../fir/tests/filetests/eval/build-with-state.fir");
    check(&m, "vector-build-state", "");
}

#[test]
fn loop_counters_kept_as_others() {
    let m = read_fir("tests/fir/counters.fir");
    let out = check(&m, "counters", "");
    let lines: Vec<&str> = out.lines().collect();
    // Fourteen steps each: j0 * 14 + 0 + 1 + ... + 13 (91), signed.
    let j0 = 2147483640.0f64;
    assert_eq!(lines[0], format!("{}", 14.0 * j0 + 91.0));
    assert_eq!(lines[1], format!("{}", -(14.0 * j0 + 91.0)));
    // Sum of i / 2 for i < 1000.
    assert_eq!(lines[2], "249750");
}

#[test]
fn large_vectors_and_collections_while_filling() {
    let m = read_fir("tests/fir/vectors.fir");
    let out = check(&m, "vectors", "");
    let lines: Vec<&str> = out.lines().collect();
    // The cells of each element, made across collections, survived them.
    let n = 50_000.0f64;
    assert_eq!(lines[0], format!("{}", 3.0 * n * (n - 1.0) / 2.0));
    assert_eq!(lines[1], "50000");
    // Sum of i / 2 for i < 10^6, exactly representable.
    assert_eq!(lines[2], "249999750000");
    // Elements 3 and 999999 got 1.75 and 2.
    assert_eq!(lines[3], "249999750003.75 3.25 500001.5 1.5");
    // The sum of the one-hot vectors alone, read before and after
    // collections.
    assert_eq!(lines[4], "1.75 3.75");
    let (_, collections, _) = gc_stats(&build(&m, "vectors-gc", false));
    assert!(collections >= 5, "{collections} collections");
}

/// `main` prints the sum of the sums of `rounds` vectors of `n` reals
/// `i / 2`, each built by calls and summed by a loop of loads.
fn vector_rounds(n: usize, rounds: usize) -> Module {
    let text = format!(
        "vector #0 = (f64)\n\
         func f0 main() -> () {{\n  v0 = f64 {rounds}\n  v1 = f64 0\n  v2 = call f1(v0, v1)\n  print_real v2\n  return\n}}\n\
         func f1 rounds(v0: f64, v1: f64) -> (f64) {{\n  v2 = f64 0\n  v3 = fle v0 v2\n  v4 = if v3 {{\n    yield v1\n  }} else {{\n\
         \x20   v5 = f64 {n}\n    v6 = vec_build #0 v5 f2()\n    v7 = call f3(v6, v2, v2)\n    v8 = f64 1\n    v9 = fsub v0 v8\n\
         \x20   v10 = fadd v1 v7\n    tailcall f1(v9, v10)\n  }}\n  return v4\n}}\n\
         func f2 half(v0: f64) -> (f64) {{\n  v1 = f64 0.5\n  v2 = fmul v0 v1\n  return v2\n}}\n\
         func f3 sum(v0: ptr, v1: f64, v2: f64) -> (f64) {{\n  v3 = vec_index_ok v0 v1\n  v4 = if v3 {{\n\
         \x20   v5 = vec_load v0 v1 #0.0\n    v6 = f64 1\n    v7 = fadd v1 v6\n    v8 = fadd v2 v5\n    tailcall f3(v0, v7, v8)\n\
         \x20 }} else {{\n    yield v2\n  }}\n  return v4\n}}\n\
         main f0\n"
    );
    let m = fir::read::module(&text).unwrap();
    fir::verify::verify(&m).unwrap();
    m
}

/// The sum `vector_rounds` prints, added in its order.
fn rounds_sum(n: usize, rounds: usize) -> f64 {
    let one = (0..n).fold(0.0, |acc, i| acc + i as f64 * 0.5);
    (0..rounds).fold(0.0, |acc, _| acc + one)
}

#[test]
fn dead_large_vectors_give_their_memory_back() {
    // 40 vectors of 10 MB, one live at a time.
    let (n, rounds) = (1_250_000, 40);
    let exe = build(&vector_rounds(n, rounds), "vector-rounds", false);
    let (out, collections, heap) = gc_stats(&exe);
    assert_eq!(
        out,
        base::number_core::format_real(rounds_sum(n, rounds)).as_str()
    );
    assert!(collections >= 5, "{collections} collections");
    assert!(heap < 100 << 20, "a heap of {heap} bytes");
}

#[test]
fn a_vector_of_ten_million_reals() {
    // 80 MB, a chunk of its own; built and summed in about a tenth of a
    // second (see the commit that added it).
    let n = 10_000_000;
    let exe = build(&vector_rounds(n, 1), "vector-1e7", false);
    let start = Instant::now();
    let got = run_exe(&exe, "", None);
    eprintln!("build and sum of 10^7 reals: {:.3?}", start.elapsed());
    assert_eq!(got.status, 0, "{}", got.stderr);
    assert_eq!(
        got.stdout,
        base::number_core::format_real(rounds_sum(n, 1)).as_str()
    );
}
