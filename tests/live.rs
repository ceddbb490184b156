//! Live replay, one test per scenario file. Whether a scenario can run live here is decided at LIST
//! time (`LiveContext::plan`): scenarios whose host the real machine satisfies run on real drivers (and
//! real tensors with `--features torch`); every other one is listed as ignored, so cargo test, nextest
//! (`--run-ignored only`) and JUnit show it as a skip, and running it anyway fails with the reason. On a
//! machine without GPUs the CPU scenarios still really run.
//!
//! `DEVSIM_REQUIRE_LIVE=N` adds a trial that fails when fewer than N scenarios can run live here.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use devsim::kernel::Catalog;
use devsim::report;
use devsim::scenario::live::LiveContext;
use devsim::scenario::load::scenario_name;
use devsim::scenario::{Scenario, Status, load_scenario};
use libtest_mimic::{Arguments, Failed, Trial};

fn live(scenario: &Scenario, context: &LiveContext, catalog: &Catalog) -> Result<(), Failed> {
    let report = context.run(scenario, catalog);
    match report.status {
        Status::Passed => Ok(()),
        Status::Skipped(reason) => {
            Err(format!("listed as runnable here, but skipped when run: {reason}").into())
        }
        Status::Failed => Err(report::human(&report).into()),
    }
}

/// `DEVSIM_REQUIRE_LIVE`, if set: the fewest scenarios that must run live here.
fn required() -> Result<Option<usize>, String> {
    match std::env::var("DEVSIM_REQUIRE_LIVE") {
        Err(_) => Ok(None),
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("DEVSIM_REQUIRE_LIVE={text:?} is not a number of scenarios")),
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
    let mut runnable = 0;
    let mut trials: Vec<Trial> = common::corpus_files_or_exit()
        .into_iter()
        .map(|path| {
            let name = scenario_name(&path);
            let scenario = match load_scenario(&path, &catalog) {
                Ok(scenario) => scenario,
                Err(error) => {
                    let message = error.to_string();
                    return Trial::test(name, move || Err(message.into())).with_kind("live");
                }
            };
            match context.plan(&scenario) {
                Ok(()) => {
                    runnable += 1;
                    let (context, catalog) = (Arc::clone(&context), Arc::clone(&catalog));
                    Trial::test(name, move || live(&scenario, &context, &catalog))
                }
                Err(reason) => Trial::test(name, move || {
                    Err(format!("cannot run live here: {reason}").into())
                })
                .with_ignored_flag(true),
            }
            .with_kind("live")
        })
        .collect();
    match required() {
        Ok(None) => {}
        Ok(Some(wanted)) => trials.push(Trial::test("require_live", move || {
            if runnable >= wanted {
                Ok(())
            } else {
                Err(format!(
                    "DEVSIM_REQUIRE_LIVE={wanted}, but only {runnable} scenario(s) can run live here"
                )
                .into())
            }
        })),
        Err(message) => trials.push(Trial::test("require_live", move || Err(message.into()))),
    }
    libtest_mimic::run(&args, trials).exit();
}
