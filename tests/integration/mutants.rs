//! The seed-bug mutation data (`mutants/seed-bugs.toml`) parses and every `find` anchor occurs exactly once
//! in the current sources. Cheap: nothing is built here. The proof that the corpus catches each mutation is
//! `cargo run -p seed-mutants`, a step of `.ci/run` after `cargo test`.

use std::path::Path;

use seed_mutants::{DATA_FILE, SeedBugs};

#[test]
fn every_seed_bug_mutation_parses_and_its_anchor_occurs_exactly_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bugs = match SeedBugs::load(&root.join(DATA_FILE)) {
        Ok(bugs) => bugs,
        Err(error) => panic!("{error}: {:?}", std::error::Error::source(&error)),
    };
    assert_eq!(bugs.mutants.len(), 14, "one mutation per seed bug class");
    let problems: Vec<String> = bugs
        .check_anchors(root)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
