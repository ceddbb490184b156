//! The command line as tools see it: exit codes, typed JSON, JUnit, selection, quiet output, no progress
//! bar off a terminal, and `probe --write`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::WARMUP_ON_GPU1;
use devsim::output::{
    CheckOutput, HostsOutput, Outcome, Place, RunOutput, TraceDevice, TraceEntryOutput,
};
use tempfile::TempDir;

fn devsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("CI")
        .output()
        .expect("devsim runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A scratch scenario root (removed on drop) with the shipped host profiles and the given files.
struct Root {
    dir: TempDir,
}

impl Root {
    fn with(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("scratch dir");
        std::fs::create_dir_all(dir.path().join("hosts")).expect("hosts dir");
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/hosts");
        for entry in std::fs::read_dir(shipped).expect("shipped hosts").flatten() {
            std::fs::copy(
                entry.path(),
                dir.path().join("hosts").join(entry.file_name()),
            )
            .expect("copy profile");
        }
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().expect("a folder")).expect("topic dir");
            std::fs::write(path, text).expect("write scenario");
        }
        Self { dir }
    }

    fn path(&self) -> &str {
        self.dir.path().to_str().expect("utf-8 temp path")
    }
}

fn failing() -> String {
    WARMUP_ON_GPU1.replace("ran_on = 1", "ran_on = 0")
}

fn malformed() -> String {
    WARMUP_ON_GPU1.replace("gptq_marlin", "gptq_marln")
}

/// No machine has seven gfx1201 GPUs, so live replay skips this one everywhere.
fn unsatisfiable() -> String {
    WARMUP_ON_GPU1
        .replace("profile = \"h200x2\"", "torch = \"hip\"\ngpus = [\"gfx1201\", \"gfx1201\", \"gfx1201\", \"gfx1201\", \"gfx1201\", \"gfx1201\", \"gfx1201\"]")
        .replace("gptq_marlin", "gptq_torch")
}

#[test]
fn exit_codes_are_0_all_passed_1_scenario_failures_2_load_errors_for_run_and_check() {
    let passing = Root::with(&[("placement/a.toml", WARMUP_ON_GPU1)]);
    let failing_text = failing();
    let failing = Root::with(&[
        ("placement/a.toml", WARMUP_ON_GPU1),
        ("placement/b.toml", &failing_text),
    ]);
    let malformed_text = malformed();
    let malformed = Root::with(&[
        ("placement/b.toml", &failing_text),
        ("placement/c.toml", &malformed_text),
    ]);
    assert_eq!(devsim(&["run", passing.path()]).status.code(), Some(0));
    assert_eq!(devsim(&["check", passing.path()]).status.code(), Some(0));
    assert_eq!(devsim(&["run", failing.path()]).status.code(), Some(1));
    assert_eq!(
        devsim(&["check", failing.path()]).status.code(),
        Some(0),
        "check does not run"
    );
    assert_eq!(
        devsim(&["run", malformed.path()]).status.code(),
        Some(2),
        "a load error outranks a failure"
    );
    assert_eq!(devsim(&["check", malformed.path()]).status.code(), Some(2));
    assert_eq!(
        devsim(&["run", "--no-such-flag"]).status.code(),
        Some(2),
        "usage errors"
    );
}

#[test]
fn the_exit_codes_are_documented_in_help_and_the_readme() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README");
    for command in [&["--help"][..], &["run", "--help"]] {
        let help = stdout(&devsim(command));
        for line in [
            "0  every selected scenario passed",
            "1  at least one scenario failed",
            "2  a file failed to load",
        ] {
            assert!(
                help.contains(line),
                "{command:?} --help lacks {line:?}:\n{help}"
            );
            assert!(readme.contains(line), "README lacks {line:?}");
        }
    }
    // check has codes of its own (tests/integration/cli.rs pins them).
    let check = stdout(&devsim(&["check", "--help"]));
    assert!(check.contains("0  every selected file loaded"), "{check}");
    assert!(
        readme.contains("0  every selected file loaded"),
        "README lacks check's codes"
    );
}

#[test]
fn run_json_is_typed_and_ordinals_are_numbers_everywhere() {
    let root = Root::with(&[("placement/a.toml", WARMUP_ON_GPU1)]);
    let output = devsim(&["run", "--format", "json", root.path()]);
    let run: RunOutput = serde_json::from_slice(&output.stdout).expect("a run document");
    let step = &run.scenarios[0].steps[0];
    assert_eq!(run.scenarios[0].status, Outcome::Passed);
    assert_eq!(run.scenarios[0].tags, ["placement"]);
    assert_eq!(step.observed.ran_on, Some(Place::Gpu(1)));
    assert_eq!(step.observed.current_after, Some(0));
    let launch = step
        .trace
        .iter()
        .find(|e| matches!(e, TraceEntryOutput::Call { call, .. } if call == "launch"))
        .expect("a launch in the trace");
    assert!(
        matches!(
            launch,
            TraceEntryOutput::Call {
                device: Some(TraceDevice::Ordinal(1)),
                ..
            }
        ),
        "{launch:?}"
    );
}

#[test]
fn check_and_hosts_write_typed_json() {
    let malformed_text = malformed();
    let root = Root::with(&[
        ("placement/a.toml", WARMUP_ON_GPU1),
        ("placement/c.toml", &malformed_text),
    ]);
    let check: CheckOutput =
        serde_json::from_slice(&devsim(&["check", "--format", "json", root.path()]).stdout)
            .expect("a check document");
    assert_eq!(check.scenarios.len(), 1);
    assert_eq!(check.load_errors.len(), 1);
    assert_eq!(
        check.load_errors[0].help.as_deref(),
        Some("did you mean gptq_marlin?")
    );
    let hosts: HostsOutput = serde_json::from_slice(&devsim(&["hosts", "--format", "json"]).stdout)
        .expect("a hosts document");
    let h200x2 = hosts
        .hosts
        .iter()
        .find(|h| h.name == "h200x2")
        .expect("h200x2");
    assert_eq!(h200x2.torch, "cuda");
    assert_eq!(h200x2.gpus.len(), 2);
    assert_eq!(h200x2.visible, Some(vec![0, 1]));
}

#[test]
fn hosts_json_resolves_each_profiles_visible_devices_as_the_protocol_sends_them() {
    let root = Root::with(&[
        (
            "hosts/second_only.toml",
            "torch = \"hip\"\ngpus = [\"gfx942\", \"gfx1201\"]\nenv = { HIP_VISIBLE_DEVICES = \"1\" }\n",
        ),
        (
            "hosts/unknown_uuid.toml",
            "torch = \"hip\"\ngpus = [\"gfx942\"]\nenv = { HIP_VISIBLE_DEVICES = \"GPU-nope\" }\n",
        ),
    ]);
    let output = devsim(&["hosts", "--format", "json", root.path()]);
    let hosts: HostsOutput = serde_json::from_slice(&output.stdout).expect("a hosts document");
    let visible = |name: &str| {
        hosts
            .hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("{name} in {hosts:?}"))
            .visible
            .clone()
    };
    assert_eq!(visible("second_only"), Some(vec![1]));
    // torch's rule: the list ends at the first entry that names no GPU, so an unknown UUID hides them all
    assert_eq!(visible("unknown_uuid"), Some(vec![]));
}

#[test]
fn junit_has_one_case_per_scenario_with_skips_and_failures_with_the_diff() {
    let failing_text = failing();
    let skipped_text = unsatisfiable();
    let root = Root::with(&[
        ("placement/a.toml", WARMUP_ON_GPU1),
        ("placement/b.toml", &failing_text),
        ("placement/s.toml", &skipped_text),
    ]);
    let output = devsim(&["run", "--format", "junit", root.path()]);
    let xml = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
    assert!(
        xml.contains("<testcase name=\"placement/b.toml\" classname=\"placement\""),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<failure message=\"step 1 ran_on [policy:target-context]: expected 0, got 1 \
             — simulated (no live run showed it)\""
        ),
        "the message names the failed expectation, its level and its mark: {xml}"
    );
    assert!(
        xml.contains("ran_on [policy:target-context]: expected 0, got 1"),
        "the human diff: {xml}"
    );
    let live = devsim(&[
        "run",
        "--live",
        "--format",
        "junit",
        "--filter",
        "s.toml",
        root.path(),
    ]);
    let xml = stdout(&live);
    assert_eq!(live.status.code(), Some(0), "a skip is no failure: {xml}");
    assert!(xml.contains("<skipped message=\""), "{xml}");
}

#[test]
fn run_selects_by_tag_and_by_name_pattern() {
    let output = devsim(&["run", "--tag", "seed", "--format", "json"]);
    let run: RunOutput = serde_json::from_slice(&output.stdout).expect("a run document");
    assert!(!run.scenarios.is_empty());
    assert!(
        run.scenarios
            .iter()
            .all(|s| s.tags.iter().any(|t| t == "seed"))
    );
    let output = devsim(&["run", "--filter", "placement/*", "--format", "json"]);
    let run: RunOutput = serde_json::from_slice(&output.stdout).expect("a run document");
    assert!(!run.scenarios.is_empty());
    assert!(
        run.scenarios
            .iter()
            .all(|s| s.name.starts_with("placement/"))
    );
    assert_eq!(devsim(&["run", "--filter", "[seed"]).status.code(), Some(2));
}

#[test]
fn quiet_prints_only_failures_and_the_summary_and_no_progress_bar_off_a_terminal() {
    let failing_text = failing();
    let root = Root::with(&[
        ("placement/a.toml", WARMUP_ON_GPU1),
        ("placement/b.toml", &failing_text),
    ]);
    let output = devsim(&["run", "--quiet", root.path()]);
    let text = stdout(&output);
    assert!(!text.contains("ok      placement/a.toml"), "{text}");
    assert!(text.contains("FAILED  placement/b.toml"), "{text}");
    assert!(
        text.trim_end().ends_with("1 passed, 1 failed, 0 skipped"),
        "{text}"
    );
    let noisy = devsim(&["run", root.path()]);
    assert!(stdout(&noisy).contains("ok      placement/a.toml"));
    for stream in [&noisy.stdout, &noisy.stderr] {
        assert!(!stream.contains(&0x1b), "no terminal escapes when piped");
    }
    assert!(
        !devsim::cli::progress::wanted(true, true, true),
        "CI set: plain"
    );
    assert!(
        !devsim::cli::progress::wanted(false, true, false),
        "piped: plain"
    );
    assert!(devsim::cli::progress::wanted(true, true, false));
}

#[test]
fn probe_writes_a_profile_that_loads_and_refuses_to_overwrite_without_force() {
    let root = tempfile::tempdir().expect("scratch dir");
    let root_arg = root.path().to_str().expect("utf-8");
    let written = devsim(&["probe", "--write", "here", "--root", root_arg]);
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let path: PathBuf = root.path().join("hosts/here.toml");
    let text = std::fs::read_to_string(&path).expect("written");
    assert!(text.starts_with("# probed by devsim "), "{text}");
    assert!(text.contains("# driver version: "), "{text}");
    devsim::scenario::load_profile(&path).expect("the probed profile loads");
    let again = devsim(&["probe", "--write", "here", "--root", root_arg]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("pass --force"));
    assert!(
        devsim(&["probe", "--write", "here", "--force", "--root", root_arg])
            .status
            .success()
    );
    assert_eq!(
        devsim(&["probe", "--write", "../x", "--root", root_arg])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn every_scenario_in_a_topic_folder_carries_the_topic_as_a_tag() {
    let output = devsim(&["check", "--format", "json"]);
    let check: CheckOutput = serde_json::from_slice(&output.stdout).expect("a check document");
    assert!(check.scenarios.len() > 100, "the corpus loads");
    let untagged: Vec<&str> = check
        .scenarios
        .iter()
        .filter_map(|s| {
            let (topic, _) = s.name.split_once('/')?;
            (!s.tags.iter().any(|t| t == topic)).then_some(s.name.as_str())
        })
        .collect();
    assert!(
        untagged.is_empty(),
        "add the topic folder as a tag: {untagged:?}"
    );
}

#[test]
fn a_probed_profile_of_a_simulated_machine_round_trips_through_the_loader() {
    use devsim::runtime::live::RealMachine;
    use devsim::runtime::live::machine::RealGpu;
    let root = tempfile::tempdir().expect("scratch dir");
    for name in ["h200x2", "r9700x2", "cpu"] {
        let host = devsim::scenario::load_profile(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/hosts/{name}.toml")),
        )
        .expect("shipped profile");
        let machine = RealMachine {
            build: host.torch,
            library: (!host.gpus.is_empty()).then(|| "libsimulated.so.1".to_string()),
            fake: false,
            gpus: host
                .gpus
                .iter()
                .map(|gpu| RealGpu {
                    arch: gpu.arch.clone(),
                    name: gpu.name.clone(),
                    smem_optin: gpu.smem_optin,
                    uuid: gpu.uuid.clone(),
                })
                .collect(),
        };
        let text = devsim::cli::probe::profile_text(&machine, std::time::SystemTime::UNIX_EPOCH);
        assert!(text.starts_with("# probed by devsim "), "{text}");
        assert!(text.contains(" on 1970-01-01T00:00:00Z\n"), "{text}");
        let path =
            devsim::cli::probe::write_profile(root.path(), name, &text, false).expect("written");
        let loaded = devsim::scenario::load_profile(&path).expect("the probed profile loads");
        assert_eq!(loaded.torch, host.torch, "{name}");
        assert_eq!(loaded.gpus.len(), host.gpus.len(), "{name}");
        for (probed, shipped) in loaded.gpus.iter().zip(&host.gpus) {
            assert_eq!(
                (&probed.arch, &probed.name, probed.smem_optin),
                (&shipped.arch, &shipped.name, shipped.smem_optin),
                "{name}"
            );
        }
        assert!(
            devsim::cli::probe::write_profile(root.path(), name, &text, false).is_err(),
            "no overwrite without force"
        );
    }
}
