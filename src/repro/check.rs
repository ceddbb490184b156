//! The check a script restates for one failure, as data for `devsim_subject_kit.repro`, or why the kit
//! cannot restate it.

use serde_json::{Value, json};

use crate::dispatch::DispatchError;
use crate::dispatch::selector::normalize;
use crate::findings::Located;
use crate::scenario::model::{Expectations, ExpectedOrdinal, Scenario};
use crate::subject::judge::UNBACKED;

/// Why one failing check cannot be restated by the kit.
pub(super) type Why = String;

/// The check the kit restates for one failure, or why it cannot.
///
/// `stopped_at` is the number of the step the subject was sent after the last it answered: the one it could
/// not finish, when it stopped.
pub(super) fn check(
    scenario: &Scenario,
    failure: &Located<'_>,
    stopped_at: usize,
) -> Result<Value, Why> {
    let mismatch = failure.mismatch;
    let Some(conformance) = &mismatch.conformance else {
        return Err(format!(
            "a breakdown of the subject's process ({} expected {}), not a check of the project's answers",
            mismatch.key, mismatch.expected
        ));
    };
    if mismatch.expected == UNBACKED {
        return Err(format!(
            "the subject claims the {} level and cannot observe {}: a fact of its handshake, not of the project's dispatch",
            conformance.level, mismatch.key
        ));
    }
    let (branch, key) = match mismatch.key.split_once('.') {
        Some((branch @ ("when_ok" | "when_refused"), rest)) => (Some(branch), rest),
        _ => (None, mismatch.key.as_str()),
    };
    let (scope, step, table) = match failure.step {
        Some(number) => {
            let Some(step) = scenario.steps.get(number.wrapping_sub(1)) else {
                return Err(format!("step {number} is not in the scenario"));
            };
            let table = match branch {
                Some("when_ok") => step.expect.when_ok.as_deref(),
                Some(_) => step.expect.when_refused.as_deref(),
                None => Some(&step.expect),
            };
            ("step", Some(step), table.cloned())
        }
        // A step's own trace rule among the scenario's failures: the step the subject could not finish
        // (`unsupported` with the events it recorded), the one sent after the last answered.
        None if key.starts_with("trace.") => {
            let number = stopped_at;
            let Some(step) = scenario.steps.get(number.wrapping_sub(1)) else {
                return Err(format!("step {number} is not in the scenario"));
            };
            ("step", Some(step), Some(step.expect.clone()))
        }
        None => {
            let table = Expectations {
                trace: scenario.trace_rules.clone(),
                ..Expectations::default()
            };
            ("scenario", None, Some(table))
        }
    };
    let Some(table) = table else {
        return Err(format!("the scenario has no expectation {}", mismatch.key));
    };
    let number = step.map(|s| s.number);
    let key = key.strip_prefix("expect.").unwrap_or(key);
    if let Some(rule_name) = key.strip_prefix("trace.") {
        let base = json!({"scope": scope, "step": number, "branch": branch});
        return trace_check(rule_name, mismatch, &table, base);
    }
    let Some(step) = step else {
        return Err(format!(
            "devsim's judge compares scenario-level {key} in a way the kit does not restate"
        ));
    };
    let declared = conformance.rule.as_deref() == Some("declared-families");
    let declared_check = match key {
        "ok" if declared && mismatch.expected.starts_with("false (the subject's ") => true,
        "error"
            if declared
                && mismatch
                    .expected
                    .starts_with("no unsupported-family refusal") =>
        {
            true
        }
        "selected"
            if declared
                && mismatch
                    .expected
                    .starts_with("a kernel the subject declares") =>
        {
            true
        }
        _ => false,
    };
    if declared_check {
        let device = step.action.selector();
        let visible = u32::try_from(scenario.host.visible().map_or(0, |v| v.len())).unwrap_or(0);
        let family = device
            .and_then(|d| {
                normalize(d, scenario.host.torch, || Ok::<u32, DispatchError>(visible)).ok()
            })
            .map(|target| target.family.as_str());
        let Some(family) = family else {
            return Err("the step's selector names no family the policy resolves".into());
        };
        return Ok(json!({
            "kind": "declared", "step": number, "branch": branch, "key": key,
            "kernel": step.action.kernel(), "family": family,
        }));
    }
    // Rule per-target-arch, refusal side: the project refused a target its own arch rule admits (the rule's
    // source and the target's GPU are in devsim's expectation); the script fails while that refusal stands.
    if key == "error"
        && conformance.rule.as_deref() == Some("per-target-arch")
        && mismatch.expected.starts_with("no unsupported-arch refusal")
    {
        return Ok(json!({
            "kind": "not_refused_as", "step": number, "branch": branch, "key": key,
            "refusal": "unsupported-arch", "why": mismatch.expected,
        }));
    }
    let expected = match key {
        "ok" => table.ok.map(Value::Bool),
        "error" => table.error.clone().map(Value::String),
        "message" => table.message.clone().map(Value::String),
        "family" => table.family.clone().map(Value::String),
        "ordinal" => table.ordinal.map(|o| match o {
            ExpectedOrdinal::Some(n) => json!(n),
            ExpectedOrdinal::None => Value::Null,
        }),
        "torch_device" => table.torch_device.clone().map(Value::String),
        "ran_on" => table.ran_on.clone().map(Value::String),
        "lands_on" => table.lands_on.clone().map(Value::String),
        "current_after" => table.current_after.map(|n| json!(n)),
        "selected" => table.selected.clone().map(Value::String),
        "covers" => table.covers.clone().map(|c| json!(c)),
        "vendor" => table.vendor.clone().map(Value::String),
        "archs" => table.archs.clone().map(|a| json!(a)),
        "torch_device_count" => table.torch_device_count.map(|n| json!(n)),
        "runtime_devices" => table.runtime_devices.clone().map(|r| json!(r)),
        "retained_bytes" => {
            return Err(
                "retained device memory is measured only live, around the real allocator".into(),
            );
        }
        "numerics" => {
            return Err(
                "a live forward's numerics are measured only on a real GPU, against the FP64 oracle"
                    .into(),
            );
        }
        _ => {
            return Err(format!(
                "devsim's judge compares {key} in a way the kit does not restate"
            ));
        }
    };
    let Some(expected) = expected else {
        return Err(format!(
            "devsim's judge compares {key} with something the scenario does not state ({})",
            mismatch.expected
        ));
    };
    Ok(json!({"kind": "field", "step": number, "branch": branch, "key": key, "expected": expected}))
}

/// A trace rule's check: `never`/`once`/`count` with the event and count devsim expected, or `order`.
fn trace_check(
    rule_name: &str,
    mismatch: &crate::runner::Mismatch,
    table: &Expectations,
    mut base: Value,
) -> Result<Value, Why> {
    let fields = match rule_name {
        "never" | "once" | "count" => {
            let Some((event, count)) = mismatch.expected.rsplit_once(" x") else {
                return Err(format!(
                    "the trace rule's expectation `{}` names no event count",
                    mismatch.expected
                ));
            };
            let Ok(count) = count.parse::<usize>() else {
                return Err(format!("the trace rule's count `{count}` is not a number"));
            };
            json!({"kind": "trace", "rule": rule_name, "event": event, "count": count})
        }
        "order" => json!({"kind": "order", "events": table.trace.order}),
        other => {
            return Err(format!(
                "devsim's judge compares trace rule {other} in a way the kit does not restate"
            ));
        }
    };
    if let (Value::Object(base), Value::Object(fields)) = (&mut base, fields) {
        base.extend(fields);
    }
    Ok(base)
}
