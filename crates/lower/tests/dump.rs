//! `DUMP=file.vlad cargo test -p lower --test dump -- --ignored --nocapture`
//! prints the FIR of a program, as `stalingrad build --emit=fir` does, from
//! inside the test harness (with a debugger, or `VLAD_NO_OPT`).
#[test]
#[ignore]
fn dump() {
    let Ok(path) = std::env::var("DUMP") else {
        return;
    };
    let mut session = driver::Session::new(Vec::new());
    let text = session
        .load(std::path::Path::new(&path))
        .and_then(|prog| session.emit_text(prog, driver::Emit::Fir));
    match text {
        Ok(text) => print!("{text}"),
        Err(e) => println!("{}", session.render(&e)),
    }
}
