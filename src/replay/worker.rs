//! Long-lived live workers: scenarios whose visible-device variables differ from this process's run in
//! a `devsim live-worker` child of the running binary, one per distinct set of variables, started on
//! first use and reused for every later scenario with the same set.
//!
//! The protocol is JSON lines: the parent writes a [`WorkRequest`] (a scenario file and the name of one
//! scenario in it), the worker answers one [`WorkAnswer`]. A worker that exits, answers garbage or
//! stays silent past the timeout fails that scenario with the reason (its exit status and the tail of
//! its stderr), is killed, and is replaced by a fresh one for the next scenario. Scenarios cannot
//! affect each other: the worker makes each scenario's starting current device current before it runs
//! (`LiveContext::run`), builds a fresh runtime per scenario, and loads files itself.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::child::{Connection, Incoming, Silence};
use crate::kernel::Catalog;
use crate::replay::LiveContext;
use crate::runner::{HarnessFault, ScenarioReport};
use crate::scenario::{Found, load_found};
use crate::scenario::{ProfileSources, Scenario};
use crate::visible::VISIBLE_DEVICE_VARIABLES;

/// The hidden subcommand that serves requests (`devsim live-worker`).
pub const WORKER_COMMAND: &str = "live-worker";

/// How long one scenario may take in a worker, its start included (libtorch loads in about a
/// second; a scenario takes milliseconds), before the worker is killed and the scenario fails.
pub const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

pub use devsim_metadata::worker::WorkRequest;

/// A worker's answer to one [`WorkRequest`]: the metadata crate's message around devsim's own report.
pub type WorkAnswer = devsim_metadata::worker::WorkAnswer<ScenarioReport>;

/// The visible-device variables one worker runs with.
type Env = BTreeMap<String, String>;

/// One worker slot: the running worker, if any (started on first use, emptied when it dies).
type Slot = Arc<Mutex<Option<Connection>>>;

/// The workers of one live run, keyed by their visible-device variables.
pub struct WorkerPool {
    exe: PathBuf,
    timeout: Duration,
    slots: Mutex<HashMap<Env, Slot>>,
    started: AtomicUsize,
}

impl WorkerPool {
    /// A pool whose workers are `exe live-worker` (the running `devsim` or a downstream binary built
    /// on `devsim::cli::main`), each scenario limited to [`SCENARIO_TIMEOUT`].
    pub fn new(exe: PathBuf) -> Self {
        Self {
            exe,
            timeout: SCENARIO_TIMEOUT,
            slots: Mutex::new(HashMap::new()),
            started: AtomicUsize::new(0),
        }
    }

    /// The same pool with another per-scenario timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many workers this pool has started so far (replacements included).
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    /// Runs `scenario` in the worker for `env` (only those visible-device variables set), starting
    /// it if needed; a worker that fails is replaced for the next scenario.
    pub fn run(&self, scenario: &Scenario, env: &Env) -> ScenarioReport {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(slots.entry(env.clone()).or_default())
        };
        let mut worker = slot.lock().unwrap_or_else(PoisonError::into_inner);
        let request = WorkRequest {
            path: scenario.path.clone(),
            name: scenario.name.clone(),
            file: scenario.file_name().to_string(),
        };
        let line = match serde_json::to_string(&request) {
            Ok(line) => line,
            Err(error) => return errored(scenario, format!("encode the request: {error}")),
        };
        // A worker that died while idle cannot take the request: start another once.
        let mut sent = false;
        for _ in 0..2 {
            if worker.is_none() {
                match self.spawn(env) {
                    Ok(started) => *worker = Some(started),
                    Err(error) => {
                        return errored(
                            scenario,
                            format!("start {} {WORKER_COMMAND}: {error}", self.exe.display()),
                        );
                    }
                }
            }
            if let Some(connection) = worker.as_mut() {
                if connection.send(&line).is_ok() {
                    sent = true;
                    break;
                }
                connection.kill();
            }
            *worker = None;
        }
        let Some(connection) = worker.as_mut().filter(|_| sent) else {
            return errored(scenario, "send the scenario to a fresh worker".into());
        };
        let outcome = match connection.receive(self.timeout) {
            Ok(Incoming::Line(line)) => match serde_json::from_str::<WorkAnswer>(&line) {
                Ok(answer) if answer.name == scenario.name => match (answer.report, answer.error) {
                    (Some(report), _) => return report,
                    (None, Some(error)) => return errored(scenario, error),
                    (None, None) => {
                        format!("the worker answered neither a report nor an error: {line}")
                    }
                },
                Ok(answer) => format!(
                    "the worker answered for `{}` instead of `{}`",
                    answer.name, scenario.name
                ),
                Err(error) => format!("the worker's answer is not a report ({error}): {line}"),
            },
            Ok(Incoming::TooLong(start)) => format!("the worker's answer is too long: {start}…"),
            Ok(Incoming::Closed) | Err(Silence::Closed) => {
                let status = connection.exit_status();
                let tail = connection.kill();
                format!(
                    "the worker died mid-scenario ({}): {}",
                    status.map_or_else(|| "no exit status".to_string(), |s| s.to_string()),
                    tail_text(&tail)
                )
            }
            Err(Silence::Timeout(waited)) => {
                let tail = connection.kill();
                format!(
                    "the worker did not answer within {} s and was killed: {}",
                    waited.as_secs(),
                    tail_text(&tail)
                )
            }
        };
        // Whatever went wrong, this worker is not trusted again.
        if let Some(mut connection) = worker.take() {
            connection.kill();
        }
        errored(scenario, outcome)
    }

    /// Starts `exe live-worker` with only `env`'s visible-device variables set.
    fn spawn(&self, env: &Env) -> std::io::Result<Connection> {
        let mut command = Command::new(&self.exe);
        command.arg(WORKER_COMMAND);
        for variable in VISIBLE_DEVICE_VARIABLES {
            command.env_remove(variable);
        }
        // The loader refuses every other key, so only the three visible-device variables can be set.
        for (key, value) in env {
            if VISIBLE_DEVICE_VARIABLES.contains(&key.as_str()) {
                command.env(key, value);
            }
        }
        let connection = Connection::spawn(command)?;
        self.started.fetch_add(1, Ordering::SeqCst);
        Ok(connection)
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        let slots = self.slots.get_mut().unwrap_or_else(PoisonError::into_inner);
        for (_, slot) in slots.drain() {
            let worker = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(connection) = worker {
                // Closing stdin ends the worker's loop; it is killed if it lingers.
                connection.close(Duration::from_millis(500));
            }
        }
    }
}

/// The stderr tail as one line for a report (`(empty)` when the worker printed nothing).
fn tail_text(tail: &str) -> String {
    let trimmed = tail.trim();
    if trimmed.is_empty() {
        "stderr was empty".into()
    } else {
        format!("stderr: {}", trimmed.replace('\n', " | "))
    }
}

/// A live worker that could not run the scenario: devsim's failure, never a finding about the code under test.
fn errored(scenario: &Scenario, problem: String) -> ScenarioReport {
    ScenarioReport::errored(
        scenario,
        HarnessFault::new("run the scenario in a live worker", problem),
    )
}

/// The worker's loop (`devsim live-worker`): probes the machine once, then answers each request on
/// `input` with one line on `output` until `input` closes. Files are loaded once each.
pub fn serve(
    catalog: &Catalog,
    input: impl BufRead,
    mut output: impl Write,
) -> std::io::Result<()> {
    let context = LiveContext::detect(None);
    let mut files: HashMap<PathBuf, Result<Vec<Scenario>, String>> = HashMap::new();
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<WorkRequest>(&line) {
            Err(error) => WorkAnswer {
                name: String::new(),
                report: None,
                error: Some(format!("read the request ({error}): {line}")),
            },
            Ok(request) => {
                let loaded = files
                    .entry(request.path.clone())
                    .or_insert_with(|| load_file(&request.path, &request.file, catalog));
                let found = match loaded {
                    Ok(scenarios) => scenarios
                        .iter()
                        .find(|scenario| scenario.name == request.name)
                        .ok_or_else(|| {
                            format!(
                                "find scenario `{}` in {}",
                                request.name,
                                request.path.display()
                            )
                        }),
                    Err(error) => Err(error.clone()),
                };
                match found {
                    Ok(scenario) => WorkAnswer {
                        name: request.name,
                        report: Some(context.run(scenario, catalog)),
                        error: None,
                    },
                    Err(error) => WorkAnswer {
                        name: request.name,
                        report: None,
                        error: Some(error),
                    },
                }
            }
        };
        let text = serde_json::to_string(&answer).map_err(std::io::Error::other)?;
        writeln!(output, "{text}")?;
        output.flush()?;
    }
    Ok(())
}

/// Every scenario of one file, named from `file` (its name as the parent found it), with profiles found as
/// `devsim run FILE` finds them.
fn load_file(path: &Path, file: &str, catalog: &Catalog) -> Result<Vec<Scenario>, String> {
    let paths = [path.to_path_buf()];
    let found = Found {
        path: path.to_path_buf(),
        name: file.to_string(),
    };
    let mut scenarios = Vec::new();
    for (_, loaded) in load_found(&found, catalog, &ProfileSources::for_paths(&paths), None) {
        match loaded {
            Ok(scenario) => scenarios.push(scenario),
            Err(error) => return Err(format!("load {}: {error}", path.display())),
        }
    }
    Ok(scenarios)
}
