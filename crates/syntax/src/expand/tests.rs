//! Unit tests of the expander: derived forms, scoping, includes, order.

use super::*;
use base::number::format_real;

fn load(src: &str) -> Result<(SourceMap, Program), Diagnostic> {
    let mut map = SourceMap::new();
    let p = load_source(
        &mut map,
        Path::new("test.vlad"),
        src.to_string(),
        &Options::default(),
    )?;
    Ok((map, p))
}

fn prog(src: &str) -> Program {
    match load(src) {
        Ok((_, p)) => p,
        Err(e) => panic!("{src:?}: {e:?}"),
    }
}

fn err(src: &str) -> Diagnostic {
    match load(src) {
        Ok((_, p)) => panic!("{src:?} should fail, got {}", show_program(&p)),
        Err(e) => e,
    }
}

/// Checks message and position (in the main file, FileId(1)).
fn err_at(src: &str, line: u32, col: u32, msg: &str) {
    let e = err(src);
    assert!(e.message.contains(msg), "{src:?}: message {:?}", e.message);
    assert_eq!(
        e.span,
        Some(Span {
            file: FileId(1),
            line,
            col
        }),
        "{src:?}: {e:?}"
    );
}

fn show_datum(d: &Datum) -> String {
    match d {
        Datum::Real(x) => format_real(*x),
        Datum::Bool(b) => if *b { "#t" } else { "#f" }.into(),
        Datum::Nil => "()".into(),
        Datum::Pair(a, b) => format!("({} . {})", show_datum(a), show_datum(b)),
        Datum::Vector(v) => format!(
            "#({})",
            v.iter().map(show_datum).collect::<Vec<_>>().join(" ")
        ),
    }
}

fn show_pat(p: &Pattern) -> String {
    match p {
        Pattern::Var(n, _) => n.clone(),
        Pattern::Cons(a, b, _) => format!("(cons {} {})", show_pat(a), show_pat(b)),
        Pattern::Const(d, _) => format!("'{}", show_datum(d)),
    }
}

fn show_lambda(l: &Lambda) -> String {
    let name = l.name.as_ref().map(|n| format!(":{n}")).unwrap_or_default();
    format!("(lambda{name} {} {})", show_pat(&l.param), show(&l.body))
}

fn show(e: &Expr) -> String {
    match e {
        Expr::Const(d, _) => format!("'{}", show_datum(d)),
        Expr::Var(n, _) => n.clone(),
        Expr::Lambda(l) => show_lambda(l),
        Expr::App(f, a, _) => format!("(@ {} {})", show(f), show(a)),
        Expr::Cons(a, b, _) => format!("(cons {} {})", show(a), show(b)),
        Expr::If(c, a, b, _) => format!("(if {} {} {})", show(c), show(a), show(b)),
        Expr::Let(bs, body, _) => format!(
            "(let ({}) {})",
            bs.iter()
                .map(|(p, e)| format!("({} {})", show_pat(p), show(e)))
                .collect::<Vec<_>>()
                .join(" "),
            show(body)
        ),
        Expr::Letrec(bs, body, _) => format!(
            "(letrec ({}) {})",
            bs.iter()
                .map(|b| format!("({} {})", b.name, show_lambda(&b.lambda)))
                .collect::<Vec<_>>()
                .join(" "),
            show(body)
        ),
    }
}

fn show_expect(d: &ExpectDatum) -> String {
    match d {
        ExpectDatum::Real(x) => format_real(*x),
        ExpectDatum::Bool(b) => if *b { "#t" } else { "#f" }.into(),
        ExpectDatum::Nil => "()".into(),
        ExpectDatum::Symbol(s) => s.clone(),
        ExpectDatum::Pair(a, b) => format!("({} . {})", show_expect(a), show_expect(b)),
        ExpectDatum::Vector(v) => format!(
            "#({})",
            v.iter().map(show_expect).collect::<Vec<_>>().join(" ")
        ),
    }
}

fn show_item(it: &TopItem) -> String {
    match it {
        TopItem::Define { name, expr, .. } => format!("(define {name} {})", show(expr)),
        TopItem::Rec(bs) => format!(
            "(rec {})",
            bs.iter()
                .map(|b| format!("({} {})", b.name, show_lambda(&b.lambda)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        TopItem::Show { expr, expect, .. } => match expect {
            None => format!("(show {})", show(expr)),
            Some(x) => format!("(show {} ===> {})", show(expr), show_expect(&x.datum)),
        },
    }
}

fn show_program(p: &Program) -> String {
    p.items.iter().map(show_item).collect::<Vec<_>>().join("\n")
}

/// Expands `src` and renders the program.
fn ex(src: &str) -> String {
    show_program(&prog(src))
}

/// Expands a single expression (that uses no library names).
fn ex1(src: &str) -> String {
    let p = prog(src);
    assert_eq!(p.items.len(), 1, "{}", show_program(&p));
    match &p.items[0] {
        TopItem::Show { expr, .. } => show(expr),
        other => show_item(other),
    }
}

fn sp(line: u32, col: u32) -> Span {
    Span {
        file: FileId(1),
        line,
        col,
    }
}

#[test]
fn constants_and_variables() {
    assert_eq!(ex1("3"), "'3");
    assert_eq!(ex1("#t"), "'#t");
    assert_eq!(ex1("'()"), "'()");
    assert_eq!(ex1("'(1 #f)"), "'(1 . (#f . ()))");
    assert_eq!(ex1("(quote (1 . 2))"), "'(1 . 2)");
    assert_eq!(ex1("x"), "x");
    assert_eq!(ex1("'3.5"), "'3.5");
}

#[test]
fn exact_ast_with_spans() {
    let p = prog("(f 1\n   x)");
    let want = TopItem::Show {
        expr: Expr::App(
            Box::new(Expr::Var("f".into(), sp(1, 2))),
            Box::new(Expr::Cons(
                Box::new(Expr::Const(Datum::Real(1.0), sp(1, 4))),
                Box::new(Expr::Var("x".into(), sp(2, 4))),
                sp(1, 4),
            )),
            sp(1, 1),
        ),
        expect: None,
        span: sp(1, 1),
    };
    assert_eq!(p.items, vec![want]);

    let p = prog("(lambda () 1)");
    let want = Expr::Lambda(Box::new(Lambda {
        param: Pattern::Const(Datum::Nil, sp(1, 9)),
        body: Expr::Const(Datum::Real(1.0), sp(1, 12)),
        span: sp(1, 1),
        name: None,
    }));
    assert!(matches!(&p.items[0], TopItem::Show { expr, .. } if *expr == want));
}

#[test]
fn lambda_and_application_arity() {
    assert_eq!(ex1("(lambda () x)"), "(lambda '() x)");
    assert_eq!(ex1("(lambda (a) a)"), "(lambda a a)");
    assert_eq!(ex1("(lambda (a b c) a)"), "(lambda (cons a (cons b c)) a)");
    assert_eq!(ex1("(f)"), "(@ f '())");
    assert_eq!(ex1("(f a)"), "(@ f a)");
    assert_eq!(ex1("(f a b c)"), "(@ f (cons a (cons b c)))");
    assert_eq!(ex1("((g 1) 2)"), "(@ (@ g '1) '2)");
}

#[test]
fn binding_forms() {
    assert_eq!(
        ex1("(let ((a 1) (b 2)) (+ a b))"),
        "(let ((a '1) (b '2)) (@ + (cons a b)))"
    );
    assert_eq!(ex1("(let () 5)"), "'5");
    assert_eq!(ex1("(let* () 5)"), "'5");
    assert_eq!(
        ex1("(let* ((a 1) (b a)) b)"),
        "(let ((a '1)) (let ((b a)) b))"
    );
    assert_eq!(
        ex1("(letrec ((f (lambda (x) (g x))) (g (lambda (y) (f y)))) (f 1))"),
        "(letrec ((f (lambda:f x (@ g x))) (g (lambda:g y (@ f y)))) (@ f '1))"
    );
    assert_eq!(
        ex1("(let loop ((i 0) (a 1)) (loop i a))"),
        "(@ (letrec ((loop (lambda:loop (cons i a) (@ loop (cons i a))))) loop) (cons '0 '1))"
    );
    // The initial values are outside the scope of the loop name.
    assert_eq!(
        ex1("(let loop ((i loop)) i)"),
        "(@ (letrec ((loop (lambda:loop i i))) loop) loop)"
    );
    assert_eq!(
        ex1("(let ((x 1)) (let ((list 2)) (list x)))"),
        "(let ((x '1)) (let ((list '2)) (@ list x)))"
    );
}

#[test]
fn conditionals() {
    assert_eq!(ex1("(if a b c)"), "(if a b c)");
    assert_eq!(ex1("(cond (a 1) (b 2) (else 3))"), "(if a '1 (if b '2 '3))");
    assert_eq!(ex1("(cond (else 3))"), "'3");
    assert_eq!(ex1("(and)"), "'#t");
    assert_eq!(ex1("(and a)"), "a");
    assert_eq!(ex1("(and a b c)"), "(if a (if b c '#f) '#f)");
    assert_eq!(ex1("(or)"), "'#f");
    assert_eq!(ex1("(or a)"), "a");
    assert_eq!(
        ex1("(or a b c)"),
        "(let ((or tmp a)) (if or tmp or tmp (let ((or tmp b)) (if or tmp or tmp c))))"
    );
}

#[test]
fn pair_construction() {
    assert_eq!(ex1("(cons a b)"), "(cons a b)");
    assert_eq!(ex1("(list)"), "'()");
    assert_eq!(ex1("(list a b)"), "(cons a (cons b '()))");
    assert_eq!(ex1("(cons*)"), "'()");
    assert_eq!(ex1("(cons* a)"), "a");
    assert_eq!(ex1("(cons* a b c)"), "(cons a (cons b c))");
    assert_eq!(
        ex1("(f cons)"),
        "(@ f (lambda:cons (cons x (cons) y (cons)) (cons x (cons) y (cons))))"
    );
    assert_eq!(ex1("(f cons*)"), "(@ f (lambda:cons* x (cons*) x (cons*)))");
    // Shadowed: an ordinary variable and call.
    assert_eq!(
        ex1("(lambda (cons) (cons 1 2))"),
        "(lambda cons (@ cons (cons '1 '2)))"
    );
    assert_eq!(
        ex1("(lambda (if) (if 1 2 3))"),
        "(lambda if (@ if (cons '1 (cons '2 '3))))"
    );
}

#[test]
fn patterns() {
    assert_eq!(
        ex1("(lambda ((cons a b) (list c d) (cons* e f g)) a)"),
        "(lambda (cons (cons a b) (cons (cons c (cons d '())) (cons e (cons f g)))) a)"
    );
    assert_eq!(
        ex1("(lambda (1 #t '() '(1 2) (cons*) (cons* x)) 0)"),
        "(lambda (cons '1 (cons '#t (cons '() (cons '(1 . (2 . ())) (cons '() x))))) '0)"
    );
    assert_eq!(ex1("(let (((cons a b) p)) a)"), "(let (((cons a b) p)) a)");
}

#[test]
fn definitions() {
    assert_eq!(ex("(define x 1) x"), "(define x '1)\n(show x)");
    assert_eq!(
        ex("(define (f a b) a)"),
        "(rec (f (lambda:f (cons a b) a)))"
    );
    assert_eq!(ex("(define (f) 1)"), "(rec (f (lambda:f '() '1)))");
    assert_eq!(
        ex("(define ((f a) b) (+ a b))"),
        "(rec (f (lambda:f a (lambda b (@ + (cons a b))))))"
    );
    assert_eq!(ex("(define f (lambda (x) x))"), "(rec (f (lambda:f x x)))");
    // `cons` as a value is a lambda, so it is hoisted like one.
    assert_eq!(
        ex("(define k cons) 1"),
        "(show '1)\n(rec (k (lambda:cons (cons x (cons) y (cons)) (cons x (cons) y (cons)))))"
    );
    // A top-level definition shadows a keyword in the whole program.
    assert_eq!(
        ex("(define (list x) x) (list 1 2)"),
        "(rec (list (lambda:list x x)))\n(show (@ list (cons '1 '2)))"
    );
}

#[test]
fn expectations() {
    assert_eq!(ex("1 ===> 1"), "(show '1 ===> 1)");
    assert_eq!(
        ex("(f 1) ===> (forward 3 (perturbation 1)) 2 ===> (1 . #t)"),
        "(show (@ f '1) ===> (forward . (3 . ((perturbation . (1 . ())) . ()))))\n(show '2 ===> (1 . #t))"
    );
    err_at("===> 1", 1, 1, "`===>` must follow a top-level expression");
    err_at(
        "(define x 1) ===> 1",
        1,
        14,
        "`===>` must follow a top-level expression",
    );
    err_at(
        "1 ===> 1 ===> 2",
        1,
        10,
        "`===>` must follow a top-level expression",
    );
    err_at("1\n===>", 2, 1, "found end of file");
    err_at("1 ===> \"s\"", 1, 8, "VLAD has no strings");
    err_at(
        "(+ ===> 1)",
        1,
        4,
        "`===>` is only allowed after a top-level expression",
    );
}

#[test]
fn expansion_errors() {
    let cases: &[(&str, (u32, u32), &str)] = &[
        (
            "'a",
            (1, 2),
            "cannot quote the symbol `a`: VLAD has no symbols as values",
        ),
        ("'(1 b)", (1, 5), "VLAD has no symbols as values"),
        (
            "(quote 1 2)",
            (1, 1),
            "`quote` takes exactly one datum, found 2",
        ),
        (
            "(if 1 2)",
            (1, 1),
            "if needs a condition and two arms: expected `(if c a b)`, found 2 subforms",
        ),
        ("(if 1 2 3 4)", (1, 1), "if needs a condition and two arms"),
        (
            "(cond (a 1))",
            (1, 1),
            "cond needs an `(else expression)` clause as its last clause",
        ),
        (
            "(cond)",
            (1, 1),
            "cond needs an `(else expression)` clause as its last clause, found no clauses",
        ),
        (
            "(cond (else 1) (else 2))",
            (1, 7),
            "`else` clause before the end of `cond`",
        ),
        (
            "(cond (a => f) (else 1))",
            (1, 7),
            "`=>` in `cond` clauses is not VLAD",
        ),
        (
            "(cond (a) (else 1))",
            (1, 7),
            "expected a `cond` clause `(test expression)`",
        ),
        (
            "(cons 1)",
            (1, 1),
            "`cons` takes exactly two arguments, found 1",
        ),
        (
            "(cons 1 2 3)",
            (1, 1),
            "`cons` takes exactly two arguments, found 3",
        ),
        (
            "(lambda (x) 1 2)",
            (1, 15),
            "a lambda body is exactly one expression, found 2",
        ),
        ("(lambda (x))", (1, 1), "without a body"),
        ("(lambda x x)", (1, 9), "rest parameters are not VLAD"),
        ("(lambda (a . b) a)", (1, 9), "rest parameters are not VLAD"),
        (
            "(lambda (x y x) 1)",
            (1, 14),
            "`x` is bound twice in one parameter list",
        ),
        ("(lambda ((cons x x)) 1)", (1, 18), "`x` is bound twice"),
        (
            "(let ((x 1) (x 2)) x)",
            (1, 14),
            "`x` is bound twice in one `let`",
        ),
        (
            "(let ((x 1)) x x)",
            (1, 16),
            "a `let` body is exactly one expression, found 2",
        ),
        (
            "(let ((x)) x)",
            (1, 7),
            "expected a `let` binding `(pattern expression)`",
        ),
        ("(let x 1)", (1, 1), "found no body"),
        (
            "(letrec ((f (lambda (x) x)) (f (lambda (y) y))) f)",
            (1, 30),
            "`f` is bound twice in one `letrec`",
        ),
        (
            "(letrec ((f 1)) f)",
            (1, 13),
            "`letrec` binds only procedures: expected a `(lambda ...)` for `f`, found the number 1",
        ),
        (
            "(letrec (((cons a b) (lambda (x) x))) 1)",
            (1, 11),
            "expected a variable name in a `letrec` binding",
        ),
        ("(let loop ((i 0) (i 1)) i)", (1, 19), "`i` is bound twice"),
        ("(lambda ((f x)) 1)", (1, 10), "expected a pattern"),
        (
            "(lambda ((cons a)) 1)",
            (1, 10),
            "a `(cons p q)` pattern has exactly two parts, found 1",
        ),
        ("(lambda (()) 1)", (1, 10), "expected a pattern"),
        ("()", (1, 1), "found `()`: write '() for the empty list"),
        (
            "\"s\"",
            (1, 1),
            "strings appear only in `(include \"file\")`",
        ),
        ("(a . b)", (1, 1), "found a dotted list"),
        (
            "(f lambda)",
            (1, 4),
            "found the keyword `lambda`: it is not a value",
        ),
        ("(f list)", (1, 4), "found the keyword `list`"),
        (
            "else",
            (1, 1),
            "`else` is only allowed as the test of the last `cond` clause",
        ),
        (
            "(f (define x 1))",
            (1, 4),
            "`define` is only allowed as a top-level form",
        ),
        (
            "(f (include \"x\"))",
            (1, 4),
            "`include` is only allowed as a top-level form",
        ),
        (
            "(define x)",
            (1, 1),
            "expected an expression after the symbol `x`",
        ),
        (
            "(define x 1 2)",
            (1, 1),
            "a definition has exactly one body expression, found 2",
        ),
        ("(define)", (1, 1), "found `(define)`"),
        (
            "(define 3 4)",
            (1, 9),
            "expected a name or `(name params ...)` after `define`",
        ),
        ("(define (f . x) 1)", (1, 9), "rest parameters are not VLAD"),
        ("(define (f x x) 1)", (1, 14), "`x` is bound twice"),
        (
            "(define x 1)\n(define (x) 2)",
            (2, 1),
            "`x` is defined twice",
        ),
        ("(include 3)", (1, 10), "expected a file name string"),
        (
            "(include)",
            (1, 1),
            "`include` takes exactly one file name string, found 0",
        ),
    ];
    for (src, (line, col), msg) in cases {
        err_at(src, *line, *col, msg);
    }
    // The note points at the first definition.
    let e = err("(define x 1)\n(define x 2)");
    assert_eq!(e.notes, vec!["first defined at test.vlad:1:1".to_string()]);
}

#[test]
fn top_level_order() {
    // Lambdas are hoisted to just before their first use; values and
    // expressions stay in order.
    assert_eq!(
        ex("(define a 1)\n(f a)\n(define (f x) (g x))\n(define (g y) (* a y))"),
        "(define a '1)\n(rec (g (lambda:g y (@ * (cons a y)))))\n(rec (f (lambda:f x (@ g x))))\n(show (@ f a))"
    );
    // Mutual recursion forms one group, in source order.
    assert_eq!(
        ex("(define (ev n) (od n)) (define (od n) (ev n)) (define (h) 1) (ev 3)"),
        "(rec (ev (lambda:ev n (@ od n))) (od (lambda:od n (@ ev n))))\n(show (@ ev '3))\n(rec (h (lambda:h '() '1)))"
    );
    // A lambda may refer to a value defined later if it is only used
    // after that value.
    assert_eq!(
        ex("(define (f) w) (define w 2) (f)"),
        "(define w '2)\n(rec (f (lambda:f '() w)))\n(show (@ f '()))"
    );
    // Unused groups go to the end, after their own dependencies.
    assert_eq!(
        ex("(define (u) (v)) (define (v) 1) 7"),
        "(show '7)\n(rec (v (lambda:v '() '1)))\n(rec (u (lambda:u '() (@ v '()))))"
    );
}

#[test]
fn use_before_evaluation() {
    err_at(
        "(define x (+ x 1))",
        1,
        14,
        "`x` is used before its definition is evaluated",
    );
    err_at(
        "(define x y) (define y 1)",
        1,
        11,
        "`y` is used before its definition is evaluated",
    );
    err_at("w (define w 1)", 1, 1, "`w` is used before");
    let e = err("(define (f) w)\n(f)\n(define w 2)");
    assert_eq!(e.span, Some(sp(1, 13)));
    assert!(e
        .message
        .contains("`w` is used before its definition is evaluated"));
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("needed by `f`, which is used at test.vlad:2:2")),
        "{:?}",
        e.notes
    );
    // Indirectly, through another lambda.
    err_at(
        "(define (f) (g))\n(define (g) w)\n(f)\n(define w 2)",
        2,
        13,
        "`w` is used before",
    );
    // A value that closes over a later value.
    err_at(
        "(define k (let ((a 1)) (lambda (x) w)))\n(define w 2)",
        1,
        36,
        "`w` is used before",
    );
}

#[test]
fn library_scoping() {
    // Only what is reached is kept; library code keeps its own names.
    let p = ex("(second '(1 2))");
    assert_eq!(
        p,
        "(rec (car (lambda:car (cons a d) a)))\n(rec (cdr (lambda:cdr (cons a d) d)))\n(rec (second (lambda:second l (@ car (@ cdr l)))))\n(show (@ second '(1 . (2 . ()))))"
    );
    // A user `car` shadows the library's, which the library still uses.
    let p = ex("(define (car x) 42) (car (second '(1 2)))");
    assert!(
        p.contains("(rec (car (std) (lambda:car (cons a d) a)))"),
        "{p}"
    );
    assert!(
        p.contains("(lambda:second l (@ car (std) (@ cdr l)))"),
        "{p}"
    );
    assert!(p.contains("(rec (car (lambda:car x '42)))"), "{p}");
    // Library references to primitives the program shadows are pinned.
    let p = ex("(define (sqrt x) x) (magnitude '(3 4))");
    assert!(p.contains("(@ #%sqrt (@ dot (cons v v)))"), "{p}");
    // A program defining its own library-like procedures works unchanged.
    let p = ex(
        "(define (map f l) (if (null? l) '() (cons (f (car l)) (map f (cdr l))))) (map car '((1)))",
    );
    assert!(p.contains("(rec (map (lambda:map"), "{p}");
    assert!(!p.contains("map (std)"), "{p}");
    // Nothing reached, nothing kept.
    assert_eq!(ex("1"), "(show '1)");
}

#[test]
fn whole_library_expands() {
    let names = [
        "car",
        "cdr",
        "first",
        "second",
        "third",
        "fourth",
        "rest",
        "not",
        "abs",
        "sqr",
        "max",
        "min",
        "length",
        "list-ref",
        "append",
        "map",
        "map2",
        "map-n",
        "reduce",
        "equal?",
        "dot",
        "v+",
        "v-",
        "k*v",
        "magnitude",
        "magnitude-squared",
        "distance",
        "e",
        "j*",
        "derivative-F",
        "derivative-R",
        "gradient-F",
        "gradient-R",
    ];
    let src = names.iter().map(|n| format!("{n}\n")).collect::<String>();
    let p = prog(&src);
    let shows = p
        .items
        .iter()
        .filter(|i| matches!(i, TopItem::Show { .. }))
        .count();
    assert_eq!(shows, names.len());
    for n in names {
        assert!(
            p.items
                .iter()
                .any(|i| matches!(i, TopItem::Rec(bs) if bs.iter().any(|b| b.name == n))),
            "library lacks {n}"
        );
    }
    // Every library name is bound by an earlier item (ordering invariant).
    let mut bound: HashSet<String> = HashSet::new();
    for it in &p.items {
        match it {
            TopItem::Rec(bs) => {
                for b in bs {
                    bound.insert(b.name.clone());
                }
                for b in bs {
                    for (v, _) in Expr::Lambda(Box::new(b.lambda.clone())).free_vars() {
                        assert!(!names.contains(&v.as_str()) || bound.contains(&v), "{v}");
                    }
                }
            }
            TopItem::Show { expr, .. } => {
                for (v, _) in expr.free_vars() {
                    assert!(bound.contains(&v), "{v}");
                }
            }
            TopItem::Define { .. } => {}
        }
    }
}

#[test]
fn free_vars_are_scope_aware() {
    let p =
        prog("(lambda (x) (let ((y x) (z w)) (letrec ((f (lambda (a) (f y q)))) (cons z x2))))");
    let e = match &p.items[0] {
        TopItem::Show { expr, .. } => expr,
        _ => panic!("expected a show"),
    };
    let fv: Vec<String> = e.free_vars().into_iter().map(|(n, _)| n).collect();
    assert_eq!(fv, vec!["w", "q", "x2"]);
}

/// A fresh directory under the system temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "syntax-expand-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
    d
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
    p
}

fn load_file(path: &Path, dirs: Vec<PathBuf>) -> Result<(SourceMap, Program), Diagnostic> {
    let mut map = SourceMap::new();
    let p = load_program(&mut map, path, &Options { include_dirs: dirs })?;
    Ok((map, p))
}

#[test]
fn includes() {
    let d = temp_dir("inc");
    let main = write(
        &d,
        "main.vlad",
        "(include \"a\")\n(include \"b.vlad\")\n(include \"a\")\n(f (g 1))",
    );
    write(&d, "a.vlad", "(define (f x) x)\n(include \"b\")");
    write(&d, "b.vlad", "(define (g x) x)");
    let (map, p) = match load_file(&main, vec![]) {
        Ok(x) => x,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(
        show_program(&p),
        "(rec (f (lambda:f x x)))\n(rec (g (lambda:g x x)))\n(show (@ f (@ g '1)))"
    );
    assert_eq!(map.path(FileId(0)), Path::new("<stdlib>"));
    assert_eq!(map.path(FileId(1)), main.as_path());
    assert!(map.path(FileId(3)).ends_with("b.vlad"));

    // -I directories, in order, after the including file's directory.
    let lib1 = d.join("lib1");
    let lib2 = d.join("lib2");
    write(&lib1, "m.vlad", "(define (m) 1)");
    write(&lib2, "m.vlad", "(define (m) 2)");
    write(&lib2, "n.vlad", "(define (n) 3)");
    let main2 = write(
        &d,
        "main2.vlad",
        "(include \"m\") (include \"n\") (+ (m) (n))",
    );
    let p = match load_file(&main2, vec![lib1.clone(), lib2.clone()]) {
        Ok((_, p)) => show_program(&p),
        Err(e) => panic!("{e:?}"),
    };
    assert!(
        p.contains("(lambda:m '() '1)") && p.contains("(lambda:n '() '3)"),
        "{p}"
    );

    // Missing include: names every path tried, at the include form.
    let main3 = write(&d, "main3.vlad", "1\n  (include \"nope\")");
    let e = match load_file(&main3, vec![lib1.clone()]) {
        Err(e) => e,
        Ok(_) => panic!("missing include accepted"),
    };
    assert_eq!(
        e.span,
        Some(Span {
            file: FileId(1),
            line: 2,
            col: 3
        })
    );
    assert!(
        e.message.contains("cannot find included file `nope.vlad`"),
        "{}",
        e.message
    );
    assert!(e
        .message
        .contains(&d.join("nope.vlad").display().to_string()));
    assert!(e
        .message
        .contains(&lib1.join("nope.vlad").display().to_string()));

    // Errors inside an included file point into that file.
    write(&d, "bad.vlad", "\n (if 1 2)");
    let main4 = write(&d, "main4.vlad", "(include \"bad\")");
    let (e, map) = {
        let mut map = SourceMap::new();
        let r = load_program(&mut map, &main4, &Options::default());
        (r.err(), map)
    };
    let e = e.unwrap_or_else(|| panic!("bad include accepted"));
    let rendered = e.render(&map);
    assert!(
        rendered.contains("bad.vlad:2:2: error: if needs"),
        "{rendered}"
    );

    // `===>` cannot reach across a file boundary.
    write(&d, "arrow.vlad", "===> 1");
    let main5 = write(&d, "main5.vlad", "1 (include \"arrow\")");
    assert!(load_file(&main5, vec![]).is_err());

    // Definitions in included files count for duplicates.
    write(&d, "dup.vlad", "(define (f) 1)");
    let main6 = write(&d, "main6.vlad", "(include \"dup\")\n(define f 2)");
    let e = match load_file(&main6, vec![]) {
        Err(e) => e,
        Ok(_) => panic!("duplicate accepted"),
    };
    assert!(e.message.contains("`f` is defined twice"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn include_cycle_and_missing_main() {
    let d = temp_dir("cycle");
    let a = write(&d, "a.vlad", "(include \"b\")");
    write(&d, "b.vlad", "(include \"a\")");
    let e = match load_file(&a, vec![]) {
        Err(e) => e,
        Ok(_) => panic!("cycle accepted"),
    };
    let a_s = a.display().to_string();
    let b_s = d.join("b.vlad").display().to_string();
    assert_eq!(e.message, format!("include cycle: {a_s} -> {b_s} -> {a_s}"));
    assert_eq!(e.span.map(|s| s.file), Some(FileId(2)));

    let self_inc = write(&d, "self.vlad", "(include \"self.vlad\")");
    assert!(load_file(&self_inc, vec![]).is_err());

    let missing = d.join("missing.vlad");
    let e = match load_file(&missing, vec![]) {
        Err(e) => e,
        Ok(_) => panic!("missing main accepted"),
    };
    assert_eq!(e.span, None);
    assert!(e
        .message
        .starts_with(&format!("cannot read {}: ", missing.display())));
    let _ = std::fs::remove_dir_all(&d);
}

/// The forms of `text` as a new file of `map` (a REPL input).
fn input(map: &mut SourceMap, text: &str) -> Vec<Sexp> {
    let id = map.add(PathBuf::from("<stdin>"), text.to_string());
    match reader::read_partial(text, id, 1) {
        Ok(reader::Partial::Complete(forms)) => forms,
        other => panic!("{text:?}: {other:?}"),
    }
}

#[test]
fn forms_of_several_inputs_expand_as_one_program() {
    let mut map = library_map();
    let mut forms = input(&mut map, "(define (f x) (g x))");
    forms.extend(input(&mut map, "(define (g x) (car x))\n(f '(1 2)) ===> 1"));
    let p = match expand_forms(&map, &forms) {
        Ok(p) => p,
        Err(e) => panic!("{e:?}"),
    };
    let shows = p
        .items
        .iter()
        .filter(|i| {
            matches!(
                i,
                TopItem::Show {
                    expect: Some(_),
                    ..
                }
            )
        })
        .count();
    assert_eq!(shows, 1);
    assert_eq!(
        forms.iter().filter_map(defined_name).collect::<Vec<_>>(),
        ["f", "g"]
    );
}

#[test]
fn an_expectation_does_not_attach_across_inputs() {
    let mut map = library_map();
    let mut forms = input(&mut map, "(+ 1 2)");
    forms.extend(input(&mut map, "===> 3"));
    let e = match expand_forms(&map, &forms) {
        Ok(_) => panic!("`===>` attached to the previous input"),
        Err(e) => e,
    };
    assert!(e.message.contains("`===>` must follow"), "{e:?}");
    assert!(expand_forms(&SourceMap::new(), &forms).is_err());
}
