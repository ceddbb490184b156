//! `cargo xtask ci`: devsim's CI, one step at a time or all of them, the same for `.ci/run` and every
//! workflow under `.github/workflows` (each of their `run:` lines is `cargo xtask ci --step NAME`).
//!
//! ```text
//! cargo xtask ci                      every hardware-less step, in order (what .ci/run does)
//! cargo xtask ci --step fmt --step clippy
//! cargo xtask ci --runner live        the steps for a machine with real GPUs
//! cargo xtask ci --list               the steps, in order, with their runner
//! cargo xtask ci --dry-run ...        print what would run, run nothing
//! ```

mod ci;
mod steps;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};

use ci::Ci;
use steps::{Runner, STEPS, Step};

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
    let root = repo_root();
    let started = Instant::now();
    for step in chosen {
        println!("== {}: {}", step.name, step.what);
        if step.torch_env {
            println!("# in the torch venv: .venv-torch (VIRTUAL_ENV, PATH, LIBTORCH_USE_PYTORCH)");
        }
        let began = Instant::now();
        let done = Ci::new(&root, step.torch_env, dry_run).and_then(|ci| (step.body)(&ci));
        match done {
            Ok(()) if dry_run => {}
            Ok(()) => println!(
                "== {}: ok in {:.0} s",
                step.name,
                began.elapsed().as_secs_f64()
            ),
            Err(error) => {
                eprintln!("error: CI step `{}` failed: {error}", step.name);
                return ExitCode::FAILURE;
            }
        }
    }
    if !dry_run {
        println!(
            "== all steps passed in {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    ExitCode::SUCCESS
}

/// The repository root: the folder above this crate.
fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}
