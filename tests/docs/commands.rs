//! The shell commands of the README's ```` ```sh ```` blocks: each is run here (against the built binary, in
//! a scratch copy of what it reads and writes) or mapped to the CI step (`xtask/src/steps/`) or the test
//! that runs it. A command in neither place fails its block's trial, and a table entry that is no longer a
//! README command fails [`stale_entries`], so the table cannot rot.

use std::path::Path;
use std::process::Output;

use devsim::output::{CheckOutput, KernelsOutput, RunOutput};

use crate::ci_plan;
use crate::markdown::Block;

/// One command as the README writes it, continuation lines joined and its comment dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The 1-based line where it starts.
    pub line: usize,
    /// The command.
    pub text: String,
}

/// Prepares the scratch folder before a command runs.
pub type Prepare = fn(&Path) -> Result<(), String>;

/// Judges a command's result: the folder it ran in, and its output.
pub type Judge = fn(&Path, &Output) -> Result<(), String>;

/// Where the test runs a command.
#[derive(Debug, Clone, Copy)]
pub enum Cwd {
    /// In a scratch folder holding a copy of `scenarios/` and the files the README tells the reader to
    /// save; `cargo run [--release] --` and `devsim` are the test's own `devsim` binary.
    Scratch,
    /// In the repository (the command writes only build output under `target/`).
    Repo,
}

/// How one command is exercised.
#[derive(Debug, Clone, Copy)]
pub enum Cover {
    /// Run by this test, after `before`, then judged by `check`.
    Here {
        /// Where.
        cwd: Cwd,
        /// Prepares the scratch folder first.
        before: Option<Prepare>,
        /// Judges the result (the scratch folder or repository, and the output).
        check: Judge,
    },
    /// Run by the CI step `name`, whose planned commands (`cargo xtask ci --dry-run`) contain `runs`.
    Step {
        /// The step's name (`cargo xtask ci --step NAME`).
        name: &'static str,
        /// A piece of the step's planned commands that is the command.
        runs: &'static str,
    },
    /// Set by `cargo xtask ci` for the step `name`, which runs in the torch venv.
    TorchEnv {
        /// A step with `torch_env`.
        name: &'static str,
    },
    /// Exercised (in the same form, with a test subject or a fake driver) by a test: `fn NAME(` or a
    /// libtest-mimic trial named `"NAME"` in `file`.
    Test {
        /// The test file, from the repository root.
        file: &'static str,
        /// The test function or trial name.
        name: &'static str,
    },
}

const SUBJECTS_RS: &str = "tests/subjects.rs";
const FAKES_PROBE_RS: &str = "tests/fakes/probe.rs";
const FAKES_LIVE_SUBJECT_RS: &str = "tests/fakes/live_subject.rs";
const CI_CONFIG_RS: &str = "tests/integration/ci_config.rs";

/// Every README command and how it is exercised. Commands that need a GPU (`--live`) or a subject's venv
/// map to their CI step, and to the test that runs the same form without them.
pub const COVERS: &[(&str, &[Cover])] = &[
    // Two commands
    (
        "cargo run --release -- run",
        &[Cover::Step {
            name: "corpus",
            runs: "cargo run --locked --release -- run\n",
        }],
    ),
    (
        "cargo test",
        &[Cover::Step {
            name: "test",
            runs: "cargo test --locked",
        }],
    ),
    // For Python projects
    (
        "pip install devsim-harness",
        &[Cover::Step {
            name: "wheel",
            runs: "scripts/check-wheel",
        }],
    ),
    (
        "pytest --devsim-host r9700x2",
        &[Cover::Step {
            name: "wheel",
            runs: "scripts/check-wheel",
        }],
    ),
    // Accepting what the catalog observed
    (
        "cargo run -- run scenarios/placement/my_first.toml --accept",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: Some(guess_my_first),
            check: accept_writes_pending,
        }],
    ),
    (
        "cargo run -- review",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: review_shows_the_diff,
        }],
    ),
    (
        "cargo run -- review --accept",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: review_accept_settles_it,
        }],
    ),
    // Selecting, quiet runs and output for tools
    (
        "devsim run --tag seed",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: runs_seed_only,
        }],
    ),
    (
        "devsim run --filter allspark",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: runs_allspark_only,
        }],
    ),
    (
        "devsim run --filter 'placement/*gpu1*'",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: runs_placement_gpu1_only,
        }],
    ),
    (
        "devsim run --quiet",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: quiet_shows_only_the_summary,
        }],
    ),
    (
        "devsim run --format json",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: run_json_is_a_run_document,
        }],
    ),
    (
        "devsim run --format junit > devsim.xml",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: junit_is_written,
        }],
    ),
    (
        "devsim check --format json",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: check_json_is_a_check_document,
        }],
    ),
    (
        "devsim kernels --format json",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: kernels_json_has_audits,
        }],
    ),
    // nextest and CI
    (
        "cargo nextest run --profile ci",
        &[Cover::Step {
            name: "nextest",
            runs: "cargo nextest run --workspace --profile ci",
        }],
    ),
    (
        // nextest's own sharding over the same profile; the step runs the profile unsharded
        "cargo nextest run --profile ci --partition hash:1/4",
        &[Cover::Step {
            name: "nextest",
            runs: "cargo nextest run --workspace --profile ci",
        }],
    ),
    (
        "cargo xtask ci --list",
        &[Cover::Here {
            cwd: Cwd::Repo,
            before: None,
            check: xtask_lists_every_step,
        }],
    ),
    (
        "cargo xtask ci --step clippy",
        &[
            Cover::Step {
                name: "clippy",
                runs: "cargo clippy --locked --workspace --all-targets -- -D warnings",
            },
            Cover::Test {
                file: CI_CONFIG_RS,
                name: "the_workflow_steps_resolve_through_the_entry_point_under_ci",
            },
        ],
    ),
    (
        "cargo xtask ci --jobs 1",
        &[Cover::Test {
            file: CI_CONFIG_RS,
            name: "steps_run_one_at_a_time_or_side_by_side_and_close_with_a_timed_summary",
        }],
    ),
    (
        "cargo xtask ci --dry-run",
        &[Cover::Here {
            cwd: Cwd::Repo,
            before: None,
            check: xtask_dry_run_plans_every_hardware_less_step,
        }],
    ),
    // Testing your own dispatch code
    (
        "devsim check --subject subjects/gptqmodel.toml",
        &[
            Cover::Step {
                name: "baselines",
                runs: "--subject subjects/gptqmodel.toml",
            },
            Cover::Test {
                file: SUBJECTS_RS,
                name: "devsim check, run --live and bench with --subject",
            },
        ],
    ),
    (
        "devsim run --subject 'python3 -m my_subject'",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: my_subject_runs_the_corpus,
        }],
    ),
    (
        "devsim run -j 1 --subject 'python3 -m my_subject'",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: my_subject_runs_the_corpus,
        }],
    ),
    (
        "devsim run --live --subject 'python3 -m my_subject'",
        &[
            Cover::Here {
                cwd: Cwd::Scratch,
                before: None,
                check: my_subject_is_refused_live,
            },
            Cover::Test {
                file: FAKES_LIVE_SUBJECT_RS,
                name: "runs_what_the_fake_machine_satisfies_and_skips_the_rest",
            },
            Cover::Test {
                file: SUBJECTS_RS,
                name: "devsim check, run --live and bench with --subject",
            },
        ],
    ),
    (
        "devsim run --subject subjects/gptqmodel.toml --write-baseline baseline.toml",
        &[Cover::Test {
            file: SUBJECTS_RS,
            name: "devsim run --subject with a baseline",
        }],
    ),
    (
        "devsim run --subject subjects/gptqmodel.toml --baseline baseline.toml",
        &[
            Cover::Step {
                name: "baselines",
                runs: "--subject subjects/gptqmodel.toml --baseline subjects/gptqmodel/baseline.toml",
            },
            Cover::Test {
                file: SUBJECTS_RS,
                name: "devsim run --subject with a baseline",
            },
        ],
    ),
    (
        "devsim run --subject subjects/gptqmodel.toml --repro subjects/gptqmodel/repro",
        &[Cover::Step {
            name: "baselines",
            runs: "--repro subjects/gptqmodel/repro",
        }],
    ),
    (
        "devsim bench --rounds 1 --subject subjects/gptqmodel.toml --subject subjects/bitsandbytes.toml --subject subjects/vllm.toml",
        &[Cover::Test {
            file: SUBJECTS_RS,
            name: "devsim check, run --live and bench with --subject",
        }],
    ),
    // Worked example: GPTQModel 7.7.0
    (
        "subjects/gptqmodel/install.sh .venv-torch",
        &[Cover::Step {
            name: "gptqmodel-install",
            runs: "$ subjects/gptqmodel/install.sh ",
        }],
    ),
    (
        "PATH=$PWD/.venv-torch/bin:$PATH devsim run --subject subjects/gptqmodel.toml --baseline subjects/gptqmodel/baseline.toml",
        &[Cover::Step {
            name: "baselines",
            runs: "--subject subjects/gptqmodel.toml --baseline subjects/gptqmodel/baseline.toml",
        }],
    ),
    (
        "PATH=$PWD/.venv-torch/bin:$PATH devsim run --subject subjects/gptqmodel-seedfix.toml --baseline subjects/gptqmodel/baseline-seedfix.toml",
        &[Cover::Step {
            name: "baselines",
            runs: "--subject subjects/gptqmodel-seedfix.toml --baseline subjects/gptqmodel/baseline-seedfix.toml",
        }],
    ),
    (
        "python3 subjects/gptqmodel/tools/findings.py",
        &[Cover::Step {
            name: "baselines",
            runs: "subjects/gptqmodel/tools/findings.py",
        }],
    ),
    (
        "PATH=$PWD/.venv-torch/bin:$PATH python3 subjects/gptqmodel/tools/reverts.py",
        &[Cover::Step {
            name: "reverts",
            runs: "subjects/gptqmodel/tools/reverts.py",
        }],
    ),
    // Live replay on real GPUs
    (
        "python3 -m venv .venv-torch && .venv-torch/bin/pip install torch==2.11.0",
        &[Cover::Step {
            name: "torch",
            runs: "python3 -m venv .venv-torch",
        }],
    ),
    (
        "export VIRTUAL_ENV=$PWD/.venv-torch PATH=$PWD/.venv-torch/bin:$PATH LIBTORCH_USE_PYTORCH=1",
        &[Cover::TorchEnv { name: "torch-test" }],
    ),
    (
        "cargo test --features torch",
        &[Cover::Step {
            name: "torch-test",
            runs: "cargo test --locked -p devsim --features torch",
        }],
    ),
    (
        "cargo run --release --features torch -- run --live",
        &[
            Cover::Step {
                name: "live-run",
                runs: "cargo run --locked --release -- run --live",
            },
            Cover::Step {
                name: "torch-test",
                runs: "--features torch",
            },
        ],
    ),
    (
        "cargo run --release -- bench --live",
        &[Cover::Here {
            cwd: Cwd::Scratch,
            before: None,
            check: bench_live_says_what_runs_live,
        }],
    ),
    (
        "cargo run --release -- probe --check-masks",
        &[Cover::Test {
            file: FAKES_PROBE_RS,
            name: "check_masks_agrees_through_the_fakes",
        }],
    ),
    // Fake drivers
    (
        "scripts/build-fake-drivers",
        &[Cover::Step {
            name: "fake-drivers",
            runs: "scripts/build-fake-drivers",
        }],
    ),
    (
        "cargo test --test fakes",
        &[Cover::Step {
            name: "test",
            runs: "cargo test --locked",
        }],
    ),
];

/// The commands of a ```` ```sh ```` block: `\` continuations joined, comments (a `#` after a space,
/// outside quotes) and comment-only lines dropped.
pub fn commands(block: &Block) -> Vec<Command> {
    let mut out = Vec::new();
    let mut pending: Option<Command> = None;
    for (offset, raw) in block.body.lines().enumerate() {
        let line = block.line + 1 + offset;
        let code = strip_comment(raw);
        let (code, continues) = match code.trim_end().strip_suffix('\\') {
            Some(head) => (head.trim().to_string(), true),
            None => (code.trim().to_string(), false),
        };
        let current = match pending.take() {
            Some(mut command) => {
                if !code.is_empty() {
                    command.text.push(' ');
                    command.text.push_str(&code);
                }
                Some(command)
            }
            None if code.is_empty() => None,
            None => Some(Command { line, text: code }),
        };
        match (current, continues) {
            (Some(command), true) => pending = Some(command),
            (Some(command), false) => out.push(command),
            (None, _) => {}
        }
    }
    out.extend(pending);
    out
}

/// `line` without its shell comment.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (index, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return &line[..index],
            None => {}
        }
        previous = c;
    }
    line
}

/// The table's covers of `command`, if any.
pub fn covers_of(command: &str) -> Option<&'static [Cover]> {
    COVERS
        .iter()
        .find(|(text, _)| *text == command)
        .map(|(_, covers)| *covers)
}

/// What a mapped cover names exists: the step (with the command in its script) or the test.
fn mapped_exists(root: &Path, cover: &Cover) -> Result<(), String> {
    match *cover {
        Cover::Step { name, runs } => {
            let step = ci_plan::find(name)?;
            if step.text.contains(runs) {
                Ok(())
            } else {
                Err(format!(
                    "the CI step `{name}` no longer runs {runs:?}:\n{}",
                    step.text
                ))
            }
        }
        Cover::TorchEnv { name } => {
            if ci_plan::find(name)?.torch_env {
                Ok(())
            } else {
                Err(format!(
                    "the CI step `{name}` does not run in the torch venv"
                ))
            }
        }
        Cover::Test { file, name } => {
            let text = std::fs::read_to_string(root.join(file))
                .map_err(|e| format!("read {file}: {e}"))?;
            if text.contains(&format!("fn {name}(")) || text.contains(&format!("\"{name}\"")) {
                Ok(())
            } else {
                Err(format!("no test `{name}` in {file}"))
            }
        }
        Cover::Here { .. } => Ok(()),
    }
}

/// The README's placeholder subject `python3 -m my_subject`: the smallest protocol subject
/// (tests/fixtures/docs/my_subject.py).
const MY_SUBJECT: (&str, &str) = (
    "my_subject.py",
    include_str!("../fixtures/docs/my_subject.py"),
);

/// A scratch folder for one block: a copy of `scenarios/`, the files the README tells the reader to save
/// (`saved`: path and text) and [`MY_SUBJECT`].
fn scratch(root: &Path, saved: &[(String, String)]) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a scratch folder: {e}"))?;
    copy_tree(&root.join("scenarios"), &dir.path().join("scenarios"))?;
    let subject = (MY_SUBJECT.0.to_string(), MY_SUBJECT.1.to_string());
    for (path, text) in saved.iter().chain(std::iter::once(&subject)) {
        let target = dir.path().join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&target, text).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    Ok(dir)
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if source.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            std::fs::copy(&source, &target)
                .map_err(|e| format!("copy {}: {e}", source.display()))?;
        }
    }
    Ok(())
}

/// `command` as the shell runs it here: `cargo run [--release] --` is this build's `devsim` (on `PATH`).
fn as_run_here(command: &str) -> String {
    for prefix in ["cargo run --release -- ", "cargo run -- "] {
        if let Some(rest) = command.strip_prefix(prefix) {
            return format!("devsim {rest}");
        }
    }
    command.to_string()
}

/// A folder holding `devsim`, this build's binary, for `PATH`.
fn bin_folder() -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a scratch folder: {e}"))?;
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_devsim"), dir.path().join("devsim"))
        .map_err(|e| format!("link devsim: {e}"))?;
    Ok(dir)
}

fn run_shell(command: &str, cwd: &Path, bin: &Path) -> Result<Output, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut folders = vec![bin.to_path_buf()];
    folders.extend(std::env::split_paths(&path));
    let cargo = Path::new(env!("CARGO"));
    if let Some(folder) = cargo.parent() {
        folders.insert(1, folder.to_path_buf());
    }
    let joined = std::env::join_paths(folders).map_err(|e| format!("PATH: {e}"))?;
    std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("PATH", joined)
        .env("NO_COLOR", "1")
        .output()
        .map_err(|e| format!("sh -c {command:?}: {e}"))
}

/// One command to run here, located.
struct Planned {
    at: String,
    command: String,
    cwd: Cwd,
    before: Option<Prepare>,
    check: Judge,
}

/// The block's trial: every command covered, each mapped cover existing, each run-here command run and
/// judged in one scratch folder. A block with a command that prepares the folder (`before`) runs in turn,
/// as a reader types it; otherwise its commands run side by side.
pub fn check_block(root: &Path, block: &Block, saved: &[(String, String)]) -> Result<(), String> {
    let mut problems = Vec::new();
    let mut planned = Vec::new();
    for command in commands(block) {
        let at = format!("{}:{}", block.file, command.line);
        let Some(covers) = covers_of(&command.text) else {
            problems.push(format!(
                "{at}: `{}` is neither run by tests/docs nor mapped to a CI step or a test: add it to COVERS in \
                 tests/docs/commands.rs",
                command.text
            ));
            continue;
        };
        for cover in covers {
            match *cover {
                Cover::Here { cwd, before, check } => planned.push(Planned {
                    at: at.clone(),
                    command: command.text.clone(),
                    cwd,
                    before,
                    check,
                }),
                _ => {
                    if let Err(problem) = mapped_exists(root, cover) {
                        problems.push(format!("{at}: `{}`: {problem}", command.text));
                    }
                }
            }
        }
    }
    if !planned.is_empty() {
        let scratch_dir = scratch(root, saved)?;
        let bin = bin_folder()?;
        let folder_of = |cwd: Cwd| match cwd {
            Cwd::Repo => root.to_path_buf(),
            Cwd::Scratch => scratch_dir.path().to_path_buf(),
        };
        let run = |one: &Planned| run_and_check(one, &folder_of(one.cwd), bin.path());
        let results: Vec<Result<(), String>> = if planned.iter().any(|p| p.before.is_some()) {
            planned.iter().map(run).collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = planned
                    .iter()
                    .map(|one| scope.spawn(move || run(one)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err("the check panicked".into()))
                    })
                    .collect()
            })
        };
        problems.extend(results.into_iter().filter_map(Result::err));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n\n"))
    }
}

fn run_and_check(one: &Planned, folder: &Path, bin: &Path) -> Result<(), String> {
    let (at, command) = (&one.at, &one.command);
    if let Some(before) = one.before {
        before(folder).map_err(|e| format!("{at}: before `{command}`: {e}"))?;
    }
    let shell = as_run_here(command);
    let output = run_shell(&shell, folder, bin)?;
    (one.check)(folder, &output).map_err(|problem| {
        format!(
            "{at}: `{command}` (run as `{shell}`): {problem}\n--- exit: {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            output.status.code(),
            tail(&output.stdout),
            tail(&output.stderr)
        )
    })
}

/// The last 40 lines of an output, for a failure message.
fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Entries of [`COVERS`] that are no README command any more (`readme`: every command of every block).
pub fn stale_entries(readme: &[Command]) -> Result<(), String> {
    let stale: Vec<&str> = COVERS
        .iter()
        .map(|(text, _)| *text)
        .filter(|text| !readme.iter().any(|c| c.text == *text))
        .collect();
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "COVERS in tests/docs/commands.rs lists commands the README no longer has: {stale:?}"
        ))
    }
}

// --- the checks of the commands run here ---------------------------------------------------------------

const MY_FIRST: &str = "scenarios/placement/my_first.toml";

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn expect(condition: bool, what: &str) -> Result<(), String> {
    if condition {
        Ok(())
    } else {
        Err(what.to_string())
    }
}

fn exit(output: &Output, code: i32) -> Result<(), String> {
    expect(
        output.status.code() == Some(code),
        &format!("expected exit code {code}"),
    )
}

/// The summary line's counts (`subject reference: N passed, N failed, N skipped…`).
fn summary(output: &Output) -> Result<String, String> {
    stdout(output)
        .lines()
        .find(|line| line.starts_with("subject reference: "))
        .map(str::to_string)
        .ok_or_else(|| "no `subject reference: …` summary line".to_string())
}

fn passed_without_failures(output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    let line = summary(output)?;
    expect(
        line.contains(" 0 failed") && !line.contains(": 0 passed"),
        &format!("expected passes and no failure: {line}"),
    )
}

/// The README's scenario with a guessed value: `ran_on = 0` where it says `ran_on = 1`.
fn guess_my_first(folder: &Path) -> Result<(), String> {
    let path = folder.join(MY_FIRST);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{MY_FIRST}: {e}"))?;
    let guessed = text.replacen("ran_on = 1", "ran_on = 0", 1);
    expect(
        guessed != text,
        "the README's first scenario no longer says `ran_on = 1`, the value this test guesses wrong",
    )?;
    std::fs::write(&path, guessed).map_err(|e| format!("{MY_FIRST}: {e}"))
}

fn accept_writes_pending(folder: &Path, output: &Output) -> Result<(), String> {
    exit(output, 1)?;
    let pending = folder.join(format!("{MY_FIRST}.pending"));
    let text = std::fs::read_to_string(&pending)
        .map_err(|e| format!("no {MY_FIRST}.pending written: {e}"))?;
    expect(
        text.contains("ran_on = 1") && !text.contains("ran_on = 0"),
        &format!("the pending copy takes the observed ran_on = 1:\n{text}"),
    )
}

fn review_shows_the_diff(folder: &Path, output: &Output) -> Result<(), String> {
    let shown = stdout(output);
    expect(
        shown.contains("-ran_on = 0") && shown.contains("+ran_on = 1"),
        "the diff from the guess to the observed value",
    )?;
    expect(
        !output.status.success(),
        "without a terminal nothing is settled, and review says so by its exit code",
    )?;
    expect(
        folder.join(format!("{MY_FIRST}.pending")).exists(),
        "the pending copy is left for a later review",
    )
}

fn review_accept_settles_it(folder: &Path, output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    expect(
        !folder.join(format!("{MY_FIRST}.pending")).exists(),
        "the pending copy is gone",
    )?;
    let text = std::fs::read_to_string(folder.join(MY_FIRST)).map_err(|e| format!("{e}"))?;
    expect(
        text.contains("ran_on = 1") && !text.contains("ran_on = 0"),
        &format!("the accepted file holds the observed value:\n{text}"),
    )
}

fn run_json(output: &Output) -> Result<RunOutput, String> {
    serde_json::from_slice(&output.stdout).map_err(|e| format!("not a RunOutput document: {e}"))
}

/// The scenarios a human run reports as passed (`ok  NAME` lines).
fn passed_names(output: &Output) -> Vec<String> {
    stdout(output)
        .lines()
        .filter_map(|line| line.strip_prefix("ok"))
        .filter(|rest| rest.starts_with(char::is_whitespace))
        .map(|rest| rest.trim().to_string())
        .collect()
}

/// A passing run that reports at least one scenario, each of which `selected` says belongs.
fn selects(
    folder: &Path,
    output: &Output,
    selected: impl Fn(&Path, &str) -> bool,
    what: &str,
) -> Result<(), String> {
    passed_without_failures(output)?;
    let names = passed_names(output);
    expect(!names.is_empty(), "a line per scenario")?;
    let strays: Vec<&String> = names
        .iter()
        .filter(|name| !selected(folder, name))
        .collect();
    expect(
        strays.is_empty(),
        &format!("only {what}; also ran {strays:?}"),
    )
}

/// Whether the scenario `name` (a matrix case `file.toml[…]` included) carries the tag `seed`.
fn tagged_seed(folder: &Path, name: &str) -> bool {
    let file = name.split('[').next().unwrap_or(name);
    std::fs::read_to_string(folder.join("scenarios").join(file))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|table| table.get("tags").and_then(|t| t.as_array()).cloned())
        .is_some_and(|tags| tags.iter().any(|t| t.as_str() == Some("seed")))
}

fn runs_seed_only(folder: &Path, output: &Output) -> Result<(), String> {
    selects(folder, output, tagged_seed, "scenarios tagged `seed`")
}

fn runs_allspark_only(folder: &Path, output: &Output) -> Result<(), String> {
    selects(
        folder,
        output,
        |_, name| name.contains("allspark"),
        "names containing `allspark`",
    )
}

fn runs_placement_gpu1_only(folder: &Path, output: &Output) -> Result<(), String> {
    selects(
        folder,
        output,
        |_, name| name.starts_with("placement/") && name.contains("gpu1"),
        "names matching `placement/*gpu1*`",
    )
}

fn quiet_shows_only_the_summary(_: &Path, output: &Output) -> Result<(), String> {
    passed_without_failures(output)?;
    expect(
        passed_names(output).is_empty(),
        "no line for a passing scenario",
    )
}

fn run_json_is_a_run_document(_: &Path, output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    let run = run_json(output)?;
    expect(
        run.scenarios
            .iter()
            .any(|s| s.name == "placement/my_first.toml"),
        "the reader's first scenario is in the run",
    )?;
    expect(run.load_errors.is_empty(), "no load error")
}

fn junit_is_written(folder: &Path, output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    let xml = std::fs::read_to_string(folder.join("devsim.xml"))
        .map_err(|e| format!("devsim.xml: {e}"))?;
    expect(
        xml.contains("<testsuite") && xml.contains("placement/my_first.toml"),
        "a JUnit report with a case per scenario",
    )
}

fn check_json_is_a_check_document(_: &Path, output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    let check: CheckOutput = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("not a CheckOutput document: {e}"))?;
    expect(
        check.load_errors.is_empty() && check.scenarios.len() > 100,
        "every corpus file loads",
    )
}

fn kernels_json_has_audits(_: &Path, output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    let kernels: KernelsOutput = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("not a KernelsOutput document: {e}"))?;
    expect(
        !kernels.kernels.is_empty() && kernels.kernels.iter().all(|k| k.rocm_audit.is_some()),
        "every kernel with its ROCm audit decision",
    )
}

fn xtask_lists_every_step(_: &Path, output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    let listed: Vec<String> = stdout(output)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect();
    let names: Vec<String> = ci_plan::plan()?.iter().map(|s| s.name.clone()).collect();
    expect(
        listed == names,
        &format!("the steps in order, as the dry runs plan them: {names:?}"),
    )
}

fn xtask_dry_run_plans_every_hardware_less_step(_: &Path, output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    let planned: Vec<String> = stdout(output)
        .lines()
        .filter_map(|line| line.strip_prefix("== "))
        .filter_map(|line| line.split_once(':').map(|(name, _)| name.to_string()))
        .collect();
    let names: Vec<String> = ci_plan::plan()?
        .iter()
        .filter(|s| s.hardware_less)
        .map(|s| s.name.clone())
        .collect();
    expect(
        planned == names,
        &format!("every hardware-less step, in order: {names:?}"),
    )
}

fn bench_live_says_what_runs_live(_: &Path, output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    let shown = stdout(output);
    expect(
        shown.lines().any(|line| line.starts_with("live bench: "))
            && shown
                .lines()
                .any(|line| line.starts_with("live corpus: ") && line.contains(" 0 failed")),
        "the overhead line (or why nothing was measured) and the corpus live, none failed",
    )
}

fn my_subject_runs_the_corpus(_: &Path, output: &Output) -> Result<(), String> {
    exit(output, 0)?;
    let shown = stdout(output);
    let line = shown
        .lines()
        .find(|line| line.starts_with("subject my_subject: "))
        .ok_or("no `subject my_subject: …` summary line: the subject did not run")?;
    expect(
        line.contains(" 0 failed") && line.contains("not applicable"),
        &format!("a subject with no action judges nothing and fails nothing: {line}"),
    )
}

fn my_subject_is_refused_live(_: &Path, output: &Output) -> Result<(), String> {
    exit(output, 2)?;
    let said = stderr(output);
    expect(
        said.contains("my_subject") && said.contains("live"),
        "a subject whose handshake does not say `live` is refused before any scenario runs, by name",
    )
}
