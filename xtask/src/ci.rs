//! What a CI step runs its commands through: [`Ci`], a shell rooted at the repository with the build settings
//! a fresh clone wants, which prints instead of running under `--dry-run`; and [`StepError`], how a step fails.
//!
//! A step writes to the terminal when it runs alone, or to its own log when it runs beside others
//! ([`Ci::logged`]): each command's output and each line the step says go there in the order they happen, and
//! the scheduler prints the log whole when the step ends, so the output of two steps never interleaves.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;

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
    /// A command could not be started, or its input not written, from a step that runs beside others.
    #[error("run `{command}`: {source}")]
    Spawn {
        /// The command, as printed.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// A command of a step that runs beside others exited non-zero (its output is in the step's log).
    #[error("run `{command}`: it exited with {status}")]
    Exit {
        /// The command, as printed.
        command: String,
        /// How it ended.
        status: ExitStatus,
    },
    /// The step's log could not be written.
    #[error("write the step's log: {0}")]
    Log(std::io::Error),
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
    log: Option<Mutex<File>>,
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
    stdin: Option<Vec<u8>>,
}

impl<'a> Job<'a> {
    /// Gives the command `key=value`.
    pub fn env(self, key: &str, value: impl AsRef<OsStr>) -> Job<'a> {
        let mut shown = self.shown;
        shown.push(format!("{key}={}", value.as_ref().to_string_lossy()));
        Job {
            cmd: self.cmd.env(key, value),
            shown,
            stdin: self.stdin,
        }
    }

    /// Lets it read `stdin`.
    pub fn stdin(self, stdin: impl AsRef<[u8]>) -> Job<'a> {
        Job {
            stdin: Some(stdin.as_ref().to_vec()),
            ..self
        }
    }

    /// The command for the terminal: xshell's, quiet (the step prints it), with its input.
    fn terminal(self) -> Cmd<'a> {
        let cmd = self.cmd.quiet();
        match self.stdin {
            Some(bytes) => cmd.stdin(bytes),
            None => cmd,
        }
    }
}

impl<'a> From<Cmd<'a>> for Job<'a> {
    fn from(cmd: Cmd<'a>) -> Job<'a> {
        Job {
            cmd,
            shown: Vec::new(),
            stdin: None,
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
    /// A shell at `root` with CI's build settings: no incremental builds, no debug info in debug
    /// builds, no pip wheel cache holding a second copy of torch, `CI=true`; with `torch_env`, inside the
    /// torch venv (`.venv-torch`: `VIRTUAL_ENV`, `PATH` and `LIBTORCH_USE_PYTORCH`).
    pub fn new(root: &Path, torch_env: bool, dry_run: bool) -> Result<Ci, StepError> {
        let sh = Shell::new()?;
        sh.change_dir(root);
        for (key, value) in [
            ("CARGO_INCREMENTAL", "0"),
            ("CARGO_PROFILE_DEV_DEBUG", "0"),
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
            log: None,
        })
    }

    /// The same shell writing to `log` instead of the terminal: every line it says and every command's
    /// output (a [`Ci::read`]'s standard output excepted, which the step reads).
    pub fn logged(self, log: File) -> Ci {
        Ci {
            log: Some(Mutex::new(log)),
            ..self
        }
    }

    /// Runs `job` to its end with its output where the step's output goes; its exit status, checked when
    /// `check`. With `capture`, its standard output is read instead and given back.
    fn execute(
        &self,
        job: Job<'_>,
        check: bool,
        capture: bool,
    ) -> Result<(ExitStatus, String), StepError> {
        let Some(log) = &self.log else {
            let cmd = job.terminal();
            let cmd = if check { cmd } else { cmd.ignore_status() };
            if capture {
                let out = cmd.output()?;
                return Ok((
                    out.status,
                    String::from_utf8_lossy(&out.stdout).into_owned(),
                ));
            }
            cmd.run()?;
            return Ok((ExitStatus::default(), String::new()));
        };
        let command = job.to_string();
        let spawn_error = |source| StepError::Spawn {
            command: command.clone(),
            source,
        };
        let file = log
            .lock()
            .map_err(|_| StepError::Log(std::io::Error::other("a step's log lock was poisoned")))?
            .try_clone()
            .map_err(StepError::Log)?;
        let mut std_cmd = Command::from(job.cmd);
        std_cmd
            .stderr(file.try_clone().map_err(StepError::Log)?)
            .stdout(if capture {
                Stdio::piped()
            } else {
                Stdio::from(file)
            })
            .stdin(if job.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        let mut child = std_cmd.spawn().map_err(spawn_error)?;
        if let (Some(bytes), Some(mut stdin)) = (job.stdin, child.stdin.take()) {
            stdin.write_all(&bytes).map_err(spawn_error)?;
        }
        let out = child.wait_with_output().map_err(spawn_error)?;
        if check && !out.status.success() {
            return Err(StepError::Exit {
                command,
                status: out.status,
            });
        }
        Ok((
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ))
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
        self.say(&format!("$ {job}"));
        if self.dry_run {
            return Ok(());
        }
        self.execute(job, true, false).map(drop)
    }

    /// Runs `cmd` as [`Ci::run`] does, its failure ignored (`|| true`).
    pub fn run_allowing_failure<'a>(&self, job: impl Into<Job<'a>>) {
        let job = job.into();
        self.say(&format!("$ {job} || true"));
        if !self.dry_run {
            let _ignored = self.execute(job, false, false);
        }
    }

    /// Runs `steps` from the folder `dir` (relative to where the step stands), then comes back.
    pub fn in_dir(
        &self,
        dir: &str,
        steps: impl FnOnce(&Ci) -> Result<(), StepError>,
    ) -> Result<(), StepError> {
        self.say(&format!("$ cd {dir}"));
        let _back = self.sh.push_dir(dir);
        let done = steps(self);
        self.say("$ cd -");
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
            self.say(&format!("if $ {probe}; then"));
            then(self)?;
            self.say("else");
            otherwise(self)?;
            self.say("fi");
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
        self.say(&format!("$ {job}"));
        if self.dry_run {
            return Ok(String::new());
        }
        let (_, stdout) = self.execute(job, true, true)?;
        // as xshell's read: without the final newline
        Ok(stdout.strip_suffix('\n').unwrap_or(&stdout).to_owned())
    }

    /// Runs `cmd` with its standard output and error written to `log` instead of the terminal, whatever
    /// its exit status; the caller decides what the status means.
    pub fn run_logged<'a>(&self, job: impl Into<Job<'a>>, log: &str) -> Result<Ran, StepError> {
        let job = job.into();
        self.say(&format!("$ {job} > {log} 2>&1"));
        if self.dry_run {
            return Ok(Ran {
                success: true,
                text: String::new(),
            });
        }
        let out = job.terminal().ignore_status().output()?;
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
            self.say(&format!("# write {path}"));
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
            self.say(&format!("$ mkdir -p {path}"));
            if !self.dry_run {
                self.sh.create_dir(path)?;
            }
        }
        Ok(())
    }

    /// Prints a line of the step's own (a reading, a result).
    pub fn say(&self, line: &str) {
        match &self.log {
            // a log that cannot be written loses the line, not the step: its commands still say how it ends
            Some(log) => {
                if let Ok(mut file) = log.lock() {
                    let _lost = writeln!(file, "{line}");
                }
            }
            None => println!("{line}"),
        }
    }

    /// GiB free on the repository's file system (`df -Pk .`), printed.
    pub fn free_gib(&self) -> Result<u64, StepError> {
        if self.dry_run {
            self.say("$ df -Pk .");
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
        self.say(&format!("{gib} GiB free"));
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
