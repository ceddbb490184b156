//! `devsim run --format junit`: one test case per scenario (classname: its topic folder), skips as
//! `<skipped message=…>`, failures with the human diff, files that failed to load as failures.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::report;
use crate::scenario::{LoadError, ScenarioReport, Status};

/// The JUnit XML for a run.
pub fn render(
    reports: &[(ScenarioReport, Duration)],
    load_errors: &[LoadError],
) -> Result<String, quick_junit::SerializeError> {
    let mut suite = TestSuite::new("devsim scenarios");
    let mut total = Duration::ZERO;
    for (scenario, took) in reports {
        total += *took;
        let status = match &scenario.status {
            Status::Passed => TestCaseStatus::success(),
            Status::Skipped(reason) | Status::NotApplicable(reason) | Status::SetAside(reason) => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(format!("{}: {reason}", scenario.status.word()));
                status
            }
            Status::Failed => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                // The message is what failed, with its level; the description and the full diff follow.
                let outcome = crate::baseline::outcome(scenario);
                status.set_message(outcome.strip_prefix("failed: ").unwrap_or(&outcome));
                status.set_type("scenario-failure");
                status.set_description(report::human(scenario));
                status
            }
        };
        let mut case = TestCase::new(scenario.name.as_str(), status);
        case.set_classname(topic(&scenario.name));
        case.set_time(*took);
        suite.add_test_case(case);
    }
    for error in load_errors {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status.set_message(error.to_string());
        status.set_type("load-error");
        let mut case = TestCase::new(error.path.display().to_string(), status);
        case.set_classname("load");
        suite.add_test_case(case);
    }
    suite.set_time(total);
    let mut junit = Report::new("devsim");
    junit.set_time(total);
    junit.add_test_suite(suite);
    junit.to_string()
}

/// `placement/x.toml` → `placement`; a scenario at the root → `scenarios`.
fn topic(name: &str) -> String {
    match name.rsplit_once('/') {
        Some((folder, _)) => folder.replace('/', "."),
        None => "scenarios".to_string(),
    }
}
