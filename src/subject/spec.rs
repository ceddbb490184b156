//! How to start an out-of-process subject: from a command line (`--subject 'CMD ARGS'`) or a subject file
//! (`--subject path/to/x.toml`).

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::subject::SubjectError;

/// The per-message timeout when none is given.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// The handshake timeout when none is given (imports can be slow).
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(120);

/// Everything needed to start a subject process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectSpec {
    /// How reports name the subject until its handshake names it.
    pub name: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The working folder, if not devsim's.
    pub cwd: Option<PathBuf>,
    /// Variables added to the subject's environment.
    pub env: BTreeMap<String, String>,
    /// How long devsim waits for each answer.
    pub step_timeout: Duration,
    /// How long devsim waits for the handshake.
    pub start_timeout: Duration,
    /// At most this many processes of the subject at once (`max_jobs`; none: as many as `--jobs`).
    pub max_jobs: Option<NonZeroUsize>,
    /// The project's source tree to judge (`source`, or `--subject-src`), absolute: the subject gets it as
    /// `DEVSIM_SUBJECT_SRC`, first on its `PYTHONPATH`.
    pub source: Option<PathBuf>,
    /// The live record a simulated run marks its findings with (`live_record`, relative to the subject file;
    /// `--live-record` wins), `crate::live_record`.
    pub live_record: Option<PathBuf>,
}

/// The variable that tells a subject which source tree of its project to judge.
pub const SOURCE_VARIABLE: &str = "DEVSIM_SUBJECT_SRC";

/// A subject file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubjectFile {
    name: String,
    command: Vec<String>,
    cwd: Option<PathBuf>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    step_timeout_s: Option<u64>,
    start_timeout_s: Option<u64>,
    max_jobs: Option<NonZeroUsize>,
    #[serde(default)]
    source: Option<PathBuf>,
    #[serde(default)]
    live_record: Option<PathBuf>,
}

/// `path` made absolute against devsim's working folder, without resolving links.
fn absolute(path: &Path) -> Result<PathBuf, SubjectError> {
    std::path::absolute(path).map_err(|error| SubjectError::Source {
        path: path.to_path_buf(),
        message: error.to_string(),
    })
}

impl SubjectSpec {
    /// A subject started by `command` (program first), named after the program, with default timeouts.
    pub fn from_command(command: Vec<String>) -> Result<Self, SubjectError> {
        let name = command
            .first()
            .map(|program| {
                Path::new(program)
                    .file_name()
                    .map_or(program.clone(), |n| n.to_string_lossy().into_owned())
            })
            .ok_or_else(|| SubjectError::EmptyCommand {
                subject: "(unnamed)".into(),
            })?;
        Ok(Self {
            name,
            command,
            cwd: None,
            env: BTreeMap::new(),
            step_timeout: DEFAULT_STEP_TIMEOUT,
            start_timeout: DEFAULT_START_TIMEOUT,
            max_jobs: None,
            source: None,
            live_record: None,
        })
    }

    /// Reads `--subject`: an existing `.toml` file is a subject file, anything else a command line split
    /// like a POSIX shell would.
    pub fn parse(argument: &str) -> Result<Self, SubjectError> {
        let path = Path::new(argument);
        if path.extension().is_some_and(|e| e == "toml") && path.is_file() {
            return Self::load(path);
        }
        let words = shell_words::split(argument).map_err(|error| SubjectError::CommandLine {
            command: argument.to_string(),
            message: error.to_string(),
        })?;
        Self::from_command(words)
    }

    /// Judges the project's source tree at `folder` instead of the subject file's `source` (`--subject-src`):
    /// it must be a folder; relative to devsim's working folder.
    pub fn with_source(mut self, folder: &Path) -> Result<Self, SubjectError> {
        if !folder.is_dir() {
            return Err(SubjectError::Source {
                path: folder.to_path_buf(),
                message: "expected a folder".into(),
            });
        }
        self.source = Some(absolute(folder)?);
        Ok(self)
    }

    /// The variables the subject process gets on top of devsim's own environment: the file's `env`, and
    /// with a source tree `DEVSIM_SUBJECT_SRC` and that tree first on `PYTHONPATH` (before the file's
    /// `PYTHONPATH`, or else devsim's own).
    pub fn environment(&self) -> BTreeMap<String, String> {
        let mut env = self.env.clone();
        if let Some(source) = &self.source {
            let source = source.display().to_string();
            let rest = env
                .get("PYTHONPATH")
                .cloned()
                .or_else(|| std::env::var("PYTHONPATH").ok())
                .filter(|rest| !rest.is_empty());
            let path = match rest {
                Some(rest) => format!("{source}:{rest}"),
                None => source.clone(),
            };
            env.insert("PYTHONPATH".into(), path);
            env.insert(SOURCE_VARIABLE.into(), source);
        }
        env
    }

    /// Loads a subject file; `cwd`, `source` and `live_record` are relative to the file's folder, which is also the
    /// default `cwd`.
    pub fn load(path: &Path) -> Result<Self, SubjectError> {
        let text = crate::scenario::load::corpus::read_in_folder(path).map_err(|error| {
            SubjectError::RefusedFile {
                path: path.to_path_buf(),
                message: error.message,
            }
        })?;
        let file: SubjectFile = toml::from_str(&text).map_err(|error| {
            let line = error.span().map_or(1, |span| {
                let before = &text.as_bytes()[..span.start.min(text.len())];
                before.iter().filter(|b| **b == b'\n').count() + 1
            });
            SubjectError::ParseFile {
                path: path.to_path_buf(),
                line,
                message: error.message().to_string(),
            }
        })?;
        if file.command.is_empty() {
            return Err(SubjectError::EmptyCommand { subject: file.name });
        }
        let folder = path.parent().unwrap_or(Path::new("."));
        let folder = if folder.as_os_str().is_empty() {
            Path::new(".")
        } else {
            folder
        };
        Ok(Self {
            name: file.name,
            command: file.command,
            cwd: Some(match file.cwd {
                Some(cwd) => folder.join(cwd),
                None => folder.to_path_buf(),
            }),
            env: file.env,
            step_timeout: file
                .step_timeout_s
                .map_or(DEFAULT_STEP_TIMEOUT, Duration::from_secs),
            start_timeout: file
                .start_timeout_s
                .map_or(DEFAULT_START_TIMEOUT, Duration::from_secs),
            max_jobs: file.max_jobs,
            source: file
                .source
                .map(|source| absolute(&folder.join(source)))
                .transpose()?,
            live_record: file.live_record.map(|record| folder.join(record)),
        })
    }

    /// Reads `--subject` as [`SubjectSpec::parse`] does, then `--subject-src` if given.
    pub fn parse_with_source(argument: &str, source: Option<&Path>) -> Result<Self, SubjectError> {
        let spec = Self::parse(argument)?;
        match source {
            Some(folder) => spec.with_source(folder),
            None => Ok(spec),
        }
    }

    /// The command line, for messages.
    pub fn command_line(&self) -> String {
        shell_words::join(&self.command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_is_split_like_a_shell_and_named_after_its_program() {
        let spec = SubjectSpec::parse("/usr/bin/python3 -m 'my subject'").expect("parses");
        assert_eq!(spec.command, ["/usr/bin/python3", "-m", "my subject"]);
        assert_eq!(spec.name, "python3");
        assert_eq!(spec.step_timeout, DEFAULT_STEP_TIMEOUT);
    }

    #[test]
    fn an_unclosed_quote_is_a_command_line_error() {
        let error = SubjectSpec::parse("python3 -c 'print(1)").expect_err("refused");
        assert!(
            error.to_string().starts_with("split subject command"),
            "{error}"
        );
    }

    #[test]
    fn a_subject_file_resolves_cwd_and_live_record_beside_itself_and_reports_a_bad_key_with_its_line()
     {
        let dir = tempfile::tempdir().expect("scratch");
        let good = dir.path().join("good.toml");
        std::fs::write(
            &good,
            "name = \"x\"\ncommand = [\"python3\", \"-m\", \"x\"]\ncwd = \"sub\"\nenv = { A = \"1\" }\nstep_timeout_s = 2\nlive_record = \"x/live.toml\"\n",
        )
        .expect("write");
        let spec = SubjectSpec::load(&good).expect("loads");
        assert_eq!(spec.cwd, Some(dir.path().join("sub")));
        assert_eq!(spec.live_record, Some(dir.path().join("x/live.toml")));
        assert_eq!(spec.step_timeout, Duration::from_secs(2));
        assert_eq!(spec.start_timeout, DEFAULT_START_TIMEOUT);
        assert_eq!(spec.env.get("A").map(String::as_str), Some("1"));

        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "name = \"x\"\ncommand = [\"x\"]\ntimeout = 3\n").expect("write");
        let error = SubjectSpec::load(&bad).expect_err("refused");
        let text = error.to_string();
        assert!(text.contains("bad.toml:3:"), "{text}");
        assert!(text.contains("timeout"), "{text}");
    }

    #[test]
    fn a_source_tree_is_absolute_first_on_pythonpath_and_overridden_by_the_flag() {
        let dir = tempfile::tempdir().expect("scratch");
        let own = dir.path().join("own");
        std::fs::create_dir(&own).expect("mkdir");
        let file = dir.path().join("s.toml");
        std::fs::write(
            &file,
            "name = \"x\"\ncommand = [\"python3\"]\nsource = \"../src\"\nenv = { PYTHONPATH = \"a:b\" }\n",
        )
        .expect("write");
        let spec = SubjectSpec::load(&file).expect("loads");
        let from_file = dir.path().join("../src");
        assert_eq!(spec.source.as_deref(), Some(from_file.as_path()));
        let env = spec.environment();
        let expected = format!("{}:a:b", from_file.display());
        assert_eq!(env.get("PYTHONPATH"), Some(&expected));
        assert_eq!(
            env.get(SOURCE_VARIABLE).map(String::as_str),
            from_file.to_str()
        );

        let spec = spec.with_source(&own).expect("a folder");
        let env = spec.environment();
        assert_eq!(env.get(SOURCE_VARIABLE).map(String::as_str), own.to_str());
        assert_eq!(
            env.get("PYTHONPATH"),
            Some(&format!("{}:a:b", own.display()))
        );

        let missing = dir.path().join("missing");
        let error = SubjectSpec::load(&file)
            .expect("loads")
            .with_source(&missing)
            .expect_err("no such folder");
        assert!(
            error.to_string().starts_with("use subject source tree"),
            "{error}"
        );
        // Without a source, the environment is the file's, untouched.
        let plain = SubjectSpec::parse("python3 -m x").expect("parses");
        assert!(plain.environment().is_empty());
    }
}
