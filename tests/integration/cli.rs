//! The `devsim` command line: exit codes, the closing line, JSON output, located errors.

use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

use crate::common::WARMUP_ON_GPU1;
use devsim::output::{KernelsOutput, LiveMarkOutput, LiveStatusOutput, Outcome, Place, RunOutput};

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

/// A scratch scenario root (removed on drop) holding one scenario file; profiles are the built-in ones.
fn scratch(name: &str, scenario: &str) -> TempDir {
    let root = tempfile::tempdir().expect("temp dir");
    std::fs::write(root.path().join(format!("{name}.toml")), scenario).expect("write");
    root
}

fn arg(dir: &TempDir) -> &str {
    dir.path().to_str().expect("utf-8 temp path")
}

/// A regular expression matching `dir`'s path literally (the characters `regex::escape` escapes), for an
/// insta filter.
fn literal(dir: &TempDir) -> String {
    let mut escaped = String::new();
    for c in arg(dir).chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[test]
fn run_passes_the_corpus_and_closes_with_the_counts() {
    let output = devsim(&["run"]);
    let text = stdout(&output);
    assert!(output.status.success(), "{text}\n{}", stderr(&output));
    let last = text.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed, 0 skipped"), "{last}");
}

/// `devsim args…` run inside `dir`, so that the paths it prints are relative (`./x.toml`).
fn devsim_in(dir: &TempDir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("devsim runs")
}

#[test]
fn a_flipped_expectation_fails_the_run_naming_the_scenario_and_the_difference() {
    let root = scratch(
        "flipped",
        &WARMUP_ON_GPU1.replace("ran_on = 1", "ran_on = 0"),
    );
    // The human report: the scenario, the expectation with its level and rule, the step's trace, the finding.
    let human = devsim_in(&root, &["run", "."]);
    assert_eq!(human.status.code(), Some(1), "{}", stdout(&human));
    insta::assert_snapshot!("flipped_human", stdout(&human));
    let json = devsim_in(&root, &["run", "--format", "json", "."]);
    assert_eq!(json.status.code(), Some(1));
    let document: RunOutput = serde_json::from_slice(&json.stdout).expect("a run document");
    insta::assert_json_snapshot!("flipped_json", document, {
        ".scenarios[].duration_secs" => "[duration]",
    });
    let junit = devsim_in(&root, &["run", "--format", "junit", "."]);
    assert_eq!(junit.status.code(), Some(1));
    insta::with_settings!({ filters => vec![(r#" time="[^"]*""#, r#" time="[time]""#)] }, {
        insta::assert_snapshot!("flipped_junit", stdout(&junit));
    });
    let unflipped = scratch("unflipped", WARMUP_ON_GPU1);
    assert!(devsim(&["run", arg(&unflipped)]).status.success());
}

#[test]
fn a_malformed_scenario_gives_a_located_error_and_a_nonzero_exit() {
    let root = scratch(
        "malformed",
        &WARMUP_ON_GPU1.replace("gptq_marlin", "gptq_marln"),
    );
    // The located error with its excerpt and suggestion, run inside the scratch folder so that the path it
    // names is relative.
    for command in ["run", "check"] {
        let output = devsim_in(&root, &[command, "."]);
        assert_eq!(output.status.code(), Some(2), "{command}");
        insta::assert_snapshot!(format!("malformed_{command}"), stderr(&output));
    }
    // A file that never ran is counted as a failure and said apart from one.
    let output = devsim(&["run", arg(&root)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stdout(&output).contains(
            "0 passed, 1 failed, 0 skipped (1 of the failures: files that failed to load)"
        ),
        "{}",
        stdout(&output)
    );
}

#[test]
fn kernels_shows_each_rocm_decision_of_the_inventory() {
    let output = devsim(&["kernels"]);
    assert!(output.status.success());
    let table = stdout(&output);
    let inventory = devsim::kernel::audit::Inventory::reference();
    for row in &inventory.rows {
        let line = table
            .lines()
            .find(|line| line.split_whitespace().next() == Some(row.name.as_str()))
            .unwrap_or_else(|| panic!("no line for {}:\n{table}", row.name));
        assert!(
            line.split_whitespace()
                .any(|word| word == row.rocm.as_str()),
            "{}: {line}",
            row.name
        );
    }
}

#[test]
fn run_writes_json_reports_on_request() {
    let root = scratch("json", WARMUP_ON_GPU1);
    let output = devsim(&["run", "--format", "json", arg(&root)]);
    assert!(output.status.success());
    let run: RunOutput = serde_json::from_slice(&output.stdout).expect("a run document");
    assert_eq!(run.summary.passed, 1);
    assert_eq!(run.scenarios[0].status, Outcome::Passed);
    assert_eq!(
        run.scenarios[0].steps[0].observed.ran_on,
        Some(Place::Gpu(1))
    );
}

#[test]
fn kernels_lists_the_catalog_as_json_objects() {
    let output = devsim(&["kernels", "--format", "json"]);
    assert!(output.status.success());
    let kernels: KernelsOutput =
        serde_json::from_slice(&output.stdout).expect("a kernels document");
    // Derived from the catalog, so adding a kernel never edits this test.
    assert_eq!(
        kernels.kernels.len(),
        devsim::kernel::Catalog::reference().names().len()
    );
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

/// Runs devsim on one path and returns (exit code, stderr), failing the test on a panic (exit 101).
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let output = devsim(args);
    let errors = stderr(&output);
    assert_ne!(output.status.code(), Some(101), "panicked: {errors}");
    assert!(!output.status.success(), "{args:?} must fail: {errors}");
    (output.status.code(), errors)
}

#[test]
fn an_empty_folder_is_an_error_unless_allowed() {
    let empty = tempfile::tempdir().expect("temp dir");
    std::fs::write(empty.path().join("notes.txt"), "not a scenario").expect("write");
    for command in ["run", "check"] {
        let (code, errors) = refused(&[command, arg(&empty)]);
        assert_eq!(code, Some(2));
        assert!(errors.contains("no scenario file"), "{errors}");
        assert!(
            devsim(&[command, "--allow-empty", arg(&empty)])
                .status
                .success()
        );
    }
}

#[test]
fn a_link_out_of_the_scenario_root_is_refused_and_never_read() {
    let root = scratch("fine", WARMUP_ON_GPU1);
    for (link, target) in [
        ("environ.toml", "/proc/self/environ"),
        ("zero.toml", "/dev/zero"),
        ("shadow.toml", "/etc/shadow"),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        std::os::unix::fs::symlink(target, dir.path().join(link)).expect("link");
        let (code, errors) = refused(&["check", arg(&dir)]);
        assert_eq!(code, Some(2), "{errors}");
        assert!(
            errors.contains("resolves outside the scenario root"),
            "{errors}"
        );
        assert!(
            !errors.contains("PATH="),
            "the target must not be read: {errors}"
        );
    }
    // A link that stays inside the root is followed, and its target is loaded once.
    std::os::unix::fs::symlink(
        root.path().join("fine.toml"),
        root.path().join("alias.toml"),
    )
    .expect("link");
    check_loads_exactly_one(&root);
}

/// `devsim check` on `root` succeeds and loads exactly one scenario.
fn check_loads_exactly_one(root: &tempfile::TempDir) {
    let output = devsim(&["check", arg(root)]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("1 scenario(s) loaded"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn fifos_devices_and_oversized_files_are_refused_without_hanging() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("pipe.toml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let (_, errors) = refused(&["check", arg(&dir)]);
    assert!(
        errors.contains("it is a fifo, expected a regular file"),
        "{errors}"
    );
    let (_, errors) = refused(&["check", fifo.to_str().expect("utf-8")]);
    assert!(errors.contains("a fifo"), "{errors}");
    let (_, errors) = refused(&["check", "/dev/zero"]);
    assert!(errors.contains("a device"), "{errors}");
    std::fs::remove_file(&fifo).expect("remove fifo");
    let big = dir.path().join("big.toml");
    std::fs::write(&big, "#".repeat(5 * 1024 * 1024)).expect("write");
    let (_, errors) = refused(&["check", arg(&dir)]);
    assert!(
        errors.contains("larger than the 4194304-byte (4 MiB) limit"),
        "{errors}"
    );
    assert!(errors.contains("big.toml"), "{errors}");
}

#[test]
fn link_loops_terminate_and_folders_named_toml_are_folders() {
    let root = scratch("fine", WARMUP_ON_GPU1);
    std::os::unix::fs::symlink(".", root.path().join("again")).expect("link");
    std::os::unix::fs::symlink(".", root.path().join("and_again")).expect("link");
    std::fs::create_dir(root.path().join("folder.toml")).expect("dir");
    check_loads_exactly_one(&root);
}

#[test]
fn an_unreadable_entry_in_a_subfolder_is_reported_under_its_own_path() {
    // A dangling link named like a scenario cannot be read whoever runs the test (permissions would not
    // stop root); the error must name the link, not the folder given on the command line.
    let root = scratch("fine", WARMUP_ON_GPU1);
    let sub = root.path().join("topic");
    std::fs::create_dir(&sub).expect("dir");
    let broken = sub.join("broken.toml");
    std::os::unix::fs::symlink(sub.join("missing"), &broken).expect("link");
    let (_, errors) = refused(&["check", arg(&root)]);
    assert!(
        errors.contains(&format!("read {}:", broken.display())),
        "{errors}"
    );
}

#[test]
fn profiles_come_from_the_folders_given_in_order() {
    let root = scratch("custom", &WARMUP_ON_GPU1.replace("h200x2", "my_box"));
    let (_, errors) = refused(&["check", arg(&root)]);
    assert!(errors.contains("find host profile `my_box`"), "{errors}");
    assert!(
        errors.contains("the built-in profiles"),
        "every place searched is named: {errors}"
    );
    let first = tempfile::tempdir().expect("temp dir");
    let second = tempfile::tempdir().expect("temp dir");
    let profile = "torch = \"cuda\"\ngpus = [\"sm_90\", \"sm_90\"]\n";
    std::fs::write(first.path().join("my_box.toml"), profile).expect("write");
    let output = devsim(&["check", "--hosts", arg(&first), arg(&root)]);
    assert!(output.status.success(), "{}", stderr(&output));
    std::fs::write(second.path().join("my_box.toml"), profile).expect("write");
    let (_, errors) = refused(&[
        "check",
        "--hosts",
        arg(&first),
        "--hosts",
        arg(&second),
        arg(&root),
    ]);
    // Both definitions named, each scratch folder written as its role.
    let mut settings = insta::Settings::clone_current();
    for (dir, role) in [
        (&first, "[first]"),
        (&second, "[second]"),
        (&root, "[root]"),
    ] {
        settings.add_filter(&literal(dir), role);
    }
    settings.bind(|| insta::assert_snapshot!("profile_defined_twice", errors));
    let (_, errors) = refused(&["check", "--hosts", "/nonexistent/hosts", arg(&root)]);
    assert!(
        errors.contains("use profile folder /nonexistent/hosts: it does not exist"),
        "{errors}"
    );
    let listed = devsim(&["hosts", "--hosts", arg(&first)]);
    assert!(stdout(&listed).contains("my_box"), "{}", stdout(&listed));
}

#[test]
fn an_ancestors_hosts_folder_is_never_consulted() {
    let outer = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(outer.path().join("hosts")).expect("dir");
    std::fs::write(outer.path().join("hosts/sneaky.toml"), "torch = \"cpu\"\n").expect("write");
    let inner = outer.path().join("topic");
    std::fs::create_dir(&inner).expect("dir");
    std::fs::write(
        inner.join("x.toml"),
        WARMUP_ON_GPU1.replace("h200x2", "sneaky"),
    )
    .expect("write");
    let (_, errors) = refused(&["check", inner.to_str().expect("utf-8")]);
    assert!(errors.contains("find host profile `sneaky`"), "{errors}");
}

#[test]
fn errors_far_to_the_right_and_a_closed_stderr_do_not_panic() {
    let padding = " ".repeat(70_000);
    let scenario = format!(
        "format = 1\ndescription = \"x\"\n[host]\nprofile = \"h200\"\n[[step]]\naction = \"discover\"\n[step.expect]\nvendor ={padding}\"nvidiaa\"\n"
    );
    let root = scratch("far", &scenario);
    let (code, errors) = refused(&["check", arg(&root)]);
    assert_eq!(code, Some(2), "{errors}");
    let column = "vendor =".len() + padding.len() + 1;
    assert!(errors.contains(&format!("far.toml:8:{column}")), "{errors}");
    assert!(
        errors.len() < 4_000,
        "the excerpt is clipped: {} bytes",
        errors.len()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(["check", arg(&root)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("devsim runs");
    drop(child.stderr.take());
    let status = child.wait().expect("devsim exits");
    assert_eq!(status.code(), Some(2), "no panic on a closed stderr");
}

#[test]
fn a_tag_or_filter_that_selects_nothing_fails_with_a_suggestion() {
    let typo = devsim(&["run", "--tag", "sed"]);
    assert_eq!(typo.status.code(), Some(2), "{}", stderr(&typo));
    assert!(
        stderr(&typo).contains("--tag sed matched none of the")
            && stderr(&typo).contains("did you mean `seed`?"),
        "{}",
        stderr(&typo)
    );
    let nothing = devsim(&["run", "--filter", "no/such/scenario"]);
    assert_eq!(nothing.status.code(), Some(2), "{}", stderr(&nothing));
    let allowed = devsim(&["run", "--filter", "no/such/scenario", "--allow-empty"]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
}

#[test]
fn each_subcommand_documents_its_options_and_its_own_exit_codes() {
    // The whole help of the commands users run, so a changed option or exit code shows in review.
    for command in ["run", "check", "coverage", "bench"] {
        let help = devsim(&[command, "--help"]);
        assert!(help.status.success(), "{command}");
        insta::assert_snapshot!(format!("help_{command}"), stdout(&help));
    }
    let check = stdout(&devsim(&["check", "--help"]));
    assert!(
        !check.contains("too few ran live"),
        "run's codes in check's help: {check}"
    );
}

#[test]
fn require_live_counts_gpu_scenarios_only() {
    // A CPU-only scenario runs live on any machine, so it never proves a GPU driver is there.
    let output = devsim(&[
        "run",
        "--live",
        "--require-live",
        "1",
        "--filter",
        "live/cpu_moves_and_warmups.toml",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("run 1 GPU scenario(s) live: only 0 ran"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn given_no_path_outside_a_project_run_and_check_say_where_they_looked() {
    let elsewhere = tempfile::tempdir().expect("temp dir");
    for command in ["run", "check"] {
        let output = Command::new(env!("CARGO_BIN_EXE_devsim"))
            .arg(command)
            .current_dir(elsewhere.path())
            .output()
            .expect("devsim runs");
        assert_eq!(output.status.code(), Some(2), "{command}");
        let said = stderr(&output);
        assert!(
            said.contains("given no path, devsim reads ./scenarios")
                && said.contains("pass a folder or file (`devsim run path/to/scenarios`)"),
            "{command}: {said}"
        );
    }
}

#[test]
fn completions_and_the_man_page_come_from_the_command_line_itself() {
    let script = devsim(&["completions", "bash"]);
    assert!(script.status.success());
    let script = stdout(&script);
    assert!(script.contains("_devsim()"), "{script}");
    for subcommand in ["run", "check", "probe", "kernels", "completions"] {
        assert!(script.contains(subcommand), "bash completes {subcommand}");
    }
    let page = devsim(&["man"]);
    assert!(page.status.success());
    let page = stdout(&page);
    assert!(page.contains(".TH devsim 1"), "{page}");
    assert!(
        page.contains("devsim\\-run(1)") || page.contains("run"),
        "{page}"
    );
}

#[test]
fn colour_is_asked_for_and_never_reaches_a_pipe_by_default() {
    let root = scratch("colour", WARMUP_ON_GPU1);
    let coloured = stdout(&devsim(&["run", "--color", "always", arg(&root)]));
    assert!(coloured.contains("\u{1b}[32mok\u{1b}[0m"), "{coloured:?}");
    for args in [
        vec!["run", arg(&root)],
        vec!["run", "--color", "never", arg(&root)],
    ] {
        let plain = stdout(&devsim(&args));
        assert!(
            !plain.contains('\u{1b}') && plain.contains("ok "),
            "{args:?}: {plain:?}"
        );
    }
    let json = stdout(&devsim(&[
        "run",
        "--color",
        "always",
        "--format",
        "json",
        arg(&root),
    ]));
    assert!(!json.contains('\u{1b}'), "JSON is never styled");
}

/// The flipped scenario judged with each live record of `tests/fixtures/live-records/`.
fn flipped_with_record(record: &str, format: &str) -> (TempDir, Output) {
    let root = scratch(
        "flipped",
        &WARMUP_ON_GPU1.replace("ran_on = 1", "ran_on = 0"),
    );
    let path = format!(
        "{}/tests/fixtures/live-records/{record}",
        env!("CARGO_MANIFEST_DIR")
    );
    let output = devsim_in(
        &root,
        &["run", "--format", format, "--live-record", &path, "."],
    );
    (root, output)
}

#[test]
fn a_live_record_marks_a_finding_confirmed_only_where_it_failed_live_with_the_same_signature() {
    let simulated = LiveMarkOutput {
        status: LiveStatusOutput::Simulated,
        devices: vec![],
        date: None,
        fake_driver: false,
    };
    // (the record, the mark of the one finding in JSON, the human heading's mark).
    let cases = [
        (
            "confirms.toml",
            LiveMarkOutput {
                status: LiveStatusOutput::Confirmed,
                devices: vec!["NVIDIA H100 80GB HBM3".into()],
                date: Some("2026-12-06".into()),
                fake_driver: false,
            },
            "— confirmed on a real GPU (NVIDIA H100 80GB HBM3, 2026-12-06)",
        ),
        (
            "another_signature.toml",
            simulated.clone(),
            "— simulated (no live run showed it)",
        ),
        (
            "passed_live.toml",
            simulated.clone(),
            "— simulated (no live run showed it)",
        ),
        // the same failure, but recorded on another corpus or by a format 1 record: stale, it confirms nothing
        (
            "stale_corpus.toml",
            simulated.clone(),
            "— simulated (no live run showed it)",
        ),
        (
            "stale_format1.toml",
            simulated,
            "— simulated (no live run showed it)",
        ),
    ];
    for (record, json, human) in cases {
        let (_root, output) = flipped_with_record(record, "json");
        assert_eq!(
            output.status.code(),
            Some(1),
            "{record}: {}",
            stderr(&output)
        );
        let document: RunOutput = serde_json::from_slice(&output.stdout).expect("a run document");
        let marks: Vec<Option<LiveMarkOutput>> =
            document.findings.into_iter().map(|f| f.live).collect();
        assert_eq!(marks, [Some(json)], "{record}");
        let (_root, output) = flipped_with_record(record, "human");
        let text = stdout(&output);
        let heading = text
            .lines()
            .find(|line| line.trim_start().starts_with("finding 1:"))
            .unwrap_or_default();
        assert!(heading.ends_with(human), "{record}: {text}");
        let stale = stderr(&output).contains("is stale and confirms nothing");
        assert_eq!(
            stale,
            record.starts_with("stale"),
            "{record}: {}",
            stderr(&output)
        );
        let (_root, output) = flipped_with_record(record, "junit");
        assert!(
            stdout(&output).contains(human),
            "{record}: {}",
            stdout(&output)
        );
    }
}

#[test]
fn a_live_record_that_cannot_be_used_is_refused_naming_the_file_and_line() {
    // (the record, what the error says after the file's path).
    let cases = [
        (
            "other_subject.toml",
            ": it records subject `gptqmodel`, this run judges `reference`",
        ),
        (
            "malformed.toml",
            ":10: invalid type: string \"one\", expected a sequence",
        ),
    ];
    for (record, says) in cases {
        let (_root, output) = flipped_with_record(record, "human");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{record}: {}",
            stdout(&output)
        );
        let said = stderr(&output);
        assert!(
            said.contains(&format!("live-records/{record}{says}")),
            "{record}: {said}"
        );
    }
}

#[test]
fn a_live_run_writes_a_record_of_what_ran_live_on_the_date_asked() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let path = scratch.path().join("live.toml");
    let output = Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args([
            "run",
            "--live",
            "--filter",
            "live/cpu_moves_and_warmups.toml",
        ])
        .arg("--write-live-record")
        .arg(&path)
        .env("DEVSIM_LIVE_RECORD_DATE", "2026-12-06")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("devsim runs");
    assert!(output.status.success(), "{}", stderr(&output));
    let record = devsim::live_record::LiveRecord::read(&path).expect("a live record");
    assert_eq!(
        (record.format, record.subject.as_str(), record.date.as_str()),
        (devsim::live_record::FORMAT, "reference", "2026-12-06")
    );
    assert_eq!(
        (record.devsim.as_deref(), record.files.len()),
        (Some(env!("CARGO_PKG_VERSION")), 1),
        "it says what it was taken on"
    );
    assert!(record.corpus.is_some());
    let counts = record.counts.expect("counts");
    assert_eq!((counts.passed, counts.failed), (1, 0), "{counts:?}");
    let outcomes: Vec<(&str, devsim::live_record::LiveStatus)> = record
        .scenarios
        .iter()
        .map(|(name, live)| (name.as_str(), live.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [(
            "live/cpu_moves_and_warmups.toml",
            devsim::live_record::LiveStatus::Passed
        )]
    );
    let bad_date = Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args([
            "run",
            "--live",
            "--filter",
            "live/cpu_moves_and_warmups.toml",
        ])
        .env("DEVSIM_LIVE_RECORD_DATE", "yesterday")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("devsim runs");
    assert_eq!(bad_date.status.code(), Some(2));
    assert!(
        stderr(&bad_date).contains("`yesterday` is not a date (YYYY-MM-DD)"),
        "{}",
        stderr(&bad_date)
    );
}
