//! Helpers shared by the integration tests: hosts, a recorded simulated runtime, trace queries.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use devsim::dispatch::Dispatch;
use devsim::host::HostSpec;
use devsim::runtime::{Recorder, SimRuntime};
use devsim::scenario::load_profile;
use devsim::trace::count;
use devsim::{Arch, TorchBuild};

/// The repository's scenario root.
pub fn scenario_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// A shipped host profile, by name.
pub fn profile(name: &str) -> HostSpec {
    load_profile(&scenario_root().join("hosts").join(format!("{name}.toml")))
        .unwrap_or_else(|e| panic!("profile {name}: {e}"))
}

/// An inline host.
pub fn host(torch: TorchBuild, archs: &[&str]) -> HostSpec {
    let archs: Vec<Arch> = archs
        .iter()
        .map(|a| a.parse().unwrap_or_else(|e| panic!("{e}")))
        .collect();
    HostSpec::new(torch, &archs)
}

/// A simulated runtime over a host, wrapped by a recorder.
pub struct Sim {
    /// The recorder around the simulated runtime.
    pub recorder: Recorder,
}

impl Sim {
    /// A recorded simulated runtime; the host must validate.
    pub fn new(host: HostSpec) -> Self {
        let sim = SimRuntime::new(host).unwrap_or_else(|e| panic!("host: {e}"));
        Self {
            recorder: Recorder::new(Box::new(sim)),
        }
    }

    /// A recorded runtime on a shipped profile, with the given current device.
    pub fn profile(name: &str, current: u32) -> Self {
        let mut spec = profile(name);
        spec.current = current;
        Self::new(spec)
    }

    /// A dispatch context recording into this runtime's trace.
    pub fn dispatch(&self) -> Dispatch<'_> {
        Dispatch::new(&self.recorder, self.recorder.trace().clone())
    }

    /// How many trace entries are named `name`.
    pub fn count(&self, name: &str) -> usize {
        count(&self.recorder.trace().entries(), name)
    }

    /// The names of every trace entry, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.recorder
            .trace()
            .entries()
            .iter()
            .map(|e| e.name())
            .collect()
    }

    /// The thread's current device, read without recording.
    pub fn current(&self) -> u32 {
        self.recorder.inner().get_device().expect("a GPU host")
    }
}

/// Every scenario file of the corpus, or an exit with a message when the folder cannot be listed
/// (for the libtest-mimic harnesses, which have no test to fail yet).
pub fn corpus_files_or_exit() -> Vec<PathBuf> {
    devsim::scenario::find_scenarios(&[scenario_root()]).unwrap_or_else(|error| {
        eprintln!("error: failed to list scenarios: {error}");
        std::process::exit(2);
    })
}

/// A passing scenario the CLI and tool tests vary: a warmup on GPU 1 from a GPU-0 context runs on GPU 1
/// and restores GPU 0.
pub const WARMUP_ON_GPU1: &str = r#"format = 1
description = "a warmup on GPU 1 from a GPU-0 context runs on GPU 1"
tags = ["placement"]

[host]
profile = "h200x2"

[[step]]
action = "warmup"
kernel = "gptq_marlin"
device = "cuda:1"

[step.expect]
ran_on = 1
current_after = 0
"#;

/// Runs `command` to its end: its exit code and everything it printed, standard output then standard error.
pub fn code_and_output(command: &mut std::process::Command) -> (Option<i32>, String) {
    let output = command.output().expect("the command runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), printed)
}
