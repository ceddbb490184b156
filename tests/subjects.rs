//! Out-of-process subjects, judged through the protocol: one test per case of
//! `tests/fixtures/subjects/cases.toml`, each starting this test binary as a scripted subject
//! (`tests/subject_fixture`) in one mode, good or deliberately broken.

mod subject_fixture;

use std::path::{Path, PathBuf};
use std::time::Duration;

use devsim::Catalog;
use devsim::scenario::{Status, load_scenario};
use devsim::subject::{ProcessSubject, Subject, SubjectSpec};
use libtest_mimic::{Arguments, Failed, Trial};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cases {
    case: Vec<Case>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    mode: Option<String>,
    command: Option<String>,
    #[serde(default)]
    runs: Vec<Vec<String>>,
    #[serde(default)]
    start_error: Vec<String>,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/subjects")
}

/// The fixture subject in `mode`, with test-sized timeouts; `state` is shared by its processes.
fn fixture_spec(mode: &str, state: &Path) -> Result<SubjectSpec, Failed> {
    let exe = std::env::current_exe().map_err(|e| Failed::from(e.to_string()))?;
    let mut spec = SubjectSpec::from_command(vec![exe.display().to_string()])
        .map_err(|e| Failed::from(e.to_string()))?;
    spec.name = "fixture".into();
    spec.env.insert(subject_fixture::MODE.into(), mode.into());
    spec.env
        .insert(subject_fixture::STATE.into(), state.display().to_string());
    spec.step_timeout = Duration::from_secs(1);
    spec.start_timeout = Duration::from_secs(2);
    Ok(spec)
}

fn contains_all(text: &str, fragments: &[String]) -> Result<(), String> {
    for fragment in fragments {
        if !text.contains(fragment.as_str()) {
            return Err(format!("expected {fragment:?} in:\n{text}"));
        }
    }
    Ok(())
}

fn run_case(case: Case) -> Result<(), Failed> {
    let state = tempfile::tempdir().map_err(|e| Failed::from(e.to_string()))?;
    let spec = match (&case.mode, &case.command) {
        (Some(mode), None) => fixture_spec(mode, state.path())?,
        (None, Some(command)) => {
            SubjectSpec::parse(command).map_err(|e| Failed::from(e.to_string()))?
        }
        _ => return Err("a case names either a mode or a command".into()),
    };
    let started = ProcessSubject::start(spec);
    if !case.start_error.is_empty() {
        return match started {
            Ok(subject) => {
                Err(format!("expected a start error, but {} started", subject.describe()).into())
            }
            Err(error) => contains_all(&error.to_string(), &case.start_error).map_err(Failed::from),
        };
    }
    let mut subject = started.map_err(|e| Failed::from(format!("start: {e}")))?;
    let catalog = Catalog::reference();
    for run in &case.runs {
        let [file, status, fragments @ ..] = run.as_slice() else {
            return Err(format!("a run needs a file and a status: {run:?}").into());
        };
        let scenario = load_scenario(&fixtures().join("scenarios").join(file), &catalog)
            .map_err(|e| Failed::from(e.to_string()))?;
        let report = subject.run(&scenario);
        if report.subject != "fixture" {
            return Err(format!("{file}: the report names subject {:?}", report.subject).into());
        }
        let (actual, reason) = match &report.status {
            Status::Passed => ("passed", String::new()),
            Status::Skipped(reason) => ("skipped", reason.clone()),
            Status::Failed => ("failed", devsim::report::human(&report)),
        };
        if actual != status {
            return Err(format!(
                "{file}: expected {status}, got {actual}:\n{}",
                devsim::report::human(&report)
            )
            .into());
        }
        contains_all(&reason, fragments).map_err(|e| Failed::from(format!("{file}: {e}")))?;
    }
    Ok(())
}

fn main() {
    if let Ok(mode) = std::env::var(subject_fixture::MODE) {
        std::process::exit(subject_fixture::serve(&mode));
    }
    let args = Arguments::from_args();
    let text = std::fs::read_to_string(fixtures().join("cases.toml")).unwrap_or_else(|error| {
        eprintln!("error: failed to read cases.toml: {error}");
        std::process::exit(2);
    });
    let cases: Cases = toml::from_str(&text).unwrap_or_else(|error| {
        eprintln!("error: failed to parse cases.toml: {error}");
        std::process::exit(2);
    });
    let trials = cases
        .case
        .into_iter()
        .map(|case| Trial::test(case.name.clone(), move || run_case(case)))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
