//! The command line's grammar: subcommands, their arguments and the exit codes their help prints (clap).

use std::num::NonZeroUsize;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use super::color;

/// Exit codes, for `--help` and the README.
pub(super) const EXIT_CODES: &str = "Exit codes:
  0  every selected scenario passed (skips, set-asides and not-applicables allowed), or matched its baseline
  1  at least one scenario failed, changed from its baseline, or too few ran live (--require-live)
  2  a file failed to load, a selection matched nothing, or the command line or another input was wrong
  3  a GPU driver is present but failing (run --live)
  4  devsim could not run or judge a scenario (errored: a harness or protocol fault, no verdict on the
     code under test); it wins over 1";

/// `devsim check`'s exit codes.
pub(super) const CHECK_EXIT_CODES: &str = "Exit codes:
  0  every selected file loaded (or the subject completed its handshake)
  2  a file failed to load, a selection matched nothing, the subject's handshake was refused, or the command
     line was wrong";

/// `devsim coverage`'s exit codes.
pub(super) const COVERAGE_EXIT_CODES: &str = "Exit codes:
  0  every kernel covers what the threshold file asks
  1  some kernel falls short of the threshold (the gaps are listed)
  2  a file failed to load, or the command line or the threshold file was wrong";

/// `devsim migrate`'s exit codes.
pub(super) const MIGRATE_EXIT_CODES: &str = "Exit codes:
  0  every file is current (or was rewritten to be)
  1  with --check: some file has deprecated forms (each is listed)
  2  a file or folder could not be read or written, or the command line was wrong";

/// A test harness for cross-vendor GPU device dispatch.
#[derive(Parser)]
#[command(name = "devsim", version, about, after_help = EXIT_CODES)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
    /// When to colour human output: auto (a terminal without NO_COLOR), always or never.
    #[arg(long, value_enum, global = true, default_value_t = color::When::Auto)]
    pub(super) color: color::When,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Format {
    /// Text for people.
    Human,
    /// JSON for tools.
    Json,
}

/// The schemas `devsim schema` prints.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum SchemaName {
    /// A scenario file.
    Scenario,
    /// A host profile (scenarios/hosts/<name>.toml).
    Host,
    /// The messages of the subject protocol, both directions.
    SubjectProtocol,
}

/// `run`'s output formats.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum RunFormat {
    /// Text for people.
    Human,
    /// JSON for tools (`devsim::output::RunOutput`).
    Json,
    /// JUnit XML: one test case per scenario.
    Junit,
}

/// Which scenarios to take.
#[derive(clap::Args)]
pub(super) struct Selection {
    /// Only scenarios carrying this tag (repeatable: any of them).
    #[arg(long = "tag", value_name = "TAG")]
    pub(super) tags: Vec<String>,
    /// Only scenarios whose name (path under the scenario root, e.g. `seed/gptq.toml`) contains PATTERN,
    /// or matches it as a glob when it has `*`, `?` or `[` (repeatable: any of them).
    #[arg(long = "filter", value_name = "PATTERN")]
    pub(super) filters: Vec<String>,
}

impl Selection {
    /// Whether a tag or filter narrows the run.
    pub(super) fn is_active(&self) -> bool {
        !self.tags.is_empty() || !self.filters.is_empty()
    }
}

/// Where scenarios' host profiles come from, and whether an empty run is acceptable.
#[derive(clap::Args)]
pub(super) struct CorpusArgs {
    /// A host profile folder, searched in the order given, before the built-in profiles (repeatable;
    /// default: `<folder>/hosts` of each folder argument).
    #[arg(long = "hosts", value_name = "DIR")]
    pub(super) hosts: Vec<PathBuf>,
    /// Accept paths that hold no scenario file.
    #[arg(long)]
    pub(super) allow_empty: bool,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Run scenario files against a subject (default: the built-in catalog on the simulated runtime,
    /// scenarios/).
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Print the real machine as a host profile, or write it as <root>/hosts/<NAME>.toml, or check
    /// visible-device masks against the driver (--check-masks). Exits 3 when a GPU driver is present
    /// but failing, 1 when --require-gpu finds too few real GPUs or --check-masks a disagreement.
    Probe {
        /// Write the profile as hosts/NAME.toml under the scenario root instead of printing it.
        #[arg(long, value_name = "NAME")]
        write: Option<String>,
        /// Replace an existing profile of that name.
        #[arg(long, requires = "write")]
        force: bool,
        /// The scenario root holding hosts/.
        #[arg(long, default_value = "scenarios")]
        root: PathBuf,
        /// Instead, check devsim's visible-device model against the driver: for masks generated from
        /// this machine's GPUs, compare the GPUs devsim predicts with those the driver shows a child
        /// with only that variable set. Exits 1 on any disagreement.
        #[arg(long, conflicts_with_all = ["write", "force"])]
        check_masks: bool,
        /// Fail (exit 1) unless the driver shows at least N real GPUs: a GPU runner whose driver
        /// disappeared, or one of devsim's fake drivers, fails here before any replay (the live
        /// workflows' first step).
        #[arg(long, value_name = "N", conflicts_with = "check_masks")]
        require_gpu: Option<usize>,
    },
    /// Load and validate scenario files without running them.
    #[command(after_help = CHECK_EXIT_CODES)]
    Check {
        /// Files or folders.
        paths: Vec<PathBuf>,
        /// Which scenarios.
        #[command(flatten)]
        selection: Selection,
        /// Where profiles come from.
        #[command(flatten)]
        corpus: CorpusArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Instead, start this subject and check its handshake only.
        #[arg(long, value_name = "CMD|FILE")]
        subject: Option<String>,
        /// With --subject: judge the project's source tree in DIR instead of the subject file's `source`.
        #[arg(long, value_name = "DIR", requires = "subject")]
        subject_src: Option<PathBuf>,
    },
    /// Run the scenarios and count, per kernel, which of validate, warmup and move passing scenarios
    /// exercised on which build; fails (exit 1) under the threshold file.
    #[command(after_help = COVERAGE_EXIT_CODES)]
    Coverage {
        /// Files or folders.
        paths: Vec<PathBuf>,
        /// The threshold the corpus sets (paths and builds every kernel must cover).
        #[arg(long, value_name = "FILE", default_value = crate::runner::coverage::Threshold::DEFAULT)]
        threshold: PathBuf,
        /// Where profiles come from.
        #[command(flatten)]
        corpus: CorpusArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// List the kernel catalog.
    Kernels {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Show each pending change `run --accept` wrote (`<file>.toml.pending`) as a diff, and accept or reject
    /// it: interactively on a terminal, or all at once with --accept / --reject. Exits 1 when changes are
    /// left pending.
    Review {
        /// The scenario root to look under.
        #[arg(default_value = "scenarios")]
        root: PathBuf,
        /// Accept every pending change: each pending copy replaces its scenario file.
        #[arg(long, conflicts_with = "reject")]
        accept: bool,
        /// Reject every pending change: each pending copy is deleted.
        #[arg(long)]
        reject: bool,
    },
    /// Rewrite deprecated forms of scenario files into their current spelling with the same meaning,
    /// keeping comments and layout (format 1: an `extension_load` trace rule without a level gets
    /// `reference`, the level format 1 reads it as). Files that need nothing are left untouched.
    #[command(after_help = MIGRATE_EXIT_CODES)]
    Migrate {
        /// Files or folders (default: scenarios/).
        paths: Vec<PathBuf>,
        /// Write nothing: list what would change and exit 1 if anything would (for CI).
        #[arg(long)]
        check: bool,
    },
    /// List the host profiles.
    Hosts {
        /// The scenario root holding hosts/ (used when no --hosts is given).
        #[arg(default_value = "scenarios")]
        root: PathBuf,
        /// A host profile folder, searched in the order given, before the built-in profiles (repeatable).
        #[arg(long = "hosts", value_name = "DIR")]
        hosts: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Print a JSON Schema (committed under docs/schema/; `.taplo.toml` points editors at them).
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        which: SchemaName,
    },
    /// Benchmark the kernel matrix and the scenario corpus.
    Bench {
        /// The scenario root.
        #[arg(default_value = "scenarios")]
        root: PathBuf,
        /// How many rounds of each measurement.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Measure live replay instead: overhead against direct runtime calls on the real GPU, and the
        /// corpus live (worker pool included) against simulated.
        #[arg(long)]
        live: bool,
        /// Measure only the costs that once grew with the square of their input: a lock on `all` over
        /// 10,000 GPUs, 10,000 scenarios naming an unknown profile beside 10,000 profiles, a did-you-mean
        /// search for a 4 MB name.
        #[arg(long, conflicts_with = "live")]
        costs: bool,
        /// Run the corpus through the reference catalog and these subjects side by side instead (repeatable):
        /// timings, then each subject's outcomes and distinct findings by rule.
        #[arg(long, value_name = "CMD|FILE", conflicts_with = "live")]
        subject: Vec<String>,
        /// With --subject: judge the project's source tree in DIR (every subject given) instead of each subject
        /// file's `source`.
        #[arg(long, value_name = "DIR", requires = "subject")]
        subject_src: Option<PathBuf>,
        /// With --subject: start each subject this many times and run the corpus across them (default: one
        /// per CPU core, at most 8).
        #[arg(long, short, value_name = "N")]
        jobs: Option<NonZeroUsize>,
    },
    /// Print shell completions for devsim to stdout (e.g. `devsim completions bash >
    /// ~/.local/share/bash-completion/completions/devsim`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print devsim's man page (roff) to stdout (e.g. `devsim man > devsim.1; man ./devsim.1`).
    Man,
    /// Internal: a live worker (`replay::worker`): runs the scenarios named on stdin, one JSON line
    /// each, on the real machine with this process's visible-device variables, answering reports.
    #[command(name = "live-worker", hide = true)]
    LiveWorker,
    /// Internal: the GPUs the driver shows this process (ordinals, names, UUIDs) as one JSON line,
    /// for `probe --check-masks`.
    #[command(name = "driver-view", hide = true)]
    DriverView,
    /// Internal: both visible-device views for JSON-line cases on stdin (tools/torch_visible/diff.py).
    #[command(hide = true)]
    Visible {
        /// Read one case per line on stdin, answer one per line on stdout.
        #[arg(long, required = true)]
        stdin_jsonl: bool,
    },
}

/// The most processes of a subject that run side by side when `--jobs` is not given (a real project's
/// process holds most of a GiB).
const MOST_DEFAULT_JOBS: NonZeroUsize = NonZeroUsize::new(8).expect("eight is not zero");

/// How many processes of a subject run side by side when `--jobs` is not given: one per CPU core, at most 8.
pub(super) fn default_jobs() -> NonZeroUsize {
    std::thread::available_parallelism()
        .unwrap_or(NonZeroUsize::MIN)
        .min(MOST_DEFAULT_JOBS)
}

/// What `devsim run` was asked.
#[derive(clap::Args)]
pub(super) struct RunArgs {
    /// Files or folders.
    pub(super) paths: Vec<PathBuf>,
    /// Which scenarios.
    #[command(flatten)]
    pub(super) selection: Selection,
    /// Where profiles come from.
    #[command(flatten)]
    pub(super) corpus: CorpusArgs,
    /// Print only failures and the summary.
    #[arg(long, short)]
    pub(super) quiet: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunFormat::Human)]
    pub(super) format: RunFormat,
    /// Replay on the real machine: scenarios whose host it satisfies run live, the rest are skipped
    /// with the reason. Exits 3 when a GPU driver is present but failing.
    #[arg(long)]
    pub(super) live: bool,
    /// With --require-live: count scenarios run through one of devsim's fake drivers (devsim's own tests).
    #[arg(long, requires = "require_live")]
    pub(super) allow_fake: bool,
    /// With --live: fail (exit 1) when fewer than N scenarios with GPUs ran live (the rest were skipped;
    /// CPU-only scenarios run anywhere and do not count).
    #[arg(long, value_name = "N", requires = "live")]
    pub(super) require_live: Option<usize>,
    /// Judge this dispatch code instead of the built-in catalog: a command line ('CMD ARGS') or a
    /// subject file (x.toml) speaking the subject protocol (docs/subject-protocol.md).
    #[arg(long, value_name = "CMD|FILE")]
    pub(super) subject: Option<String>,
    /// With --subject: judge the project's source tree in DIR instead of the subject file's `source`
    /// (DEVSIM_SUBJECT_SRC, first on PYTHONPATH; docs/subject-protocol.md).
    #[arg(long, value_name = "DIR", requires = "subject")]
    pub(super) subject_src: Option<PathBuf>,
    /// Simulated runs of a subject process: start it this many times and deal the scenarios out among
    /// them, by host (default: one per CPU core, at most 8; never more than the subject file's `max_jobs` or
    /// than there are hosts to deal out). Live runs use one.
    #[arg(long, short, value_name = "N", requires = "subject")]
    pub(super) jobs: Option<NonZeroUsize>,
    /// With --subject: write one standalone reproduction per distinct finding into DIR (a Python script
    /// that replays its first failing scenario through the subject kit and exits 1 while the finding is
    /// there, 0 once it is fixed, 2 when nothing could be judged), with an index, DIR/README.md; stale
    /// generated scripts there are removed (docs/reproductions.md).
    #[arg(
        long,
        value_name = "DIR",
        requires = "subject",
        conflicts_with = "live"
    )]
    pub(super) repro: Option<PathBuf>,
    /// Compare each scenario's outcome with this baseline file; any change, either way, fails.
    #[arg(long, value_name = "FILE")]
    pub(super) baseline: Option<PathBuf>,
    /// Write each scenario's outcome to this baseline file.
    #[arg(long, value_name = "FILE")]
    pub(super) write_baseline: Option<PathBuf>,
    /// With --live: write what ran live (device, date, subject, each scenario's outcome and findings) to
    /// this live record file (docs/live-record.md; the date is DEVSIM_LIVE_RECORD_DATE when set).
    #[arg(long, value_name = "FILE", requires = "live")]
    pub(super) write_live_record: Option<PathBuf>,
    /// Mark each finding confirmed on a real GPU when this live record shows one of its scenarios failed
    /// live with the same signature, simulated otherwise (default: the subject file's `live_record`).
    #[arg(long, value_name = "FILE", conflicts_with = "live")]
    pub(super) live_record: Option<PathBuf>,
    /// Write what each failing step observed into its scenario's expectations, as a pending copy
    /// (`<file>.toml.pending`) for `devsim review`. The catalog's observations only: a subject's are
    /// findings, not expectations.
    #[arg(long, conflicts_with_all = ["subject", "live"])]
    pub(super) accept: bool,
    /// With --accept: only expectations of these levels (repeatable; default: every level).
    #[arg(long, value_enum, value_name = "LEVEL", requires = "accept")]
    pub(super) accept_level: Vec<AcceptLevel>,
}

/// A level `run --accept` may rewrite.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum AcceptLevel {
    /// Expectations of the accelerator-family policy.
    Policy,
    /// Facts of the catalog's declarations.
    Contract,
    /// Details of devsim's reference model.
    Reference,
}

impl From<AcceptLevel> for crate::conformance::Level {
    fn from(level: AcceptLevel) -> Self {
        match level {
            AcceptLevel::Policy => Self::Policy,
            AcceptLevel::Contract => Self::Contract,
            AcceptLevel::Reference => Self::Reference,
        }
    }
}
