//! How a command that ran to its end came out: a verdict on the code under test (or on the machine, or on
//! the files it was given), never an error. Errors — devsim could not do what it was asked — are
//! [`super::CliError`]. Each has its exit code through an exhaustive `match`: a new variant must choose one.

use devsim_metadata::exit;

use crate::suite::SuiteVerdict;

/// How a command that ran to its end came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// Every selected scenario passed (skips, set-asides and not-applicables allowed) or matched its
    /// baseline; for the other commands, they did what was asked.
    Passed,
    /// Scenarios failed: findings about the code under test.
    Failed {
        /// How many failed.
        count: usize,
    },
    /// devsim failed to run or judge scenarios (its own failure, not the code under test's): no verdict.
    Errored {
        /// How many.
        count: usize,
    },
    /// Files failed to load; the rest ran.
    LoadErrors {
        /// How many files failed.
        count: usize,
    },
    /// A GPU driver is present but failed while devsim read the GPUs (`run --live`, `probe`).
    DriverFailing(String),
    /// `run --live --require-live N` ran fewer than N scenarios live.
    TooFewLive {
        /// How many ran live.
        ran: usize,
        /// How many were required.
        required: usize,
    },
    /// `run --live --require-live N` through one of devsim's fake drivers.
    FakeDriver {
        /// How many were required.
        required: usize,
    },
    /// Outcomes differ from the baseline.
    BaselineDiffers {
        /// The baseline file.
        path: String,
        /// How many scenarios changed.
        count: usize,
    },
    /// `coverage`: paths the threshold asks for that no passing scenario exercised.
    CoverageGaps {
        /// How many kernel/path/build cells are missing.
        count: usize,
    },
    /// `migrate --check` found files with deprecated forms.
    MigrationNeeded {
        /// How many files.
        count: usize,
    },
    /// `review` left pending changes undecided.
    PendingLeft {
        /// How many pending copies are left.
        count: usize,
    },
    /// `probe --require-gpu N` found fewer than N real GPUs.
    TooFewGpus {
        /// How many were required.
        required: usize,
        /// What the probe found, in one line.
        found: String,
    },
    /// `probe --check-masks`: the driver showed other GPUs than devsim predicts under some masks.
    MasksDisagree {
        /// How many masks disagreed.
        count: usize,
    },
}

impl RunOutcome {
    /// A finished run's verdict; `baseline` names the baseline file it was compared with, if any.
    pub fn of_run(verdict: SuiteVerdict, baseline: Option<&std::path::Path>) -> Self {
        match verdict {
            SuiteVerdict::Passed => Self::Passed,
            SuiteVerdict::DriverFailing(failing) => Self::DriverFailing(failing),
            SuiteVerdict::FakeDriver { required } => Self::FakeDriver { required },
            SuiteVerdict::TooFewLive { ran, required } => Self::TooFewLive { ran, required },
            SuiteVerdict::BaselineDiffers { count } => Self::BaselineDiffers {
                path: baseline
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                count,
            },
            SuiteVerdict::LoadErrors { count } => Self::LoadErrors { count },
            SuiteVerdict::Errored { count } => Self::Errored { count },
            SuiteVerdict::Failed { count } => Self::Failed { count },
        }
    }

    /// The outcome of a run or check that counted `load_errors` files that failed to load and `failed`
    /// scenarios that failed: load errors first, then failures.
    pub fn of_counts(load_errors: usize, failed: usize) -> Self {
        if load_errors > 0 {
            Self::LoadErrors { count: load_errors }
        } else if failed > 0 {
            Self::Failed { count: failed }
        } else {
            Self::Passed
        }
    }

    /// The exit code of a command that ends with this: every variant named, so a new one must choose.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Passed => exit::PASSED,
            // Verdicts on the code under test, or on the machine a live run needs.
            Self::Failed { .. }
            | Self::TooFewLive { .. }
            | Self::FakeDriver { .. }
            | Self::BaselineDiffers { .. }
            | Self::CoverageGaps { .. }
            | Self::MigrationNeeded { .. }
            | Self::PendingLeft { .. }
            | Self::TooFewGpus { .. }
            | Self::MasksDisagree { .. } => exit::FAILED,
            // What devsim was given could not be loaded.
            Self::LoadErrors { .. } => exit::BAD_INPUT,
            Self::DriverFailing(_) => exit::DRIVER_FAILING,
            // devsim's own failure to run or judge: no verdict.
            Self::Errored { .. } => exit::ERRORED,
        }
    }

    /// What the command failed to do, as a fragment that reads after "failed to"; `None` when it passed.
    pub fn shortfall(&self) -> Option<String> {
        Some(match self {
            Self::Passed => return None,
            Self::Failed { count } => format!("pass {count} scenario(s)"),
            Self::Errored { count } => format!(
                "run or judge {count} scenario(s): devsim's own failure, not the code under test's"
            ),
            Self::LoadErrors { count } => format!("load {count} file(s)"),
            Self::DriverFailing(why) => format!("read the GPUs: {why}"),
            Self::TooFewLive { ran, required } => format!(
                "run {required} GPU scenario(s) live: only {ran} ran, the rest were skipped"
            ),
            Self::FakeDriver { required } => format!(
                "run {required} GPU scenario(s) live: the driver is one of devsim's fakes, which proves nothing about a GPU (pass --allow-fake in devsim's own tests)"
            ),
            Self::BaselineDiffers { path, count } => {
                format!("match baseline {path}: {count} scenario(s) changed outcome")
            }
            Self::CoverageGaps { count } => {
                format!("cover every kernel path the threshold asks for: {count} not exercised")
            }
            Self::MigrationNeeded { count } => format!(
                "pass the migration check: {count} file(s) have deprecated forms; `devsim migrate` rewrites them"
            ),
            Self::PendingLeft { count } => format!(
                "settle {count} pending change(s): `devsim review --accept` or `--reject`, or review on a terminal"
            ),
            Self::TooFewGpus { required, found } => {
                format!("find {required} real GPU(s): {found}")
            }
            Self::MasksDisagree { count } => format!(
                "match the driver under {count} visible-device mask(s): devsim predicts other GPUs"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::CliError;

    /// One of each variant: the `match` below fails to compile when a variant is added and not listed.
    fn every_outcome() -> Vec<RunOutcome> {
        let all = vec![
            RunOutcome::Passed,
            RunOutcome::Failed { count: 1 },
            RunOutcome::Errored { count: 1 },
            RunOutcome::LoadErrors { count: 1 },
            RunOutcome::DriverFailing("x".into()),
            RunOutcome::TooFewLive {
                ran: 0,
                required: 1,
            },
            RunOutcome::FakeDriver { required: 1 },
            RunOutcome::BaselineDiffers {
                path: "b.toml".into(),
                count: 1,
            },
            RunOutcome::CoverageGaps { count: 1 },
            RunOutcome::MigrationNeeded { count: 1 },
            RunOutcome::PendingLeft { count: 1 },
            RunOutcome::TooFewGpus {
                required: 1,
                found: "none".into(),
            },
            RunOutcome::MasksDisagree { count: 1 },
        ];
        for outcome in &all {
            match outcome {
                RunOutcome::Passed
                | RunOutcome::Failed { .. }
                | RunOutcome::Errored { .. }
                | RunOutcome::LoadErrors { .. }
                | RunOutcome::DriverFailing(_)
                | RunOutcome::TooFewLive { .. }
                | RunOutcome::FakeDriver { .. }
                | RunOutcome::BaselineDiffers { .. }
                | RunOutcome::CoverageGaps { .. }
                | RunOutcome::MigrationNeeded { .. }
                | RunOutcome::PendingLeft { .. }
                | RunOutcome::TooFewGpus { .. }
                | RunOutcome::MasksDisagree { .. } => {}
            }
        }
        all
    }

    #[test]
    fn each_outcome_has_the_documented_exit_code() {
        let codes: Vec<(String, u8)> = every_outcome()
            .iter()
            .map(|outcome| (format!("{outcome:?}"), outcome.exit_code()))
            .collect();
        let expected = [
            exit::PASSED,
            exit::FAILED,
            exit::ERRORED,
            exit::BAD_INPUT,
            exit::DRIVER_FAILING,
            exit::FAILED,
            exit::FAILED,
            exit::FAILED,
            exit::FAILED,
            exit::FAILED,
            exit::FAILED,
            exit::FAILED,
            exit::FAILED,
        ];
        let actual: Vec<u8> = codes.iter().map(|(_, code)| *code).collect();
        assert_eq!(actual, expected, "{codes:?}");
    }

    #[test]
    fn only_a_pass_exits_zero_and_says_nothing() {
        for outcome in every_outcome() {
            let passed = outcome == RunOutcome::Passed;
            assert_eq!(outcome.exit_code() == exit::PASSED, passed, "{outcome:?}");
            assert_eq!(outcome.shortfall().is_none(), passed, "{outcome:?}");
        }
    }

    #[test]
    fn an_errored_run_has_its_own_exit_code_apart_from_failures_bad_input_and_errors() {
        let errored = RunOutcome::Errored { count: 1 }.exit_code();
        assert_eq!(errored, exit::ERRORED);
        for outcome in every_outcome() {
            if !matches!(outcome, RunOutcome::Errored { .. }) {
                assert_ne!(outcome.exit_code(), errored, "{outcome:?}");
            }
        }
        let error = CliError::Io(std::io::Error::other("x")).exit_code();
        assert_ne!(error, errored);
        let codes = [
            exit::PASSED,
            exit::FAILED,
            exit::BAD_INPUT,
            exit::DRIVER_FAILING,
            exit::ERRORED,
        ];
        let mut distinct = codes.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), codes.len(), "every outcome is told apart");
    }

    #[test]
    fn a_suites_verdict_keeps_its_meaning() {
        let path = std::path::Path::new("base.toml");
        let cases = [
            (SuiteVerdict::Passed, RunOutcome::Passed),
            (
                SuiteVerdict::Errored { count: 2 },
                RunOutcome::Errored { count: 2 },
            ),
            (
                SuiteVerdict::Failed { count: 3 },
                RunOutcome::Failed { count: 3 },
            ),
            (
                SuiteVerdict::LoadErrors { count: 1 },
                RunOutcome::LoadErrors { count: 1 },
            ),
            (
                SuiteVerdict::BaselineDiffers { count: 4 },
                RunOutcome::BaselineDiffers {
                    path: "base.toml".into(),
                    count: 4,
                },
            ),
        ];
        for (verdict, expected) in cases {
            assert_eq!(RunOutcome::of_run(verdict, Some(path)), expected);
        }
        assert_eq!(
            RunOutcome::of_counts(1, 1),
            RunOutcome::LoadErrors { count: 1 }
        );
        assert_eq!(RunOutcome::of_counts(0, 2), RunOutcome::Failed { count: 2 });
        assert_eq!(RunOutcome::of_counts(0, 0), RunOutcome::Passed);
    }
}
