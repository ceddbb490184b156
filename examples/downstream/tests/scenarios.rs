//! One test per scenario file under `scenarios/`, judged against this crate's catalog.

fn main() {
    let catalog = downstream_kernels::catalog().expect("a consistent catalog");
    devsim::harness::Harness::new(catalog)
        .scenarios(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
        .run()
}
