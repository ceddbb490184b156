//! Which steps of a scenario a subject can perform: a scenario naming an action or a kernel the subject does
//! not have is judged on the rest where leaving the step out changes nothing the rest starts from.

use std::collections::BTreeMap;

use crate::scenario::Scenario;
use crate::scenario::model::{Action, Step};
use crate::subject::encode;
use crate::subject::handshake::Capabilities;

/// The steps the subject cannot perform, by number, or why the scenario as a whole does not apply: when it
/// can perform none of them, or when one it cannot changes what later steps start from. A step that only
/// reads (normalize, resolve, validate, select, discover, default_device) is left out and the rest is
/// judged; one that changes state (set_device, move, warmup, lock) would leave the others judged from a
/// state the scenario did not mean.
pub(crate) fn lacking(
    capabilities: &Capabilities,
    scenario: &Scenario,
) -> Result<BTreeMap<usize, String>, String> {
    let mut lacking = BTreeMap::new();
    for step in &scenario.steps {
        if let Some(reason) = lacks(capabilities, step) {
            if !reads_only(&step.action) {
                // the whole scenario, named by the first step it lacks, as before steps could be left out
                return Err(lacking.pop_first().map_or(reason, |(_, first)| first));
            }
            lacking.insert(step.number, reason);
        }
    }
    if lacking.len() == scenario.steps.len() {
        if let Some((_, reason)) = lacking.pop_first() {
            return Err(reason);
        }
    }
    Ok(lacking)
}

/// Why the subject cannot perform `step`: an action or a kernel it does not have.
fn lacks(capabilities: &Capabilities, step: &Step) -> Option<String> {
    let name = &capabilities.name;
    let action = step.action.name();
    if !capabilities.actions.iter().any(|a| a == action) {
        return Some(format!("subject {name} does not have action {action}"));
    }
    let kernel = encode::kernel_of(step)?;
    (!capabilities.kernels.iter().any(|k| k == kernel))
        .then(|| format!("subject {name} does not have kernel {kernel}"))
}

/// Whether a step only reads what the host and the project hold, so that leaving it out changes nothing a
/// later step starts from.
fn reads_only(action: &Action) -> bool {
    matches!(
        action,
        Action::Normalize(_)
            | Action::Resolve(_)
            | Action::Validate { .. }
            | Action::Select { .. }
            | Action::Discover
            | Action::DefaultDevice
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::kernel::Catalog;
    use crate::scenario::load::{ProfileSources, parse_scenario};
    use crate::subject::protocol::Wording;

    /// A subject with `actions` and the one kernel `gptq_marlin`.
    fn subject(actions: &[&str]) -> Capabilities {
        Capabilities {
            protocol: 2,
            name: "s".into(),
            version: "1".into(),
            actions: actions.iter().map(|a| (*a).to_string()).collect(),
            kernels: vec!["gptq_marlin".into()],
            events: Vec::new(),
            messages: Wording::Own,
            declared: Vec::new(),
            levels: Default::default(),
            observes: None,
            live: false,
            packages: Vec::new(),
        }
    }

    /// A scenario on an H200 whose steps are `steps`, TOML step tables.
    fn scenario(steps: &[&str]) -> Scenario {
        let mut text = "format = 1\ndescription = \"x\"\n[host]\nprofile = \"h200\"\n".to_string();
        for step in steps {
            text.push_str("[[step]]\n");
            text.push_str(step);
            text.push('\n');
        }
        parse_scenario(
            Path::new("s.toml"),
            &text,
            &Catalog::reference(),
            &ProfileSources::shipped(),
        )
        .expect("loads")
    }

    const VALIDATE_MARLIN: &str =
        "action = \"validate\"\nkernel = \"gptq_marlin\"\ndevice = \"cuda\"";
    const VALIDATE_EXLLAMA: &str =
        "action = \"validate\"\nkernel = \"gptq_exllama_v2\"\ndevice = \"cuda\"";
    const MOVE_EXLLAMA: &str = "action = \"move\"\nkernel = \"gptq_exllama_v2\"\ndevice = \"cuda\"";
    const SET_DEVICE: &str = "action = \"set_device\"\nordinal = 0";

    #[test]
    fn a_read_only_step_the_subject_lacks_is_left_out_and_the_rest_judged() {
        let all = subject(&["validate", "move", "set_device"]);
        let lacking = lacking(&all, &scenario(&[VALIDATE_MARLIN, VALIDATE_EXLLAMA]));
        assert_eq!(
            lacking,
            Ok(BTreeMap::from([(
                2,
                "subject s does not have kernel gptq_exllama_v2".to_string()
            )]))
        );
        assert_eq!(
            super::lacking(&all, &scenario(&[VALIDATE_MARLIN])),
            Ok(BTreeMap::new())
        );
    }

    #[test]
    fn a_scenario_applies_not_at_all_when_nothing_or_a_state_change_is_lacking() {
        let all = subject(&["validate", "move", "set_device"]);
        let cases = [
            (
                &[VALIDATE_EXLLAMA][..],
                "subject s does not have kernel gptq_exllama_v2",
            ),
            (
                &[VALIDATE_MARLIN, MOVE_EXLLAMA][..],
                "subject s does not have kernel gptq_exllama_v2",
            ),
        ];
        for (steps, why) in cases {
            assert_eq!(lacking(&all, &scenario(steps)), Err(why.to_string()));
        }
        assert_eq!(
            lacking(&all, &scenario(&[VALIDATE_EXLLAMA, MOVE_EXLLAMA])),
            Err("subject s does not have kernel gptq_exllama_v2".to_string()),
            "named by the first step it lacks"
        );
        let no_set_device = subject(&["validate"]);
        assert_eq!(
            lacking(&no_set_device, &scenario(&[SET_DEVICE, VALIDATE_MARLIN])),
            Err("subject s does not have action set_device".to_string())
        );
    }
}
