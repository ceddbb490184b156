//! `devsim migrate`: rewriting a scenario file's deprecated forms into their current spelling, with the same
//! meaning, keeping every comment and the layout (`toml_edit`).
//!
//! Format 1's one deprecated form: an `extension_load` trace rule with no level. The loader reads it as
//! `reference` with a warning; the migration writes that level into the table's `levels`, so the file says
//! what it means and loads without the warning. A file that does not parse is left alone (the loader's
//! error says why); a file with nothing deprecated is not rewritten.

use toml_edit::{DocumentMut, InlineTable, Item, Table, value};

/// What a migration did to one file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// The rewritten text.
    pub text: String,
    /// Each change, in words (`step 2: "trace.never.extension_load" = "reference"`).
    pub changes: Vec<String>,
}

/// The event whose trace rules have no default level.
const UNLEVELED_EVENT: &str = "extension_load";
/// The level format 1 reads such a rule as (the loader's legacy default).
const LEGACY_LEVEL: &str = "reference";

/// `text` with its deprecated forms rewritten, or `None` when it has none (or is not TOML: the loader
/// reports that).
pub fn migrate_text(text: &str) -> Option<Migrated> {
    let mut document: DocumentMut = text.parse().ok()?;
    let mut changes = Vec::new();
    if let Some(expect) = document.get_mut("expect") {
        level_table(expect, "expect", &mut changes);
    }
    if let Some(steps) = document
        .get_mut("step")
        .and_then(Item::as_array_of_tables_mut)
    {
        for (index, step) in steps.iter_mut().enumerate() {
            for table in ["expect", "when_ok", "when_refused"] {
                if let Some(expect) = step.get_mut(table) {
                    let place = format!("step {} [step.{table}]", index + 1);
                    level_table(expect, &place, &mut changes);
                }
            }
        }
    }
    (!changes.is_empty()).then(|| Migrated {
        text: document.to_string(),
        changes,
    })
}

/// Writes the legacy level of every unleveled `extension_load` rule of one expectation table (a table, or
/// an inline table whose `levels` is then inline too).
fn level_table(expect: &mut Item, place: &str, changes: &mut Vec<String>) {
    let inline = expect.is_inline_table();
    let Some(expect) = expect.as_table_like_mut() else {
        return;
    };
    let keys = unleveled_keys(expect);
    if keys.is_empty() {
        return;
    }
    let levels = expect.entry("levels").or_insert_with(|| match inline {
        true => value(InlineTable::new()),
        false => Item::Table(Table::new()),
    });
    let Some(levels) = levels.as_table_like_mut() else {
        return;
    };
    for key in keys {
        if levels.get(&key).is_none() {
            levels.insert(&key, value(LEGACY_LEVEL));
            changes.push(format!("{place}: \"{key}\" = \"{LEGACY_LEVEL}\""));
        }
    }
}

/// The trace keys of `expect` that name the unleveled event: `trace.never.extension_load` and the like.
fn unleveled_keys(expect: &dyn toml_edit::TableLike) -> Vec<String> {
    let Some(trace) = expect.get("trace").and_then(Item::as_table_like) else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    for rule in ["never", "once"] {
        let names = trace.get(rule).and_then(Item::as_array);
        if names.is_some_and(|names| names.iter().any(|n| n.as_str() == Some(UNLEVELED_EVENT))) {
            keys.push(format!("trace.{rule}.{UNLEVELED_EVENT}"));
        }
    }
    let counted = trace
        .get("count")
        .and_then(Item::as_table_like)
        .is_some_and(|count| count.contains_key(UNLEVELED_EVENT));
    if counted {
        keys.push(format!("trace.count.{UNLEVELED_EVENT}"));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unleveled_rule_gets_the_level_format_1_reads_it_as_and_comments_stay() {
        let text = "format = 1 # the format\n[[step]]\naction = \"validate\"\n\n[step.expect.trace]\n# no load\nnever = [\"extension_load\"]\n";
        let migrated = migrate_text(text).expect("a change");
        assert!(migrated.text.contains("# the format"), "{}", migrated.text);
        assert!(migrated.text.contains("# no load"), "{}", migrated.text);
        assert!(
            migrated
                .text
                .contains("[step.expect.levels]\n\"trace.never.extension_load\" = \"reference\""),
            "{}",
            migrated.text
        );
        assert_eq!(migrated.changes.len(), 1);
        assert_eq!(
            migrate_text(&migrated.text),
            None,
            "migrating twice changes nothing"
        );
    }

    #[test]
    fn a_written_level_is_kept_and_other_rules_need_nothing() {
        let leveled = "[expect.trace]\nnever = [\"extension_load\"]\n[expect.levels]\n\"trace.never.extension_load\" = \"policy:extensions-after-gates\"\n";
        assert_eq!(migrate_text(leveled), None);
        assert_eq!(
            migrate_text("[expect.trace]\nnever = [\"amd_arch\"]\n"),
            None
        );
        assert_eq!(migrate_text("not = [toml"), None);
        let inline =
            migrate_text("[[step]]\nexpect = { trace = { never = [\"extension_load\"] } }\n")
                .expect("a change");
        assert!(inline.text.contains("levels = {"), "{}", inline.text);
    }

    #[test]
    fn counts_and_once_rules_of_branches_and_the_scenario_are_leveled() {
        let text = "[expect.trace]\nonce = [\"extension_load\"]\n[[step]]\n[step.when_ok.trace]\ncount = { extension_load = 1 }\n";
        let migrated = migrate_text(text).expect("a change");
        assert_eq!(
            migrated.changes,
            [
                "expect: \"trace.once.extension_load\" = \"reference\"",
                "step 1 [step.when_ok]: \"trace.count.extension_load\" = \"reference\"",
            ]
        );
    }
}
