//! Live replay, one test per scenario file: scenarios whose host the real machine satisfies run on real
//! drivers (and real tensors with `--features torch`); every other one is reported ignored with the
//! reason. On a machine without GPUs the CPU scenarios still really run.

fn main() {
    devsim::harness::Harness::new(devsim::Catalog::reference())
        .scenarios(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
        .live(env!("CARGO_BIN_EXE_devsim"))
        .run()
}
