//! `DUMP=file.vlad cargo test -p lower --test dump -- --ignored --nocapture`
//! prints the FIR of a program (a debugging aid until `--emit=ir` exists).
#[test]
#[ignore]
fn dump() {
    let Ok(path) = std::env::var("DUMP") else {
        return;
    };
    let mut map = base::diag::SourceMap::new();
    let ast = match syntax::expand::load_program(
        &mut map,
        std::path::Path::new(&path),
        &Default::default(),
    ) {
        Ok(a) => a,
        Err(e) => return println!("{}", e.render(&map)),
    };
    let prog = match syntax::anf::lower_program(&ast) {
        Ok(p) => p,
        Err(e) => return println!("{}", e.render(&map)),
    };
    match lower::compile(prog, &map) {
        Ok(m) => print!("{}", fir::print::module(&m)),
        Err(e) => println!("{}", e.render(&map)),
    }
}
