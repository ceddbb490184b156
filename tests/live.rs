//! Live replay, one test per scenario file: scenarios whose host the real machine satisfies run on real
//! drivers (and real tensors with `--features torch`); every other one is reported ignored with the
//! reason. On a machine without GPUs the CPU scenarios still really run.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use devsim::kernel::Catalog;
use devsim::report;
use devsim::scenario::live::LiveContext;
use devsim::scenario::load::scenario_name;
use devsim::scenario::{Status, load_scenario};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

fn live(
    path: PathBuf,
    context: Arc<LiveContext>,
    catalog: Arc<Catalog>,
) -> Result<Completion, Failed> {
    let scenario =
        load_scenario(&path, &catalog).map_err(|error| Failed::from(error.to_string()))?;
    let report = context.run(&scenario, &catalog);
    match report.status {
        Status::Passed => Ok(Completion::Completed),
        Status::Skipped(reason) => Ok(Completion::ignored_with(reason)),
        Status::Failed => Err(report::human(&report).into()),
    }
}

fn main() {
    let args = Arguments::from_args();
    let catalog = Arc::new(Catalog::reference());
    let context = Arc::new(LiveContext::detect(Some(PathBuf::from(env!(
        "CARGO_BIN_EXE_devsim"
    )))));
    if !args.list {
        eprintln!("{}", context.describe());
    }
    let trials = common::corpus_files_or_exit()
        .into_iter()
        .map(|path| {
            let (context, catalog) = (Arc::clone(&context), Arc::clone(&catalog));
            Trial::ignorable_test(scenario_name(&path), move || live(path, context, catalog))
                .with_kind("live")
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
