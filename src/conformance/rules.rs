//! The policy's rules as data: `inventory/rules.toml`, compiled in.

use std::sync::OnceLock;

use serde::Deserialize;

/// One rule of the accelerator-family policy.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Its id, as expectations name it (`no-cross-vendor-probe`).
    pub id: String,
    /// Its number in AGENTS.md's policy.
    pub policy: u32,
    /// Whether a finding depends on the kernel: the same observation on two kernels is then two findings.
    pub per_kernel: bool,
    /// Whether a finding depends on the action that showed it; `false` for a rule one gate decides whatever
    /// action reaches it (a kernel admitted where it does not belong is one finding, seen through validate,
    /// move or warmup).
    #[serde(default = "yes")]
    pub per_action: bool,
    /// One line.
    pub title: String,
    /// The seed's words it comes from.
    pub seed: String,
}

const fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    rule: Vec<Rule>,
}

const TABLE: &str = include_str!("../../inventory/rules.toml");

/// Every rule, in the table's order.
pub fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    // The table is compiled in and checked by a unit test, so it cannot fail at run time for a user.
    RULES.get_or_init(|| toml::from_str::<Table>(TABLE).map_or_else(|_| Vec::new(), |t| t.rule))
}

/// The rule `id`, if the table has it.
pub fn rule(id: &str) -> Option<&'static Rule> {
    rules().iter().find(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_table_parses_and_ids_are_unique() {
        let table: Table = toml::from_str(TABLE).expect("inventory/rules.toml parses");
        assert_eq!(table.rule.len(), rules().len());
        let mut ids: Vec<&str> = rules().iter().map(|r| r.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), rules().len(), "a rule id is repeated");
        assert!(rules().iter().all(|r| (1..=9).contains(&r.policy)));
    }
}
