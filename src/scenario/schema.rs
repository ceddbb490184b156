//! JSON Schemas for scenario files and host profiles, generated from the format types
//! ([`crate::scenario::format`]) and completed with the names the loader accepts (actions, error kinds,
//! trace events, methods, lock modes), so editors (taplo) complete and check scenario TOML.
//!
//! The committed copies under `docs/schema/` are compared with these by `tests/integration/schema.rs`.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::dispatch::DispatchError;
use crate::kernel::Method;
use crate::scenario::format::{HostFields, ScenarioFile};
use crate::scenario::model::Action;
use crate::trace::{Call, event_names};
use crate::vocab::{Family, Vendor};

/// Which schema to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    /// A scenario file (`scenarios/<topic>/*.toml`).
    Scenario,
    /// A host profile (`scenarios/hosts/*.toml`).
    Host,
}

impl SchemaKind {
    /// Every schema, in a fixed order.
    pub const EVERY: [SchemaKind; 2] = [SchemaKind::Scenario, SchemaKind::Host];

    /// The name on the command line and in `docs/schema/<name>.schema.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaKind::Scenario => "scenario",
            SchemaKind::Host => "host",
        }
    }

    /// The committed file's name under `docs/schema/`.
    pub fn file_name(self) -> String {
        format!("{}.schema.json", self.as_str())
    }

    /// The schema as JSON.
    pub fn generate(self) -> Value {
        match self {
            SchemaKind::Scenario => scenario(),
            SchemaKind::Host => host(),
        }
    }

    /// The schema as pretty JSON with a final newline, as committed.
    pub fn render(self) -> String {
        let mut text = serde_json::to_string_pretty(&self.generate()).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// The schema of a scenario file.
pub fn scenario() -> Value {
    let mut schema = draft07::<ScenarioFile>();
    schema["title"] = json!("devsim scenario file (format 1)");
    schema["properties"]["format"]["const"] = json!(crate::scenario::format::FORMAT_VERSION);
    // `[matrix]` is expanded before the typed loader sees the file (scenario::matrix), so it is not a field
    // of the format types; its values are lists of strings or integers, "*", or a kernel filter table.
    schema["properties"]["matrix"] = json!({
        "description": "Parameters: one scenario per combination, named file.toml[name=value,...] (docs/scenario-format.md, Matrices).",
        "type": "object",
        "additionalProperties": {
            "anyOf": [
                {"type": "array", "items": {"type": ["string", "integer"]}},
                {"type": "string", "const": "*"},
                {"type": "object"}
            ]
        }
    });
    let defs = &mut schema[DEFINITIONS];
    let actions: Vec<&str> = Action::NAMES.to_vec();
    defs["StepFields"]["properties"]["action"]["enum"] = json!(actions);
    defs["StepFields"]["properties"]["mode"]["enum"] = json!(["read", "write"]);
    let methods: Vec<&str> = Method::KNOWN.iter().map(|m| m.as_str()).collect();
    // Catalogs may add methods of their own: the known ones are examples, not a closed list.
    defs["StepFields"]["properties"]["method"]["examples"] = json!(methods);
    let expect = &mut defs["StepExpectFields"]["properties"];
    expect["error"]["enum"] = json!(DispatchError::KINDS.to_vec());
    let families: Vec<&str> = Family::EVERY.iter().map(|f| f.as_str()).collect();
    expect["family"]["enum"] = json!(families);
    let vendors: Vec<String> = [Vendor::Nvidia, Vendor::Amd, Vendor::Intel, Vendor::Apple]
        .iter()
        .map(ToString::to_string)
        .chain(["none".to_string()])
        .collect();
    expect["vendor"]["enum"] = json!(vendors);
    // As strict as the loader: an ordinal is a non-negative integer, and each field has one word of its own.
    for (field, word, what) in [
        (
            "ordinal",
            "none",
            "The normalized ordinal: an integer, or \"none\" for a family target.",
        ),
        (
            "ran_on",
            "cpu",
            "Where a warmup ran: an ordinal or \"cpu\".",
        ),
        (
            "lands_on",
            "cpu",
            "Where moved data ended: an ordinal or \"cpu\".",
        ),
    ] {
        expect[field] = json!({
            "description": what,
            "anyOf": [{"type": "integer", "minimum": 0}, {"const": word}, {"type": "null"}]
        });
    }
    trace_names(&mut defs["TraceRuleFields"]);
    fault_calls(&mut defs["FaultFields"]);
    // A matrix case fills `{name}` placeholders before the loader reads the file, so any value may be one.
    allow_placeholders(&mut schema);
    schema
}

/// A whole-string matrix placeholder: `"{kernel}"`, `"{host.family}"`.
const PLACEHOLDER: &str = "^\\{[a-z_][a-z0-9_]*(\\.[a-z_][a-z0-9_]*)?\\}$";

/// Lets every closed or typed value also be a placeholder string, walking the whole schema.
fn allow_placeholders(value: &mut Value) {
    let Some(object) = value.as_object_mut() else {
        if let Some(items) = value.as_array_mut() {
            items.iter_mut().for_each(allow_placeholders);
        }
        return;
    };
    let closed = object.contains_key("enum")
        || object.contains_key("const")
        || matches!(object.get("type"), Some(Value::String(t)) if t == "integer")
        || matches!(object.get("type"), Some(Value::Array(types)) if types.iter().any(|t| t == "integer"));
    for child in object.values_mut() {
        allow_placeholders(child);
    }
    if closed && !object.contains_key("properties") {
        let original = Value::Object(std::mem::take(object));
        object.insert(
            "anyOf".into(),
            json!([original, {"type": "string", "pattern": PLACEHOLDER}]),
        );
    }
}

/// The schema of a host profile: the host fields without `profile` (profiles do not nest).
pub fn host() -> Value {
    let mut schema = draft07::<HostFields>();
    schema["title"] = json!("devsim host profile (scenarios/hosts/<name>.toml)");
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.remove("profile");
    }
    if let Some(defs) = schema.get_mut(DEFINITIONS) {
        fault_calls(&mut defs["FaultFields"]);
    }
    schema
}

/// Where draft-07 keeps shared definitions.
const DEFINITIONS: &str = "definitions";

/// Draft-07, the draft taplo and most editor plugins read.
fn draft07<T: JsonSchema>() -> Value {
    SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

fn trace_names(rules: &mut Value) {
    let names = json!(event_names());
    for key in ["never", "once", "order"] {
        rules["properties"][key]["items"]["enum"] = names.clone();
    }
    rules["properties"]["count"]["propertyNames"] = json!({ "enum": names });
}

fn fault_calls(fault: &mut Value) {
    let calls: Vec<&str> = Call::EVERY.iter().map(|c| c.as_str()).collect();
    fault["properties"]["call"]["enum"] = json!(calls);
}
