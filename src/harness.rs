//! One test per scenario file, for any catalog: the harness devsim's own `tests/scenarios.rs` and
//! `tests/live.rs` use, and the one a downstream crate's `tests/*.rs` (with `harness = false`) calls.
//!
//! ```no_run
//! // tests/scenarios.rs of a downstream crate, declared with `harness = false` in its Cargo.toml
//! fn main() {
//!     let catalog = devsim::Catalog::reference_builder().build().expect("a consistent catalog");
//!     devsim::harness::Harness::new(catalog)
//!         .scenarios(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
//!         .run()
//! }
//! ```
//!
//! Tests are named by the scenario's path relative to its root (`seed/x.toml`, a matrix case
//! `x.toml[kernel=…]`) and support libtest's `--list`, `--exact`, `--ignored` and filters, so `cargo test`
//! and cargo-nextest list, filter and shard them. A simulated scenario is never skipped. Live, whether a
//! scenario can run here is decided at LIST time: one the machine cannot run is listed as ignored (so
//! nextest's `--run-ignored only` and JUnit show it as a skip, never a pass), and running it anyway fails
//! with the reason. `DEVSIM_REQUIRE_LIVE=N` (or [`Harness::require_live`]) adds a `require_live` test that
//! fails when fewer than N scenarios with GPUs can run live here (CPU-only ones run anywhere, so they prove
//! nothing about the machine's GPUs).

// The example above is a whole test file, whose `main` is the point.
#![allow(clippy::needless_doctest_main)]

use std::path::PathBuf;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::kernel::Catalog;
use crate::replay::LiveContext;
use crate::reporter::human;
use crate::runner::{ScenarioReport, Status};
use crate::scenario::load::{Found, ProfileSources, load_found};
use crate::scenario::{CorpusError, ProfileError, Scenario, find_named};
use crate::subject::CatalogSubject;
use crate::suite::run_suite;

/// How the harness runs each scenario.
enum Mode {
    /// On the simulated runtime of the scenario's host.
    Simulated,
    /// On the real machine; `env` scenarios re-run in children of this binary.
    Live {
        /// The binary children run (`devsim`, or a downstream crate's own `devsim::cli` binary).
        child_exe: Option<PathBuf>,
        /// The fewest scenarios that must be able to run live here.
        require: Option<usize>,
    },
}

/// A test harness over scenario folders for one catalog.
pub struct Harness {
    catalog: Arc<Catalog>,
    roots: Vec<PathBuf>,
    hosts: Vec<PathBuf>,
    mode: Mode,
}

/// Why a harness cannot list its tests.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A scenario folder cannot be listed.
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    /// A host-profile folder cannot be used.
    #[error(transparent)]
    Profiles(#[from] ProfileError),
}

impl Harness {
    /// A simulated harness for `catalog` with no scenario folder yet.
    pub fn new(catalog: Catalog) -> Self {
        Self {
            catalog: Arc::new(catalog),
            roots: Vec::new(),
            hosts: Vec::new(),
            mode: Mode::Simulated,
        }
    }

    /// Adds a scenario folder (or file); may be called more than once.
    pub fn scenarios(mut self, root: impl Into<PathBuf>) -> Self {
        self.roots.push(root.into());
        self
    }

    /// Adds a host-profile folder, searched in the order added before devsim's built-in profiles. Without
    /// any, each scenario folder's own `hosts/` is used.
    pub fn hosts(mut self, folder: impl Into<PathBuf>) -> Self {
        self.hosts.push(folder.into());
        self
    }

    /// Replays live instead: scenarios whose host this machine satisfies run on the real drivers; `env`
    /// scenarios and narrowed GPU counts run in a child process of `child_exe`, a binary whose `main`
    /// calls [`crate::cli::main`] with the same catalog (in a test: `env!("CARGO_BIN_EXE_<name>")`).
    pub fn live(mut self, child_exe: impl Into<PathBuf>) -> Self {
        self.mode = Mode::Live {
            child_exe: Some(child_exe.into()),
            require: None,
        };
        self
    }

    /// Live only: fail unless at least `count` scenarios can run live here (overrides
    /// `DEVSIM_REQUIRE_LIVE`).
    pub fn require_live(mut self, count: usize) -> Self {
        if let Mode::Live { require, .. } = &mut self.mode {
            *require = Some(count);
        }
        self
    }

    /// One trial per scenario file under the folders, in path order.
    pub fn trials(&self) -> Result<Vec<Trial>, HarnessError> {
        Ok(self.trials_of(find_named(&self.roots)?, None)?.0)
    }

    /// The one file an exact test name names (`seed/x.toml`, `x.toml[kernel=…]`) under a root, when the run
    /// selects exactly one test by name (nextest runs each test so): loading it alone gives the same
    /// trials for that name as loading every file, at the cost of one file. None: list everything.
    fn exact_file(&self, args: &Arguments) -> Option<(Found, String)> {
        // With several roots, names are below the folder they share, not below each root.
        if args.list || !args.exact || !args.skip.is_empty() || self.roots.len() != 1 {
            return None;
        }
        let name = args.filter.as_deref()?;
        let file = name.split_once('[').map_or(name, |(file, _)| file);
        let relative = std::path::Path::new(file);
        let plain = relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain || !file.ends_with(".toml") || relative.starts_with("hosts") {
            return None;
        }
        self.roots.iter().find_map(|root| {
            let root = std::fs::canonicalize(root).ok()?;
            let candidate = std::fs::canonicalize(root.join(relative)).ok()?;
            let inside = candidate.starts_with(&root) && candidate.is_file();
            // A link that leaves the folder, or a name the walk would not give, is left to the full listing.
            let as_named = candidate == root.join(relative);
            let found = Found {
                path: root.join(relative),
                name: file.to_string(),
            };
            (inside && as_named).then(|| (found, name.to_string()))
        })
    }

    /// The trials of `files` (with `only`, just the scenario of that name), and the reason each live trial
    /// listed as ignored cannot run here.
    fn trials_of(
        &self,
        files: Vec<Found>,
        only: Option<&str>,
    ) -> Result<(Vec<Trial>, Vec<String>), HarnessError> {
        let profiles = Arc::new(if self.hosts.is_empty() {
            ProfileSources::for_paths(&self.roots)
        } else {
            ProfileSources::folders(self.hosts.clone())?
        });
        let live = match &self.mode {
            Mode::Simulated => None,
            Mode::Live { child_exe, .. } => Some(Arc::new(LiveContext::detect(child_exe.clone()))),
        };
        // Every trial runs its scenario as `devsim run` does: through the catalog as a subject, by run_suite.
        let subject = CatalogSubject::shared(
            self.catalog.name(),
            env!("CARGO_PKG_VERSION"),
            Arc::clone(&self.catalog),
        );
        let replayer = live
            .as_ref()
            .map(|context| subject.clone().live_shared(Arc::clone(context)));
        let mut runnable = 0;
        let mut trials = Vec::new();
        let mut cannot_run = Vec::new();
        for file in files {
            let loaded = load_found(&file, &self.catalog, &profiles, only);
            for (name, loaded) in loaded {
                let trial = match (&live, loaded) {
                    (_, Err(error)) => Trial::test(name, move || Err(error.to_string().into())),
                    (None, Ok(scenario)) => {
                        let subject = subject.clone();
                        Trial::test(name, move || simulated(run_one(subject, &scenario)))
                    }
                    (Some(context), Ok(scenario)) => match context.plan(&scenario) {
                        Ok(()) => {
                            // CPU-only scenarios run on any machine, and a fake driver is no GPU:
                            // neither proves the machine's GPUs ran.
                            if !scenario.host.gpus.is_empty() && !context.machine.fake {
                                runnable += 1;
                            }
                            let subject = replayer.clone().unwrap_or_else(|| subject.clone());
                            Trial::test(name, move || replayed(run_one(subject, &scenario)))
                        }
                        Err(reason) => {
                            cannot_run.push(reason.to_string());
                            Trial::test(name, move || {
                                Err(format!("cannot run live here: {reason}").into())
                            })
                            .with_ignored_flag(true)
                        }
                    }
                    .with_kind("live"),
                };
                trials.push(trial);
            }
        }
        if let Mode::Live { require, .. } = &self.mode {
            match require.map(Ok).or_else(required_from_env) {
                None => {}
                Some(Ok(wanted)) => trials.push(Trial::test("require_live", move || {
                    if runnable >= wanted {
                        Ok(())
                    } else {
                        Err(format!(
                            "{wanted} GPU scenario(s) must run live, but only {runnable} can run here"
                        )
                        .into())
                    }
                })),
                Some(Err(message)) => {
                    trials.push(Trial::test("require_live", move || Err(message.into())));
                }
            }
        }
        Ok((trials, cannot_run))
    }

    /// Parses libtest's arguments from the process, runs every trial and exits with libtest's code
    /// (2 with a message when a scenario folder cannot be listed).
    pub fn run(self) -> ! {
        let args = Arguments::from_args();
        if let (Mode::Live { child_exe, .. }, false) = (&self.mode, args.list) {
            eprintln!("{}", LiveContext::detect(child_exe.clone()).describe());
        }
        let trials = match self.exact_file(&args) {
            Some((file, name)) => self.trials_of(vec![file], Some(&name)),
            None => find_named(&self.roots)
                .map_err(HarnessError::from)
                .and_then(|files| self.trials_of(files, None)),
        };
        match trials {
            Ok((trials, cannot_run)) => {
                // libtest's protocol has no reason for an ignored test: a whole run says why they are.
                if !args.list && !args.exact && !cannot_run.is_empty() {
                    eprint!("{}", ignored_summary(&cannot_run));
                }
                libtest_mimic::run(&args, trials).exit()
            }
            Err(error) => {
                eprintln!("error: failed to {error}");
                std::process::exit(2);
            }
        }
    }
}

/// One scenario through `subject` by the suite runner `devsim run` uses.
fn run_one(mut subject: CatalogSubject, scenario: &Scenario) -> ScenarioReport {
    let suite = run_suite(&mut subject, std::slice::from_ref(scenario), 0, &mut ());
    suite.reports.into_iter().next().map_or_else(
        || ScenarioReport::errored(scenario, crate::runner::HarnessFault::not_reported()),
        |(report, _)| report,
    )
}

fn simulated(report: ScenarioReport) -> Result<(), Failed> {
    match report.status {
        Status::Passed => Ok(()),
        Status::Failed | Status::Errored(_) => Err(human::scenario(&report).into()),
        Status::Skipped(_) | Status::NotApplicable(_) | Status::SetAside(_) => Err(format!(
            "a simulated run cannot be skipped: {}",
            report.status.reason().unwrap_or_default()
        )
        .into()),
    }
}

fn replayed(report: ScenarioReport) -> Result<(), Failed> {
    match report.status {
        Status::Passed => Ok(()),
        Status::Skipped(_) | Status::NotApplicable(_) | Status::SetAside(_) => Err(format!(
            "listed as runnable here, but skipped when run: {}",
            report.status.reason().unwrap_or_default()
        )
        .into()),
        Status::Failed | Status::Errored(_) => Err(human::scenario(&report).into()),
    }
}

/// Why the ignored live trials cannot run here, counted by reason (without its parenthesised detail), most
/// common first, for a run's stderr.
fn ignored_summary(reasons: &[String]) -> String {
    let mut kinds: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for reason in reasons {
        let kind = reason
            .split_once(" (")
            .map_or(reason.as_str(), |(kind, _)| kind);
        *kinds.entry(kind.trim()).or_default() += 1;
    }
    let mut counted: Vec<(&str, usize)> = kinds.into_iter().collect();
    counted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut text = format!(
        "{} scenario(s) cannot run live here and are listed as ignored (run them with `-- --ignored` to see each \
         one's reason as its failure):\n",
        reasons.len()
    );
    for (kind, count) in counted {
        text.push_str(&format!("  {count:>5}  {kind}\n"));
    }
    text
}

/// `DEVSIM_REQUIRE_LIVE`, if set: the fewest scenarios that must run live here.
fn required_from_env() -> Option<Result<usize, String>> {
    let text = std::env::var("DEVSIM_REQUIRE_LIVE").ok()?;
    Some(
        text.trim()
            .parse()
            .map_err(|_| format!("DEVSIM_REQUIRE_LIVE={text:?} is not a number of scenarios")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(name: &str) -> Arguments {
        Arguments {
            filter: Some(name.into()),
            exact: true,
            ..Arguments::default()
        }
    }

    fn names(trials: &[Trial], wanted: &str) -> Vec<String> {
        trials
            .iter()
            .map(|t| t.name().to_string())
            .filter(|n| n == wanted)
            .collect()
    }

    /// nextest runs each test as `--exact NAME`: the one file it names gives the same trial as the whole
    /// listing, and anything else falls back to the whole listing.
    #[test]
    fn an_exact_name_loads_only_its_file_and_finds_the_same_trial() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
        let harness = Harness::new(Catalog::reference()).scenarios(root);
        let all = harness.trials().expect("the corpus lists");
        for name in [
            "seed/bitsandbytes_admitted_on_rocm.toml",
            "invariants/warmup_runs_on_target_and_restores.toml[host=amd_mixed,kernel=awq_marlin]",
        ] {
            let (file, named) = harness.exact_file(&exact(name)).expect("one file");
            let (alone, _) = harness
                .trials_of(vec![file], Some(&named))
                .expect("the file lists");
            assert_eq!(names(&alone, name), names(&all, name), "{name}");
            assert_eq!(names(&alone, name).len(), 1, "{name}");
        }
        for name in [
            "hosts/a100.toml",
            "../scenarios/seed/x.toml",
            "nope.toml",
            "seed",
            "/etc/passwd",
        ] {
            assert_eq!(harness.exact_file(&exact(name)), None, "{name}");
        }
        let listing = Arguments {
            list: true,
            ..exact("seed/bitsandbytes_admitted_on_rocm.toml")
        };
        assert_eq!(
            harness.exact_file(&listing),
            None,
            "--list lists everything"
        );
    }

    #[test]
    fn the_ignored_summary_counts_reasons_by_kind_most_common_first() {
        let reasons = [
            "wrong vendor: the scenario needs a hip build, this machine runs cuda (driver 580)"
                .to_string(),
            "too few GPUs: the scenario needs 2 GPU(s), this machine has 1".to_string(),
            "wrong vendor: the scenario needs a hip build, this machine runs cuda (driver 580)"
                .to_string(),
        ];
        let text = ignored_summary(&reasons);
        assert!(
            text.starts_with("3 scenario(s) cannot run live here"),
            "{text}"
        );
        let wrong = text
            .find("2  wrong vendor: the scenario needs a hip build, this machine runs cuda\n")
            .expect("counted without the detail");
        let count = text.find("1  too few GPUs").expect("counted by reason");
        assert!(wrong < count, "most common first: {text}");
    }
}
