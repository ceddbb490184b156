//! The trace: the ordered record of every runtime call (and every dispatch gate) made while a step ran.

use std::cell::{RefCell, RefMut};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use parking_lot::{ReentrantMutex, ReentrantMutexGuard};

use serde::{Deserialize, Serialize};

mod text;
pub use text::{Render, Text};

/// A runtime call, as named in scenario trace rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// How many devices torch reports (`torch.cuda.device_count()`, `Runtime::torch_device_count`).
    DeviceCount,
    /// How many devices the driver itself enumerates (`Runtime::device_count`).
    DriverDeviceCount,
    /// A device's name.
    DeviceName,
    /// An NVIDIA compute-capability query.
    NvidiaCapability,
    /// An NVIDIA opt-in shared-memory-per-block query.
    SmemOptin,
    /// An AMD `gcnArchName` query.
    AmdArch,
    /// Read the thread's current device.
    GetDevice,
    /// Change the thread's current device.
    SetDevice,
    /// Allocate device memory.
    Alloc,
    /// Copy between host and device.
    Copy,
    /// Free device memory.
    Free,
    /// Launch work.
    Launch,
    /// Wait for the device.
    Synchronize,
    /// Load a kernel's native extension.
    ExtensionLoad,
    /// Take a device-pool lock.
    Lock,
}

impl Call {
    /// Every call, in a fixed order.
    pub const EVERY: [Call; 15] = [
        Call::DeviceCount,
        Call::DriverDeviceCount,
        Call::DeviceName,
        Call::NvidiaCapability,
        Call::SmemOptin,
        Call::AmdArch,
        Call::GetDevice,
        Call::SetDevice,
        Call::Alloc,
        Call::Copy,
        Call::Free,
        Call::Launch,
        Call::Synchronize,
        Call::ExtensionLoad,
        Call::Lock,
    ];

    /// The name used in scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            Call::DeviceCount => "device_count",
            Call::DriverDeviceCount => "driver_device_count",
            Call::DeviceName => "device_name",
            Call::NvidiaCapability => "nvidia_capability",
            Call::SmemOptin => "smem_optin",
            Call::AmdArch => "amd_arch",
            Call::GetDevice => "get_device",
            Call::SetDevice => "set_device",
            Call::Alloc => "alloc",
            Call::Copy => "copy",
            Call::Free => "free",
            Call::Launch => "launch",
            Call::Synchronize => "synchronize",
            Call::ExtensionLoad => "extension_load",
            Call::Lock => "lock",
        }
    }

    /// Whether the call concerns one device (and so can hit a lost device).
    pub fn is_device_scoped(self) -> bool {
        !matches!(
            self,
            Call::DeviceCount
                | Call::DriverDeviceCount
                | Call::GetDevice
                | Call::ExtensionLoad
                | Call::Lock
        )
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Call {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Call::EVERY
            .into_iter()
            .find(|call| call.as_str() == name)
            .ok_or_else(|| name.to_string())
    }
}

/// A dispatch gate, recorded in order as each runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Selector normalization.
    Normalize,
    /// The kernel's declared families against the target's family.
    Family,
    /// The kernel's supported bit widths.
    Bits,
    /// The kernel's arch rule against the target's GPU.
    Arch,
}

impl Gate {
    /// Every gate, in the order dispatch runs them.
    pub const EVERY: [Gate; 4] = [Gate::Normalize, Gate::Family, Gate::Bits, Gate::Arch];

    /// The name used in scenario files: `gate:family`.
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Normalize => "gate:normalize",
            Gate::Family => "gate:family",
            Gate::Bits => "gate:bits",
            Gate::Arch => "gate:arch",
        }
    }
}

/// One entry of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// A runtime call.
    Call {
        /// Which call.
        call: Call,
        /// The device it concerned, if one.
        #[serde(skip_serializing_if = "Option::is_none")]
        device: Option<Text>,
        /// A detail: the extension or kernel name, the lock key.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<Text>,
        /// Whether it succeeded.
        ok: bool,
    },
    /// A dispatch gate.
    Gate {
        /// Which gate.
        gate: Gate,
        /// Whether it passed.
        passed: bool,
        /// What it judged.
        detail: Text,
    },
    /// A change of the current device that the runtime made on its own inside `during` (the live runtime
    /// entering a GPU's context to allocate, copy or free there): named `context_switch` in trace rules.
    ContextSwitch {
        /// The device made current.
        device: Text,
        /// The call that made the switch.
        during: Call,
        /// Whether it succeeded.
        ok: bool,
    },
    /// A call or gate a subject outside devsim recorded itself (its outcome is not reported).
    Reported {
        /// Which call or gate.
        event: Event,
        /// The device it concerned, if one.
        #[serde(skip_serializing_if = "Option::is_none")]
        device: Option<String>,
        /// A detail the subject gave.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

/// A trace event by name: a runtime call or a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Event {
    /// A runtime call.
    Call(Call),
    /// A dispatch gate.
    Gate(Gate),
    /// A context switch the runtime made on its own inside a call.
    ContextSwitch,
}

/// The trace-rule name of [`Entry::ContextSwitch`].
pub const CONTEXT_SWITCH: &str = "context_switch";

impl Event {
    /// The name trace rules match.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Call(call) => call.as_str(),
            Event::Gate(gate) => gate.as_str(),
            Event::ContextSwitch => CONTEXT_SWITCH,
        }
    }
}

impl FromStr for Event {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if let Ok(call) = name.parse::<Call>() {
            return Ok(Event::Call(call));
        }
        if name == CONTEXT_SWITCH {
            return Ok(Event::ContextSwitch);
        }
        Gate::EVERY
            .into_iter()
            .find(|gate| gate.as_str() == name)
            .map(Event::Gate)
            .ok_or_else(|| name.to_string())
    }
}

impl TryFrom<String> for Event {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        name.parse()
    }
}

impl From<Event> for String {
    fn from(event: Event) -> Self {
        event.as_str().to_string()
    }
}

impl Entry {
    /// The name trace rules match: the call name, or `gate:…`.
    pub fn name(&self) -> &'static str {
        match self {
            Entry::Call { call, .. } => call.as_str(),
            Entry::Gate { gate, .. } => gate.as_str(),
            Entry::ContextSwitch { .. } => CONTEXT_SWITCH,
            Entry::Reported { event, .. } => event.as_str(),
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Call {
                call,
                device,
                detail,
                ok,
            } => {
                write!(f, "{call}")?;
                match (device, detail) {
                    (Some(device), Some(detail)) => write!(f, "({device}, {detail})")?,
                    (Some(one), None) | (None, Some(one)) => write!(f, "({one})")?,
                    (None, None) => {}
                }
                if !ok {
                    write!(f, " -> error")?;
                }
                Ok(())
            }
            Entry::Gate {
                gate,
                passed,
                detail,
            } => write!(
                f,
                "{} {} ({detail})",
                gate.as_str(),
                if *passed { "passed" } else { "refused" }
            ),
            Entry::ContextSwitch { device, during, ok } => {
                write!(f, "{CONTEXT_SWITCH}({device}, during {during})")?;
                if !ok {
                    write!(f, " -> error")?;
                }
                Ok(())
            }
            Entry::Reported {
                event,
                device,
                detail,
            } => {
                write!(f, "{}", event.as_str())?;
                let args: Vec<&str> = device.iter().chain(detail).map(String::as_str).collect();
                if !args.is_empty() {
                    write!(f, "({})", args.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

/// Whether a name is one trace rules may use.
pub fn is_event_name(name: &str) -> bool {
    name.parse::<Event>().is_ok()
}

/// Every name trace rules may use.
pub fn event_names() -> Vec<&'static str> {
    Call::EVERY
        .iter()
        .map(|call| call.as_str())
        .chain(Gate::EVERY.iter().map(|gate| gate.as_str()))
        .chain([CONTEXT_SWITCH])
        .collect()
}

/// A shared, ordered, append-only list of entries.
///
/// Any thread may record; a thread that records several entries in a row can [`Trace::hold`] it first, so
/// that those records skip the lock (every step records a handful, and locking cost more than recording).
#[derive(Debug, Clone, Default)]
pub struct Trace {
    entries: Arc<ReentrantMutex<RefCell<Vec<Entry>>>>,
}

/// The trace held by one thread ([`Trace::hold`]): until it is dropped, that thread's records skip the
/// lock and other threads' records wait.
#[must_use = "the trace is held only while the guard lives"]
pub struct Held<'a>(#[allow(dead_code)] ReentrantMutexGuard<'a, RefCell<Vec<Entry>>>);

impl Trace {
    /// An empty trace, with room for a step's usual entries.
    pub fn new() -> Self {
        Self {
            entries: Arc::new(ReentrantMutex::new(RefCell::new(Vec::with_capacity(16)))),
        }
    }

    /// Holds the trace for this thread while several entries are recorded (a step's gates and calls).
    /// Holding it again on the same thread is cheap; never wait, while holding it, on another thread that
    /// records into it.
    pub fn hold(&self) -> Held<'_> {
        Held(self.entries.lock())
    }

    /// Runs `with` on the entries, locked for this thread.
    fn with<R>(&self, with: impl FnOnce(RefMut<'_, Vec<Entry>>) -> R) -> R {
        let held = self.entries.lock();
        with(held.borrow_mut())
    }

    /// Appends an entry.
    pub fn push(&self, entry: Entry) {
        self.with(|mut entries| entries.push(entry));
    }

    /// Records a gate outcome.
    pub fn gate(&self, gate: Gate, passed: bool, detail: impl Into<Text>) {
        self.push(Entry::Gate {
            gate,
            passed,
            detail: detail.into(),
        });
    }

    /// The number of entries so far: a mark to slice a step's entries with [`Trace::since`].
    pub fn len(&self) -> usize {
        self.with(|entries| entries.len())
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.with(|entries| entries.is_empty())
    }

    /// The entries recorded since `mark`.
    pub fn since(&self, mark: usize) -> Vec<Entry> {
        self.with(|entries| entries.get(mark..).map(<[_]>::to_vec).unwrap_or_default())
    }

    /// Runs `read` over every entry so far, without copying them (do not record from inside it).
    pub fn read<R>(&self, read: impl FnOnce(&[Entry]) -> R) -> R {
        self.with(|entries| read(&entries))
    }

    /// Every entry.
    pub fn entries(&self) -> Vec<Entry> {
        self.since(0)
    }

    /// Drops the entries from `from` on when they are exactly those of `first` (a repetition that did
    /// what the first did); `true` when they were dropped.
    pub fn elide_repeat(&self, first: std::ops::Range<usize>, from: usize) -> bool {
        self.with(|mut entries| {
            let same = entries
                .get(from..)
                .zip(entries.get(first))
                .is_some_and(|(a, b)| a == b);
            if same {
                entries.truncate(from);
            }
            same
        })
    }
}

/// A repeated step's repetitions that were not stored because each recorded exactly what the first did:
/// the step's trace keeps the first repetition (and any that differed) once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Elided {
    /// The first repetition's entries, as indices into the step's kept entries.
    pub first: std::ops::Range<usize>,
    /// Where elided repetitions stood (an index into the kept entries) and how many stood there, in order.
    pub at: Vec<(usize, u32)>,
}

impl Elided {
    /// Notes one more elided repetition before kept entry `position`.
    pub fn push(&mut self, position: usize) {
        match self.at.last_mut() {
            Some((at, times)) if *at == position => *times += 1,
            _ => self.at.push((position, 1)),
        }
    }

    /// How many repetitions were elided.
    pub fn repetitions(&self) -> u64 {
        self.at.iter().map(|(_, times)| u64::from(*times)).sum()
    }

    /// Whether nothing was elided.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

/// A step's whole trace, elided repetitions included, in the order it was recorded.
pub fn expanded<'a>(
    kept: &'a [Entry],
    elided: &'a Elided,
) -> impl Iterator<Item = &'a Entry> + Clone + 'a {
    let block = kept.get(elided.first.clone()).unwrap_or_default();
    (0..=kept.len()).flat_map(move |position| {
        let times = elided
            .at
            .binary_search_by_key(&position, |(at, _)| *at)
            .map_or(0, |i| elided.at[i].1 as usize);
        std::iter::repeat_n(block, times)
            .flatten()
            .chain(kept.get(position))
    })
}

/// How many entries in `entries` are named `name`.
pub fn count(entries: &[Entry], name: &str) -> usize {
    entries.iter().filter(|entry| entry.name() == name).count()
}

/// Whether any entry in `entries` is named `name` (`count(…) > 0`, stopping at the first).
pub fn has(entries: &[Entry], name: &str) -> bool {
    entries.iter().any(|entry| entry.name() == name)
}

#[cfg(test)]
mod tests;
