//! `seed-mutants`: proves the scenario corpus catches every seed bug class.
//!
//! A separate binary, not a test: it has to rebuild devsim once per mutation, and a test that runs cargo
//! would build inside `cargo test` and fight it for the target directory. It is a Rust workspace member
//! rather than a script because it shares the data model and the anchor check with `tests/integration/mutants.rs`.
//!
//! It copies the repository's files (those git tracks or would track) to a scratch folder under the build
//! directory and removes it afterwards, builds and runs the unmutated corpus, then for each mutation in
//! `mutants/seed-bugs.toml`: writes the mutated file, rebuilds `devsim`, runs
//! `devsim run --format json scenarios`, lists the scenarios that failed, and restores the file.
//!
//! Every build shares the repository's cargo build directory (`CARGO_BUILD_BUILD_DIR`), so the dependencies
//! `cargo test` built are reused and only devsim recompiles, incrementally: a mutation costs a few seconds.
//! Final artifacts go to a target directory inside the scratch copy, so `target/debug/devsim` is never a
//! mutated binary. devsim's intermediate artifacts are shared with the repository's own build, which
//! therefore recompiles devsim once after a run.
//!
//! It fails when the unmutated corpus does not pass, when an anchor does not match exactly once, when a
//! mutation does not build, or when a mutation fails no scenario.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use seed_mutants::{DATA_FILE, MutantError, Mutation, SeedBugs};
use thiserror::Error;

/// Command-line options.
#[derive(Debug, Parser)]
#[command(about = "Prove the scenario corpus catches every seed bug class")]
struct Options {
    /// The repository root (holds mutants/seed-bugs.toml).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// The cargo build directory shared by every build (default: the repository's, from `cargo metadata`,
    /// so the dependencies `cargo test` already built are reused).
    #[arg(long)]
    build_dir: Option<PathBuf>,
    /// Run only the mutations with these names.
    #[arg(long = "only", value_name = "NAME")]
    only: Vec<String>,
    /// Seconds one corpus run may take before it counts as hung.
    #[arg(long, default_value_t = 120)]
    run_timeout: u64,
}

/// Why the proof could not be completed or did not hold.
#[derive(Debug, Error)]
enum RunError {
    #[error(transparent)]
    Data(#[from] MutantError),
    #[error("{} anchor(s) do not match; fix mutants/seed-bugs.toml", errors.len())]
    Anchors { errors: Vec<MutantError> },
    #[error("no mutation named {name}")]
    UnknownName { name: String },
    #[error("cannot run git ls-files in {}", root.display())]
    GitList {
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("git ls-files failed in {}: {stderr}", root.display())]
    GitFailed { root: PathBuf, stderr: String },
    #[error("cannot write the scratch copy at {}", path.display())]
    Scratch {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cargo metadata gave no build directory for {}: {detail}", root.display())]
    Metadata { root: PathBuf, detail: String },
    #[error("cannot start {program}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} does not build:\n{stderr}")]
    Build { what: String, stderr: String },
    #[error("the corpus run for {what} {how}")]
    Corpus { what: String, how: String },
    #[error("the unmutated corpus does not pass: {failed}")]
    Baseline { failed: String },
    #[error("{count} mutation(s) caught by no scenario: {names}")]
    Survivors { count: usize, names: String },
}

fn main() -> ExitCode {
    let options = Options::parse();
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("seed-mutants: error: {error}");
            if let RunError::Anchors { errors } = &error {
                for error in errors {
                    eprintln!("  {error}");
                }
            }
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}

fn run(options: &Options) -> Result<(), RunError> {
    let started = Instant::now();
    let root = &options.root;
    let bugs = SeedBugs::load(&root.join(DATA_FILE))?;
    let anchors = bugs.check_anchors(root);
    if !anchors.is_empty() {
        return Err(RunError::Anchors { errors: anchors });
    }
    let chosen = choose(&bugs.mutants, &options.only)?;
    let build_dir = match &options.build_dir {
        Some(dir) => absolute(dir)?,
        None => build_dir_of(root)?,
    };
    let scratch = Scratch::create(root, &build_dir.join("seed-mutants"))?;
    println!(
        "seed-mutants: {} mutation(s), scratch copy {}, build directory {}",
        chosen.len(),
        scratch.path.display(),
        build_dir.display()
    );
    let corpus = Corpus {
        dir: scratch.path.clone(),
        build_dir,
        target_dir: scratch.path.join("target"),
        timeout: Duration::from_secs(options.run_timeout),
    };

    let (failed, build_time) = corpus.build_and_run("the unmutated copy")?;
    if !failed.is_empty() {
        return Err(RunError::Baseline {
            failed: failed.join(", "),
        });
    }
    println!("unmutated: every scenario passes (build {build_time:.1?})");

    let mut survivors = Vec::new();
    for mutation in &chosen {
        let path = scratch.path.join(&mutation.file);
        let (original, mutated) = mutation.mutate_in(&scratch.path)?;
        write(&path, &mutated)?;
        let outcome = corpus.build_and_run(&format!("mutant {mutation}"));
        write(&path, &original)?;
        let (caught_by, build_time) = outcome?;
        if caught_by.is_empty() {
            println!("{mutation}: NOT CAUGHT, every scenario passes (build {build_time:.1?})");
            survivors.push(mutation.name.clone());
        } else {
            println!(
                "{mutation}: caught by {} scenario(s) (build {build_time:.1?}): {}",
                caught_by.len(),
                caught_by.join(", ")
            );
        }
    }
    println!(
        "seed-mutants: {} of {} mutation(s) caught in {:.1?}",
        chosen.len() - survivors.len(),
        chosen.len(),
        started.elapsed()
    );
    if survivors.is_empty() {
        Ok(())
    } else {
        Err(RunError::Survivors {
            count: survivors.len(),
            names: survivors.join(", "),
        })
    }
}

fn choose<'a>(mutants: &'a [Mutation], only: &[String]) -> Result<Vec<&'a Mutation>, RunError> {
    if only.is_empty() {
        return Ok(mutants.iter().collect());
    }
    only.iter()
        .map(|name| {
            mutants
                .iter()
                .find(|m| &m.name == name)
                .ok_or_else(|| RunError::UnknownName { name: name.clone() })
        })
        .collect()
}

/// The repository's cargo build directory (its target directory unless a build directory is configured).
fn build_dir_of(root: &Path) -> Result<PathBuf, RunError> {
    let cargo = cargo();
    let output = Command::new(&cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|source| RunError::Spawn {
            program: cargo.clone(),
            source,
        })?;
    let metadata_error = |detail: String| RunError::Metadata {
        root: root.to_path_buf(),
        detail,
    };
    if !output.status.success() {
        return Err(metadata_error(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| metadata_error(format!("unreadable output ({e})")))?;
    ["build_directory", "target_directory"]
        .iter()
        .find_map(|key| metadata.get(key).and_then(|v| v.as_str()))
        .map(PathBuf::from)
        .ok_or_else(|| metadata_error("no target_directory key".into()))
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

fn absolute(path: &Path) -> Result<PathBuf, RunError> {
    std::path::absolute(path).map_err(|source| RunError::Scratch {
        path: path.to_path_buf(),
        source,
    })
}

fn write(path: &Path, text: &str) -> Result<(), RunError> {
    std::fs::write(path, text).map_err(|source| RunError::Scratch {
        path: path.to_path_buf(),
        source,
    })
}

/// A copy of the repository, removed when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// Copies every file git tracks or would track (not ignored) from `root` to `parent/crate`.
    fn create(root: &Path, parent: &Path) -> Result<Self, RunError> {
        let output = Command::new("git")
            .args([
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])
            .current_dir(root)
            .stderr(Stdio::piped())
            .output()
            .map_err(|source| RunError::GitList {
                root: root.to_path_buf(),
                source,
            })?;
        if !output.status.success() {
            return Err(RunError::GitFailed {
                root: root.to_path_buf(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        let path = parent.join("crate");
        // A copy left by an interrupted run is ours to replace.
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|source| RunError::Scratch {
                path: path.clone(),
                source,
            })?;
        }
        let scratch = Scratch { path };
        for name in output.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let relative = PathBuf::from(String::from_utf8_lossy(name).into_owned());
            let from = root.join(&relative);
            if !from.is_file() {
                continue; // deleted in the work tree but still in the index
            }
            let to = scratch.path.join(&relative);
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir).map_err(|source| RunError::Scratch {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
            std::fs::copy(&from, &to).map_err(|source| RunError::Scratch {
                path: to.clone(),
                source,
            })?;
        }
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.path) {
            eprintln!(
                "seed-mutants: cannot remove the scratch copy {}: {error}",
                self.path.display()
            );
        }
    }
}

/// Builds devsim in the scratch copy and runs the corpus there.
struct Corpus {
    dir: PathBuf,
    build_dir: PathBuf,
    target_dir: PathBuf,
    timeout: Duration,
}

impl Corpus {
    /// Rebuilds devsim and runs the corpus; returns the scenarios that failed (load errors included) and
    /// how long the build took.
    fn build_and_run(&self, what: &str) -> Result<(Vec<String>, Duration), RunError> {
        let build_started = Instant::now();
        let cargo = cargo();
        let build = Command::new(&cargo)
            .args([
                "build", "--quiet", "--locked", "-p", "devsim", "--bin", "devsim",
            ])
            .env("CARGO_BUILD_BUILD_DIR", &self.build_dir)
            .env("CARGO_TARGET_DIR", &self.target_dir)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|source| RunError::Spawn {
                program: cargo.clone(),
                source,
            })?;
        if !build.status.success() {
            return Err(RunError::Build {
                what: what.to_string(),
                stderr: String::from_utf8_lossy(&build.stderr).into_owned(),
            });
        }
        let build_time = build_started.elapsed();
        let failed = self.run_corpus(what)?;
        Ok((failed, build_time))
    }

    fn run_corpus(&self, what: &str) -> Result<Vec<String>, RunError> {
        let binary = self.target_dir.join("debug").join("devsim");
        let report_path = self.dir.join("target-seed-mutants-report.json");
        let report = std::fs::File::create(&report_path).map_err(|source| RunError::Scratch {
            path: report_path.clone(),
            source,
        })?;
        let mut child = Command::new(&binary)
            .args(["run", "--format", "json", "scenarios"])
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(report)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| RunError::Spawn {
                program: binary.display().to_string(),
                source,
            })?;
        let corpus_error = |how: String| RunError::Corpus {
            what: what.to_string(),
            how,
        };
        let deadline = Instant::now() + self.timeout;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(corpus_error(format!(
                        "hung for more than {:?}",
                        self.timeout
                    )));
                }
                Err(e) => return Err(corpus_error(format!("could not be waited for: {e}"))),
            }
        }
        let text = std::fs::read_to_string(&report_path).map_err(|source| RunError::Scratch {
            path: report_path.clone(),
            source,
        })?;
        let report: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| corpus_error(format!("printed no JSON report ({e})")))?;
        failed_scenarios(&report).ok_or_else(|| corpus_error("printed an unexpected report".into()))
    }
}

/// The names of the failed scenarios, then every load error, from a `devsim run --format json` report.
fn failed_scenarios(report: &serde_json::Value) -> Option<Vec<String>> {
    let mut failed: Vec<String> = report
        .get("scenarios")?
        .as_array()?
        .iter()
        .filter(|s| s.get("status").and_then(|s| s.as_str()) == Some("failed"))
        .filter_map(|s| s.get("name").and_then(|n| n.as_str()).map(str::to_string))
        .collect();
    for error in report.get("load_errors")?.as_array()? {
        failed.push(format!("load error: {}", error.as_str()?));
    }
    Some(failed)
}
