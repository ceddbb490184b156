//! The JSON Schemas under `docs/schema/` are the ones `devsim schema` generates from the format types:
//! regenerate with `cargo run -- schema scenario > docs/schema/scenario.schema.json` (and `host`).

use std::path::Path;

use devsim::scenario::SchemaKind;

#[test]
fn the_committed_schemas_are_the_generated_ones() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema");
    for kind in SchemaKind::EVERY {
        let path = dir.join(kind.file_name());
        let committed =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            committed,
            kind.render(),
            "{} is stale: run `cargo run -- schema {} > {}`",
            path.display(),
            kind.as_str(),
            path.display()
        );
    }
}

/// A value's closed list, also when the schema lets a matrix placeholder stand in its place (`anyOf`).
fn closed(value: &serde_json::Value) -> &serde_json::Value {
    value.get("anyOf").map_or(value, |any| &any[0])
}

#[test]
fn the_scenario_schema_refuses_unknown_keys_and_lists_the_loader_names() {
    let schema = SchemaKind::Scenario.generate();
    assert_eq!(schema["additionalProperties"], false);
    let step = &schema["definitions"]["StepFields"]["properties"];
    let actions: Vec<&str> = closed(&step["action"])["enum"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(actions, devsim::scenario::Action::NAMES);
    let kinds = &closed(&schema["definitions"]["StepExpectFields"]["properties"]["error"])["enum"];
    assert_eq!(
        kinds.as_array().map(Vec::len),
        Some(devsim::DispatchError::KINDS.len())
    );
}

#[test]
fn the_host_schema_has_no_profile_key_because_profiles_do_not_nest() {
    let schema = SchemaKind::Host.generate();
    assert!(schema["properties"].get("profile").is_none(), "{schema:#}");
    assert!(schema["properties"].get("torch").is_some(), "{schema:#}");
}

#[test]
fn matrix_placeholders_may_stand_for_closed_values() {
    let schema = SchemaKind::Scenario.generate();
    assert!(schema["properties"]["matrix"].is_object());
    let family = &schema["definitions"]["StepExpectFields"]["properties"]["family"];
    let pattern = family["anyOf"][1]["pattern"]
        .as_str()
        .expect("a placeholder pattern");
    assert_eq!(pattern, "^\\{[a-z_][a-z0-9_]*(\\.[a-z_][a-z0-9_]*)?\\}$");
}

#[test]
fn places_and_ordinals_take_what_the_loader_takes() {
    let schema = SchemaKind::Scenario.generate();
    let expect = &schema["definitions"]["StepExpectFields"]["properties"];
    for (field, word) in [("ran_on", "cpu"), ("lands_on", "cpu"), ("ordinal", "none")] {
        let alternatives = expect[field]["anyOf"].as_array().expect("alternatives");
        let text = serde_json::to_string(alternatives).expect("json");
        assert!(text.contains(r#""minimum":0"#), "{field}: {text}");
        assert!(
            text.contains(&format!(r#""const":"{word}""#)),
            "{field}: {text}"
        );
        // No open string: `ran_on = "one"` is refused by the schema as by the loader.
        assert!(
            !alternatives
                .iter()
                .any(|a| a == &serde_json::json!({"type": "string"})),
            "{field}: {text}"
        );
    }
}
