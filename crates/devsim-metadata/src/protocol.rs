//! The messages of the subject protocol (`docs/subject-protocol.md`): JSON lines tagged by `type`.
//!
//! Every message refuses unknown fields, so a subject that misspells a key is told at once instead of
//! being judged on a field devsim never read. [`schema`] is the machine-readable form of this module.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Place;

mod declarations;
mod step;
mod vocab;

pub use declarations::{ArchDeclaration, ToleranceDeclaration};
pub use step::{SelectorMessage, StepMessage};
pub use vocab::{Build, DeviceType, ErrorKind, EventName, FamilyName, LockMode};

/// The protocol version this devsim speaks (and sends in `hello`).
pub const PROTOCOL: u32 = 2;

/// Every version this devsim accepts in a handshake; 1 is deprecated (no declared contract).
pub const ACCEPTED: [u32; 2] = [1, 2];

/// A message from devsim to the subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = close_steps)]
pub enum ToSubject {
    /// The first line devsim sends.
    Hello {
        /// The protocol version devsim speaks.
        protocol: u32,
        /// devsim's version.
        devsim: String,
        /// This session runs live (`run --live --subject`): the subject prepares the real torch instead
        /// of a simulated host, and says `live` in its handshake if it can.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        live: bool,
    },
    /// A scenario begins on this host.
    Scenario {
        /// The scenario's name (its path under the scenario root).
        name: String,
        /// The host the subject must pretend to run on; in a live run, the real machine's host, which the
        /// subject must not simulate.
        host: HostMessage,
        /// A live run: run the code under test on the real machine and its real torch, recording trace events
        /// by wrapping the calls, never by faking them. Only sent to a subject whose handshake says `live`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        live: bool,
    },
    /// One step to perform.
    Step(StepMessage),
    /// The scenario is over: reset what it changed.
    End {
        /// The scenario ending.
        scenario: String,
    },
}

/// Whose words a subject's error messages are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Wording {
    /// The subject's own: devsim's message fragments cannot be compared.
    #[default]
    Own,
    /// devsim's, word for word: message fragments are compared.
    Devsim,
}

/// A message from the subject to devsim.
// `Observed` is most of the traffic: boxing it would allocate per step to shrink the rare handshake.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FromSubject {
    /// The answer to `hello`: who the subject is and what it can do.
    Handshake {
        /// The protocol version the subject speaks.
        protocol: u32,
        /// Its name and version.
        subject: SubjectInfo,
        /// The scenario actions it performs.
        actions: Vec<String>,
        /// Its kernels: devsim catalog names (protocol 1) or, from protocol 2, each kernel's own declared
        /// contract.
        kernels: Vec<KernelEntry>,
        /// The trace events it records.
        events: Vec<EventName>,
        /// Whose wording its error messages use: `own` (the default; devsim's `message` fragments are
        /// then set aside, never compared) or `devsim` (it reproduces devsim's messages word for word).
        #[serde(default)]
        messages: Wording,
        /// Protocol 2: the conformance levels it claims beyond `policy` (`contract`: judge me against my
        /// declared kernels; `reference`: devsim's reference-model details bind me too).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        levels: Vec<crate::Level>,
        /// Protocol 2: per action, the `observed` fields it really observes (`ok` and `error` included);
        /// an expected field it does not list is set aside, one it lists and then omits fails. Absent:
        /// every field is observed (protocol 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        observes: Option<BTreeMap<String, Vec<String>>>,
        /// Whether it can run scenarios live (`run --live --subject`): on the real machine, its warmups
        /// running the real kernels.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        live: bool,
        /// The import packages of the project under test (`gptqmodel`): every `decided_by` of its answers
        /// names a module inside one of them. Absent: it reports no `decided_by`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        packages: Vec<String>,
    },
    /// The subject is ready for the scenario's steps.
    Ready {
        /// The scenario it answers.
        scenario: String,
    },
    /// The subject cannot simulate this host (no `number`) or perform this step.
    Unsupported {
        /// The scenario it answers.
        scenario: String,
        /// The step it answers, for a step.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        number: Option<usize>,
        /// Why, in words.
        reason: String,
        /// A step only: the events the subject recorded before it stopped. Only `never` rules are judged on
        /// them (an event that happened stays happened; what would have come after is unknown).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        trace: Vec<TraceEvent>,
        /// A step only: the function of the project under test whose call made each of `trace`'s events,
        /// keyed `trace.<event>` (the first event of that name), as an `observed` answer's `decided_by`.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        decided_by: BTreeMap<String, DecidedBy>,
    },
    /// What a step produced.
    Observed(ObservedMessage),
    /// The answer to `end`.
    Done {
        /// The scenario it answers.
        scenario: String,
    },
}

/// One kernel of a handshake: a devsim name (protocol 1) or a declaration (protocol 2).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum KernelEntry {
    /// Protocol 1: the devsim catalog name only.
    Name(String),
    /// Protocol 2: the kernel's own declared contract.
    Declared(KernelDeclaration),
}

impl<'de> Deserialize<'de> for KernelEntry {
    /// A string is a name; anything else must be a declaration, and its own error (an unknown or missing
    /// key) is reported rather than serde's "did not match any variant".
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(name) => Ok(KernelEntry::Name(name)),
            other => serde_json::from_value(other)
                .map(KernelEntry::Declared)
                .map_err(|e| serde::de::Error::custom(format!("kernel declaration: {e}"))),
        }
    }
}

impl KernelEntry {
    /// The devsim catalog name.
    pub fn name(&self) -> &str {
        match self {
            KernelEntry::Name(name) => name,
            KernelEntry::Declared(declaration) => &declaration.name,
        }
    }
}

/// A kernel's contract as the subject's own code declares it (read from its classes, never typed by hand).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KernelDeclaration {
    /// The devsim catalog name it maps to.
    pub name: String,
    /// The families it declares: `cpu`, `cuda` (NVIDIA), `rocm`, `xpu`, `mps`, or `all`. Strings: the handshake
    /// refuses an unknown one naming the subject and the kernel, and devsim's `subject` listing prints them
    /// as declared.
    pub families: Vec<String>,
    /// The quantization methods it serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// The bit widths it serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bits: Vec<u32>,
    /// Its selection priority, where the subject has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// The devsim names of the kernels it names as alternatives.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<String>,
    /// Where the declaration was read: `module:Class`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The numerics tolerances the project itself states for this kernel, one per dtype, each with where
    /// it states them. A live forward in a dtype listed here is judged by it; any other by the seed's
    /// `rtol = atol = 2e-3` against the FP64 oracle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerances: Vec<ToleranceDeclaration>,
    /// The arch rules the project itself declares for this kernel, read from its own code (vLLM: each
    /// kernel class's `get_min_capability`). Where given, a step that selects or validates the kernel for
    /// a target GPU is judged on that target's own arch (rule `per-target-arch`). Absent: not judged so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<Box<ArchDeclaration>>,
}

/// A subject's name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubjectInfo {
    /// How reports name the subject.
    pub name: String,
    /// The version of the code under test.
    pub version: String,
}

/// The resolved host of a scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostMessage {
    /// The torch build.
    pub torch: Build,
    /// The build's own GPUs, in physical order.
    pub gpus: Vec<GpuMessage>,
    /// GPUs of another vendor in the box, invisible to this build.
    pub foreign_gpus: Vec<GpuMessage>,
    /// The visible-device variables as the scenario wrote them.
    pub env: BTreeMap<String, String>,
    /// Ordinal `i` seen by torch is `gpus[visible[i]]`.
    pub visible: Vec<usize>,
    /// The thread's current device (an ordinal into `visible`) when the scenario starts.
    pub current: u32,
    /// The GPU runtime version the build reports (`torch.version.hip` / `torch.version.cuda`), when the
    /// scenario gives one; absent: the subject's default for the build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<String>,
    /// The archs the build was compiled for, as `torch.cuda.get_arch_list()` lists them, when the scenario gives
    /// them; absent: the subject's default for the build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch_list: Option<Vec<String>>,
}

/// One GPU of a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuMessage {
    /// `sm_XY` for NVIDIA, a gfx target for AMD.
    pub arch: String,
    /// The name the driver reports.
    pub name: String,
    /// Opt-in shared memory per block, in bytes.
    pub smem_optin: u32,
    /// The driver's UUID.
    pub uuid: String,
    /// Total memory in MiB, when the scenario gives it; absent: the subject's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u32>,
}

/// What a step produced; absent fields were not produced. Read into [`crate::output::ObservedOutput`] for
/// judging, but its own type: the protocol is versioned apart from devsim's JSON output, states `ok`
/// explicitly, and refuses unknown fields (which serde cannot do through a flattened shared struct).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservedMessage {
    /// The scenario it answers.
    pub scenario: String,
    /// The step it answers.
    pub number: usize,
    /// Whether the step succeeded.
    pub ok: bool,
    /// Why it failed, when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorMessage>,
    /// The normalized family. A string, not a [`FamilyName`]: it is what the project under test produced,
    /// and a wrong one is a finding about it, never a protocol error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The normalized ordinal: null for a family target; absent when not observed (protocol 2).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<u32>")]
    pub ordinal: Option<Option<u32>>,
    /// The torch device at the boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_device: Option<String>,
    /// Warmup: where the work ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_on: Option<Place>,
    /// Move: where the data ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lands_on: Option<Place>,
    /// The thread's current device after the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_after: Option<u32>,
    /// Select: the devsim name of the kernel picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<String>,
    /// Lock: the pool keys held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covers: Option<Vec<String>>,
    /// Discover: `nvidia`, `amd` or `none`; a string for the same reason as `family`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Discover: each usable GPU's arch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archs: Option<Vec<String>>,
    /// Discover: what `torch.cuda.device_count()` returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_device_count: Option<u32>,
    /// Discover: the arch at each ordinal the driver or ROCm runtime exposes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_devices: Option<Vec<String>>,
    /// A live warmup that ran a forward: its output against an independent FP64 oracle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numerics: Option<crate::output::NumericsOutput>,
    /// A live step: device bytes the real allocator still held after the step's repetitions, against
    /// before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained_bytes: Option<i64>,
    /// Per observed field (`ok`, `family`, `torch_device` …), the function of the project under test that
    /// decided it: where the value was produced, or where the refusal was raised. A field it cannot place is
    /// left out ("location unknown"), never guessed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub decided_by: BTreeMap<String, DecidedBy>,
    /// Per observed field (`ok`, `selected` …), why the project under test decided nothing there: no code of
    /// the project makes that decision on this path (a wrapper with no device gate, a move that is plain
    /// torch). Expectations on such a field are not applicable, never judged on a value the subject made up.
    /// A field other than `ok` named here is absent from the answer, and none has a `decided_by`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub undecided: BTreeMap<String, String>,
    /// The recorded events, in order.
    pub trace: Vec<TraceEvent>,
}

/// A function of the project under test, where it decided an observed value: the innermost frame inside
/// the project's own packages that produced the value, or raised the refusal.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct DecidedBy {
    /// The dotted module name (`gptqmodel.models._const`), inside one of the handshake's `packages`.
    pub module: String,
    /// The function's qualified name (`DEVICE.to_torch_device`).
    pub function: String,
    /// The 1-based line where it returned the value or raised.
    pub line: u32,
    /// The source file, as the subject's interpreter loaded it.
    pub file: String,
}

impl std::fmt::Display for DecidedBy {
    /// `module:function:line`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.module, self.function, self.line)
    }
}

/// Reads a field that is present (null or not) as `Some`, so absent and null differ.
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A failed step's error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorMessage {
    /// One of devsim's error kinds, or null when the subject cannot classify its error.
    pub kind: Option<ErrorKind>,
    /// The code's own message.
    pub message: String,
}

/// One recorded event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceEvent {
    /// The event name, as in scenario trace rules (`amd_arch`, `gate:family` ...).
    pub event: EventName,
    /// The visible ordinal it concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    /// A detail: the extension or kernel name, the lock key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Refuses unknown keys in a step, as serde does: schemars leaves `additionalProperties` out of each action's
/// branch (the `type` key lives beside them), so the step branch refuses whatever no branch evaluated.
fn close_steps(schema: &mut schemars::Schema) {
    let branches = schema.get_mut("oneOf").and_then(|b| b.as_array_mut());
    for branch in branches.into_iter().flatten() {
        let is_step = branch
            .pointer("/properties/type/const")
            .is_some_and(|kind| kind == "step");
        if let Some(object) = branch.as_object_mut().filter(|_| is_step) {
            object.insert("unevaluatedProperties".into(), false.into());
        }
    }
}

/// Any line of the protocol, in either direction: the root of the JSON Schema.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code, clippy::large_enum_variant)] // a schema root only, never built
enum ProtocolLine {
    /// devsim to the subject.
    ToSubject(ToSubject),
    /// The subject to devsim.
    FromSubject(FromSubject),
}

/// The JSON Schema of every protocol line, generated from these types.
pub fn schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(ProtocolLine).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "title".into(),
            serde_json::Value::String(format!("devsim subject protocol, version {PROTOCOL}")),
        );
    }
    schema
}
