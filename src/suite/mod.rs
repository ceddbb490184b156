//! Running a suite: every selected scenario through one subject, then what the run amounts to (the summary,
//! the distinct findings, the outcomes a baseline records, the comparison with a baseline) and its verdict.
//! `devsim run` calls [`run_suite`] and only prints what comes back.

use std::time::Duration;

use crate::baseline::{Baseline, Difference};
use crate::findings::{Finding, findings};
use crate::runner::HarnessFault;
use crate::runner::Summary;
use crate::runner::{ScenarioReport, Status};
use crate::scenario::Scenario;
use crate::subject::{RunEvent, Subject};

/// Told about each scenario as the suite runs it (the CLI's progress bar and its per-scenario reports).
pub trait SuiteObserver {
    /// `scenario` is about to run.
    fn started(&mut self, scenario: &Scenario) {
        let _ = scenario;
    }
    /// `scenario` ran and gave `report`.
    fn finished(&mut self, scenario: &Scenario, report: &ScenarioReport) {
        let _ = (scenario, report);
    }
}

/// An observer that is told nothing.
impl SuiteObserver for () {}

/// A finished suite.
#[derive(Debug)]
pub struct SuiteRun {
    /// Each scenario's report and how long it took, in the order they ran.
    pub reports: Vec<(ScenarioReport, Duration)>,
    /// Passed, failed, skipped … counts, and the files that failed to load.
    pub summary: Summary,
    /// The distinct findings the failures hold.
    pub findings: Vec<Finding>,
    /// Every scenario's outcome and the findings, as a baseline records them.
    pub outcomes: Baseline,
}

/// Runs every scenario through `subject`, in order; `load_errors` files failed to load before it.
pub fn run_suite(
    subject: &mut dyn Subject,
    scenarios: &[Scenario],
    load_errors: usize,
    observer: &mut dyn SuiteObserver,
) -> SuiteRun {
    let mut slots: Vec<Option<(ScenarioReport, Duration)>> = vec![None; scenarios.len()];
    subject.run_all(scenarios, &mut |event| match event {
        RunEvent::Started(index) => observer.started(&scenarios[index]),
        RunEvent::Finished(index, report, took) => {
            observer.finished(&scenarios[index], &report);
            slots[index] = Some((*report, took));
        }
    });
    let reports: Vec<(ScenarioReport, Duration)> = slots
        .into_iter()
        .zip(scenarios)
        .map(|(slot, scenario)| {
            slot.unwrap_or_else(|| {
                (
                    ScenarioReport::errored(scenario, HarnessFault::not_reported()),
                    Duration::ZERO,
                )
            })
        })
        .collect();
    let plain: Vec<ScenarioReport> = reports.iter().map(|(report, _)| report.clone()).collect();
    let findings = findings(scenarios.iter().zip(&plain));
    SuiteRun {
        summary: Summary::of(&plain, load_errors),
        outcomes: Baseline::of(subject.name(), &plain, &findings),
        findings,
        reports,
    }
}

/// Why a baseline cannot be compared with this run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("compare with a baseline recorded for subject `{recorded}`: this run judged `{judged}`")]
pub struct OtherSubject {
    /// The subject the baseline names.
    pub recorded: String,
    /// The subject this run judged.
    pub judged: String,
}

/// What a run was asked to hold to, beyond its own scenarios passing.
#[derive(Debug, Clone, Default)]
pub struct SuiteExpectations {
    /// The run was compared with a baseline (known failures are then expected), with these differences.
    pub baseline_differences: Option<Vec<Difference>>,
    /// The run wrote a baseline (its failures are being recorded, not judged).
    pub writes_baseline: bool,
    /// At least this many scenarios with GPUs must have run live.
    pub require_live: Option<usize>,
    /// The live driver is one of devsim's fakes.
    pub fake_driver: bool,
    /// A fake driver may count towards `require_live` (devsim's own tests).
    pub allow_fake: bool,
    /// The live GPU driver is present but failing, and why.
    pub driver_failing: Option<String>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuiteVerdict {
    /// Everything selected passed, or matched its baseline.
    Passed,
    /// A GPU driver is present but failing.
    DriverFailing(String),
    /// `require_live` was asked of a run through a fake driver.
    FakeDriver {
        /// The scenarios asked for.
        required: usize,
    },
    /// Fewer scenarios with GPUs ran live than were required.
    TooFewLive {
        /// How many ran.
        ran: usize,
        /// How many were required.
        required: usize,
    },
    /// Outcomes differ from the baseline.
    BaselineDiffers {
        /// How many scenarios differ.
        count: usize,
    },
    /// Files failed to load.
    LoadErrors {
        /// How many.
        count: usize,
    },
    /// devsim failed to run or judge scenarios (its own failures, whatever a baseline says).
    Errored {
        /// How many.
        count: usize,
    },
    /// Scenarios failed.
    Failed {
        /// How many.
        count: usize,
    },
}

impl SuiteRun {
    /// Scenarios that failed (files that did not load are `summary.load_errors`).
    pub fn failed(&self) -> usize {
        self.summary.failed
    }

    /// The reports alone, in order.
    pub fn plain_reports(&self) -> Vec<ScenarioReport> {
        self.reports
            .iter()
            .map(|(report, _)| report.clone())
            .collect()
    }

    /// How this run differs from `baseline`; `selected` when the run was filtered, so that the scenarios it
    /// did not run are not differences.
    pub fn compare(
        &self,
        baseline: &Baseline,
        selected: bool,
    ) -> Result<Vec<Difference>, OtherSubject> {
        if baseline.subject != self.outcomes.subject {
            return Err(OtherSubject {
                recorded: baseline.subject.clone(),
                judged: self.outcomes.subject.clone(),
            });
        }
        let baseline = if selected {
            baseline.restricted_to(self.outcomes.outcomes.keys())
        } else {
            baseline.clone()
        };
        Ok(baseline.compare(&self.outcomes))
    }

    /// Scenarios with GPUs that ran live (passed or failed): CPU-only scenarios run on any machine, so they
    /// prove nothing about its GPUs.
    pub fn ran_with_gpus(&self, scenarios: &[Scenario]) -> usize {
        self.reports
            .iter()
            .zip(scenarios)
            .filter(|((report, _), scenario)| {
                !scenario.host.gpus.is_empty()
                    && matches!(report.status, Status::Passed | Status::Failed)
            })
            .count()
    }

    /// The verdict, in this order: a failing driver, the live requirement, baseline differences, then load
    /// errors and failures (failures only when the run was neither compared with nor recording a baseline).
    pub fn verdict(&self, scenarios: &[Scenario], asked: &SuiteExpectations) -> SuiteVerdict {
        if let Some(failing) = &asked.driver_failing {
            return SuiteVerdict::DriverFailing(failing.clone());
        }
        if let Some(required) = asked.require_live {
            if asked.fake_driver && !asked.allow_fake {
                return SuiteVerdict::FakeDriver { required };
            }
            let ran = self.ran_with_gpus(scenarios);
            if ran < required {
                return SuiteVerdict::TooFewLive { ran, required };
            }
        }
        if self.summary.errored > 0 {
            // Not an outcome of the subject: no baseline records or excuses it.
            return SuiteVerdict::Errored {
                count: self.summary.errored,
            };
        }
        if let Some(differences) = &asked.baseline_differences
            && !differences.is_empty()
        {
            return SuiteVerdict::BaselineDiffers {
                count: differences.len(),
            };
        }
        let judged_failures = if asked.baseline_differences.is_some() || asked.writes_baseline {
            0
        } else {
            self.failed()
        };
        if self.summary.load_errors > 0 {
            SuiteVerdict::LoadErrors {
                count: self.summary.load_errors,
            }
        } else if judged_failures > 0 {
            SuiteVerdict::Failed {
                count: judged_failures,
            }
        } else {
            SuiteVerdict::Passed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(failed: usize, load_errors: usize) -> SuiteRun {
        SuiteRun {
            reports: Vec::new(),
            summary: Summary {
                failed,
                load_errors,
                ..Summary::default()
            },
            findings: Vec::new(),
            outcomes: Baseline::of("s", &[], &[]),
        }
    }

    #[test]
    fn load_errors_come_before_failures_and_a_baseline_expects_the_failures() {
        let asked = SuiteExpectations::default();
        assert_eq!(run(0, 0).verdict(&[], &asked), SuiteVerdict::Passed);
        assert_eq!(
            run(2, 0).verdict(&[], &asked),
            SuiteVerdict::Failed { count: 2 }
        );
        assert_eq!(
            run(2, 1).verdict(&[], &asked),
            SuiteVerdict::LoadErrors { count: 1 }
        );
        let compared = SuiteExpectations {
            baseline_differences: Some(Vec::new()),
            ..SuiteExpectations::default()
        };
        assert_eq!(run(2, 0).verdict(&[], &compared), SuiteVerdict::Passed);
        let writing = SuiteExpectations {
            writes_baseline: true,
            ..SuiteExpectations::default()
        };
        assert_eq!(run(2, 0).verdict(&[], &writing), SuiteVerdict::Passed);
    }

    #[test]
    fn load_errors_are_counted_apart_from_failed_scenarios_and_shown_among_the_failures() {
        let suite = run(2, 1);
        assert_eq!(suite.failed(), 2);
        assert_eq!(suite.summary.failures(), 3);
        assert_eq!(
            suite.summary.to_string(),
            "0 passed, 3 failed, 0 skipped (1 of the failures: files that failed to load)"
        );
    }

    #[test]
    fn errors_of_devsim_fail_the_run_whatever_a_baseline_says() {
        let errored = |count| SuiteRun {
            summary: Summary {
                errored: count,
                ..run(0, 0).summary
            },
            ..run(0, 0)
        };
        let verdict = |asked: &SuiteExpectations| errored(2).verdict(&[], asked);
        assert_eq!(
            verdict(&SuiteExpectations::default()),
            SuiteVerdict::Errored { count: 2 }
        );
        let compared = SuiteExpectations {
            baseline_differences: Some(Vec::new()),
            ..SuiteExpectations::default()
        };
        assert_eq!(verdict(&compared), SuiteVerdict::Errored { count: 2 });
        let writing = SuiteExpectations {
            writes_baseline: true,
            ..SuiteExpectations::default()
        };
        assert_eq!(verdict(&writing), SuiteVerdict::Errored { count: 2 });
        assert_eq!(errored(0).verdict(&[], &compared), SuiteVerdict::Passed);
    }

    #[test]
    fn a_failing_driver_and_the_live_requirement_come_first() {
        let failing = SuiteExpectations {
            driver_failing: Some("cuInit failed".into()),
            require_live: Some(1),
            ..SuiteExpectations::default()
        };
        assert_eq!(
            run(0, 0).verdict(&[], &failing),
            SuiteVerdict::DriverFailing("cuInit failed".into())
        );
        let fake = SuiteExpectations {
            require_live: Some(1),
            fake_driver: true,
            ..SuiteExpectations::default()
        };
        assert_eq!(
            run(0, 0).verdict(&[], &fake),
            SuiteVerdict::FakeDriver { required: 1 }
        );
        let allowed = SuiteExpectations {
            allow_fake: true,
            ..fake
        };
        assert_eq!(
            run(0, 0).verdict(&[], &allowed),
            SuiteVerdict::TooFewLive {
                ran: 0,
                required: 1
            }
        );
    }

    #[test]
    fn a_baseline_of_another_subject_is_refused() {
        let other = Baseline::of("other", &[], &[]);
        assert_eq!(
            run(0, 0).compare(&other, false),
            Err(OtherSubject {
                recorded: "other".into(),
                judged: "s".into()
            })
        );
    }
}
