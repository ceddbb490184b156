//! `devsim bench`: decisions per second over the kernel matrix, the median cost of one validate, and
//! scenarios per second over the corpus.

use std::path::Path;
use std::time::Instant;

use crate::errors::CliError;
use crate::kernel::Catalog;
use crate::matrix::{median, run_matrix, shipped_hosts};
use crate::scenario::suite::{load_all, run_simulated};

/// Runs the benchmarks and prints their figures.
pub fn run(root: &Path, rounds: u32) -> Result<(), CliError> {
    let catalog = Catalog::reference();
    let hosts = shipped_hosts(root).map_err(|_| CliError::Load { count: 1 })?;
    let mut best_rate = 0.0f64;
    let mut validate_times = Vec::new();
    let mut cases = 0;
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        let outcome = run_matrix(&hosts, &catalog);
        let elapsed = started.elapsed();
        cases = outcome.cases;
        best_rate = best_rate.max(outcome.cases as f64 / elapsed.as_secs_f64());
        validate_times.extend(outcome.validate_times);
    }
    let median_validate = median(&mut validate_times);
    println!(
        "matrix: {} kernels x {} hosts = {cases} cases per round, {rounds} round(s)",
        catalog.len(),
        hosts.len()
    );
    println!("matrix: {best_rate:.0} decisions/s (best round)");
    println!(
        "validate: median {:.2} us over {} calls",
        median_validate.as_secs_f64() * 1e6,
        validate_times.len()
    );
    let load_started = Instant::now();
    let (scenarios, errors) = load_all(&[root.to_path_buf()], &catalog)?;
    let load_time = load_started.elapsed();
    let mut best_corpus = f64::MAX;
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        for scenario in &scenarios {
            run_simulated(scenario, &catalog);
        }
        best_corpus = best_corpus.min(started.elapsed().as_secs_f64());
    }
    println!(
        "corpus: {} scenarios ({} failed to load) loaded in {:.1} ms, run in {:.2} ms (best of {rounds}): {:.0} scenarios/s",
        scenarios.len(),
        errors.len(),
        load_time.as_secs_f64() * 1e3,
        best_corpus * 1e3,
        scenarios.len() as f64 / best_corpus
    );
    Ok(())
}
