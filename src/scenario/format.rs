//! The scenario file format, version 1, as serde types; the reference for authors is
//! `docs/scenario-format.md` and the JSON Schema generated from these types is under `docs/schema/`.
//!
//! Unknown keys are refused everywhere. Values that later checks may refuse (names, archs, selectors)
//! keep their source span, so every error can point at `path:line:column`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use crate::vocab::TorchBuild;

mod int_or_text;

/// The only format version this build reads.
pub const FORMAT_VERSION: i64 = 1;

/// A whole scenario file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Must be 1.
    #[schemars(with = "i64")]
    pub format: Spanned<i64>,
    /// One sentence: the behaviour pinned.
    pub description: String,
    /// Free-form labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The host: a profile, inline fields, or both (inline wins).
    #[schemars(with = "HostFields")]
    pub host: Spanned<HostFields>,
    /// Scenario-level expectations.
    #[serde(default)]
    pub expect: Option<ScenarioExpect>,
    /// The steps, in order.
    #[serde(default, rename = "step")]
    #[schemars(with = "Vec<StepFields>")]
    pub steps: Vec<Spanned<StepFields>>,
}

/// Host fields, shared by scenario `[host]` tables and profile files under `scenarios/hosts/`.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostFields {
    /// A profile name (`scenarios/hosts/<name>.toml`); scenario files only.
    #[schemars(with = "Option<String>")]
    pub profile: Option<Spanned<String>>,
    /// What the profile is; profile files only.
    #[expect(
        dead_code,
        reason = "prose for readers and editors (the schema documents it); devsim only checks it is a string"
    )]
    pub description: Option<String>,
    /// The torch build.
    #[schemars(with = "Option<TorchBuild>")]
    pub torch: Option<Spanned<TorchBuild>>,
    /// GPUs of the build's vendor, by arch, in physical order.
    #[schemars(with = "Option<Vec<String>>")]
    pub gpus: Option<Vec<Spanned<String>>>,
    /// GPUs with detail, instead of `gpus`.
    pub gpu: Option<Vec<GpuFields>>,
    /// GPUs of another vendor in the box.
    #[schemars(with = "Option<Vec<String>>")]
    pub foreign_gpus: Option<Vec<Spanned<String>>>,
    /// The thread's current device at start.
    #[schemars(with = "Option<u32>")]
    pub current: Option<Spanned<u32>>,
    /// Visible-device variables.
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    pub env: Option<Spanned<BTreeMap<String, String>>>,
    /// The GPU runtime version the build reports (`torch.version.hip` / `torch.version.cuda`):
    /// `6.4.43482`, `13.0`. Sent to subjects; devsim's own runtime does not depend on it.
    #[schemars(with = "Option<String>")]
    pub runtime_version: Option<Spanned<String>>,
    /// The archs the build was compiled for, as `torch.cuda.get_arch_list()` lists them: `sm_90`,
    /// `compute_120` (cuda) or `gfx942` (hip). Absent: the subject's default list for the build (an
    /// addition to format 1).
    #[schemars(with = "Option<Vec<String>>")]
    pub arch_list: Option<Spanned<Vec<String>>>,
    /// Faults to inject (an addition to format 1).
    pub fault: Option<Vec<FaultFields>>,
}

/// One GPU with detail.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuFields {
    /// `sm_90`, `gfx1201` ...
    #[schemars(with = "String")]
    pub arch: Spanned<String>,
    /// The driver's name.
    pub name: Option<String>,
    /// Opt-in shared memory per block, bytes.
    pub smem_optin: Option<u32>,
    /// The driver's UUID, for id-based visible-device masks.
    pub uuid: Option<String>,
    /// Total memory in MiB (`total_memory`, `mem_get_info`); absent: the subject's default (an addition to
    /// format 1).
    pub memory_mib: Option<u32>,
}

/// One injected fault.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FaultFields {
    /// The call to fail; omitted: every call on `device` (a lost device).
    #[schemars(with = "Option<String>")]
    pub call: Option<Spanned<String>>,
    /// Only calls on this visible ordinal.
    pub device: Option<u32>,
    /// Matching calls that succeed first.
    #[serde(default)]
    pub after: u32,
    /// The driver error code (default 999, unknown).
    pub code: Option<i32>,
    /// The driver message (default: the build's name for the code).
    pub message: Option<String>,
}

/// Scenario-level expectations.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioExpect {
    /// Rules over the whole scenario's trace.
    pub trace: Option<TraceRuleFields>,
    /// Levels of these rules where the default does not fit or is ambiguous (`docs/conformance.md`).
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    pub levels: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
}

/// Trace rules.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceRuleFields {
    /// Events that must not occur.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub never: Vec<Spanned<String>>,
    /// Events that must occur exactly once.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub once: Vec<Spanned<String>>,
    /// Exact counts.
    #[schemars(with = "Option<BTreeMap<String, usize>>")]
    pub count: Option<Spanned<BTreeMap<String, usize>>>,
    /// Events that must occur in this relative order (others may come between).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub order: Vec<Spanned<String>>,
}

impl StepExpectFields {
    /// The `ok` written, if any.
    pub fn ok(&self) -> Option<bool> {
        self.ok.as_ref().map(|ok| *ok.get_ref())
    }
}

/// A selector as written: a string or an integer.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum SelectorValue {
    /// An ordinal.
    Int(i64),
    /// A string selector.
    Text(String),
}

/// An expected ordinal or place: an integer, or a word (`"none"`, `"cpu"`).
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum IntOrWord {
    /// An ordinal.
    Int(i64),
    /// A word.
    Word(String),
}

/// One step.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepFields {
    /// normalize | resolve | validate | warmup | move | select | lock | set_device | discover
    #[schemars(with = "String")]
    pub action: Spanned<String>,
    /// What the step does, in words (optional).
    pub description: Option<String>,
    /// The kernel: validate, warmup, move.
    #[schemars(with = "Option<String>")]
    pub kernel: Option<Spanned<String>>,
    /// The selector: validate, warmup, move, normalize, resolve, select.
    #[schemars(with = "Option<SelectorValue>")]
    pub device: Option<Spanned<SelectorValue>>,
    /// The method: select.
    #[schemars(with = "Option<String>")]
    pub method: Option<Spanned<String>>,
    /// The bit width: select.
    pub bits: Option<u32>,
    /// The lock scope: lock.
    #[schemars(with = "Option<SelectorValue>")]
    pub scope: Option<Spanned<SelectorValue>>,
    /// `read` (default) or `write`: lock.
    #[schemars(with = "Option<String>")]
    pub mode: Option<Spanned<String>>,
    /// The ordinal: set_device.
    pub ordinal: Option<u32>,
    /// How many times the action runs, 1 to 10000 (default 1); the step's result is the last run's, or the
    /// first that failed.
    #[schemars(with = "Option<u32>", range(min = 1, max = 10000))]
    pub repeat: Option<Spanned<i64>>,
    /// What the step must produce.
    // Boxed, like the two below: most steps leave them empty, and a million-step file should not carry
    // three inline copies per step (2,176 bytes a step unboxed, 304 boxed).
    #[serde(default)]
    pub expect: Box<StepExpectFields>,
    /// Checked only when the step succeeds; with `when_refused`, the step may go either way unless
    /// `expect` says `ok` or `error` (matrices over kernels some hosts refuse).
    pub when_ok: Option<Box<StepExpectFields>>,
    /// Checked only when the step fails.
    pub when_refused: Option<Box<StepExpectFields>>,
}

/// A step's expectations; every key present is checked.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepExpectFields {
    /// Success or failure (default: success unless `error` is given).
    #[schemars(with = "Option<bool>")]
    pub ok: Option<Spanned<bool>>,
    /// The error kind.
    #[schemars(with = "Option<String>")]
    pub error: Option<Spanned<String>>,
    /// A fragment of the error message.
    #[schemars(with = "Option<String>")]
    pub message: Option<Spanned<String>>,
    /// The normalized family.
    #[schemars(with = "Option<String>")]
    pub family: Option<Spanned<String>>,
    /// The normalized ordinal, or `"none"`.
    #[schemars(with = "Option<IntOrWord>")]
    pub ordinal: Option<Spanned<IntOrWord>>,
    /// The torch device at the boundary.
    #[schemars(with = "Option<String>")]
    pub torch_device: Option<Spanned<String>>,
    /// Where a warmup ran: an ordinal or `"cpu"`.
    #[schemars(with = "Option<IntOrWord>")]
    pub ran_on: Option<Spanned<IntOrWord>>,
    /// Where moved data ended: an ordinal or `"cpu"`.
    #[schemars(with = "Option<IntOrWord>")]
    pub lands_on: Option<Spanned<IntOrWord>>,
    /// The thread's current device after the step.
    #[schemars(with = "Option<u32>")]
    pub current_after: Option<Spanned<u32>>,
    /// The kernel selection picked.
    #[schemars(with = "Option<String>")]
    pub selected: Option<Spanned<String>>,
    /// The pool keys a lock holds.
    #[schemars(with = "Option<Vec<String>>")]
    pub covers: Option<Spanned<Vec<String>>>,
    /// discover: the vendor of the usable GPUs (`nvidia`, `amd`, `none`).
    #[schemars(with = "Option<String>")]
    pub vendor: Option<Spanned<String>>,
    /// discover: the visible GPUs' archs, in ordinal order.
    #[schemars(with = "Option<Vec<String>>")]
    pub archs: Option<Spanned<Vec<String>>>,
    /// discover: torch's view, the count `torch.cuda.device_count()` returns.
    pub torch_device_count: Option<u32>,
    /// discover: the runtime's view, the arch at each ordinal the driver or ROCm runtime exposes.
    pub runtime_devices: Option<Vec<String>>,
    /// warmup, move: device bytes still allocated after every repetition, against before the first.
    #[schemars(with = "Option<u64>")]
    pub retained_bytes: Option<Spanned<u64>>,
    /// Rules over this step's trace.
    pub trace: Option<TraceRuleFields>,
    /// Expectation key → `policy:<rule>`, `contract` or `reference`, where the default does not fit or is
    /// ambiguous (`docs/conformance.md`).
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    pub levels: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
}
