//! `devsim run --live --subject` through the CUDA fake, with this test binary as the scripted fixture
//! subject (`tests/subject_fixture`, started in a mode by `DEVSIM_FIXTURE_SUBJECT`), over the scenarios of
//! `tests/fixtures/live-subject/`: one a one-GPU CUDA fake satisfies, one with a repeated step (sent live,
//! never skipped), and four it cannot run live: a HIP build, a CPU build, two GPUs, and a visible-device mask
//! (the subject process runs under devsim's own environment).

use std::path::PathBuf;
use std::process::Output;

use devsim_metadata::output::{Outcome, RunOutput};
use tempfile::TempDir;

use crate::common::{
    Fake, arg, devsim, printed, profile_path, repo, reports, snapshot_settings, text,
};
use crate::subject_fixture;

/// The scenarios every trial runs.
fn scenarios() -> PathBuf {
    repo().join("tests/fixtures/live-subject")
}

/// How many scenarios [`scenarios`] holds.
const SCENARIOS: usize = 6;

/// A scratch folder holding one subject file per mode (`<mode>.toml`) starting this test binary as the
/// fixture subject in that mode.
fn subjects(modes: &[&str]) -> TempDir {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let exe = std::env::current_exe().expect("this test binary");
    for mode in modes {
        let subject = format!(
            "name = \"fixture\"\ncommand = [{exe:?}]\nstep_timeout_s = 5\nstart_timeout_s = 5\n\
             env = {{ {} = \"{mode}\" }}\n",
            subject_fixture::MODE
        );
        std::fs::write(scratch.path().join(format!("{mode}.toml")), subject).expect("write");
    }
    scratch
}

/// `devsim run --live --subject <mode>.toml <extra…>` over [`scenarios`], through the CUDA fake answering
/// from the shipped `profile`.
fn devsim_run(subjects: &TempDir, mode: &str, profile: &str, extra: &[&str]) -> Output {
    let subject = subjects.path().join(format!("{mode}.toml"));
    let scenarios = scenarios();
    let mut args = vec!["run", "--live", "--subject", arg(&subject)];
    args.extend_from_slice(extra);
    args.push(arg(&scenarios));
    devsim(Fake::Cuda, &profile_path(profile), &[], &args)
}

/// The run's JSON document, checked to exit with `code` and compared with the snapshot `name` (durations
/// and paths redacted).
fn snapshot_json(
    subjects: &TempDir,
    mode: &str,
    profile: &str,
    code: i32,
    name: &str,
) -> RunOutput {
    let output = devsim_run(subjects, mode, profile, &["--format", "json"]);
    let (run, _) = reports(&output);
    assert_eq!(output.status.code(), Some(code), "{}", printed(&output));
    let mut settings = snapshot_settings(Some(subjects.path()));
    // A live run marks its own findings confirmed on the day it runs.
    settings.add_redaction(".findings[].live.date", "[today]");
    settings.bind(|| insta::assert_json_snapshot!(name, run));
    run
}

pub fn runs_what_the_fake_machine_satisfies_and_skips_the_rest() {
    let subjects = subjects(&["live"]);
    // Each scenario's outcome and reason; the machine named a fake, with its one GPU.
    let document = snapshot_json(&subjects, "live", "h200", 0, "live_subject_on_h200");
    assert_eq!(document.scenarios.len(), SCENARIOS);
    assert_eq!(document.summary.passed, 2, "{:?}", document.summary);

    // The human header: the subject, then the machine, a fake named as one first.
    let output = devsim_run(&subjects, "live", "h200", &[]);
    let stdout = text(&output.stdout);
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some("subject: fixture 0.0.1 (process)"),
        "{stdout}"
    );
    assert!(
        lines
            .next()
            .is_some_and(|line| line.starts_with("live: FAKE DRIVER")),
        "{stdout}"
    );
    assert!(
        stdout
            .trim_end()
            .ends_with("subject fixture: 2 passed, 0 failed, 4 skipped"),
        "{stdout}"
    );
    assert_eq!(output.status.code(), Some(0), "{stdout}");

    // JUnit says it too: in the suite's name, its properties and every case's output.
    let output = devsim_run(&subjects, "live", "h200", &["--format", "junit"]);
    let junit = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{junit}");
    assert!(
        junit.contains(r#"name="devsim scenarios (live through a FAKE DRIVER)""#)
            && junit.contains(r#"<property name="driver" value="fake"/>"#)
            && junit.contains(r#"<property name="mode" value="live"/>"#)
            && junit
                .matches("this result proves nothing about a GPU")
                .count()
                == SCENARIOS,
        "{junit}"
    );

    // A machine with more GPUs than a scenario cannot narrow the one subject process: the one-GPU
    // scenarios are skipped, the two-GPU one passes.
    let document = snapshot_json(&subjects, "live", "h200x2", 0, "live_subject_on_h200x2");
    assert_eq!(document.summary.passed, 1, "{:?}", document.summary);
}

pub fn that_cannot_reach_the_machine_fails() {
    let subjects = subjects(&["live-unreachable"]);
    // Each GPU scenario the machine can run fails (never a skip), saying the subject answered
    // `unsupported`; what the machine cannot run is still skipped, never sent to the subject.
    let document = snapshot_json(
        &subjects,
        "live-unreachable",
        "h200",
        1,
        "live_subject_unreachable",
    );
    let failed: Vec<&str> = document
        .scenarios
        .iter()
        .filter(|report| report.status == Outcome::Failed)
        .map(|report| report.name.as_str())
        .collect();
    assert_eq!(failed, ["cuda_h200.toml", "repeated_on_h200.toml"]);
    assert_eq!(document.summary.passed, 0, "{:?}", document.summary);

    let output = devsim_run(&subjects, "live-unreachable", "h200", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", printed(&output));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("FAILED  cuda_h200.toml")
            && stdout.contains("answered `unsupported`: torch sees no GPU"),
        "{stdout}"
    );
    assert!(
        text(&output.stderr).contains("error: failed to pass 2 scenario(s)"),
        "{}",
        text(&output.stderr)
    );
}

pub fn require_live_counts_only_what_ran_and_never_a_fake_unasked() {
    let subjects = subjects(&["live"]);
    // (arguments, exit code, what it says): a fake never counts unasked; through --allow-fake the two GPU
    // scenarios that ran count, the four skipped do not.
    let cases: [(&[&str], i32, &str); 3] = [
        (
            &["--require-live", "1"],
            1,
            "the driver is one of devsim's fakes",
        ),
        (&["--require-live", "2", "--allow-fake"], 0, ""),
        (
            &["--require-live", "3", "--allow-fake"],
            1,
            "run 3 GPU scenario(s) live: only 2 ran, the rest were skipped",
        ),
    ];
    for (extra, code, says) in cases {
        let output = devsim_run(&subjects, "live", "h200", extra);
        let shown = printed(&output);
        assert_eq!(output.status.code(), Some(code), "{extra:?}: {shown}");
        assert!(shown.contains(says), "{extra:?}: {shown}");
    }
}

pub fn without_live_in_its_handshake_is_refused() {
    let subjects = subjects(&["good"]);
    let output = devsim_run(&subjects, "good", "h200", &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "error: failed to replay subject `fixture` live: its handshake does not say `live`"
        ),
        "{stderr}"
    );
    assert!(
        text(&output.stdout).is_empty(),
        "nothing runs: {}",
        text(&output.stdout)
    );
}
