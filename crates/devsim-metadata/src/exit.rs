//! The exit codes of the `devsim` command, by name.

/// Every selected scenario passed (skips, set-asides and not-applicables allowed), or matched its baseline.
pub const PASSED: u8 = 0;
/// A scenario failed, changed from its baseline, too few ran live, or coverage fell short: a verdict on the
/// code under test (or on the machine, for live runs).
pub const FAILED: u8 = 1;
/// A file failed to load, a selection matched nothing, or the command line or another input was wrong.
pub const BAD_INPUT: u8 = 2;
/// A GPU driver is present but failing (`run --live`).
pub const DRIVER_FAILING: u8 = 3;
/// devsim could not run or judge a scenario (a harness fault, a subject that broke the protocol): no verdict
/// on the code under test, which is neither passed nor failed by it.
pub const ERRORED: u8 = 4;
