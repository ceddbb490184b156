//! What a CI step runs its commands through: [`Ci`], a shell rooted at the repository with the build settings
//! a fresh clone wants, which prints instead of running under `--dry-run`; and [`StepError`], how a step fails.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use xshell::{Cmd, Shell};

/// Why a CI step failed: a command that failed or could not start, or a check of the step's own.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// A command failed, or could not be started (xshell's message names it and its exit status).
    #[error(transparent)]
    Command(#[from] xshell::Error),
    /// A file of the step could not be written.
    #[error("write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `df` answered something other than its POSIX table.
    #[error("read the free disk from df's answer {answer:?}")]
    FreeDisk {
        /// What `df -Pk .` printed.
        answer: String,
    },
    /// Too little free disk for an install.
    #[error("install {what}: it needs about {need} GiB, only {free} GiB are free here")]
    Disk {
        /// What was to be installed.
        what: &'static str,
        /// GiB it needs.
        need: u64,
        /// GiB free.
        free: u64,
    },
    /// The library without default features depends on crates that belong to the CLI.
    #[error("keep the library free of CLI crates: without default features it depends on {0}")]
    LibraryDependencies(String),
    /// A subject run did not match what the step expects; its log holds the whole output.
    #[error("run subject {subject}: {what} (the whole output is in {log})")]
    Subject {
        /// The subject.
        subject: String,
        /// What went wrong.
        what: &'static str,
        /// The log file.
        log: String,
    },
}

/// The shell a step runs in, from the repository root.
pub struct Ci {
    sh: Shell,
    root: PathBuf,
    dry_run: bool,
}

/// How a command that ran to its end (successfully or not) ended, with its output, stdout then stderr.
pub struct Ran {
    /// Whether it exited 0 (always, under `--dry-run`).
    pub success: bool,
    /// Its standard output, then its standard error.
    pub text: String,
}

/// A command and the variables it is given, shown as a shell line reads (`KEY=VALUE program args`).
pub struct Job<'a> {
    cmd: Cmd<'a>,
    shown: Vec<String>,
}

impl<'a> Job<'a> {
    /// Gives the command `key=value`.
    pub fn env(self, key: &str, value: impl AsRef<OsStr>) -> Job<'a> {
        let mut shown = self.shown;
        shown.push(format!("{key}={}", value.as_ref().to_string_lossy()));
        Job {
            cmd: self.cmd.env(key, value),
            shown,
        }
    }

    /// Lets it read `stdin`.
    pub fn stdin(self, stdin: impl AsRef<[u8]>) -> Job<'a> {
        Job {
            cmd: self.cmd.stdin(stdin),
            shown: self.shown,
        }
    }
}

impl<'a> From<Cmd<'a>> for Job<'a> {
    fn from(cmd: Cmd<'a>) -> Job<'a> {
        Job {
            cmd,
            shown: Vec::new(),
        }
    }
}

impl fmt::Display for Job<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for var in &self.shown {
            write!(f, "{var} ")?;
        }
        write!(f, "{}", self.cmd)
    }
}

impl Ci {
    /// A shell at `root` with CI's build settings: no incremental builds, line tables only for debug
    /// builds, no pip wheel cache holding a second copy of torch, `CI=true`; with `torch_env`, inside the
    /// torch venv (`.venv-torch`: `VIRTUAL_ENV`, `PATH` and `LIBTORCH_USE_PYTORCH`).
    pub fn new(root: &Path, torch_env: bool, dry_run: bool) -> Result<Ci, StepError> {
        let sh = Shell::new()?;
        sh.change_dir(root);
        for (key, value) in [
            ("CARGO_INCREMENTAL", "0"),
            ("CARGO_PROFILE_DEV_DEBUG", "line-tables-only"),
            ("PIP_NO_CACHE_DIR", "1"),
            ("CI", "true"),
        ] {
            sh.set_var(key, value);
        }
        if torch_env {
            let venv = root.join(".venv-torch");
            let mut paths = vec![venv.join("bin")];
            paths.extend(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            ));
            if let Ok(joined) = std::env::join_paths(paths) {
                sh.set_var("PATH", joined);
            }
            sh.set_var("VIRTUAL_ENV", &venv);
            sh.set_var("LIBTORCH_USE_PYTORCH", "1");
        }
        Ok(Ci {
            sh,
            root: root.to_path_buf(),
            dry_run,
        })
    }

    /// The shell, to build commands with `xshell::cmd!`.
    pub fn sh(&self) -> &Shell {
        &self.sh
    }

    /// The repository root (the shell's folder).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Runs `cmd` with the terminal as its output; a non-zero exit fails the step.
    pub fn run<'a>(&self, job: impl Into<Job<'a>>) -> Result<(), StepError> {
        let job = job.into();
        println!("$ {job}");
        if self.dry_run {
            return Ok(());
        }
        Ok(job.cmd.quiet().run()?)
    }

    /// Runs `cmd` as [`Ci::run`] does, its failure ignored (`|| true`).
    pub fn run_allowing_failure<'a>(&self, job: impl Into<Job<'a>>) {
        let job = job.into();
        println!("$ {job} || true");
        if !self.dry_run {
            let _ignored = job.cmd.quiet().ignore_status().run();
        }
    }

    /// Runs `steps` from the folder `dir` (relative to where the step stands), then comes back.
    pub fn in_dir(
        &self,
        dir: &str,
        steps: impl FnOnce(&Ci) -> Result<(), StepError>,
    ) -> Result<(), StepError> {
        println!("$ cd {dir}");
        let _back = self.sh.push_dir(dir);
        let done = steps(self);
        println!("$ cd -");
        done
    }

    /// Runs `then` when the probe `cmd` succeeds (its output discarded), else `otherwise`. A dry run runs no
    /// probe and plans both branches, as a shell `if` would read.
    pub fn branch(
        &self,
        probe: Cmd<'_>,
        then: impl FnOnce(&Ci) -> Result<(), StepError>,
        otherwise: impl FnOnce(&Ci) -> Result<(), StepError>,
    ) -> Result<(), StepError> {
        if self.dry_run {
            println!("if $ {probe}; then");
            then(self)?;
            println!("else");
            otherwise(self)?;
            println!("fi");
            return Ok(());
        }
        let succeeded = probe
            .quiet()
            .ignore_stdout()
            .ignore_stderr()
            .ignore_status()
            .output()
            .is_ok_and(|out| out.status.success());
        if succeeded {
            then(self)
        } else {
            otherwise(self)
        }
    }

    /// The standard output of `cmd`, which must succeed (empty under `--dry-run`).
    pub fn read<'a>(&self, job: impl Into<Job<'a>>) -> Result<String, StepError> {
        let job = job.into();
        println!("$ {job}");
        if self.dry_run {
            return Ok(String::new());
        }
        Ok(job.cmd.quiet().read()?)
    }

    /// Runs `cmd` with its standard output and error written to `log` instead of the terminal, whatever
    /// its exit status; the caller decides what the status means.
    pub fn run_logged<'a>(&self, job: impl Into<Job<'a>>, log: &str) -> Result<Ran, StepError> {
        let job = job.into();
        println!("$ {job} > {log} 2>&1");
        if self.dry_run {
            return Ok(Ran {
                success: true,
                text: String::new(),
            });
        }
        let out = job.cmd.quiet().ignore_status().output()?;
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        self.write(log, &text)?;
        Ok(Ran {
            success: out.status.success(),
            text,
        })
    }

    /// Writes `contents` to `path` (relative to the root), making its folder.
    pub fn write(&self, path: &str, contents: &str) -> Result<(), StepError> {
        if self.dry_run {
            println!("# write {path}");
            return Ok(());
        }
        let full = self.root().join(path);
        let made = match full.parent() {
            Some(folder) => std::fs::create_dir_all(folder),
            None => Ok(()),
        };
        made.and_then(|()| std::fs::write(&full, contents))
            .map_err(|source| StepError::Write { path: full, source })
    }

    /// Makes the folders `paths` (relative to the root).
    pub fn create_dirs(&self, paths: &[&str]) -> Result<(), StepError> {
        for path in paths {
            println!("$ mkdir -p {path}");
            if !self.dry_run {
                self.sh.create_dir(path)?;
            }
        }
        Ok(())
    }

    /// Prints a line of the step's own (a reading, a result).
    pub fn say(&self, line: &str) {
        println!("{line}");
    }

    /// GiB free on the repository's file system (`df -Pk .`), printed.
    pub fn free_gib(&self) -> Result<u64, StepError> {
        if self.dry_run {
            println!("$ df -Pk .");
            return Ok(u64::MAX);
        }
        let answer = xshell::cmd!(self.sh, "df -Pk .").quiet().read()?;
        let kib = answer
            .lines()
            .nth(1)
            .and_then(|line| line.split_whitespace().nth(3))
            .and_then(|field| field.parse::<u64>().ok())
            .ok_or_else(|| StepError::FreeDisk {
                answer: answer.clone(),
            })?;
        let gib = kib / 1_048_576;
        println!("{gib} GiB free");
        Ok(gib)
    }
}

/// The lines of `text` that start with any of `prefixes`.
pub fn lines_starting<'t>(text: &'t str, prefixes: &[&str]) -> Vec<&'t str> {
    text.lines()
        .filter(|line| prefixes.iter().any(|prefix| line.starts_with(prefix)))
        .collect()
}

/// The last `n` lines of `text`.
pub fn last_lines(text: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}
