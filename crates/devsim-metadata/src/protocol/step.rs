//! The `step` message: one variant per action, each with the fields that action needs, and the selectors
//! it carries.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::vocab::{DeviceType, FamilyName, LockMode};

/// One step, tagged by `action`: each action's fields are required, `repeat` optional on every one (live
/// runs only; absent: once; the answer is the last repetition's, with `retained_bytes` measured across all
/// of them).
///
/// Closed: devsim sends a subject only the actions its handshake lists, so a subject never meets an action
/// it cannot read. On the wire the keys keep protocol 2's order (`scenario`, `number`, `action`, the
/// action's fields, `repeat`), so its serialization is written by hand; reading and the schema are derived.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum StepMessage {
    /// Normalize a selector into a family and ordinal.
    Normalize {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// The selector.
        device: SelectorMessage,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
    /// Resolve a selector into the torch device at an execution boundary.
    Resolve {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// The selector.
        device: SelectorMessage,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
    /// Validate a kernel for a target.
    Validate {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// The devsim kernel name.
        kernel: String,
        /// The target.
        device: SelectorMessage,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
    /// Warm a kernel up on a target.
    Warmup {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// The devsim kernel name.
        kernel: String,
        /// The target.
        device: SelectorMessage,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
    /// Move a kernel's data to a target.
    Move {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// The devsim kernel name.
        kernel: String,
        /// The target.
        device: SelectorMessage,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
    /// Select a kernel for a method and bit width on a target.
    Select {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// The quantization method.
        method: String,
        /// The bit width.
        bits: u32,
        /// The target.
        device: SelectorMessage,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
    /// Take a pool lock.
    Lock {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// The lock scope.
        scope: SelectorMessage,
        /// Shared or exclusive.
        mode: LockMode,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
    /// Make an ordinal current.
    SetDevice {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// The ordinal to make current.
        ordinal: u32,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
    /// Discover the machine's GPUs.
    Discover {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
    /// Say which device the code picks when none is asked for.
    DefaultDevice {
        /// The scenario it belongs to.
        scenario: String,
        /// Its 1-based position.
        number: usize,
        /// How many times to perform it (live runs only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<u32>,
    },
}

impl StepMessage {
    /// The action's name as the wire spells it (`set_device`).
    pub fn action(&self) -> &'static str {
        self.wire().action
    }

    /// The scenario the step belongs to.
    pub fn scenario(&self) -> &str {
        self.wire().scenario
    }

    /// The step's 1-based position.
    pub fn number(&self) -> usize {
        self.wire().number
    }

    /// How many times to perform it (live runs only; absent: once).
    pub fn repeat(&self) -> Option<u32> {
        self.wire().repeat
    }

    /// Sets how many times to perform it (live runs only).
    pub fn set_repeat(&mut self, times: Option<u32>) {
        *self.repeat_slot() = times;
    }

    fn repeat_slot(&mut self) -> &mut Option<u32> {
        match self {
            StepMessage::Normalize { repeat, .. }
            | StepMessage::Resolve { repeat, .. }
            | StepMessage::Validate { repeat, .. }
            | StepMessage::Warmup { repeat, .. }
            | StepMessage::Move { repeat, .. }
            | StepMessage::Select { repeat, .. }
            | StepMessage::Lock { repeat, .. }
            | StepMessage::SetDevice { repeat, .. }
            | StepMessage::Discover { repeat, .. }
            | StepMessage::DefaultDevice { repeat, .. } => repeat,
        }
    }

    /// The message as protocol 2 lays it out: every field in one object, in the wire's key order.
    fn wire(&self) -> WireStep<'_> {
        let mut wire = WireStep::default();
        let (scenario, number, repeat) = match self {
            StepMessage::Normalize {
                scenario,
                number,
                device,
                repeat,
            } => {
                wire.action = "normalize";
                wire.device = Some(device);
                (scenario, number, repeat)
            }
            StepMessage::Resolve {
                scenario,
                number,
                device,
                repeat,
            } => {
                wire.action = "resolve";
                wire.device = Some(device);
                (scenario, number, repeat)
            }
            StepMessage::Validate {
                scenario,
                number,
                kernel,
                device,
                repeat,
            }
            | StepMessage::Warmup {
                scenario,
                number,
                kernel,
                device,
                repeat,
            }
            | StepMessage::Move {
                scenario,
                number,
                kernel,
                device,
                repeat,
            } => {
                wire.action = match self {
                    StepMessage::Validate { .. } => "validate",
                    StepMessage::Warmup { .. } => "warmup",
                    _ => "move",
                };
                wire.kernel = Some(kernel);
                wire.device = Some(device);
                (scenario, number, repeat)
            }
            StepMessage::Select {
                scenario,
                number,
                method,
                bits,
                device,
                repeat,
            } => {
                wire.action = "select";
                wire.method = Some(method);
                wire.bits = Some(*bits);
                wire.device = Some(device);
                (scenario, number, repeat)
            }
            StepMessage::Lock {
                scenario,
                number,
                scope,
                mode,
                repeat,
            } => {
                wire.action = "lock";
                wire.scope = Some(scope);
                wire.mode = Some(*mode);
                (scenario, number, repeat)
            }
            StepMessage::SetDevice {
                scenario,
                number,
                ordinal,
                repeat,
            } => {
                wire.action = "set_device";
                wire.ordinal = Some(*ordinal);
                (scenario, number, repeat)
            }
            StepMessage::Discover {
                scenario,
                number,
                repeat,
            } => {
                wire.action = "discover";
                (scenario, number, repeat)
            }
            StepMessage::DefaultDevice {
                scenario,
                number,
                repeat,
            } => {
                wire.action = "default_device";
                (scenario, number, repeat)
            }
        };
        wire.scenario = scenario;
        wire.number = *number;
        wire.repeat = *repeat;
        wire
    }
}

impl Serialize for StepMessage {
    /// Protocol 2's key order, which the derived form (the tag first) would change.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.wire().serialize(serializer)
    }
}

/// A step as one flat object, in the order protocol 2 writes its keys.
#[derive(Default, Serialize)]
struct WireStep<'a> {
    scenario: &'a str,
    number: usize,
    action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<&'a SelectorMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bits: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<&'a SelectorMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<LockMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ordinal: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repeat: Option<u32>,
}

/// A selector as written, plus the form the subject builds in its own language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "form", rename_all = "snake_case", deny_unknown_fields)]
pub enum SelectorMessage {
    /// Pass the string itself, even when it is not a known spelling.
    String {
        /// The string.
        written: String,
    },
    /// Pass the integer.
    Ordinal {
        /// The integer.
        written: i64,
    },
    /// Pass the family enum value (GPTQModel: `DEVICE.ROCM`).
    FamilyEnum {
        /// The family.
        family: FamilyName,
    },
    /// Pass `torch.device(device_type, index)`.
    TorchDevice {
        /// The device type.
        device_type: DeviceType,
        /// The index, or null for the current device.
        index: Option<u32>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToSubject;

    /// Lines protocol 2 devsim wrote before steps were typed, byte for byte.
    const LINES: [&str; 9] = [
        r#"{"type":"step","scenario":"s","number":1,"action":"normalize","device":{"form":"string","written":"cuda:1"}}"#,
        r#"{"type":"step","scenario":"s","number":2,"action":"resolve","device":{"form":"ordinal","written":-1}}"#,
        r#"{"type":"step","scenario":"s","number":3,"action":"validate","kernel":"gptq_torch","device":{"form":"family_enum","family":"rocm"}}"#,
        r#"{"type":"step","scenario":"s","number":4,"action":"warmup","kernel":"gptq_torch","device":{"form":"torch_device","device_type":"cuda","index":null},"repeat":3}"#,
        r#"{"type":"step","scenario":"s","number":5,"action":"move","kernel":"k","device":{"form":"torch_device","device_type":"cpu","index":0}}"#,
        r#"{"type":"step","scenario":"s","number":6,"action":"select","device":{"form":"string","written":"cuda"},"method":"gptq","bits":4}"#,
        r#"{"type":"step","scenario":"s","number":7,"action":"lock","scope":{"form":"family_enum","family":"all"},"mode":"write"}"#,
        r#"{"type":"step","scenario":"s","number":8,"action":"set_device","ordinal":1}"#,
        r#"{"type":"step","scenario":"s","number":9,"action":"discover"}"#,
    ];

    #[test]
    fn steps_round_trip_byte_for_byte() {
        for line in LINES {
            let read: ToSubject = serde_json::from_str(line).expect(line);
            assert_eq!(serde_json::to_string(&read).expect(line), line);
        }
    }

    #[test]
    fn an_action_needs_its_fields_and_refuses_others() {
        for line in [
            r#"{"type":"step","scenario":"s","number":1,"action":"validate","device":{"form":"string","written":"cpu"}}"#,
            r#"{"type":"step","scenario":"s","number":1,"action":"discover","kernel":"k"}"#,
            r#"{"type":"step","scenario":"s","number":1,"action":"teleport"}"#,
            r#"{"type":"step","scenario":"s","number":1,"action":"lock","scope":{"form":"family_enum","family":"gpu"},"mode":"read"}"#,
        ] {
            assert!(serde_json::from_str::<ToSubject>(line).is_err(), "{line}");
        }
    }

    #[test]
    fn accessors_read_every_variant() {
        let mut step: StepMessage = serde_json::from_str(
            r#"{"scenario":"s","number":8,"action":"set_device","ordinal":1}"#,
        )
        .expect("a step");
        assert_eq!(
            (step.action(), step.scenario(), step.number(), step.repeat()),
            ("set_device", "s", 8, None)
        );
        step.set_repeat(Some(2));
        assert_eq!(step.repeat(), Some(2));
    }
}
