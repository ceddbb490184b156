//! The same scenarios replayed on the real machine; children re-run this crate's own binary, so they judge
//! this crate's catalog too.

fn main() {
    let catalog = downstream_kernels::catalog().expect("a consistent catalog");
    devsim::harness::Harness::new(catalog)
        .scenarios(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
        .live(env!("CARGO_BIN_EXE_downstream-devsim"))
        .run()
}
