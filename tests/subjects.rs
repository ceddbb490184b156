//! Out-of-process subjects, judged through the protocol: one test per case of
//! `tests/fixtures/subjects/cases.toml`, each starting this test binary as a scripted subject
//! (`tests/subject_fixture`) in one mode, good or deliberately broken.

mod subject_fixture;

use std::path::{Path, PathBuf};
use std::time::Duration;

use devsim::Catalog;
use devsim::runner::Status;
use devsim::scenario::load_scenario;
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
            Status::Skipped(skip) => ("skipped", skip.to_string()),
            Status::NotApplicable(reason) => ("not applicable", reason.clone()),
            Status::SetAside(reason) => ("set aside", reason.clone()),
            Status::Failed => ("failed", devsim::report::human(&report)),
            Status::Errored(fault) => ("errored", fault.to_string()),
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

/// The committed JSON Schema is the one generated from devsim's protocol types.
fn committed_schema_is_current() -> Result<(), Failed> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema/subject-protocol.schema.json");
    let committed = std::fs::read_to_string(&path).map_err(|e| Failed::from(e.to_string()))?;
    let generated = serde_json::to_string_pretty(&devsim::subject::protocol::schema())
        .map_err(|e| Failed::from(e.to_string()))?;
    if committed.trim_end() != generated.trim_end() {
        return Err("docs/schema/subject-protocol.schema.json is stale: run \
             `cargo run -- schema subject-protocol > docs/schema/subject-protocol.schema.json`"
            .into());
    }
    Ok(())
}

/// Runs the `devsim` binary in the repository root: its exit code, stdout and stderr.
fn devsim_code(args: &[&str]) -> Result<(Option<i32>, String, String), Failed> {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .map_err(|e| Failed::from(e.to_string()))?;
    Ok((
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// Runs the `devsim` binary in the repository root: whether it succeeded, stdout and stderr.
fn devsim(args: &[&str]) -> Result<(bool, String, String), Failed> {
    let (code, out, err) = devsim_code(args)?;
    Ok((code == Some(0), out, err))
}

/// A subject file in `dir` that starts this binary as the fixture subject in `mode`.
fn subject_file(dir: &Path, mode: &str) -> Result<String, Failed> {
    let exe = std::env::current_exe().map_err(|e| Failed::from(e.to_string()))?;
    let path = dir.join(format!("{mode}.toml"));
    let text = format!(
        "name = \"fixture\"\ncommand = [{exe:?}]\nstep_timeout_s = 5\nstart_timeout_s = 5\n\
         env = {{ {} = \"{mode}\", {} = {:?} }}\n",
        subject_fixture::MODE,
        subject_fixture::STATE,
        dir.display().to_string()
    );
    std::fs::write(&path, text).map_err(|e| Failed::from(e.to_string()))?;
    Ok(path.display().to_string())
}

fn expect(condition: bool, what: &str, out: &str, err: &str) -> Result<(), Failed> {
    if condition {
        Ok(())
    } else {
        Err(format!("{what}\nstdout:\n{out}\nstderr:\n{err}").into())
    }
}

/// `devsim run --subject FILE`, then a baseline written, matched, and broken in both directions.
fn cli_run_and_baseline() -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| Failed::from(e.to_string()))?;
    let scenarios = fixtures().join("scenarios").display().to_string();
    let good = subject_file(dir.path(), "good")?;
    let (ok, out, err) = devsim(&["run", &scenarios, "--subject", &good])?;
    expect(
        !ok,
        "the fixture corpus has a wrong expectation and a claim the subject cannot back, so the run fails",
        &out,
        &err,
    )?;
    expect(
        out.starts_with("subject: fixture 0.0.1 (process"),
        "the first line names the subject",
        &out,
        &err,
    )?;
    expect(
        out.trim_end().ends_with(
            "subject fixture: 2 passed, 2 failed, 1 skipped, 3 not applicable, 1 set aside",
        ),
        "the closing line",
        &out,
        &err,
    )?;

    let baseline = dir.path().join("baseline.toml").display().to_string();
    let (ok, out, err) = devsim(&[
        "run",
        &scenarios,
        "--subject",
        &good,
        "--write-baseline",
        &baseline,
    ])?;
    expect(
        ok,
        "writing a baseline records failures without failing",
        &out,
        &err,
    )?;
    let (ok, out, err) = devsim(&[
        "run",
        &scenarios,
        "--subject",
        &good,
        "--baseline",
        &baseline,
    ])?;
    expect(ok, "the same outcomes match the baseline", &out, &err)?;
    let (ok, out, err) = devsim(&[
        "run",
        &scenarios,
        "--subject",
        &good,
        "--filter",
        "spellings",
        "--baseline",
        &baseline,
    ])?;
    expect(
        ok && !out.contains("baseline changed"),
        "a filtered run compares only the scenarios it ran",
        &out,
        &err,
    )?;
    let text = std::fs::read_to_string(&baseline).map_err(|e| Failed::from(e.to_string()))?;
    let other = dir.path().join("other.toml");
    std::fs::write(
        &other,
        text.replacen("subject = \"fixture\"", "subject = \"reference\"", 1),
    )
    .map_err(|e| Failed::from(e.to_string()))?;
    let other = other.display().to_string();
    let (ok, out, err) = devsim(&["run", &scenarios, "--subject", &good, "--baseline", &other])?;
    expect(
        !ok && err.contains("it records subject `reference`, this run judges `fixture`"),
        "a baseline of another subject is refused",
        &out,
        &err,
    )?;

    // The wrong subject regresses one scenario and fixes none: a difference.
    let wrong = subject_file(dir.path(), "wrong")?;
    let (ok, out, err) = devsim(&[
        "run",
        &scenarios,
        "--subject",
        &wrong,
        "--baseline",
        &baseline,
    ])?;
    expect(!ok && out.contains("baseline changed: spellings_on_hip.toml: baseline passed, now failed: step 1 family [policy:normalize-aliases]: expected rocm, got cuda"),
        "a regression is a difference", &out, &err)?;
    // Edit the baseline to claim a failure that now passes: a fix is a difference too.
    let text = std::fs::read_to_string(&baseline).map_err(|e| Failed::from(e.to_string()))?;
    let edited = text.replacen(
        "\"spellings_on_hip.toml\" = \"passed\"",
        "\"spellings_on_hip.toml\" = \"failed: step 1 ok\"",
        1,
    );
    expect(
        edited != text,
        "the baseline lists spellings_on_hip.toml as passed",
        &text,
        "",
    )?;
    std::fs::write(&baseline, edited).map_err(|e| Failed::from(e.to_string()))?;
    let (ok, out, err) = devsim(&[
        "run",
        &scenarios,
        "--subject",
        &good,
        "--baseline",
        &baseline,
    ])?;
    expect(
        !ok && out.contains(
            "baseline changed: spellings_on_hip.toml: baseline failed: step 1 ok, now passed",
        ) && err.contains("1 scenario(s) changed outcome"),
        "a fix is a difference",
        &out,
        &err,
    )?;
    Ok(())
}

/// `devsim check --subject`, `--live --subject`, a bad command, and `devsim bench --subject`.
fn cli_check_live_and_bench() -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| Failed::from(e.to_string()))?;
    let good = subject_file(dir.path(), "good")?;
    let (ok, out, err) = devsim(&["check", "--subject", &good])?;
    expect(
        ok && out.contains("subject: fixture 0.0.1 (process")
            && out.contains("actions: normalize, resolve, validate"),
        "check prints the handshake",
        &out,
        &err,
    )?;
    let version = subject_file(dir.path(), "wrong-version")?;
    let (ok, out, err) = devsim(&["check", "--subject", &version])?;
    expect(
        !ok && err.contains("error: failed to speak protocol 3 with subject `fixture`"),
        "a wrong version aborts naming the subject",
        &out,
        &err,
    )?;
    // A subject whose handshake does not say `live` is refused before any scenario, whatever the machine.
    let (code, out, err) = devsim_code(&["run", "--live", "--subject", &good])?;
    expect(
        code == Some(2)
            && err.contains(
                "error: failed to replay subject `fixture` live: its handshake does not say `live`",
            )
            && out.is_empty(),
        "--live --subject with a subject that cannot run live exits 2 naming it, running nothing",
        &out,
        &err,
    )?;
    let (ok, out, err) = devsim(&["run", "--subject", "/nonexistent/subject"])?;
    expect(
        !ok && err.contains("error: failed to start subject `subject` (`/nonexistent/subject`)"),
        "a missing command aborts",
        &out,
        &err,
    )?;
    let root = fixtures().join("scenarios").display().to_string();
    let (ok, out, err) = devsim(&[
        "bench",
        &root,
        "--subject",
        &good,
        "--subject",
        &good,
        "--rounds",
        "1",
    ])?;
    let row = |label: &str| {
        out.lines()
            .find(|line| line.starts_with(label))
            .map(|line| line[label.len()..].split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    expect(
        ok && out.contains("step median (us)")
            && out.contains("corpus, start included (ms)")
            && row("conformance (scenarios)") == ["reference", "fixture", "fixture"]
            && row("passed") == ["8", "2", "2"]
            && row("failed") == ["1", "2", "2"]
            && row("set aside") == ["0", "1", "1"]
            && row("skipped") == ["0", "1", "1"]
            && row("not applicable") == ["0", "3", "3"]
            && row("distinct findings") == ["1", "2", "2"]
            && row("  policy:normalize-aliases") == ["1", "1", "1"]
            && out.contains("fixture: fixture 0.0.1 (process"),
        "bench compares the reference and each subject: timings, outcomes, findings by rule",
        &out,
        &err,
    )?;
    Ok(())
}

/// A subject that breaks down the same way in every scenario is stopped after three: one finding, the rest
/// skipped naming the breakdown, and the run ends instead of waiting out every scenario.
fn identical_breakdowns_stop_the_subject() -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| Failed::from(e.to_string()))?;
    let exe = std::env::current_exe().map_err(|e| Failed::from(e.to_string()))?;
    let file = dir.path().join("hang.toml");
    let text = format!(
        "name = \"fixture\"\ncommand = [{exe:?}]\nstep_timeout_s = 1\nstart_timeout_s = 5\n\
         env = {{ {} = \"hang\" }}\n",
        subject_fixture::MODE,
    );
    std::fs::write(&file, text).map_err(|e| Failed::from(e.to_string()))?;
    let scenarios = fixtures().join("scenarios").display().to_string();
    let file = file.display().to_string();
    // Six of the scenarios reach the subject; the three after the third breakdown must be skipped (never
    // sent to the hanging subject), which the skip reasons show without timing the run.
    let (code, out, err) = devsim_code(&["run", &scenarios, "--subject", &file, "-j", "1"])?;
    expect(
        code == Some(1)
            && out.contains("3 failed scenario(s) hold 1 distinct finding(s)")
            && out.contains("[breakdown]")
            && out.contains("0 passed, 3 failed, 4 skipped")
            && out
                .matches("(subject fixture stopped after 3 identical breakdowns: expected `observed` or `unsupported` for step 1, got no answer within 1.0 s)")
                .count()
                == 3,
        "three identical breakdowns make one finding and skip the rest, naming the breakdown",
        &out,
        &err,
    )
}

/// `devsim run --subject FILE --repro DIR`: one script per finding that can be restated, the reason for
/// the other in the run and the index, the same bytes when regenerated, and the script exits 1.
fn cli_run_with_reproductions() -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| Failed::from(e.to_string()))?;
    let scenarios = fixtures().join("scenarios").display().to_string();
    let good = subject_file(dir.path(), "good")?;
    let repro = dir.path().join("repro");
    let repro_arg = repro.display().to_string();
    let args = ["run", &scenarios, "--subject", &good, "--repro", &repro_arg];
    let (ok, out, err) = devsim(&args)?;
    expect(!ok, "the fixture corpus fails", &out, &err)?;
    expect(
        out.contains("    reproduction: ")
            && out.contains("normalize-aliases-resolve-hip-family.py"),
        "the wrong answer's finding names its script",
        &out,
        &err,
    )?;
    expect(
        out.contains("    no reproduction: the subject claims the reference level"),
        "the unbacked claim's finding says why it has none",
        &out,
        &err,
    )?;
    let read = |name: &str| {
        std::fs::read_to_string(repro.join(name)).map_err(|e| Failed::from(format!("{name}: {e}")))
    };
    let script = read("normalize-aliases-resolve-hip-family.py")?;
    let index = read("README.md")?;
    expect(
        index.contains("- no reproduction: [reference]"),
        "the index lists the finding without a script",
        &index,
        "",
    )?;
    let (_, out, err) = devsim(&args)?;
    expect(
        read("normalize-aliases-resolve-hip-family.py")? == script && read("README.md")? == index,
        "regenerating writes the same bytes",
        &out,
        &err,
    )?;
    // The script needs only Python 3.11 and the kit; where no python3 is installed there is nothing to run.
    let kit = Path::new(env!("CARGO_MANIFEST_DIR")).join("subjects/kit/src");
    let run = std::process::Command::new("python3")
        .arg(repro.join("normalize-aliases-resolve-hip-family.py"))
        .env("PYTHONPATH", &kit)
        .output();
    let Ok(run) = run else {
        eprintln!("python3 is not installed: the generated script was not run");
        return Ok(());
    };
    let out = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    expect(
        run.status.code() == Some(1) && out.contains("FAILS: the finding is still there"),
        "the script replays the scenario and exits 1 while the finding is there",
        &out,
        &err,
    )
}

/// `--repro DIR` never writes through a link named like one of its scripts or its index (dangling or not),
/// and refuses before writing anything into a folder that is such a link.
fn cli_repro_never_writes_through_a_link() -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| Failed::from(e.to_string()))?;
    let outside = tempfile::tempdir().map_err(|e| Failed::from(e.to_string()))?;
    let marker = outside.path().join("marker");
    let created = outside.path().join("created");
    std::fs::write(&marker, "MARKER\n").map_err(|e| Failed::from(e.to_string()))?;
    let scenarios = fixtures().join("scenarios").display().to_string();
    let good = subject_file(dir.path(), "good")?;
    for (name, target) in [
        ("normalize-aliases-resolve-hip-family.py", &marker),
        ("README.md", &created),
    ] {
        let repro = dir.path().join(format!("repro-{name}"));
        std::fs::create_dir(&repro).map_err(|e| Failed::from(e.to_string()))?;
        std::os::unix::fs::symlink(target, repro.join(name))
            .map_err(|e| Failed::from(e.to_string()))?;
        let repro_arg = repro.display().to_string();
        let args = ["run", &scenarios, "--subject", &good, "--repro", &repro_arg];
        let (code, out, err) = devsim_code(&args)?;
        let untouched = std::fs::read_to_string(&marker).is_ok_and(|text| text == "MARKER\n")
            && !created.exists();
        expect(
            code == Some(2)
                && err.contains(&format!(
                    "{}: it is a symbolic link",
                    repro.join(name).display()
                ))
                && untouched,
            "a link named like a script or the index is refused by name, its target untouched",
            &out,
            &err,
        )?;
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
    let mut trials: Vec<Trial> = cases
        .case
        .into_iter()
        .map(|case| Trial::test(case.name.clone(), move || run_case(case)))
        .collect();
    trials.push(Trial::test(
        "the committed protocol schema is the generated one",
        committed_schema_is_current,
    ));
    trials.push(Trial::test(
        "devsim run --subject with a baseline",
        cli_run_and_baseline,
    ));
    trials.push(Trial::test(
        "devsim run --subject with --repro",
        cli_run_with_reproductions,
    ));
    trials.push(Trial::test(
        "devsim run --subject with --repro never writes through a link",
        cli_repro_never_writes_through_a_link,
    ));
    trials.push(Trial::test(
        "identical breakdowns stop the subject with one finding",
        identical_breakdowns_stop_the_subject,
    ));
    trials.push(Trial::test(
        "devsim check, run --live and bench with --subject",
        cli_check_live_and_bench,
    ));
    libtest_mimic::run(&args, trials).exit();
}
