//! Proof that the corpus catches every seed bug: each deliberately wrong dispatch variant makes at least
//! one scenario fail. The variants exist only under the `mutants` feature, which only tests enable.

mod common;

use devsim::kernel::Catalog;
use devsim::mutants::{Mutant, activate};
use devsim::scenario::Status;
use devsim::scenario::suite::{load_all, run_simulated};

#[test]
fn every_seed_bug_variant_is_caught_by_the_corpus() {
    let catalog = Catalog::reference();
    let (scenarios, errors) = load_all(&[common::scenario_root()], &catalog).expect("corpus");
    assert!(errors.is_empty(), "corpus files fail to load: {errors:?}");
    let failing = || -> Vec<String> {
        scenarios
            .iter()
            .filter(|s| run_simulated(s, &catalog).status == Status::Failed)
            .map(|s| s.name.clone())
            .collect()
    };
    assert_eq!(
        failing(),
        Vec::<String>::new(),
        "the corpus passes without mutants"
    );
    let mut survivors = Vec::new();
    for mutant in Mutant::EVERY {
        let caught_by = {
            let _switched_on = activate(mutant);
            failing()
        };
        println!(
            "{mutant}: caught by {} scenario(s): {}",
            caught_by.len(),
            caught_by.join(", ")
        );
        if caught_by.is_empty() {
            survivors.push(mutant.to_string());
        }
    }
    assert!(
        survivors.is_empty(),
        "bug variants no scenario catches: {survivors:?}"
    );
    assert_eq!(
        failing(),
        Vec::<String>::new(),
        "switching a mutant off restores the dispatch code"
    );
}
