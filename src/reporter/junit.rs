//! `devsim run --format junit`: one test case per scenario (classname: its topic folder), skips as
//! `<skipped message=…>`, failures with the human diff, files that failed to load as failures. The suite's
//! `<properties>` say what was judged where (subject, mode, machine, driver); a live run through one of devsim's
//! fake drivers says so in the suite's name and in every case's output. A failure's message ends with whether
//! a live run showed it (confirmed on a real GPU, or simulated; `crate::live_record`).

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::reporter::human;
use crate::runner::{ScenarioReport, Status};
use crate::scenario::LoadError;

/// What a run judged, and where.
pub struct RunInfo<'a> {
    /// The subject's name and version.
    pub subject: String,
    /// `simulated` or `live`.
    pub mode: &'static str,
    /// Live: the machine, in one line.
    pub machine: Option<&'a str>,
    /// Live through one of devsim's fake drivers.
    pub fake_driver: bool,
    /// Each failed scenario → whether a live run showed what it shows (`crate::live_record::Mark::human`:
    /// confirmed when one of its findings was, else simulated); it follows the failure's message.
    pub marks: std::collections::BTreeMap<String, String>,
}

/// What every case of a run through a fake driver carries.
const FAKE: &str = "live through devsim's FAKE DRIVER (a stand-in, no real GPU): this result proves nothing about a GPU";

/// The JUnit XML for a run.
pub fn render(
    reports: &[(ScenarioReport, Duration)],
    load_errors: &[LoadError],
    run: &RunInfo<'_>,
) -> Result<String, quick_junit::SerializeError> {
    let mut suite = TestSuite::new(if run.fake_driver {
        "devsim scenarios (live through a FAKE DRIVER)"
    } else {
        "devsim scenarios"
    });
    suite.add_property(("subject", xml(&run.subject).as_str()));
    suite.add_property(("mode", run.mode));
    if let Some(machine) = run.machine {
        suite.add_property(("machine", xml(machine).as_str()));
    }
    let driver = match (run.mode, run.fake_driver) {
        (_, true) => "fake",
        ("live", false) => "real",
        _ => "simulated",
    };
    suite.add_property(("driver", driver));
    let mut total = Duration::ZERO;
    for (scenario, took) in reports {
        total += *took;
        let status = match &scenario.status {
            Status::Passed => TestCaseStatus::success(),
            Status::Skipped(_) | Status::NotApplicable(_) | Status::SetAside(_) => {
                let mut status = TestCaseStatus::skipped();
                let reason = scenario.status.reason().unwrap_or_default();
                status.set_message(xml(&format!("{}: {reason}", scenario.status.word())));
                status
            }
            Status::Failed => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                // The message is what failed, with its level; the description and the full diff follow.
                let outcome = crate::baseline::outcome(scenario);
                let what = outcome.strip_prefix("failed: ").unwrap_or(&outcome);
                let message = match run.marks.get(&scenario.name) {
                    Some(mark) => format!("{what} — {mark}"),
                    None => what.to_string(),
                };
                status.set_message(xml(&message));
                status.set_type("scenario-failure");
                status.set_description(xml_text(&human::scenario(scenario)));
                status
            }
            Status::Errored(error) => {
                // JUnit's <error>: the harness, not the code under test, failed.
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status.set_message(xml(&error.to_string()));
                status.set_type("harness-error");
                status.set_description(xml_text(&human::scenario(scenario)));
                status
            }
        };
        let mut case = TestCase::new(xml(&scenario.name), status);
        case.set_classname(xml(&topic(&scenario.name)));
        case.set_time(*took);
        if run.fake_driver {
            case.set_system_out(FAKE);
        }
        suite.add_test_case(case);
    }
    for error in load_errors {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status.set_message(xml(&error.to_string()));
        status.set_type("load-error");
        let mut case = TestCase::new(xml(&error.path.display().to_string()), status);
        case.set_classname("load");
        suite.add_test_case(case);
    }
    suite.set_time(total);
    let mut junit = Report::new("devsim");
    junit.set_time(total);
    junit.add_test_suite(suite);
    junit.to_string()
}

/// One line of user text for an attribute or a name: control characters escaped visibly as in human output
/// ([`crate::shown::escape_controls`]), where quick-junit alone would drop them (ESC sequences, the C0
/// controls XML 1.0 forbids) and keep U+FFFE and U+FFFF, which XML 1.0 forbids too; so two names that
/// differ only there stay apart, and the document stays well-formed.
fn xml(text: &str) -> String {
    noncharacters(&crate::shown::escape_controls(text))
}

/// [`xml`] for a multi-line text (a description): its lines kept, everything else escaped.
fn xml_text(text: &str) -> String {
    noncharacters(&crate::shown::lines(text))
}

fn noncharacters(text: &str) -> String {
    text.replace('\u{FFFE}', "\\u{fffe}")
        .replace('\u{FFFF}', "\\u{ffff}")
}

/// `placement/x.toml` → `placement`; a scenario at the root → `scenarios`.
fn topic(name: &str) -> String {
    match name.rsplit_once('/') {
        Some((folder, _)) => folder.replace('/', "."),
        None => "scenarios".to_string(),
    }
}
