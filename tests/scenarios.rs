//! One test per scenario file under `scenarios/` (host profiles excluded), discovered at run time and
//! named by its path relative to `scenarios/`. Supports libtest's `--list`, `--exact`, `--ignored` and
//! filters, so cargo test and cargo-nextest can list, filter and shard them.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use devsim::kernel::Catalog;
use devsim::report;
use devsim::scenario::load::scenario_name;
use devsim::scenario::suite::run_simulated;
use devsim::scenario::{Status, load_scenario};
use libtest_mimic::{Arguments, Failed, Trial};

fn simulated(path: PathBuf, catalog: Arc<Catalog>) -> Result<(), Failed> {
    let scenario =
        load_scenario(&path, &catalog).map_err(|error| Failed::from(error.to_string()))?;
    let report = run_simulated(&scenario, &catalog);
    match report.status {
        Status::Passed => Ok(()),
        Status::Failed => Err(report::human(&report).into()),
        Status::Skipped(reason) => {
            Err(format!("a simulated run cannot be skipped: {reason}").into())
        }
    }
}

fn main() {
    let args = Arguments::from_args();
    let catalog = Arc::new(Catalog::reference());
    let trials = common::corpus_files_or_exit()
        .into_iter()
        .map(|path| {
            let catalog = Arc::clone(&catalog);
            Trial::test(scenario_name(&path), move || simulated(path, catalog))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
