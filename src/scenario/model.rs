//! A loaded, checked scenario: what the runner executes.

use std::path::PathBuf;

use crate::conformance::{Levels, ORDER_KEY, trace_key};
use crate::dispatch::selector::Selector;
use crate::host::HostSpec;
use crate::kernel::Method;
use crate::pool::LockMode;

/// A scenario ready to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file it came from.
    pub path: PathBuf,
    /// Its name in reports and test lists: the path relative to the scenario root, `/`-separated.
    pub name: String,
    /// One sentence.
    pub description: String,
    /// Labels.
    pub tags: Vec<String>,
    /// The host, profile and inline fields merged.
    pub host: HostSpec,
    /// Rules over the whole trace.
    pub trace_rules: TraceRules,
    /// The level of each scenario-level trace rule.
    pub trace_levels: Levels,
    /// The steps.
    pub steps: Vec<Step>,
    /// A `[matrix]` case's parameters, sorted by name (empty for a plain file).
    pub params: Vec<(String, String)>,
    /// What the file should change although it loads (deprecated forms), each with its migration.
    pub warnings: Vec<crate::scenario::LoadWarning>,
}

impl Scenario {
    /// The name of the file it came from: its name without a matrix case's parameters.
    pub fn file_name(&self) -> &str {
        if self.params.is_empty() {
            return &self.name;
        }
        let suffix = crate::scenario::matrix::case_suffix(&self.params);
        self.name.strip_suffix(&suffix).unwrap_or(&self.name)
    }
}

/// One step.
#[derive(Debug, Clone)]
pub struct Step {
    /// 1-based position.
    pub number: usize,
    /// The line of its `[[step]]` header.
    pub line: usize,
    /// Optional words.
    pub description: Option<String>,
    /// What it does.
    pub action: Action,
    /// How many times it runs (1 to [`Step::MAX_REPEAT`]).
    pub repeat: u32,
    /// What it must produce.
    pub expect: Expectations,
}

impl Step {
    /// The most repetitions a step may ask for.
    pub const MAX_REPEAT: u32 = 10_000;
    /// The most step executions (each step's `repeat`, summed) one scenario may ask for. Every execution
    /// keeps its trace, so this bounds memory (the largest accepted scenario peaks at about 850 MB).
    pub const MAX_EXECUTIONS: u64 = 1_000_000;
    /// The most step executions a matrix's cases may ask for together: every case's report is kept for
    /// the summary, findings and baselines, so this is lower than one scenario's budget.
    pub const MAX_MATRIX_EXECUTIONS: u64 = 250_000;
}

/// What a step does.
#[derive(Debug, Clone)]
pub enum Action {
    /// Normalize a selector.
    Normalize(Selector),
    /// Normalize, then resolve to a torch device.
    Resolve(Selector),
    /// Validate a kernel for a selector.
    Validate {
        /// The kernel name.
        kernel: String,
        /// The selector.
        device: Selector,
    },
    /// Warm a kernel up on a selector.
    Warmup {
        /// The kernel name.
        kernel: String,
        /// The selector.
        device: Selector,
    },
    /// Move a kernel's weights to a selector.
    Move {
        /// The kernel name.
        kernel: String,
        /// The selector.
        device: Selector,
    },
    /// Select automatically.
    Select {
        /// The method.
        method: Method,
        /// The bit width.
        bits: u32,
        /// The selector.
        device: Selector,
    },
    /// Take pool locks.
    Lock {
        /// The scope selector.
        scope: Selector,
        /// Read or write.
        mode: LockMode,
    },
    /// Change the thread's current device.
    SetDevice(u32),
    /// List what the build can use.
    Discover,
    /// The device the code picks when none is asked for (GPTQModel's `auto_select_device(None, …)`).
    DefaultDevice,
}

impl Action {
    /// The kernel it names (validate, warmup, move).
    pub fn kernel(&self) -> Option<&str> {
        match self {
            Action::Validate { kernel, .. }
            | Action::Warmup { kernel, .. }
            | Action::Move { kernel, .. } => Some(kernel),
            _ => None,
        }
    }

    /// The selector it takes (the lock's scope included).
    pub fn selector(&self) -> Option<&Selector> {
        match self {
            Action::Normalize(device)
            | Action::Resolve(device)
            | Action::Validate { device, .. }
            | Action::Warmup { device, .. }
            | Action::Move { device, .. }
            | Action::Select { device, .. } => Some(device),
            Action::Lock { scope, .. } => Some(scope),
            Action::SetDevice(_) | Action::Discover | Action::DefaultDevice => None,
        }
    }

    /// The action's name as written in files.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Normalize(_) => "normalize",
            Action::Resolve(_) => "resolve",
            Action::Validate { .. } => "validate",
            Action::Warmup { .. } => "warmup",
            Action::Move { .. } => "move",
            Action::Select { .. } => "select",
            Action::Lock { .. } => "lock",
            Action::SetDevice(_) => "set_device",
            Action::Discover => "discover",
            Action::DefaultDevice => "default_device",
        }
    }

    /// Every action name.
    pub const NAMES: [&'static str; 10] = [
        "normalize",
        "resolve",
        "validate",
        "warmup",
        "move",
        "select",
        "lock",
        "set_device",
        "discover",
        "default_device",
    ];
}

/// An expected ordinal: a number or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectedOrdinal {
    /// This ordinal.
    Some(u32),
    /// No ordinal (a family target).
    None,
}

/// Checked step expectations; `None` fields are not checked.
#[derive(Debug, Clone, Default)]
pub struct Expectations {
    /// Whether the step must succeed (`Some(true)`), fail (`Some(false)`), or may do either (`None`, only
    /// with conditional expectations).
    pub ok: Option<bool>,
    /// The error kind.
    pub error: Option<String>,
    /// A fragment of the error message.
    pub message: Option<String>,
    /// The normalized family.
    pub family: Option<String>,
    /// The normalized ordinal.
    pub ordinal: Option<ExpectedOrdinal>,
    /// The torch device.
    pub torch_device: Option<String>,
    /// Where a warmup ran (`cpu` or an ordinal).
    pub ran_on: Option<String>,
    /// Where moved data ended.
    pub lands_on: Option<String>,
    /// The current device after the step.
    pub current_after: Option<u32>,
    /// The selected kernel.
    pub selected: Option<String>,
    /// The pool keys covered.
    pub covers: Option<Vec<String>>,
    /// The discovered vendor.
    pub vendor: Option<String>,
    /// The discovered archs.
    pub archs: Option<Vec<String>>,
    /// torch's device count (discover).
    pub torch_device_count: Option<u32>,
    /// The archs at the runtime's ordinals (discover).
    pub runtime_devices: Option<Vec<String>>,
    /// Device bytes still allocated after the step's repetitions, against before the first.
    pub retained_bytes: Option<u64>,
    /// Rules over the step's trace.
    pub trace: TraceRules,
    /// Checked only when the step succeeded.
    pub when_ok: Option<Box<Expectations>>,
    /// Checked only when the step failed.
    pub when_refused: Option<Box<Expectations>>,
    /// The level of each expectation above (conditional tables have their own).
    pub levels: Levels,
}

/// Calls the macro `$apply` with the name of every optional expectation field of [`Expectations`] (not
/// `trace`), in declaration order: the one list `keys` and `retain` walk.
macro_rules! with_expectation_fields {
    ($apply:ident) => {
        $apply!(
            ok,
            error,
            message,
            family,
            ordinal,
            torch_device,
            ran_on,
            lands_on,
            current_after,
            selected,
            covers,
            vendor,
            archs,
            torch_device_count,
            runtime_devices,
            retained_bytes
        )
    };
}

impl Expectations {
    /// The key of every expectation this table holds (not its conditional tables'): field names and trace
    /// keys (`trace.never.nvidia_capability`, `trace.order`).
    pub fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        macro_rules! field {
            ($($name:ident),*) => {
                $(if self.$name.is_some() {
                    keys.push(stringify!($name).to_string());
                })*
            };
        }
        with_expectation_fields!(field);
        if !self.trace.is_empty() {
            keys.extend(self.trace.keys());
        }
        keys
    }

    /// Drops every expectation of this table whose key `keep` refuses (trace rules one event at a time; an
    /// `order` rule whole). Conditional tables are left alone.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        macro_rules! field {
            ($($name:ident),*) => {
                $(if self.$name.is_some() && !keep(stringify!($name)) {
                    self.$name = None;
                })*
            };
        }
        with_expectation_fields!(field);
        self.trace.retain(keep);
    }
}

/// Rules over a trace; names are call names or `gate:*`.
#[derive(Debug, Clone, Default)]
pub struct TraceRules {
    /// Must not occur.
    pub never: Vec<String>,
    /// Must occur exactly once.
    pub once: Vec<String>,
    /// Exact counts.
    pub count: Vec<(String, usize)>,
    /// Must occur in this relative order.
    pub order: Vec<String>,
}

impl TraceRules {
    /// The key of every expectation: one per event of `never`, `once` and `count`, one for `order`.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .never
            .iter()
            .map(|n| trace_key("never", n))
            .chain(self.once.iter().map(|n| trace_key("once", n)))
            .chain(self.count.iter().map(|(n, _)| trace_key("count", n)))
            .collect();
        if !self.order.is_empty() {
            keys.push(ORDER_KEY.to_string());
        }
        keys
    }

    /// Drops every rule whose key `keep` refuses.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.never.retain(|n| keep(&trace_key("never", n)));
        self.once.retain(|n| keep(&trace_key("once", n)));
        self.count.retain(|(n, _)| keep(&trace_key("count", n)));
        if !self.order.is_empty() && !keep(ORDER_KEY) {
            self.order.clear();
        }
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.never.is_empty()
            && self.once.is_empty()
            && self.count.is_empty()
            && self.order.is_empty()
    }
}
