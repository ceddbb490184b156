//! What a judge makes of a scenario it sees only in part: a step that stopped (its events so far) and steps
//! left out because the subject lacks their kernel or action.

use super::tests::{capabilities, select, validate_expecting_refusal};
use super::*;
use crate::conformance::Conformance;

#[test]
fn a_step_that_stopped_is_held_to_its_never_rules_over_what_it_did() {
    let mut capabilities = capabilities(&[]);
    capabilities.events.push("extension_load".into());
    let mut step = validate_expecting_refusal();
    step.expect.trace.never = vec!["extension_load".into()];
    let key = crate::conformance::trace_key("never", "extension_load");
    step.expect
        .levels
        .insert(key, Conformance::policy("extensions-after-gates"));
    let load = Entry::Reported {
        event: "extension_load".parse().expect("an event"),
        device: None,
        detail: None,
    };
    let rules = TraceRules {
        never: vec!["extension_load".into()],
        once: vec!["set_device".into()], // unknowable on a prefix: never judged there
        ..TraceRules::default()
    };
    let mut levels = Levels::default();
    levels.insert(
        crate::conformance::trace_key("never", "extension_load"),
        Conformance::policy("extensions-after-gates"),
    );
    levels.insert(
        crate::conformance::trace_key("once", "set_device"),
        Conformance::policy("target-context"),
    );
    let mut judge = Judge::new(&capabilities, TorchBuild::Hip, 2);
    assert!(
        judge.stopped(&step, (&rules, &levels), &[], &[]).is_empty(),
        "nothing happened yet: nothing broken"
    );
    let broken = judge.stopped(&step, (&rules, &levels), &[], &[load]);
    let keys: Vec<&str> = broken.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(keys, ["trace.never", "expect.trace.never"], "{broken:?}");
}

#[test]
fn a_scenario_judged_in_part_is_never_more_than_set_aside() {
    let mut capabilities = capabilities(&[]);
    capabilities.events.push("extension_load".into());
    let load = Entry::Reported {
        event: "extension_load".parse().expect("an event"),
        device: None,
        detail: None,
    };
    let rules = TraceRules {
        never: vec!["extension_load".into()],
        once: vec!["set_device".into()], // the step left out might have made it: set aside
        ..TraceRules::default()
    };
    let mut levels = Levels::default();
    levels.insert(
        crate::conformance::trace_key("never", "extension_load"),
        Conformance::policy("extensions-after-gates"),
    );
    levels.insert(
        crate::conformance::trace_key("once", "set_device"),
        Conformance::policy("target-context"),
    );
    let why = "subject s does not have kernel allspark: a step was left out";
    let mut judge = Judge::new(&capabilities, TorchBuild::Hip, 2);
    judge.lacking(&select("cuda"), "subject s does not have kernel allspark");
    assert!(judge.scenario_in_part(&rules, &levels, &[], why).is_empty());
    match judge.verdict() {
        Status::SetAside(reason) => assert!(
            reason.contains("subject s does not have kernel allspark (step 1)")
                && reason.contains("expect.trace.once.set_device"),
            "{reason}"
        ),
        other => panic!("a scenario judged in part passed as {other:?}"),
    }
    let broken = judge.scenario_in_part(&rules, &levels, &[load], why);
    let keys: Vec<&str> = broken.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(
        keys,
        ["expect.trace.never"],
        "an event that happened stays happened"
    );
}
