//! Live replay: running scenarios on the real machine when it satisfies their host, skipping the rest
//! with the reason, and running scenarios with `env` in a long-lived worker process with those
//! variables set (one per distinct set of variables, [`worker`]).

// Not part of the public API: live replay's worker processes, public only for devsim's own tests.
#[doc(hidden)]
pub mod worker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::kernel::Catalog;
use crate::runner::{HarnessFault, ScenarioReport, Skip, run_scenario};
use crate::runtime::Runtime;
use crate::runtime::live::driver::{DriverProbe, GpuDriver, probe_gpu_driver};
use crate::runtime::live::machine::Unmet;
use crate::runtime::live::{LiveRuntime, RealMachine};
use crate::scenario::Scenario;
use crate::visible::{VISIBLE_DEVICE_VARIABLES, runtime_rejects};
use worker::WorkerPool;

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
    /// The driver's init call failed under this process's visible-device variables: the driver
    /// rejects the mask (e.g. `CUDA_VISIBLE_DEVICES=0,0`), which says nothing about the driver itself.
    MaskRejected(String),
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
    /// The workers that run `env` scenarios; `None` inside such a worker.
    workers: Option<WorkerPool>,
}

impl LiveContext {
    /// Probes the machine. `child_exe` is the `devsim` binary whose `live-worker` runs scenarios with
    /// `env` (pass `None` inside that worker, where the variables are already set).
    pub fn detect(child_exe: Option<PathBuf>) -> Self {
        let (machine, driver, unavailable, state) = match probe_gpu_driver() {
            DriverProbe::Ready(driver) => {
                let driver = Arc::<dyn GpuDriver>::from(driver);
                match RealMachine::read(driver.as_ref(), driver.build()) {
                    Ok(machine) => (machine, Some(driver), Vec::new(), DriverState::Gpus),
                    Err(error) => unusable(
                        RealMachine::cpu_only(),
                        format!("read the GPUs of {}: {error}", driver.path()),
                        DriverState::Failing,
                    ),
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
                unusable(
                    RealMachine::without_gpus(build, library),
                    why,
                    DriverState::NoVisibleGpu,
                )
            }
            DriverProbe::Failing {
                library,
                error,
                build,
                at_init: true,
            } if !visible_masks().is_empty() => unusable(
                RealMachine::without_gpus(build, library),
                format!(
                    "the driver rejects the visible-device mask {}: {error}",
                    visible_masks()
                ),
                DriverState::MaskRejected,
            ),
            DriverProbe::Failing { library, error, .. } => unusable(
                RealMachine::cpu_only(),
                format!("{library} is present but failing: {error}"),
                DriverState::Failing,
            ),
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
            workers: child_exe.map(WorkerPool::new),
        }
    }

    /// Whether [`LiveContext::run`] sends `scenario` to a worker (its own `env`, or a smaller host
    /// than this machine) rather than running it in this process.
    pub fn runs_in_worker(&self, scenario: &Scenario) -> bool {
        self.workers.is_some()
            && scenario.host.views_differ().is_none()
            && (!scenario.host.env.is_empty() || self.machine.restrict_to(&scenario.host).is_some())
    }

    /// The worker pool, when this process starts workers (for `bench --live`'s counts).
    pub fn workers(&self) -> Option<&WorkerPool> {
        self.workers.as_ref()
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
            (DriverState::MaskRejected(why), _) => format!(
                "live: {} build, but {why}, so only CPU scenarios run live; {tensors}",
                self.machine.build
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
                // A fake is never mistaken for the real thing: the header says so first.
                let fake = if self.machine.fake {
                    "FAKE DRIVER (devsim's stand-in, no real GPU): "
                } else {
                    ""
                };
                format!(
                    "live: {fake}{} build through {library}: {} GPU(s) [{}]; {tensors}",
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
            return ScenarioReport::skipped(scenario, Skip::ViewsDiffer(reason));
        }
        if let Some(workers) = &self.workers {
            // What a worker would see is predicted here (the same prediction the harness lists by):
            // a scenario it could not run is skipped without starting a worker for it.
            if let Err(reason) = self.plan(scenario) {
                return ScenarioReport::skipped(scenario, reason);
            }
            if !scenario.host.env.is_empty() {
                return workers.run(scenario, &self.live_env(scenario));
            }
            // A bigger machine than the scenario's: show the worker only the GPUs the scenario has.
            if let Some((variable, value)) = self.machine.restrict_to(&scenario.host) {
                let env = BTreeMap::from([(variable.to_string(), value)]);
                return workers.run(scenario, &env);
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
                return errored(
                    scenario,
                    "make the scenario's current device current at start",
                    error.to_string(),
                );
            }
        }
        run_scenario(scenario, catalog, Box::new(runtime))
    }
}

impl LiveContext {
    /// `Ok` when `scenario` runs in this process on this machine, else why not. A failing driver
    /// runs no GPU scenario.
    pub fn runnable_here(&self, scenario: &Scenario) -> Result<(), Skip> {
        if scenario.host.torch != crate::vocab::TorchBuild::Cpu {
            match &self.state {
                DriverState::Failing(why) => return Err(Skip::DriverFailing(why.clone())),
                DriverState::MaskRejected(why) => return Err(Skip::MaskRejected(why.clone())),
                _ => {}
            }
        }
        Ok(self.machine.satisfies(&scenario.host)?)
    }
}

impl LiveContext {
    /// Decides, without running it, whether `scenario` will run live here: in this process, or in
    /// the child [`LiveContext::run`] starts (an `env` scenario, or a smaller host on a bigger
    /// machine). `Err` says why not. Test harnesses call this at list time, so a scenario that cannot
    /// run is listed as ignored rather than reported as passing.
    pub fn plan(&self, scenario: &Scenario) -> Result<(), Skip> {
        let host = &scenario.host;
        if self.workers.is_some() && host.torch != crate::vocab::TorchBuild::Cpu {
            if !host.env.is_empty() {
                return self.in_child_with(&self.live_env(scenario), scenario);
            }
            if let Some((variable, value)) = self.machine.restrict_to(host) {
                let env = BTreeMap::from([(variable.to_string(), value)]);
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
        env: &BTreeMap<String, String>,
        scenario: &Scenario,
    ) -> Result<(), Skip> {
        if let DriverState::Failing(why) = &self.state {
            return Err(Skip::DriverFailing(why.clone()));
        }
        if let Some(why) = runtime_rejects(self.machine.build, env) {
            return Err(Skip::MaskRejected(format!(
                "the driver rejects the visible-device mask: {why}"
            )));
        }
        if !visible_masks().is_empty() || self.machine.gpus.is_empty() {
            // The child sees GPUs this process cannot; only the scenario's own build can be checked.
            return match self.machine.satisfies(&scenario.host) {
                Err(unmet @ Unmet::WrongBuild { .. }) => Err(unmet.into()),
                _ => Ok(()),
            };
        }
        let mut whole = self.machine.host();
        whole.env = env.clone();
        let visible = whole
            .visible()
            .map_err(|error| Skip::Machine(Unmet::Visible(error.to_string())))?;
        let child = RealMachine {
            build: self.machine.build,
            library: self.machine.library.clone(),
            fake: self.machine.fake,
            gpus: visible
                .iter()
                .filter_map(|physical| self.machine.gpus.get(*physical).cloned())
                .collect(),
        };
        Ok(child.satisfies(&scenario.host)?)
    }
}

impl LiveContext {
    /// The scenario's visible-device variables as its worker gets them: every UUID entry that names
    /// one of the scenario's GPUs (a profile UUID, or a prefix of one) is rewritten to name the real
    /// GPU at the same physical position, as long a prefix of the real UUID as the entry was of the
    /// profile's (the whole UUID when that prefix is not unique here). Entries that name no GPU of
    /// the scenario, and index entries, are kept as written.
    pub fn live_env(&self, scenario: &Scenario) -> BTreeMap<String, String> {
        let profile: Vec<String> = scenario
            .host
            .gpus
            .iter()
            .map(|gpu| mask_form(&gpu.uuid))
            .collect();
        let real: Vec<String> = self
            .machine
            .gpus
            .iter()
            .map(|gpu| mask_form(&gpu.uuid))
            .collect();
        scenario
            .host
            .env
            .iter()
            .map(|(name, value)| {
                let entries: Vec<String> = value
                    .split(',')
                    .map(|entry| map_uuid_entry(entry, &profile, &real))
                    .collect();
                (name.clone(), entries.join(","))
            })
            .collect()
    }
}

/// What [`LiveContext::detect`] keeps when no GPU work can run: the machine, no driver, the one reason, and
/// the state that reason belongs to.
fn unusable(
    machine: RealMachine,
    why: String,
    state: fn(String) -> DriverState,
) -> (
    RealMachine,
    Option<Arc<dyn GpuDriver>>,
    Vec<String>,
    DriverState,
) {
    (machine, None, vec![why.clone()], state(why))
}

/// A UUID as masks name it: `GPU-…` (an AMD serial gets the prefix), in the driver's own spelling.
fn mask_form(uuid: &str) -> String {
    if uuid.to_ascii_uppercase().starts_with("GPU-") {
        uuid.to_string()
    } else {
        format!("GPU-{uuid}")
    }
}

/// One mask entry with a profile UUID (prefix) rewritten to the real GPU at the same position.
fn map_uuid_entry(entry: &str, profile: &[String], real: &[String]) -> String {
    let key = entry.trim().to_ascii_uppercase();
    if !key.starts_with("GPU-") || key.len() <= "GPU-".len() {
        return entry.to_string();
    }
    let starts = |uuid: &String, prefix: &str| uuid.to_ascii_uppercase().starts_with(prefix);
    let matches: Vec<usize> = (0..profile.len())
        .filter(|index| starts(&profile[*index], &key))
        .collect();
    let [index] = matches[..] else {
        return entry.to_string();
    };
    let Some(target) = real.get(index) else {
        return entry.to_string();
    };
    let prefix = target.get(..key.len()).unwrap_or(target);
    let upper = prefix.to_ascii_uppercase();
    if real.iter().filter(|uuid| starts(uuid, &upper)).count() == 1 {
        prefix.to_string()
    } else {
        target.clone()
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

/// The live run could not start (devsim's failure, not a finding): what it was doing, and why.
fn errored(scenario: &Scenario, doing: &str, problem: String) -> ScenarioReport {
    ScenarioReport::errored(scenario, HarnessFault::new(doing, problem))
}
