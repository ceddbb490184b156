//! What a step produced, in the form expectations are compared with: the same for every subject.

use serde::{Deserialize, Serialize};

/// What a step produced, as strings comparable with expectations.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Observed {
    /// The error kind and message, if the step failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<(String, String)>,
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
    pub ran_on: Option<String>,
    /// Where moved data ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lands_on: Option<String>,
    /// The current device after the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_after: Option<u32>,
    /// The selected kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<String>,
    /// The pool keys a lock held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covers: Option<Vec<String>>,
    /// The discovered vendor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// The discovered archs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archs: Option<Vec<String>>,
    /// torch's device count, as discovery read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_device_count: Option<u32>,
    /// The archs at the runtime's ordinals, as discovery read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_devices: Option<Vec<String>>,
    /// Device bytes still allocated after the step's repetitions, against before the first (negative when
    /// the step freed more than it allocated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained_bytes: Option<i64>,
}
