//! Live replay: running scenarios on the real machine when it satisfies their host, skipping the rest
//! with the reason, and running scenarios with `env` in a child process with those variables set.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use crate::kernel::Catalog;
use crate::runtime::Runtime;
use crate::runtime::live::driver::{DriverProbe, GpuDriver, probe_gpu_driver};
use crate::runtime::live::{LiveRuntime, RealMachine};
use crate::scenario::expect::Mismatch;
use crate::scenario::{Scenario, ScenarioReport, run_scenario};
use crate::visible::VISIBLE_DEVICE_VARIABLES;

/// What the drivers said about this machine, beyond its GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverState {
    /// A driver shows GPUs (listed in [`RealMachine::gpus`]).
    Gpus,
    /// No GPU driver is installed: only CPU scenarios can run.
    NoDriver,
    /// A driver is present but shows no GPU (a visible-device mask hides them all, or the machine has
    /// none of its vendor); the text says which driver and what it answered.
    NoVisibleGpu(String),
    /// A driver is present but failed while devsim read the GPUs; the text says which and how.
    /// `devsim run --live` and `devsim probe` exit with their own code (3) for it.
    Failing(String),
}

/// The real machine plus what is needed to run scenarios on it.
pub struct LiveContext {
    /// The machine as the drivers report it.
    pub machine: RealMachine,
    driver: Option<Arc<dyn GpuDriver>>,
    /// Why no GPU driver loaded, one line per library.
    pub unavailable: Vec<String>,
    /// What the drivers said.
    pub state: DriverState,
    /// Whether data and warmups go through tch for the GPU build.
    gpu_tensors: bool,
    /// The `devsim` executable that runs `env` scenarios; `None` inside such a child.
    child_exe: Option<PathBuf>,
}

impl LiveContext {
    /// Probes the machine. `child_exe` is the `devsim` binary used for scenarios with `env` (pass `None`
    /// inside that child, where the variables are already set).
    pub fn detect(child_exe: Option<PathBuf>) -> Self {
        let (machine, driver, unavailable, state) = match probe_gpu_driver() {
            DriverProbe::Ready(driver) => {
                let driver = Arc::<dyn GpuDriver>::from(driver);
                match RealMachine::read(driver.as_ref(), driver.build()) {
                    Ok(machine) => (machine, Some(driver), Vec::new(), DriverState::Gpus),
                    Err(error) => {
                        let why = format!("read the GPUs of {}: {error}", driver.path());
                        (
                            RealMachine::cpu_only(),
                            None,
                            vec![why.clone()],
                            DriverState::Failing(why),
                        )
                    }
                }
            }
            DriverProbe::NoVisibleGpu {
                build,
                library,
                detail,
            } => {
                let masks = visible_masks();
                let why = format!(
                    "{library} shows no GPU ({detail}){}",
                    if masks.is_empty() {
                        String::new()
                    } else {
                        format!("; visible-device variables: {masks}")
                    }
                );
                let machine = RealMachine {
                    build,
                    library: Some(library),
                    gpus: Vec::new(),
                };
                (
                    machine,
                    None,
                    vec![why.clone()],
                    DriverState::NoVisibleGpu(why),
                )
            }
            DriverProbe::Failing { library, error } => {
                let why = format!("{library} is present but failing: {error}");
                (
                    RealMachine::cpu_only(),
                    None,
                    vec![why.clone()],
                    DriverState::Failing(why),
                )
            }
            DriverProbe::Absent(errors) => (
                RealMachine::cpu_only(),
                None,
                errors.iter().map(ToString::to_string).collect(),
                DriverState::NoDriver,
            ),
        };
        let gpu_tensors = tensors_match(machine.build, machine.gpus.len());
        Self {
            machine,
            driver,
            unavailable,
            state,
            gpu_tensors,
            child_exe,
        }
    }

    /// Whether a driver is present but failing (its own exit code in the CLI).
    pub fn driver_failing(&self) -> bool {
        matches!(self.state, DriverState::Failing(_))
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
        match (&self.state, &self.machine.library) {
            (DriverState::Failing(why), _) => format!(
                "live: the GPU driver is present but failing, so no GPU scenario runs live ({why}); {tensors}"
            ),
            (DriverState::NoVisibleGpu(why), _) => format!(
                "live: {} build, but the driver shows no GPU here, so only CPU and zero-GPU scenarios run live ({why}); {tensors}",
                self.machine.build
            ),
            (_, Some(library)) => {
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
            (_, None) => format!(
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
        if let Err(reason) = self.runnable_here(scenario) {
            return ScenarioReport::skipped(scenario, reason);
        }
        let runtime = match (&self.driver, scenario.host.torch) {
            (Some(driver), build) if build != crate::vocab::TorchBuild::Cpu => {
                LiveRuntime::new(Arc::clone(driver), self.gpu_tensors)
            }
            (None, build) if build != crate::vocab::TorchBuild::Cpu => {
                // The driver shows no GPU: a runtime of that build with none.
                LiveRuntime::without_gpus(build)
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

impl LiveContext {
    /// `Ok` when `scenario` runs in this process on this machine, else why not. A failing driver
    /// runs no GPU scenario.
    pub fn runnable_here(&self, scenario: &Scenario) -> Result<(), String> {
        if let DriverState::Failing(why) = &self.state {
            if scenario.host.torch != crate::vocab::TorchBuild::Cpu {
                return Err(format!("the GPU driver is failing: {why}"));
            }
        }
        self.machine.satisfies(&scenario.host)
    }
}

impl LiveContext {
    /// Decides, without running it, whether `scenario` will run live here: in this process, or in
    /// the child [`LiveContext::run`] starts (an `env` scenario, or a smaller host on a bigger
    /// machine). `Err` says why not. Test harnesses call this at list time, so a scenario that cannot
    /// run is listed as ignored rather than reported as passing.
    pub fn plan(&self, scenario: &Scenario) -> Result<(), String> {
        let host = &scenario.host;
        if self.child_exe.is_some() && host.torch != crate::vocab::TorchBuild::Cpu {
            if !host.env.is_empty() {
                return self.in_child_with(&host.env, scenario);
            }
            if let Some((variable, value)) = self.machine.restrict_to(host) {
                let env = std::collections::BTreeMap::from([(variable.to_string(), value)]);
                return self.in_child_with(&env, scenario);
            }
        }
        self.runnable_here(scenario)
    }

    /// Whether `scenario` runs in a child whose visible-device variables are `env`: the machine that
    /// child sees is this one's GPUs after `env` (predictable only when this process has no mask of
    /// its own, since the child drops it).
    fn in_child_with(
        &self,
        env: &std::collections::BTreeMap<String, String>,
        scenario: &Scenario,
    ) -> Result<(), String> {
        if let DriverState::Failing(why) = &self.state {
            return Err(format!("the GPU driver is failing: {why}"));
        }
        if !visible_masks().is_empty() || self.machine.gpus.is_empty() {
            // The child sees GPUs this process cannot; only the scenario's own build can be checked.
            return self.machine.satisfies(&scenario.host).or_else(|reason| {
                if reason.starts_with("wrong vendor") {
                    Err(reason)
                } else {
                    Ok(())
                }
            });
        }
        let archs: Vec<crate::vocab::Arch> = self
            .machine
            .gpus
            .iter()
            .map(|gpu| gpu.arch.clone())
            .collect();
        let mut whole = crate::host::HostSpec::new(self.machine.build, &archs);
        whole.env = env.clone();
        let visible = whole.visible().map_err(|error| error.to_string())?;
        let child = RealMachine {
            build: self.machine.build,
            library: self.machine.library.clone(),
            gpus: visible
                .iter()
                .filter_map(|physical| self.machine.gpus.get(*physical).cloned())
                .collect(),
        };
        child.satisfies(&scenario.host)
    }
}

/// This process's visible-device variables, as `NAME="value"` pairs.
fn visible_masks() -> String {
    VISIBLE_DEVICE_VARIABLES
        .iter()
        .filter_map(|name| {
            std::env::var(name)
                .ok()
                .map(|value| format!("{name}={value:?}"))
        })
        .collect::<Vec<_>>()
        .join(" ")
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
        .and_then(|value| value.get("scenarios")?.as_array().cloned())
        .and_then(|reports| {
            // A matrix file reports every case; this scenario is the case of the same name.
            reports
                .into_iter()
                .filter_map(|value| serde_json::from_value::<ScenarioReport>(value).ok())
                .find(|report| report.name == scenario.name)
        });
    match report {
        Some(report) => report,
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
