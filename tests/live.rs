//! Live replay, one test per scenario, through devsim's public harness: whether a scenario can run live
//! here is decided at list time; the ones that cannot are listed as ignored with the reason, so cargo test,
//! nextest (`--run-ignored only`) and JUnit show them as skips. On a machine without GPUs the CPU scenarios
//! still really run. `DEVSIM_REQUIRE_LIVE=N` adds a test that fails when fewer than N can run live here.

fn main() {
    devsim::harness::Harness::new(devsim::Catalog::reference())
        .scenarios(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
        .live(env!("CARGO_BIN_EXE_devsim"))
        .run()
}
