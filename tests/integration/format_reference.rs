//! `docs/scenario-format.md` is the one format reference: every key of every table (from the generated
//! JSON Schema, so from the serde format types), every action, error kind and trace event the loader
//! accepts is listed there, and nothing else is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use devsim::DispatchError;
use devsim::scenario::Action;
use devsim::scenario::SchemaKind;
use devsim::trace::event_names;
use serde_json::Value;

fn repo_file(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The first code span of each table row after each `<!-- marker -->`, by marker.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let text = repo_file("docs/scenario-format.md");
    let mut tables = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(marker) = line
            .strip_prefix("<!-- ")
            .and_then(|l| l.strip_suffix(" -->"))
        {
            current = Some(marker.to_string());
            tables
                .entry(marker.to_string())
                .or_insert_with(BTreeSet::new);
            continue;
        }
        let Some(marker) = &current else { continue };
        if !line.starts_with('|') {
            if !tables[marker].is_empty() {
                current = None;
            }
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or_default().trim();
        if let Some(name) = first.strip_prefix('`').and_then(|c| c.split('`').next()) {
            tables
                .get_mut(marker)
                .expect("marked")
                .insert(name.to_string());
        }
    }
    tables
}

fn set<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    names.into_iter().map(str::to_string).collect()
}

fn property_names(schema: &Value) -> BTreeSet<String> {
    schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn every_table_of_the_format_is_documented_key_for_key() {
    let docs = documented();
    let schema = SchemaKind::Scenario.generate();
    assert_eq!(
        docs.get("keys: root"),
        Some(&property_names(&schema)),
        "top-level keys"
    );
    let definitions = schema["definitions"].as_object().expect("definitions");
    let mut tables = BTreeSet::new();
    for (name, definition) in definitions {
        let keys = property_names(definition);
        if keys.is_empty() {
            continue;
        }
        tables.insert(format!("keys: {name}"));
        assert_eq!(
            docs.get(&format!("keys: {name}")),
            Some(&keys),
            "the keys of {name} (a `<!-- keys: {name} -->` table in docs/scenario-format.md)"
        );
    }
    let documented_tables: BTreeSet<String> = docs
        .keys()
        .filter(|k| k.starts_with("keys: ") && *k != "keys: root")
        .cloned()
        .collect();
    assert_eq!(
        documented_tables, tables,
        "documented tables the format has not"
    );
}

#[test]
fn every_action_error_kind_and_trace_event_is_documented_and_nothing_else() {
    let docs = documented();
    assert_eq!(docs.get("actions"), Some(&set(Action::NAMES)), "actions");
    assert_eq!(
        docs.get("kinds"),
        Some(&set(DispatchError::KINDS)),
        "error kinds"
    );
    assert_eq!(
        docs.get("events"),
        Some(&set(event_names())),
        "trace events"
    );
}

#[test]
fn the_actions_table_names_only_step_keys_and_expect_keys() {
    let text = repo_file("docs/scenario-format.md");
    let schema = SchemaKind::Scenario.generate();
    let step = property_names(&schema["definitions"]["StepFields"]);
    let expect = property_names(&schema["definitions"]["StepExpectFields"]);
    let table = text
        .split("<!-- actions -->")
        .nth(1)
        .expect("an actions table");
    for row in table.lines().skip(3).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').collect();
        for (cell, keys) in [(cells[2], &step), (cells[3], &expect)] {
            for name in cell.split('`').skip(1).step_by(2) {
                assert!(keys.contains(name), "`{name}` in {row} is no such key");
            }
        }
    }
}

#[test]
fn readers_are_sent_to_the_reference_in_the_repository() {
    for path in [
        "README.md",
        "AGENTS.md",
        ".agents/skills/scenario-authoring/SKILL.md",
        "src/scenario/format.rs",
    ] {
        let text = repo_file(path);
        assert!(
            !text.contains("shared/SCENARIOS.md"),
            "{path} points outside the repository"
        );
        assert!(
            text.contains("docs/scenario-format.md"),
            "{path} does not point at the reference"
        );
    }
}

#[test]
fn the_conformance_reference_lists_every_policy_rule_and_no_other() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/conformance.md"))
        .expect("docs/conformance.md");
    let documented: std::collections::BTreeSet<String> = doc
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once("` | "))
        .filter(|(_, rest)| rest.starts_with(|c: char| c.is_ascii_digit()))
        .map(|(id, _)| id.to_string())
        .collect();
    let table: std::collections::BTreeSet<String> = devsim::conformance::rules()
        .iter()
        .map(|r| r.id.clone())
        .collect();
    assert_eq!(
        documented, table,
        "docs/conformance.md's rule table and inventory/rules.toml"
    );
}
