//! Runs the chosen CI steps and accounts for them: one after another with their output on the terminal, or side
//! by side, each into its own log printed whole when it ends; then a table of each step's time against its
//! budget.
//!
//! Side by side, a step starts when a slot is free, the steps it needs have passed and no running step holds a
//! [`Resource`] it uses; free slots take steps in their listed order. After a failure no step starts; those
//! running finish, and the rest are listed as not run.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::ci::Ci;
use crate::steps::{Resource, Step};

/// How often a side-by-side run says which steps are still running.
const HEARTBEAT: Duration = Duration::from_secs(60);

/// Where each step's log goes when steps run side by side.
const LOG_DIR: &str = "target/ci-logs";

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// It passed.
    Passed,
    /// It failed, with why.
    Failed(String),
    /// It did not start: an earlier step failed.
    NotRun,
}

/// One step's line in the summary.
pub struct Record {
    /// The step.
    pub step: &'static Step,
    /// How it ended.
    pub status: Status,
    /// Its wall-clock time (zero when it did not run).
    pub elapsed: Duration,
}

impl Record {
    /// Whether it ran past its budget.
    pub fn over_budget(&self) -> bool {
        self.status != Status::NotRun && self.elapsed.as_secs() > self.step.budget_s
    }
}

/// Runs `steps` one after another, their output on the terminal (or, under `dry_run`, their commands only).
pub fn one_by_one(steps: &[&'static Step], root: &Path, dry_run: bool) -> Vec<Record> {
    let mut records = Vec::new();
    let mut failed = false;
    for &step in steps {
        if failed {
            records.push(Record {
                step,
                status: Status::NotRun,
                elapsed: Duration::ZERO,
            });
            continue;
        }
        println!("== {}: {}", step.name, step.what);
        if step.torch_env {
            println!("# in the torch venv: .venv-torch (VIRTUAL_ENV, PATH, LIBTORCH_USE_PYTORCH)");
        }
        let began = Instant::now();
        let done = Ci::new(root, step.torch_env, dry_run).and_then(|ci| (step.body)(&ci));
        let elapsed = began.elapsed();
        let status = match done {
            Ok(()) => {
                if !dry_run {
                    println!("== {}: ok in {:.0} s", step.name, elapsed.as_secs_f64());
                }
                Status::Passed
            }
            Err(error) => {
                eprintln!("error: CI step `{}` failed: {error}", step.name);
                failed = true;
                Status::Failed(error.to_string())
            }
        };
        records.push(Record {
            step,
            status,
            elapsed,
        });
    }
    records
}

/// What a finished step's thread sends back.
struct Finished {
    index: usize,
    result: Result<(), String>,
    elapsed: Duration,
}

/// Runs `steps` side by side, at most `jobs` at once, each into `target/ci-logs/NAME.log`, printed whole when
/// the step ends.
pub fn side_by_side(steps: &[&'static Step], root: &Path, jobs: usize) -> Vec<Record> {
    let chosen: BTreeSet<&str> = steps.iter().map(|step| step.name).collect();
    let log_dir = root.join(LOG_DIR);
    let mut statuses: Vec<Option<(Status, Duration)>> = vec![None; steps.len()];
    let mut running: BTreeMap<usize, Instant> = BTreeMap::new();
    let mut failed = false;
    let (tx, rx) = mpsc::channel::<Finished>();
    println!(
        "== {} steps, at most {jobs} at once; each step's log is printed whole when it ends ({LOG_DIR}/)",
        steps.len()
    );
    loop {
        if !failed {
            for (index, &step) in steps.iter().enumerate() {
                if running.len() >= jobs.max(1) {
                    break;
                }
                if statuses[index].is_some() || running.contains_key(&index) {
                    continue;
                }
                if !ready(step, steps, &statuses, &chosen, &running) {
                    continue;
                }
                println!("-> {} started", step.name);
                running.insert(index, Instant::now());
                let tx = tx.clone();
                let root = root.to_path_buf();
                let log = log_dir.join(format!("{}.log", step.name));
                thread::spawn(move || {
                    let began = Instant::now();
                    let result = run_logged(step, &root, &log);
                    // the receiver outlives every sender it waits for
                    let _gone = tx.send(Finished {
                        index,
                        result,
                        elapsed: began.elapsed(),
                    });
                });
            }
        }
        if running.is_empty() {
            break;
        }
        match rx.recv_timeout(HEARTBEAT) {
            Ok(finished) => {
                running.remove(&finished.index);
                let step = steps[finished.index];
                print_log(step, &log_dir.join(format!("{}.log", step.name)));
                let status = match finished.result {
                    Ok(()) => {
                        println!(
                            "== {}: ok in {:.0} s",
                            step.name,
                            finished.elapsed.as_secs_f64()
                        );
                        Status::Passed
                    }
                    Err(error) => {
                        eprintln!("error: CI step `{}` failed: {error}", step.name);
                        failed = true;
                        Status::Failed(error)
                    }
                };
                statuses[finished.index] = Some((status, finished.elapsed));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now: Vec<String> = running
                    .iter()
                    .map(|(&index, began)| {
                        format!("{} {} s", steps[index].name, began.elapsed().as_secs())
                    })
                    .collect();
                println!("… running: {}", now.join(", "));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    steps
        .iter()
        .zip(statuses)
        .map(|(&step, status)| {
            let (status, elapsed) = status.unwrap_or((Status::NotRun, Duration::ZERO));
            Record {
                step,
                status,
                elapsed,
            }
        })
        .collect()
}

/// Whether `step` may start: each step it needs that runs here has passed, and no running step holds a
/// resource it uses.
fn ready(
    step: &Step,
    steps: &[&'static Step],
    statuses: &[Option<(Status, Duration)>],
    chosen: &BTreeSet<&str>,
    running: &BTreeMap<usize, Instant>,
) -> bool {
    let needs_met = step.needs.iter().all(|need| {
        !chosen.contains(need)
            || steps.iter().zip(statuses).any(|(other, status)| {
                other.name == *need && matches!(status, Some((Status::Passed, _)))
            })
    });
    let held: Vec<Resource> = running
        .keys()
        .flat_map(|&index| steps[index].uses.iter().copied())
        .collect();
    needs_met && !step.uses.iter().any(|resource| held.contains(resource))
}

/// Runs `step` with its output in `log`; why it failed, as text.
fn run_logged(step: &Step, root: &Path, log: &Path) -> Result<(), String> {
    if let Some(folder) = log.parent() {
        fs::create_dir_all(folder)
            .map_err(|error| format!("make the log folder {}: {error}", folder.display()))?;
    }
    let file =
        File::create(log).map_err(|error| format!("create the log {}: {error}", log.display()))?;
    let ci = Ci::new(root, step.torch_env, false).map_err(|error| error.to_string())?;
    let ci = ci.logged(file);
    if step.torch_env {
        ci.say("# in the torch venv: .venv-torch (VIRTUAL_ENV, PATH, LIBTORCH_USE_PYTORCH)");
    }
    (step.body)(&ci).map_err(|error| error.to_string())
}

/// Prints a finished step's header and its whole log.
fn print_log(step: &Step, log: &Path) {
    println!("== {}: {}", step.name, step.what);
    match fs::read(log) {
        Ok(bytes) => print!("{}", String::from_utf8_lossy(&bytes)),
        Err(error) => println!("# its log {} could not be read: {error}", log.display()),
    }
}

/// The summary table: each step's result and time against its budget, a warning per step over budget, and the
/// closing line with the whole run's wall-clock time.
pub fn summary(records: &[Record], wall: Duration) -> String {
    let width = records
        .iter()
        .map(|record| record.step.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!("== summary\n{:width$}  result   time  budget\n", "step");
    for record in records {
        let result = match record.status {
            Status::Passed if record.over_budget() => "ok, over",
            Status::Passed => "ok",
            Status::Failed(_) => "FAILED",
            Status::NotRun => "not run",
        };
        out.push_str(&format!(
            "{:width$}  {result:8} {:>4} s {:>5} s\n",
            record.step.name,
            record.elapsed.as_secs(),
            record.step.budget_s,
        ));
    }
    for record in records.iter().filter(|record| record.over_budget()) {
        out.push_str(&format!(
            "warning: step `{}` took {} s, over its budget of {} s\n",
            record.step.name,
            record.elapsed.as_secs(),
            record.step.budget_s
        ));
    }
    let passed = records
        .iter()
        .filter(|record| record.status == Status::Passed)
        .count();
    if passed == records.len() {
        out.push_str(&format!(
            "== all steps passed in {:.0} s\n",
            wall.as_secs_f64()
        ));
    } else {
        out.push_str(&format!(
            "== {passed} of {} steps passed in {:.0} s\n",
            records.len(),
            wall.as_secs_f64()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Record, Status, summary};
    use crate::steps::STEPS;

    #[test]
    fn the_summary_warns_of_a_step_over_its_budget_and_counts_the_failed_and_unrun() {
        let budget = STEPS[0].budget_s;
        let records = [
            Record {
                step: &STEPS[0],
                status: Status::Passed,
                elapsed: Duration::from_secs(budget + 1),
            },
            Record {
                step: &STEPS[1],
                status: Status::Failed("no".into()),
                elapsed: Duration::from_secs(1),
            },
            Record {
                step: &STEPS[2],
                status: Status::NotRun,
                elapsed: Duration::ZERO,
            },
        ];
        let text = summary(&records, Duration::from_secs(9));
        assert!(text.contains(&format!(
            "warning: step `{}` took {} s, over its budget of {budget} s",
            STEPS[0].name,
            budget + 1
        )));
        assert!(text.contains("FAILED") && text.contains("not run"));
        assert!(text.ends_with("== 1 of 3 steps passed in 9 s\n"));
        let within = [Record {
            step: &STEPS[0],
            status: Status::Passed,
            elapsed: Duration::from_secs(budget),
        }];
        let text = summary(&within, Duration::from_secs(2));
        assert!(!text.contains("warning") && text.ends_with("== all steps passed in 2 s\n"));
    }
}
