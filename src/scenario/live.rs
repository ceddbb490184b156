//! Live replay: running scenarios on the real machine when it satisfies their host, skipping the rest
//! with the reason, and running scenarios with `env` in a child process with those variables set.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use crate::kernel::Catalog;
use crate::runtime::Runtime;
use crate::runtime::live::driver::{GpuDriver, load_gpu_driver};
use crate::runtime::live::{LiveRuntime, RealMachine};
use crate::scenario::expect::Mismatch;
use crate::scenario::{Scenario, ScenarioReport, run_scenario};
use crate::visible::VISIBLE_DEVICE_VARIABLES;

/// The real machine plus what is needed to run scenarios on it.
pub struct LiveContext {
    /// The machine as the drivers report it.
    pub machine: RealMachine,
    driver: Option<Arc<dyn GpuDriver>>,
    /// Why no GPU driver loaded, one line per library.
    pub unavailable: Vec<String>,
    /// Whether data and warmups go through tch for the GPU build.
    gpu_tensors: bool,
    /// The `devsim` executable that runs `env` scenarios; `None` inside such a child.
    child_exe: Option<PathBuf>,
}

impl LiveContext {
    /// Probes the machine. `child_exe` is the `devsim` binary used for scenarios with `env` (pass `None`
    /// inside that child, where the variables are already set).
    pub fn detect(child_exe: Option<PathBuf>) -> Self {
        let (driver, unavailable) = match load_gpu_driver() {
            Ok(driver) => (Some(Arc::<dyn GpuDriver>::from(driver)), Vec::new()),
            Err(errors) => (None, errors.iter().map(ToString::to_string).collect()),
        };
        let (machine, driver, unavailable) = match driver {
            None => (RealMachine::cpu_only(), None, unavailable),
            Some(driver) => match RealMachine::read(driver.as_ref(), driver.build()) {
                Ok(machine) => (machine, Some(driver), unavailable),
                Err(error) => (
                    RealMachine::cpu_only(),
                    None,
                    vec![format!("read the GPUs of {}: {error}", driver.path())],
                ),
            },
        };
        let gpu_tensors = tensors_match(machine.build, machine.gpus.len());
        Self {
            machine,
            driver,
            unavailable,
            gpu_tensors,
            child_exe,
        }
    }

    /// One line saying what runs live here.
    pub fn describe(&self) -> String {
        let tensors = match libtorch_build() {
            Some(build) if self.gpu_tensors || self.machine.gpus.is_empty() => {
                format!("tensors through tch (libtorch: a {build} build)")
            }
            Some(build) => format!(
                "GPU data through the driver API: libtorch (a {build} build) does not drive the {} GPU(s) of {}",
                self.machine.gpus.len(),
                self.machine.library.as_deref().unwrap_or("the driver")
            ),
            None => "data through the driver API (built without the torch feature)".to_string(),
        };
        match &self.machine.library {
            Some(library) => {
                let gpus: Vec<String> = self
                    .machine
                    .gpus
                    .iter()
                    .map(|g| format!("{} ({})", g.name, g.arch))
                    .collect();
                format!(
                    "live: {} build through {library}: {} GPU(s) [{}]; {tensors}",
                    self.machine.build,
                    gpus.len(),
                    gpus.join(", ")
                )
            }
            None => format!(
                "live: no GPU driver on this machine, so only CPU scenarios run live ({}); {tensors}",
                self.unavailable.join("; ")
            ),
        }
    }

    /// Runs one scenario live, or reports it skipped with the reason.
    pub fn run(&self, scenario: &Scenario, catalog: &Catalog) -> ScenarioReport {
        if let Some(reason) = scenario.host.views_differ() {
            return ScenarioReport::skipped(scenario, reason);
        }
        if let Some(exe) = &self.child_exe {
            if !scenario.host.env.is_empty() {
                return run_in_child(exe, scenario, &scenario.host.env);
            }
            // A bigger machine than the scenario's: show the child only the GPUs the scenario has.
            if let Some((variable, value)) = self.machine.restrict_to(&scenario.host) {
                let env = std::collections::BTreeMap::from([(variable.to_string(), value)]);
                return run_in_child(exe, scenario, &env);
            }
        }
        if let Err(reason) = self.machine.satisfies(&scenario.host) {
            return ScenarioReport::skipped(scenario, reason);
        }
        let runtime = match (&self.driver, scenario.host.torch) {
            (Some(driver), build) if build != crate::vocab::TorchBuild::Cpu => {
                LiveRuntime::new(Arc::clone(driver), self.gpu_tensors)
            }
            _ => LiveRuntime::cpu_only(cfg!(feature = "torch")),
        };
        if runtime.device_count().is_ok_and(|n| n > 0) {
            if let Err(error) = runtime.set_device(scenario.host.current) {
                return failed(scenario, "current device at start", error.to_string());
            }
        }
        run_scenario(scenario, catalog, Box::new(runtime))
    }
}

/// The build of the libtorch this process loaded (read from the mapped libraries), with the `torch` feature.
fn libtorch_build() -> Option<crate::vocab::TorchBuild> {
    #[cfg(feature = "torch")]
    {
        Some(crate::runtime::live::torch::loaded_build())
    }
    #[cfg(not(feature = "torch"))]
    {
        None
    }
}

/// Whether the loaded libtorch drives the same GPUs as the driver (tensors can go through tch).
fn tensors_match(build: crate::vocab::TorchBuild, gpus: usize) -> bool {
    #[cfg(feature = "torch")]
    {
        crate::runtime::live::torch::drives(build, gpus)
    }
    #[cfg(not(feature = "torch"))]
    {
        let _ = (build, gpus);
        false
    }
}

fn failed(scenario: &Scenario, key: &str, actual: String) -> ScenarioReport {
    ScenarioReport::failed(
        scenario,
        Mismatch {
            key: key.into(),
            expected: "a live run".into(),
            actual,
        },
    )
}

/// Runs `devsim run --live --child --format json FILE` with only the visible-device variables changed (the
/// scenario's own, or the mask narrowing a bigger machine), and reads its report back.
fn run_in_child(
    exe: &PathBuf,
    scenario: &Scenario,
    env: &std::collections::BTreeMap<String, String>,
) -> ScenarioReport {
    let mut command = Command::new(exe);
    command
        .args(["run", "--live", "--child", "--format", "json"])
        .arg(&scenario.path);
    for variable in VISIBLE_DEVICE_VARIABLES {
        command.env_remove(variable);
    }
    // The loader refuses every other key, so only the three visible-device variables can be set here.
    for (key, value) in env {
        if VISIBLE_DEVICE_VARIABLES.contains(&key.as_str()) {
            command.env(key, value);
        }
    }
    let output = match command.output() {
        Ok(output) => output,
        Err(error) => {
            return failed(
                scenario,
                "child process",
                format!("start {}: {error}", exe.display()),
            );
        }
    };
    let parsed: Result<serde_json::Value, _> = serde_json::from_slice(&output.stdout);
    let report = parsed
        .ok()
        .and_then(|value| value.get("scenarios")?.get(0).cloned())
        .and_then(|value| serde_json::from_value::<ScenarioReport>(value).ok());
    match report {
        Some(mut report) => {
            report.name = scenario.name.clone();
            report
        }
        None => failed(
            scenario,
            "child process",
            format!(
                "no report (exit {:?}): {}",
                output.status.code(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ),
    }
}
