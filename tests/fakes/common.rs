//! What every topic shares: the located fakes, a `devsim` child through one of them, its JSON read into
//! `devsim_metadata`'s typed output, and the snapshot settings that redact what differs between machines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use devsim::TorchBuild;
use devsim::visible::VISIBLE_DEVICE_VARIABLES;
use devsim_metadata::output::{RunOutput, ScenarioOutput};
use devsim_sys::{cuda, hip};

/// Which fake a child runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fake {
    Cuda,
    Hip,
    /// The HIP fake alone, without the CUDA fake in front of it.
    HipOnly,
}

impl Fake {
    /// The fake's library, as the loader finds it in [`Fakes::folder`].
    pub fn library(self) -> PathBuf {
        let name = match self {
            Fake::Cuda => cuda::LIBRARY,
            Fake::Hip | Fake::HipOnly => hip::LIBRARY,
        };
        fakes().folder(self).join(name)
    }

    /// What `devsim run --live` says it runs through: the build and the fake's resolved path.
    pub fn describes(self) -> String {
        let build = match self {
            Fake::Cuda => "cuda",
            Fake::Hip | Fake::HipOnly => "hip",
        };
        format!("{build} build through {}", self.library().display())
    }

    /// The fake that drives a build's profiles.
    pub fn for_build(build: TorchBuild) -> Option<Self> {
        match build {
            TorchBuild::Cuda => Some(Fake::Cuda),
            TorchBuild::Hip => Some(Fake::Hip),
            TorchBuild::Cpu => None,
        }
    }
}

/// The built fakes, each in its own folder under `target/fake-drivers/`.
pub struct Fakes {
    /// `target/fake-drivers/`.
    root: PathBuf,
    /// Holds `libcuda.so.1` only.
    cuda: PathBuf,
    /// Holds `libamdhip64.so`, and the CUDA fake as `libcuda.so.1`: devsim tries CUDA first, and on a
    /// machine with a real CUDA driver the loader would otherwise find it. The CUDA fake declines a
    /// HIP profile (`cuInit` answers `CUDA_ERROR_NO_DEVICE`), so devsim goes on to HIP.
    hip: PathBuf,
    /// Holds `libamdhip64.so` only.
    hip_only: PathBuf,
}

impl Fakes {
    pub fn folder(&self, fake: Fake) -> &Path {
        match fake {
            Fake::Cuda => &self.cuda,
            Fake::Hip => &self.hip,
            Fake::HipOnly => &self.hip_only,
        }
    }

    /// The folders `scripts/build-fake-drivers` lays out, or why they are not there.
    pub fn locate() -> Result<Self, String> {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target"));
        let root = target.join("fake-drivers");
        let fakes = Self {
            cuda: root.join("cuda"),
            hip: root.join("hip"),
            hip_only: root.join("hip-only"),
            root,
        };
        let needed = [
            fakes.cuda.join(cuda::LIBRARY),
            fakes.hip.join(cuda::LIBRARY),
            fakes.hip.join(hip::LIBRARY),
            fakes.hip_only.join(hip::LIBRARY),
        ];
        match needed.iter().find(|path| !path.is_file()) {
            None => Ok(fakes),
            Some(missing) => Err(format!(
                "the fake drivers are not built ({} is missing): run scripts/build-fake-drivers",
                missing.display()
            )),
        }
    }
}

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The located fakes; only called by trials, which run only when [`Fakes::locate`] succeeded.
pub fn fakes() -> &'static Fakes {
    static FAKES: OnceLock<Fakes> = OnceLock::new();
    FAKES.get_or_init(|| Fakes::locate().unwrap_or_else(|reason| panic!("{reason}")))
}

/// A shipped host profile's path.
pub fn profile_path(name: &str) -> PathBuf {
    repo().join("scenarios/hosts").join(format!("{name}.toml"))
}

/// `devsim` with no fake on its library path, in the repository.
pub fn plain_devsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run devsim")
}

/// Runs `devsim args` with `fake` first on the library path, answering from `host`, with no
/// visible-device variable but those in `env`.
pub fn devsim(fake: Fake, host: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_devsim"));
    command
        .args(args)
        .current_dir(repo())
        .env("LD_LIBRARY_PATH", fakes().folder(fake))
        .env("DEVSIM_FAKE_HOST", host);
    for variable in VISIBLE_DEVICE_VARIABLES {
        command.env_remove(variable);
    }
    command.envs(env.iter().copied());
    command.output().expect("run devsim")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Everything a child printed, stdout then stderr, for assertions and failure messages.
pub fn printed(output: &Output) -> String {
    format!("{}{}", text(&output.stdout), text(&output.stderr))
}

/// A path as a command-line argument.
pub fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// Reads `devsim run --format json` output into its typed document and its reports, by scenario name.
pub fn reports(output: &Output) -> (RunOutput, BTreeMap<String, ScenarioOutput>) {
    let run: RunOutput = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "devsim printed no run document ({error}):\n{}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    let by_name = run
        .scenarios
        .iter()
        .map(|report| (report.name.clone(), report.clone()))
        .collect();
    (run, by_name)
}

/// `text` as a regular expression that matches it literally (the characters `regex::escape` escapes).
fn literal(text: &Path) -> String {
    let mut escaped = String::new();
    for c in text.display().to_string().chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// Snapshot settings that replace what differs between machines, builds and runs: how a live run moves
/// data with `[data path]`, `scratch` (a temporary folder) with `[scratch]`, the fakes' folder with
/// `[fake-drivers]`, the repository with `[repo]`, a probe's timestamp with `[time]` and devsim's version
/// with `[version]`; a run document's `duration_secs` with `[duration]`.
pub fn snapshot_settings(scratch: Option<&Path>) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    // How a live run moves data depends on the build's features (CI also runs `cargo test --features
    // torch`), not on the fake: each of `LiveContext::describe`'s three wordings.
    settings.add_filter(
        concat!(
            r"data through the driver API \(built without the torch feature\)",
            r"|tensors through tch \(libtorch: a \w+ build\)",
            r#"|GPU data through the driver API: libtorch \(a \w+ build\) does not drive the \d+ GPU\(s\) of [^\s"]+"#,
        ),
        "[data path]",
    );
    if let Some(scratch) = scratch {
        settings.add_filter(&literal(scratch), "[scratch]");
    }
    settings.add_filter(&literal(&fakes().root), "[fake-drivers]");
    settings.add_filter(&literal(repo()), "[repo]");
    settings.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "[time]");
    settings.add_filter(r"devsim \d+\.\d+\.\d+", "devsim [version]");
    settings.add_redaction(".scenarios[].duration_secs", "[duration]");
    settings
}
