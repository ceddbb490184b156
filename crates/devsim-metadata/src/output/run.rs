//! `devsim run --format json`: the run, its scenarios and steps, what each step observed, mismatches,
//! findings and the summary.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Mode, Place, TraceDevice};

/// `devsim run --format json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutput {
    /// [`VERSION`](super::VERSION).
    pub version: u32,
    /// Simulated or live.
    pub mode: Mode,
    /// Live runs: one line saying what runs live on this machine.
    pub machine: Option<String>,
    /// The dispatch code judged.
    pub subject: SubjectOutput,
    /// With `--baseline`: every scenario whose outcome differs from the baseline, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_differences: Option<Vec<String>>,
    /// Each scenario selected, in name order.
    pub scenarios: Vec<ScenarioOutput>,
    /// Files that failed to load (each also counts as failed).
    pub load_errors: Vec<LoadErrorOutput>,
    /// The counts.
    pub summary: SummaryOutput,
    /// The failures' distinct findings, most shown first.
    #[serde(default)]
    pub findings: Vec<FindingOutput>,
}

/// The subject a run judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectOutput {
    /// Its name (`reference` for devsim's own catalog).
    pub name: String,
    /// Its version.
    pub version: String,
    /// `catalog` (in process) or `process` (the subject protocol).
    pub kind: String,
}

/// How a scenario ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Every expectation held.
    Passed,
    /// At least one expectation failed.
    Failed,
    /// It could not run in this mode; `reason` says why.
    Skipped,
    /// Nothing in it applies to the subject; `reason` says why.
    NotApplicable,
    /// What was observed held, but some applicable expectation could not be observed; `reason` says which.
    SetAside,
    /// devsim failed to run or judge it (not a finding about the code under test); `reason` says how.
    Errored,
}

impl Outcome {
    /// How reports name it in words: `passed`, `failed`, `skipped`, `not applicable`, `set aside`,
    /// `errored` (the human report, a baseline's lines, JUnit messages; the JSON spelling is serde's).
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
            Outcome::NotApplicable => "not applicable",
            Outcome::SetAside => "set aside",
            Outcome::Errored => "errored",
        }
    }
}

/// One scenario's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioOutput {
    /// The name: the path relative to the scenario root.
    pub name: String,
    /// The file.
    pub path: String,
    /// What it pins.
    pub description: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Its host: the profile name, or `inline`.
    pub host: String,
    /// A `[matrix]` case's parameters (absent for a plain file).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    /// How it ended.
    pub status: Outcome,
    /// Why it was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Wall time, in seconds.
    pub duration_secs: f64,
    /// Each step run.
    pub steps: Vec<StepOutput>,
    /// Differences from the scenario-level trace rules.
    pub trace_mismatches: Vec<MismatchOutput>,
}

/// One step's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutput {
    /// 1-based position.
    pub number: usize,
    /// The line of its `[[step]]` header.
    pub line: usize,
    /// The action name.
    pub action: String,
    /// The kernel it names (validate, warmup, move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Its selector as written, for the steps that take one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// What it produced.
    pub observed: ObservedOutput,
    /// Differences from what was expected (empty: the step passed).
    pub mismatches: Vec<MismatchOutput>,
    /// The step's trace: a repeated step's identical repetitions once.
    pub trace: Vec<TraceEntryOutput>,
    /// A repeated step: the repetitions not stored in `trace` because each recorded what the first did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions_elided: Option<ElidedOutput>,
}

/// Repetitions of a step elided from its trace, each identical to the first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElidedOutput {
    /// How many.
    pub repetitions: u64,
    /// The first repetition's entries in `trace`: `[start, end)`, 0-based.
    pub first: [usize; 2],
}

/// A failed step's error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorOutput {
    /// The stable kind (`unsupported-arch` ...).
    pub kind: String,
    /// The message.
    pub message: String,
}

/// What a step produced; absent keys were not produced. The same for every subject: devsim's runner fills
/// it, a protocol subject's answer is read into it, and expectations are compared with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedOutput {
    /// The error, if the step failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorOutput>,
    /// The normalized family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The normalized ordinal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<u32>,
    /// The torch device at the boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_device: Option<String>,
    /// Where a warmup ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_on: Option<Place>,
    /// Where moved data ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lands_on: Option<Place>,
    /// The thread's current device after the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_after: Option<u32>,
    /// The kernel selection picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<String>,
    /// The pool keys a lock held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covers: Option<Vec<String>>,
    /// The discovered vendor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// The discovered archs, in ordinal order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archs: Option<Vec<String>>,
    /// Discovery: torch's view, what `torch.cuda.device_count()` returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_device_count: Option<u32>,
    /// Discovery: the runtime's view, the arch at each ordinal it exposes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_devices: Option<Vec<String>>,
    /// Device bytes still allocated after the step's repetitions, against before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained_bytes: Option<i64>,
    /// A live warmup that ran a forward: its output against an independent FP64 oracle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numerics: Option<NumericsOutput>,
    /// Per observed field, the function of the project under test that decided it (a subject's
    /// `decided_by`); a field without one: location unknown.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub decided_by: BTreeMap<String, crate::protocol::DecidedBy>,
}

/// A kernel's forward output compared with an independent FP64 dequantize-and-matmul oracle and, where the
/// project states a tolerance of its own, with the project's reference kernel (absent fields: the seed's
/// check, `rtol = atol = 2e-3` against the oracle).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NumericsOutput {
    /// The largest absolute difference between the kernel's output and the FP64 oracle's.
    pub max_abs_error: f64,
    /// The relative tolerance applied.
    pub rtol: f64,
    /// The absolute tolerance applied.
    pub atol: f64,
    /// Whether every element was within `atol + rtol * |reference|` of what it was judged against: the
    /// `reference` kernel's output where the tolerance is the project's (`tolerance_source`) and names one,
    /// else the oracle's.
    pub within: bool,
    /// The problem shape, `MxKxN`, and the input dtype (`float16`), in the subject's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// The forward's dtype (`float16`); absent: `float16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// The project's reference kernel the output was compared with (its devsim name), run on the same
    /// checkpoint, input and device; judged against where the project's tolerance names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The largest absolute difference between the kernel's output and the reference kernel's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_max_abs_error: Option<f64>,
    /// Where the project states the tolerance applied; absent: it states none, and the seed's applies
    /// (unless `not_judged` says the forward was not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance_source: Option<String>,
    /// What the FP64 oracle models, in the subject's words (the activations rounded as the kernel declares it
    /// rounds them, then the exact weight); absent: the input as given times the exact weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<String>,
    /// Why the forward was not judged (`the project states no tolerance`): the errors are reported, the
    /// verdict is set aside, and `rtol`, `atol` and `within` are the seed's check, for information only.
    /// Absent: judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
}

impl NumericsOutput {
    /// The seed's tolerance, applied against the FP64 oracle where the project states none.
    pub const SEED_TOLERANCE: f64 = 2e-3;

    /// The forward's dtype, `float16` where the subject does not say.
    pub fn dtype(&self) -> &str {
        self.dtype.as_deref().unwrap_or("float16")
    }
}

/// One trace entry; `call` and `gate` are the names trace rules use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TraceEntryOutput {
    /// A runtime call.
    Call {
        /// `set_device`, `nvidia_capability` ...
        call: String,
        /// The device it concerned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<TraceDevice>,
        /// The extension or kernel name, the lock key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// Whether it succeeded.
        ok: bool,
    },
    /// A dispatch gate.
    Gate {
        /// `gate:family` ...
        gate: String,
        /// Whether it passed.
        passed: bool,
        /// What it judged.
        detail: String,
    },
    /// A context switch the runtime made on its own inside a call (`context_switch` in trace rules).
    ContextSwitch {
        /// The device made current.
        device: TraceDevice,
        /// The call that made it.
        during: String,
        /// Whether it succeeded.
        ok: bool,
    },
    /// An event an out-of-process subject reported (the subject protocol).
    Reported {
        /// The call or gate name.
        event: String,
        /// The device it concerned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<TraceDevice>,
        /// The subject's detail.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

/// One expected-versus-actual difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MismatchOutput {
    /// The expectation key (`ran_on`, `trace.never` ...).
    pub key: String,
    /// Its level and rule (`policy:no-cross-vendor-probe`, `contract`, `reference`); absent for a
    /// breakdown of the harness or the subject's process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// What the scenario expects.
    pub expected: String,
    /// What happened.
    pub actual: String,
}

/// One distinct finding: what the failure shows and every scenario that shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingOutput {
    /// `policy:<rule>`, `contract`, `reference` or `breakdown`.
    pub check: String,
    /// The action (`scenario` for a scenario-level rule).
    pub action: String,
    /// The selector's form.
    pub form: String,
    /// The torch build.
    pub build: String,
    /// The kernel, for a rule that depends on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The expectation key.
    pub key: String,
    /// What was expected.
    pub expected: String,
    /// What was observed, without the subject's wording.
    pub actual: String,
    /// The function of the project under test that decided it (`module:function:line`); absent: location
    /// unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Every scenario that shows it.
    pub scenarios: Vec<String>,
    /// Whether a live run showed it (docs/live-record.md); absent in documents written before devsim marked
    /// findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveMarkOutput>,
}

/// Whether a live run showed a finding: a scenario of it failed live with the same signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveMarkOutput {
    /// `confirmed` (a live run showed it) or `simulated` (none did).
    pub status: LiveStatusOutput,
    /// Confirmed: the GPU name(s) of the live run (empty on a machine without GPUs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
    /// Confirmed: the live run's UTC date, `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Confirmed through one of devsim's fake drivers: no real GPU showed it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fake_driver: bool,
}

/// Whether a finding was seen live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveStatusOutput {
    /// A live run showed it.
    Confirmed,
    /// No live run showed it: only the simulated runtime did.
    Simulated,
}

/// A file that failed to load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadErrorOutput {
    /// The file.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was wrong and what was expected.
    pub message: String,
    /// A suggestion, such as the closest valid name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

/// A run's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryOutput {
    /// Scenarios whose every expectation held.
    pub passed: usize,
    /// Scenarios that failed plus files that did not load.
    pub failed: usize,
    /// Scenarios that could not run in this mode.
    pub skipped: usize,
    /// Scenarios none of whose expectations apply to the subject.
    #[serde(default)]
    pub not_applicable: usize,
    /// Scenarios whose observed expectations held while others could not be observed.
    #[serde(default)]
    pub set_aside: usize,
    /// Of `failed`, the files that did not load.
    pub load_errors: usize,
    /// Scenarios devsim failed to run or judge (not counted in `failed`).
    #[serde(default)]
    pub errored: usize,
}
