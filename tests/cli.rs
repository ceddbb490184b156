//! The `devsim` command line: exit codes, the closing line, JSON output, located errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use devsim::output::{KernelsOutput, Outcome, Place, RunOutput};

fn devsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("devsim runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A scratch scenario root with the shipped host profiles and one scenario file.
fn scratch(name: &str, scenario: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("devsim-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(root.join("hosts")).expect("dir");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/hosts");
    for entry in std::fs::read_dir(shipped).expect("hosts").flatten() {
        std::fs::copy(entry.path(), root.join("hosts").join(entry.file_name())).expect("copy");
    }
    std::fs::write(root.join(format!("{name}.toml")), scenario).expect("write");
    root
}

const WARMUP: &str = r#"format = 1
description = "a warmup on GPU 1 from a GPU-0 context runs on GPU 1"

[host]
profile = "h200x2"

[[step]]
action = "warmup"
kernel = "gptq_marlin"
device = "cuda:1"

[step.expect]
ran_on = 1
current_after = 0
"#;

#[test]
fn run_passes_the_corpus_and_closes_with_the_counts() {
    let output = devsim(&["run"]);
    let text = stdout(&output);
    assert!(output.status.success(), "{text}\n{}", stderr(&output));
    let last = text.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed, 0 skipped"), "{last}");
}

#[test]
fn a_flipped_expectation_fails_the_run_naming_the_scenario_and_the_difference() {
    let root = scratch("flipped", &WARMUP.replace("ran_on = 1", "ran_on = 0"));
    let output = devsim(&["run", root.to_str().expect("utf-8")]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("FAILED  flipped.toml"), "{text}");
    assert!(text.contains("ran_on: expected 0, got 1"), "{text}");
    assert!(
        text.contains("launch(1, gptq_marlin)"),
        "the step's trace is shown: {text}"
    );
    assert!(
        text.lines()
            .last()
            .unwrap_or_default()
            .contains("0 passed, 1 failed, 0 skipped")
    );
    let unflipped = scratch("unflipped", WARMUP);
    assert!(
        devsim(&["run", unflipped.to_str().expect("utf-8")])
            .status
            .success()
    );
}

#[test]
fn a_malformed_scenario_gives_a_located_error_and_a_nonzero_exit() {
    let root = scratch("malformed", &WARMUP.replace("gptq_marlin", "gptq_marln"));
    for command in ["run", "check"] {
        let output = devsim(&[command, root.to_str().expect("utf-8")]);
        assert!(!output.status.success(), "{command}");
        let errors = stderr(&output);
        assert!(
            errors.contains("malformed.toml:9:10"),
            "{command}: {errors}"
        );
        assert!(
            errors.contains("did you mean gptq_marlin?"),
            "{command}: {errors}"
        );
    }
}

#[test]
fn run_writes_json_reports_on_request() {
    let root = scratch("json", WARMUP);
    let output = devsim(&["run", "--format", "json", root.to_str().expect("utf-8")]);
    assert!(output.status.success());
    let run: RunOutput = serde_json::from_slice(&output.stdout).expect("a run document");
    assert_eq!(run.summary.passed, 1);
    assert_eq!(run.scenarios[0].status, Outcome::Passed);
    assert_eq!(
        run.scenarios[0].steps[0].observed.ran_on,
        Some(Place::Ordinal(1))
    );
}

#[test]
fn kernels_lists_the_catalog_as_json_objects() {
    let output = devsim(&["kernels", "--format", "json"]);
    assert!(output.status.success());
    let kernels: KernelsOutput =
        serde_json::from_slice(&output.stdout).expect("a kernels document");
    assert_eq!(kernels.kernels.len(), 46);
    let allspark = kernels
        .kernels
        .iter()
        .find(|k| k.name == "gptq_allspark")
        .expect("allspark");
    assert_eq!(allspark.families, ["cuda", "rocm"]);
    assert_eq!(allspark.extension.as_deref(), Some("allspark"));
}

#[test]
fn hosts_lists_every_shipped_profile() {
    let output = devsim(&["hosts"]);
    let text = stdout(&output);
    assert!(output.status.success());
    for name in [
        "h200 ",
        "h200x2",
        "a100",
        "rtx4090",
        "b200",
        "r9700x2",
        "mi300x",
        "amd_mixed",
        "mixed_vendor",
        "cpu ",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
}

#[test]
fn a_missing_path_is_an_error_not_a_panic() {
    let output = devsim(&["run", "/nonexistent/scenarios"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("error: failed to read"),
        "{}",
        stderr(&output)
    );
}
