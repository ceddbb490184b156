//! Why devsim cannot accept an `observed` answer as an observation: each a protocol error naming the
//! offending field, worded to follow "failed to read the answer:".

use thiserror::Error;

/// An answer devsim cannot accept as an observation.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Invalid {
    /// `ok: true` together with an `error`.
    #[error("`ok` is true but an `error` is given")]
    OkWithError,
    /// An error kind that is not one of devsim's.
    #[error("error kind `{kind}` is not one of devsim's ({known})")]
    UnknownErrorKind {
        /// The kind as the subject wrote it.
        kind: String,
        /// devsim's kinds, comma-separated.
        known: String,
    },
    /// A trace event that is not one of devsim's.
    #[error("trace event `{event}` is not one of devsim's ({known})")]
    UnknownEvent {
        /// The event as the subject wrote it.
        event: String,
        /// devsim's events, comma-separated.
        known: String,
    },
    /// A trace event the handshake did not declare.
    #[error("trace event `{event}` was not declared in the handshake")]
    UndeclaredEvent {
        /// The event.
        event: String,
    },
    /// A forward judged by another tolerance than the one the handshake declares for its kernel and dtype.
    #[error(
        "`numerics` of {kernel} in {dtype} were judged at {applied}, not by the tolerance the handshake declares ({declared}) with the error against it"
    )]
    NumericsNotDeclared {
        /// The step's kernel.
        kernel: String,
        /// The forward's dtype.
        dtype: String,
        /// The tolerance the subject applied, in words.
        applied: String,
        /// The declared tolerance, in words.
        declared: String,
    },
    /// A forward judged by a tolerance of its own where the handshake declares none.
    #[error(
        "`numerics` of {kernel} in {dtype} were judged at {applied}, but the handshake declares no tolerance for it (then the seed's rtol = atol = {seed} against the FP64 oracle applies)"
    )]
    NumericsNotSeed {
        /// The step's kernel.
        kernel: String,
        /// The forward's dtype.
        dtype: String,
        /// The tolerance the subject applied, in words.
        applied: String,
        /// The seed's tolerance.
        seed: f64,
    },
    /// An `undecided` entry with a blank reason.
    #[error("`undecided.{field}` gives no reason")]
    UndecidedWithoutReason {
        /// The field.
        field: String,
    },
    /// A field both undecided and placed by `decided_by`.
    #[error("`undecided.{field}` contradicts `decided_by.{field}`: a field is decided or not")]
    UndecidedAndDecided {
        /// The field.
        field: String,
    },
    /// An `undecided` entry naming no observation field.
    #[error("`undecided.{field}` names no observation field (ok, {fields})")]
    UndecidedUnknownField {
        /// The name as given.
        field: String,
        /// The observation fields other than `ok`, comma-separated.
        fields: String,
    },
    /// An `undecided` field the answer also reports.
    #[error("`undecided.{field}` names a field the answer reports: an undecided field is left out")]
    UndecidedButReported {
        /// The field.
        field: String,
    },
    /// A `decided_by` from a subject that declared no packages.
    #[error("`decided_by.{field}` is given but the handshake declares no `packages`")]
    DecidedWithoutPackages {
        /// The field.
        field: String,
    },
    /// A `decided_by` naming a module outside the declared packages.
    #[error(
        "`decided_by.{field}` names module `{module}`, outside the project's packages ({packages})"
    )]
    DecidedOutsidePackages {
        /// The field.
        field: String,
        /// The module named.
        module: String,
        /// The declared packages, comma-separated.
        packages: String,
    },
    /// A `decided_by` naming no function or line.
    #[error("`decided_by.{field}` names no function or line in module `{module}`")]
    DecidedNowhere {
        /// The field.
        field: String,
        /// The module named.
        module: String,
    },
    /// A `decided_by` of a stopped step (`unsupported`) that names no event of its trace.
    #[error(
        "`decided_by.{field}` of an `unsupported` step names no event of its `trace` (keys are `trace.<event>`)"
    )]
    DecidedNoStoppedEvent {
        /// The key as given.
        field: String,
    },
    /// A `decided_by` naming a file that does not exist.
    #[error("`decided_by.{field}` names file `{file}`, which does not exist")]
    DecidedInMissingFile {
        /// The field.
        field: String,
        /// The file named.
        file: String,
    },
}
