//! The live worker pool (`devsim::replay::worker`) over the CUDA fake: one worker per environment, reset
//! between scenarios, replaced when it dies, killed when it does not answer.

use std::path::{Path, PathBuf};

use devsim::kernel::Catalog;
use devsim::replay::worker::WorkerPool;
use devsim::runner::Status;
use devsim::scenario::{ProfileSources, find_named, load_found};
use tempfile::TempDir;

use crate::common::{Fake, fakes, profile_path, repo};

/// A worker command for the pool: a shell script in `dir` that runs `devsim` over the CUDA fake
/// answering from h200x2, after `prelude` (shell lines run before, e.g. to die or hang once).
fn worker_script(dir: &Path, prelude: &str) -> PathBuf {
    let script = dir.join("worker.sh");
    let body = format!(
        "#!/bin/sh\n{prelude}\nexport LD_LIBRARY_PATH='{}'\nexport DEVSIM_FAKE_HOST='{}'\nexec '{}' \"$@\"\n",
        fakes().folder(Fake::Cuda).display(),
        profile_path("h200x2").display(),
        env!("CARGO_BIN_EXE_devsim"),
    );
    std::fs::write(&script, body).expect("write the worker script");
    let mut permissions = std::fs::metadata(&script).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).expect("chmod");
    script
}

/// The two worker-isolation scenarios (`tests/fixtures/live-worker/`), in order: the first leaves
/// GPU 1 current, the second expects to start on GPU 0.
fn worker_scenarios() -> Vec<devsim::scenario::Scenario> {
    let folder = repo().join("tests/fixtures/live-worker");
    let profiles = ProfileSources::for_paths(std::slice::from_ref(&folder));
    let files = find_named(&[folder]).expect("list the fixtures");
    files
        .iter()
        .flat_map(|file| load_found(file, &Catalog::reference(), &profiles, None))
        .map(|(name, loaded)| loaded.unwrap_or_else(|e| panic!("{name} loads: {e}")))
        .collect()
}

fn status(report: &devsim::runner::ScenarioReport) -> String {
    format!("{:?}: {}", report.status, devsim::report::human(report))
}

/// One worker runs both scenarios (one environment, one worker), and the second still starts on
/// GPU 0 although the first left GPU 1 current on the worker's thread.
pub fn a_worker_resets_the_current_device_between_scenarios() {
    let scratch = TempDir::new().expect("scratch dir");
    let pool = WorkerPool::new(worker_script(scratch.path(), ""));
    let scenarios = worker_scenarios();
    assert_eq!(scenarios.len(), 2);
    for scenario in &scenarios {
        let report = pool.run(scenario, &scenario.host.env);
        assert_eq!(report.status, Status::Passed, "{}", status(&report));
    }
    assert_eq!(pool.started(), 1, "both scenarios share one worker");
}

/// A worker that dies mid-scenario errors that scenario (devsim's failure, not a finding) with its exit
/// status and stderr, and the next scenario runs in a fresh worker.
pub fn a_worker_that_dies_errors_its_scenario_and_is_replaced() {
    let scratch = TempDir::new().expect("scratch dir");
    let marker = scratch.path().join("died-once");
    let prelude = format!(
        "if [ ! -e '{0}' ]; then touch '{0}'; read line; echo 'worker crashed on purpose' >&2; exit 7; fi",
        marker.display()
    );
    let pool = WorkerPool::new(worker_script(scratch.path(), &prelude));
    let scenarios = worker_scenarios();
    let first = pool.run(&scenarios[0], &scenarios[0].host.env);
    assert!(
        matches!(first.status, Status::Errored(_)),
        "{:?}",
        first.status
    );
    let text = devsim::report::human(&first);
    assert!(text.contains("died mid-scenario"), "{text}");
    assert!(text.contains("exit status: 7"), "{text}");
    assert!(text.contains("worker crashed on purpose"), "{text}");
    let second = pool.run(&scenarios[1], &scenarios[1].host.env);
    assert_eq!(second.status, Status::Passed, "{}", status(&second));
    assert_eq!(pool.started(), 2, "the dead worker was replaced");
}

/// A worker that never answers is killed after the timeout and its scenario errors saying so.
pub fn a_silent_worker_times_out() {
    let scratch = TempDir::new().expect("scratch dir");
    let pool = WorkerPool::new(worker_script(scratch.path(), "read line; exec sleep 60"))
        .with_timeout(std::time::Duration::from_secs(1));
    let scenarios = worker_scenarios();
    // Were the timeout not applied, the run would wait out the worker's 60 s sleep and report its death
    // instead of the timeout: the message, not a stopwatch, tells the two apart.
    let report = pool.run(&scenarios[0], &scenarios[0].host.env);
    assert!(
        matches!(report.status, Status::Errored(_)),
        "{:?}",
        report.status
    );
    let text = devsim::report::human(&report);
    assert!(text.contains("did not answer within 1 s"), "{text}");
}
