//! A scenario on the simulated runtime of its host, and the counts of many reports.

use serde::Serialize;

use crate::kernel::Catalog;
use crate::runner::run::{ScenarioReport, run_scenario};
use crate::runner::status::{HarnessFault, Status};
use crate::runtime::{Runtime, SimRuntime};
use crate::scenario::Scenario;

/// Passed, failed and skipped counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Scenarios whose every expectation held.
    pub passed: usize,
    /// Scenarios that failed (files that did not load are `load_errors`, apart).
    pub failed: usize,
    /// Scenarios that could not run in this mode.
    pub skipped: usize,
    /// Scenarios none of whose expectations apply to the subject.
    pub not_applicable: usize,
    /// Scenarios whose observed expectations held while others could not be observed.
    pub set_aside: usize,
    /// Files that did not load (they never ran: not in `failed`, and counted as failures by
    /// [`Summary::failures`]).
    pub load_errors: usize,
    /// Scenarios devsim failed to run or judge (a harness failure, not counted in `failed`).
    pub errored: usize,
}

impl Summary {
    /// Counts reports, and `load_errors` files that failed to load.
    pub fn of(reports: &[ScenarioReport], load_errors: usize) -> Self {
        let mut summary = Summary {
            load_errors,
            ..Summary::default()
        };
        for report in reports {
            match report.status {
                Status::Passed => summary.passed += 1,
                Status::Failed => summary.failed += 1,
                Status::Skipped(_) => summary.skipped += 1,
                Status::NotApplicable(_) => summary.not_applicable += 1,
                Status::SetAside(_) => summary.set_aside += 1,
                Status::Errored(_) => summary.errored += 1,
            }
        }
        summary
    }

    /// What the run shows as failures: the scenarios that failed plus the files that did not load.
    pub fn failures(&self) -> usize {
        self.failed + self.load_errors
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} passed, {} failed, {} skipped",
            self.passed,
            self.failures(),
            self.skipped
        )?;
        if self.not_applicable + self.set_aside > 0 {
            write!(
                f,
                ", {} not applicable, {} set aside",
                self.not_applicable, self.set_aside
            )?;
        }
        if self.errored > 0 {
            write!(f, ", {} errored (devsim's own failures)", self.errored)?;
        }
        if self.load_errors > 0 {
            // Counted among the failures, and said apart: they never ran.
            write!(
                f,
                " ({} of the failures: files that failed to load)",
                self.load_errors
            )?;
        }
        Ok(())
    }
}

/// Runs a scenario on the simulated runtime of its host.
pub fn run_simulated(scenario: &Scenario, catalog: &Catalog) -> ScenarioReport {
    match SimRuntime::new(scenario.host.clone()) {
        Ok(runtime) => run_scenario(scenario, catalog, Box::new(runtime) as Box<dyn Runtime>),
        // Hosts are validated at load; this is a second line of defence: devsim's failure, not a finding.
        Err(error) => ScenarioReport::errored(
            scenario,
            HarnessFault::new(
                "start the simulated runtime for this host",
                error.to_string(),
            ),
        ),
    }
}
