//! Running a scenario's steps against a runtime wrapped by the recorder.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::discover::discover;
use crate::dispatch::Dispatch;
use crate::dispatch::DispatchError;
use crate::dispatch::selector::to_torch_device;
use crate::kernel::Catalog;
use crate::kernel::select::select;
use crate::output::{ErrorOutput, ObservedOutput as Observed};
use crate::pool::DevicePool;
use crate::runner::expect::{Mismatch, check_trace, compare};
use crate::runner::status::{HarnessFault, Skip, Status};
use crate::runtime::{FaultInjector, Recorder, Runtime};
use crate::scenario::model::{Action, Expectations, Scenario, Step};
use crate::trace::{Elided, Entry, expanded};
use devsim_metadata::protocol::DecidedBy;

/// One step's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepReport {
    /// 1-based position.
    pub number: usize,
    /// The line of its header.
    pub line: usize,
    /// The action name.
    pub action: String,
    /// The kernel it names (validate, warmup, move).
    pub kernel: Option<String>,
    /// Its selector as written (`cuda:1`, `0`, `DEVICE.ROCM` …), for the steps that take one.
    pub device: Option<String>,
    /// What it produced.
    pub observed: Observed,
    /// The differences from what was expected (empty: the step passed).
    pub mismatches: Vec<Mismatch>,
    /// The step's trace: a repeated step's identical repetitions once (see `elided`).
    pub trace: Vec<Entry>,
    /// The repetitions not stored in `trace` because each recorded what the first did.
    #[serde(default, skip_serializing_if = "Elided::is_empty")]
    pub elided: Elided,
    /// How long the step took (benchmarks; not part of the report's data).
    #[serde(skip)]
    pub elapsed: std::time::Duration,
}

impl StepReport {
    /// The report of `step`, judged: what it produced, how that differs from its expectations, its trace.
    pub fn of(
        step: &Step,
        observed: Observed,
        mismatches: Vec<Mismatch>,
        trace: Vec<Entry>,
        elapsed: std::time::Duration,
    ) -> Self {
        Self {
            number: step.number,
            line: step.line,
            action: step.action.name().to_string(),
            kernel: step.action.kernel().map(str::to_string),
            device: step.action.selector().map(ToString::to_string),
            observed,
            mismatches,
            trace,
            elided: Elided::default(),
            elapsed,
        }
    }
}

/// One scenario's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioReport {
    /// The scenario's name (relative path).
    pub name: String,
    /// The subject judged (the dispatch code under test); empty until a subject names itself.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject: String,
    /// Its file.
    pub path: String,
    /// Its description.
    pub description: String,
    /// How it ended.
    #[serde(flatten)]
    pub status: Status,
    /// Each step run.
    pub steps: Vec<StepReport>,
    /// Differences from the scenario-level trace rules.
    pub trace_mismatches: Vec<Mismatch>,
    /// Where the project's code made the events of a step that stopped (`unsupported` with its trace so
    /// far), keyed `trace.<event>`: what places a `never` rule it broke. Empty when no step stopped.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stopped_decided_by: BTreeMap<String, DecidedBy>,
    /// The steps left out, by number: read-only steps naming an action or kernel the subject does not have
    /// (their expectations set aside, nothing sent for them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<usize>,
}

impl ScenarioReport {
    /// A failed report for a scenario that could not be run at all, saying why.
    pub fn failed(scenario: &Scenario, why: Mismatch) -> Self {
        Self {
            trace_mismatches: vec![why],
            ..Self::with_status(scenario, Status::Failed)
        }
    }

    /// A report for a scenario devsim failed to run or judge.
    pub fn errored(scenario: &Scenario, error: HarnessFault) -> Self {
        Self::with_status(scenario, Status::Errored(error))
    }

    /// A report for a scenario that did not run.
    pub fn skipped(scenario: &Scenario, skip: Skip) -> Self {
        Self::with_status(scenario, Status::Skipped(skip))
    }

    /// A report of `status` with no step run yet.
    pub fn with_status(scenario: &Scenario, status: Status) -> Self {
        Self {
            name: scenario.name.clone(),
            subject: String::new(),
            path: scenario.path.display().to_string(),
            description: scenario.description.clone(),
            status,
            steps: Vec::new(),
            trace_mismatches: Vec::new(),
            stopped_decided_by: BTreeMap::new(),
            left_out: Vec::new(),
        }
    }
}

fn target_fields(observed: &mut Observed, target: crate::vocab::Target) {
    observed.family = Some(target.family.to_string());
    observed.ordinal = target.ordinal;
    observed.torch_device = Some(to_torch_device(&target).to_string());
}

fn fail(observed: &mut Observed, error: DispatchError) {
    observed.error = Some(ErrorOutput {
        kind: error.kind().to_string(),
        message: error.to_string(),
    });
}

/// Runs one action; fills `observed`.
fn perform(
    dispatch: &Dispatch,
    catalog: &Catalog,
    pool: &DevicePool,
    action: &Action,
    observed: &mut Observed,
) {
    let result: Result<(), DispatchError> = (|| {
        match action {
            Action::Normalize(selector) => {
                let target = dispatch.normalize(selector)?;
                observed.family = Some(target.family.to_string());
                observed.ordinal = target.ordinal;
            }
            Action::Resolve(selector) => {
                let target = dispatch.normalize(selector)?;
                target_fields(observed, target);
            }
            Action::Validate { kernel, device } => {
                let kernel = catalog.get(kernel)?;
                let validated = kernel.validate(dispatch, device)?;
                target_fields(observed, validated.target);
            }
            Action::Warmup { kernel, device } => {
                let kernel = catalog.get(kernel)?;
                let warmed = kernel.warmup(dispatch, device)?;
                target_fields(observed, warmed.validated.target);
                observed.ran_on = Some(warmed.ran_on);
            }
            Action::Move { kernel, device } => {
                let kernel = catalog.get(kernel)?;
                let moved = kernel.move_weights(dispatch, device)?;
                target_fields(observed, moved.validated.target);
                observed.lands_on = Some(moved.lands_on);
            }
            Action::Select {
                method,
                bits,
                device,
            } => {
                let selected = select(dispatch, catalog, method, *bits, device)?;
                target_fields(observed, selected.target);
                observed.selected = Some(selected.kernel.spec().name.to_string());
            }
            Action::Lock { scope, mode } => {
                let guard = pool.lock_selector(dispatch, scope, *mode)?;
                observed.covers = Some(guard.covers().iter().map(ToString::to_string).collect());
            }
            Action::SetDevice(ordinal) => dispatch.runtime.set_device(*ordinal)?,
            Action::DefaultDevice => target_fields(observed, dispatch.default_target()?),
            Action::Discover => {
                let found = discover(dispatch.runtime)?;
                observed.vendor = Some(found.vendor.map_or("none".into(), |v| v.to_string()));
                observed.torch_device_count = Some(found.torch_device_count);
                observed.runtime_devices = Some(
                    found
                        .runtime_devices
                        .iter()
                        .map(|g| g.arch.clone())
                        .collect(),
                );
                observed.archs = Some(found.gpus.into_iter().map(|g| g.arch).collect());
            }
        }
        Ok(())
    })();
    if let Err(error) = result {
        if let (Some(target), None) = (error.target(), &observed.family) {
            target_fields(observed, target);
        }
        fail(observed, error);
    }
}

/// Runs every step of `scenario` on `runtime` and checks every expectation.
///
/// The runtime is wrapped in the host's faults ([`FaultInjector`]), and that in a fresh recorder, so an
/// injected error is in the trace as the call that failed. The runner's own questions (the pool's device
/// count, the current device for `current_after`) go to `runtime` directly: not traced, never faulted.
pub fn run_scenario(
    scenario: &Scenario,
    catalog: &Catalog,
    runtime: Box<dyn Runtime>,
) -> ScenarioReport {
    let runtime: Arc<dyn Runtime> = Arc::from(runtime);
    let current = CurrentProbe::new(&*runtime);
    let recorder = Recorder::new(Box::new(FaultInjector::new(
        Arc::clone(&runtime),
        scenario.host.faults.clone(),
    )));
    let dispatch = Dispatch::new(&recorder, recorder.trace().clone());
    let pool = match DevicePool::new(&*runtime) {
        Ok(pool) => pool,
        Err(_) => DevicePool::with_gpus(0),
    };
    let mut steps = Vec::new();
    for step in &scenario.steps {
        let mark = recorder.trace().len();
        let mut observed = Observed::default();
        let before = wants_retained(&step.expect).then(|| bytes_in_use(&*runtime));
        let started = std::time::Instant::now();
        // A repetition that records exactly what the first did is not stored again, only counted: the trace
        // stays the size of one repetition (plus any that differed) however large `repeat` is.
        let mut elided = Elided::default();
        let mut first = None;
        for _ in 0..step.repeat {
            let start = recorder.trace().len();
            observed = Observed::default();
            perform(&dispatch, catalog, &pool, &step.action, &mut observed);
            match &first {
                None => first = Some(start..recorder.trace().len()),
                Some(block) => {
                    if recorder.trace().elide_repeat(block.clone(), start) {
                        elided.push(start - mark);
                    }
                }
            }
            if observed.error.is_some() {
                break;
            }
        }
        if let Some(block) = first {
            elided.first = block.start - mark..block.end - mark;
        }
        let elapsed = started.elapsed();
        observed.current_after = current.read(&*runtime);
        let measured = before.map(|before| -> Result<(u64, u64), String> {
            Ok((before?, bytes_in_use(&*runtime)?))
        });
        let unmeasured = match measured {
            None => None,
            Some(Ok((before, after))) => {
                observed.retained_bytes = Some(signed(after) - signed(before));
                None
            }
            Some(Err(why)) => Some(why),
        };
        let trace = recorder.trace().since(mark);
        let mut mismatches = compare(&step.expect, &observed, expanded(&trace, &elided));
        if let Some(why) = unmeasured {
            mismatches.push(Mismatch {
                key: "retained_bytes".into(),
                expected: "a measurement".into(),
                actual: format!("none: {why}"),
                conformance: step.expect.levels.get("retained_bytes").cloned(),
            });
        }
        let mut report = StepReport::of(step, observed, mismatches, trace, elapsed);
        report.elided = elided;
        steps.push(report);
    }
    let trace_mismatches = check_trace(
        &scenario.trace_rules,
        steps
            .iter()
            .flat_map(|step| expanded(&step.trace, &step.elided)),
        "expect.trace",
        &scenario.trace_levels,
    );
    let failed = !trace_mismatches.is_empty() || steps.iter().any(|s| !s.mismatches.is_empty());
    ScenarioReport {
        name: scenario.name.clone(),
        subject: String::new(),
        path: scenario.path.display().to_string(),
        description: scenario.description.clone(),
        status: if failed {
            Status::Failed
        } else {
            Status::Passed
        },
        steps,
        trace_mismatches,
        stopped_decided_by: BTreeMap::new(),
        left_out: Vec::new(),
    }
}

/// Whether any of a step's expectations (its branches included) compares retained device memory.
fn wants_retained(expect: &Expectations) -> bool {
    expect.retained_bytes.is_some()
        || [&expect.when_ok, &expect.when_refused]
            .into_iter()
            .flatten()
            .any(|branch| branch.retained_bytes.is_some())
}

/// Device memory in use, outside the trace and the faults, or why it cannot be known.
fn bytes_in_use(runtime: &dyn Runtime) -> Result<u64, String> {
    match runtime.device_bytes_in_use() {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err("this runtime cannot measure device memory".into()),
        Err(error) => Err(format!("read device memory: {error}")),
    }
}

fn signed(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// Reads the current device outside the trace, where the build has GPUs.
struct CurrentProbe {
    has_gpus: bool,
}

impl CurrentProbe {
    fn new(runtime: &dyn Runtime) -> Self {
        Self {
            has_gpus: runtime.device_count().is_ok_and(|n| n > 0),
        }
    }

    fn read(&self, runtime: &dyn Runtime) -> Option<u32> {
        if self.has_gpus {
            runtime.get_device().ok()
        } else {
            None
        }
    }
}
