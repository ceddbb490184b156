//! Rendering what devsim judged, for people and for tools; running and judging are below it, printing and
//! exit codes above it (the command line).
//!
//! - [`human`]: one scenario's report as text for a terminal.
//! - [`accept`]: what `run --accept` wrote and kept, for a terminal.
//! - [`findings`]: the distinct findings of a run's failures ([`crate::findings`] groups them), for a
//!   terminal.
//! - [`json`]: devsim's results as the typed documents of [`crate::output`] (`--format json`).
//! - [`junit`]: a run as JUnit XML (`--format junit`), one test case per scenario.
//! - [`tables`]: the human tables of the inspecting commands (kernels, hosts, a subject's declared
//!   contract, coverage).
//! - [`run`]: a whole `devsim run` in each format: the closing lines of human output (baseline changes,
//!   findings, reproductions, the summary), the JSON document and the JUnit report.

pub mod accept;
pub mod findings;
pub mod human;
pub mod json;
#[cfg(feature = "cli")]
pub mod junit;
pub mod run;
pub mod tables;
