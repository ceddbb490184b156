//! `cargo xtask ci`: devsim's CI, one step at a time or all of them, the same for `.ci/run` and every
//! workflow under `.github/workflows` (each of their `run:` lines is `cargo xtask ci --step NAME`).
//!
//! ```text
//! cargo xtask ci                      every hardware-less step, side by side where they may (what .ci/run does)
//! cargo xtask ci --jobs 1             the same, one at a time in order, output on the terminal
//! cargo xtask ci --step fmt --step clippy
//! cargo xtask ci --runner live        the steps for a machine with real GPUs
//! cargo xtask ci --list               the steps, in order, with their runner
//! cargo xtask ci --dry-run ...        print what would run, run nothing
//! ```

mod ci;
mod schedule;
mod steps;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};

use schedule::Status;
use steps::{Runner, STEPS, Step};

/// How many steps a whole run keeps going at once: one that compiles in the workspace (such steps hold its build
/// folder alone) and three that download, install or build elsewhere beside it.
const DEFAULT_JOBS: usize = 4;

#[derive(Parser)]
#[command(about = "devsim's project tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Run CI steps: all of a runner's, in order, or the ones named.
    Ci {
        /// A step to run (repeatable; in the order given). Without one: every step of `--runner`.
        #[arg(long = "step", value_name = "NAME")]
        steps: Vec<String>,
        /// Whose steps run when none is named.
        #[arg(long, value_enum, default_value_t = Which::HardwareLess)]
        runner: Which,
        /// List the steps in order, one per line (`NAME RUNNER`), and run nothing.
        #[arg(long)]
        list: bool,
        /// Print each step's commands instead of running them (a probe's two branches both).
        #[arg(long)]
        dry_run: bool,
        /// How many steps run at once (default: 4 for a whole run, 1 for named steps). With more than one,
        /// each step's output goes to target/ci-logs/NAME.log and is printed whole when it ends.
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Which {
    /// `.ci/run` and `ci.yml`.
    HardwareLess,
    /// `live-nvidia.yml` and `live-rocm.yml`.
    Live,
}

impl Which {
    fn runner(self) -> Runner {
        match self {
            Which::HardwareLess => Runner::HardwareLess,
            Which::Live => Runner::Live,
        }
    }
}

fn main() -> ExitCode {
    let Task::Ci {
        steps: named,
        runner,
        list,
        dry_run,
        jobs,
    } = Cli::parse().task;
    if list {
        for step in STEPS {
            let runner = match step.runner {
                Runner::HardwareLess => "hardware-less",
                Runner::Live => "live",
            };
            println!("{} {runner}", step.name);
        }
        return ExitCode::SUCCESS;
    }
    let chosen: Vec<&Step> = if named.is_empty() {
        STEPS
            .iter()
            .filter(|step| step.runner == runner.runner())
            .collect()
    } else {
        let mut chosen = Vec::new();
        for name in &named {
            match steps::find(name) {
                Some(step) => chosen.push(step),
                None => {
                    let known: Vec<&str> = STEPS.iter().map(|step| step.name).collect();
                    eprintln!(
                        "error: failed to find CI step `{name}`; the steps are: {}",
                        known.join(", ")
                    );
                    return ExitCode::from(2);
                }
            }
        }
        chosen
    };
    let jobs = match jobs {
        Some(jobs) => usize::from(jobs),
        None if named.is_empty() => DEFAULT_JOBS,
        None => 1,
    };
    let root = repo_root();
    let started = Instant::now();
    let records = if dry_run || jobs == 1 {
        schedule::one_by_one(&chosen, &root, dry_run)
    } else {
        schedule::side_by_side(&chosen, &root, jobs)
    };
    let passed = records.iter().all(|record| record.status == Status::Passed);
    if !dry_run {
        print!("{}", schedule::summary(&records, started.elapsed()));
    }
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The repository root: the folder above this crate.
fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}
