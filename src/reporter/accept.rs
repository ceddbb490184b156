//! What `devsim run --accept` wrote and kept, for a terminal ([`crate::accept`] plans and writes it).
//! User text is placed through [`field`]; printing is the caller's.

use std::path::Path;

use crate::accept::Plan;
use crate::shown::field;

/// One scenario's accepted plan: the pending copy written (`pending`) with each change, then each
/// expectation kept as it was and why.
pub fn plan(scenario: &str, plan: &Plan, pending: Option<&Path>) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(pending) = pending {
        lines.push(format!(
            "pending: {} ({} change(s))",
            field(pending.display()),
            plan.changes.len()
        ));
        for change in &plan.changes {
            lines.push(format!(
                "  step {} {}: {} -> {}",
                change.step,
                field(&change.key),
                field(&change.expected),
                field(&change.observed)
            ));
        }
    }
    for kept in &plan.kept {
        let at = if kept.step == 0 {
            "scenario".to_string()
        } else {
            format!("step {}", kept.step)
        };
        lines.push(format!(
            "not accepted: {} {at} {}: {}",
            field(scenario),
            field(&kept.key),
            field(&kept.why)
        ));
    }
    lines
}

/// The closing line of `run --accept`: how many pending copies were written.
pub fn written(count: usize) -> String {
    format!("accept: {count} pending file(s) written; `devsim review` shows and settles them")
}
