//! Each failed expectation of a report with the finding it belongs to (for `findings` and `crate::repro`).

use super::{Grouped, Signature, grouped};
use crate::runner::ScenarioReport;
use crate::runner::expect::Mismatch;
use crate::scenario::model::Scenario;

/// One failed expectation of a report, with the finding it belongs to.
pub(crate) struct Located<'a> {
    /// The finding's signature.
    pub(crate) signature: Signature,
    /// For a finding by deciding function, the plain signature it groups and the line.
    pub(crate) plain: Grouped,
    /// The step it failed on; `None`: a scenario-level trace rule.
    pub(crate) step: Option<usize>,
    /// What failed.
    pub(crate) mismatch: &'a Mismatch,
}

/// Every failed expectation of `report` (a run of `scenario`), each with its finding's signature, in the
/// order the report holds them: the steps' mismatches, then the scenario-level trace rules'.
pub(crate) fn located<'a>(scenario: &Scenario, report: &'a ScenarioReport) -> Vec<Located<'a>> {
    let mut out = Vec::new();
    for step in &report.steps {
        for mismatch in &step.mismatches {
            let decided = std::iter::once(&step.observed.decided_by);
            let (signature, plain) = grouped(mismatch, scenario, Some(step.number), decided);
            out.push(Located {
                signature,
                plain,
                step: Some(step.number),
                mismatch,
            });
        }
    }
    for mismatch in &report.trace_mismatches {
        let decided = report
            .steps
            .iter()
            .map(|s| &s.observed.decided_by)
            .chain(std::iter::once(&report.stopped_decided_by));
        let (signature, plain) = grouped(mismatch, scenario, None, decided);
        out.push(Located {
            signature,
            plain,
            step: None,
            mismatch,
        });
    }
    out
}
