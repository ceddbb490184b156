//! One test per scenario file under `scenarios/` (host profiles excluded), through devsim's public harness:
//! the same call a downstream crate makes for its own catalog.

fn main() {
    devsim::harness::Harness::new(devsim::Catalog::reference())
        .scenarios(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
        .run()
}
