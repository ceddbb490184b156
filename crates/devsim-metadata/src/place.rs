//! [`Place`]: where work ran or data sits, the one type for it from the runtime to the wire.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where work ran or data sits: the host CPU or a GPU by visible ordinal. On the wire (JSON documents, the
/// subject protocol) a GPU is its ordinal as a number and the CPU is the string `"cpu"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    /// The host CPU.
    Cpu,
    /// The GPU with this visible ordinal.
    Gpu(u32),
}

/// The ordinal's digits or `cpu`: the form scenario expectations are written in.
impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Cpu => f.write_str("cpu"),
            Place::Gpu(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for Place {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Place::Cpu => serializer.serialize_str("cpu"),
            Place::Gpu(n) => serializer.serialize_u32(*n),
        }
    }
}

/// The wire form, read: a number or the word `cpu`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Wire {
    Ordinal(u32),
    Word(String),
}

impl<'de> Deserialize<'de> for Place {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Wire::deserialize(deserializer)? {
            Wire::Ordinal(n) => Ok(Place::Gpu(n)),
            Wire::Word(word) if word == "cpu" => Ok(Place::Cpu),
            Wire::Word(word) => Err(serde::de::Error::custom(format!(
                "expected a device ordinal or \"cpu\", got {word:?}"
            ))),
        }
    }
}

impl JsonSchema for Place {
    fn schema_name() -> Cow<'static, str> {
        "Place".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Where work ran or data ended: a visible ordinal, or \"cpu\".",
            "anyOf": [
                { "description": "A visible ordinal.", "type": "integer", "format": "uint32", "minimum": 0 },
                { "description": "The CPU.", "const": "cpu" }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_is_its_ordinal_and_the_cpu_the_word_on_the_wire() {
        for (place, wire) in [(Place::Gpu(1), "1"), (Place::Cpu, "\"cpu\"")] {
            assert_eq!(serde_json::to_string(&place).ok().as_deref(), Some(wire));
            assert_eq!(serde_json::from_str::<Place>(wire).ok(), Some(place));
        }
        assert!(serde_json::from_str::<Place>("\"cuda:0\"").is_err());
        assert!(serde_json::from_str::<Place>("-1").is_err());
    }
}
