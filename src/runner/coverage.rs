//! Which kernel paths the corpus exercises: for every kernel, whether its validate, warmup and move paths
//! ran (or were refused) on a CUDA and on a HIP build in a scenario that passed, and the threshold the corpus
//! sets for itself (`coverage.toml` beside the scenarios).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::kernel::Catalog;
use crate::runner::{ScenarioReport, Status};
use crate::scenario::model::{Action, Scenario};
use crate::vocab::TorchBuild;

/// The kernel paths coverage counts.
pub const PATHS: [&str; 3] = ["validate", "warmup", "move"];

/// How a path was exercised on one build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exercised {
    /// Passing scenario steps where the path succeeded.
    pub ran: usize,
    /// Passing scenario steps where the path was refused.
    pub refused: usize,
}

impl Exercised {
    /// Whether any passing step exercised the path.
    pub fn any(&self) -> bool {
        self.ran + self.refused > 0
    }
}

/// Per kernel, per path, per build (`cuda`, `hip`, `cpu`): how often it was exercised.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Coverage {
    /// kernel → path → build → counts.
    pub kernels: BTreeMap<String, BTreeMap<String, BTreeMap<String, Exercised>>>,
}

/// What the corpus requires of itself.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Threshold {
    /// The paths every kernel must exercise.
    pub paths: Vec<String>,
    /// The builds each of them must be exercised on.
    pub builds: Vec<TorchBuild>,
}

/// A coverage threshold file that cannot be read.
#[derive(Debug, Error)]
pub enum ThresholdError {
    /// The file cannot be read, or is refused before it is: missing, a link out of its folder (or, for the
    /// default path, of the current folder), not a regular file, too large, not UTF-8.
    #[error("read coverage threshold {}: {message}", path.display())]
    Refused {
        /// The file.
        path: std::path::PathBuf,
        /// Why, without any of its content.
        message: String,
    },
    /// The file is not a threshold.
    #[error("parse coverage threshold {}: {source}", path.display())]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// Why, located.
        source: toml::de::Error,
    },
}

impl Threshold {
    /// The threshold file `devsim coverage` reads when none is named, below the current folder.
    pub const DEFAULT: &str = "inventory/coverage.toml";

    /// Reads `coverage.toml`, contained like every file devsim reads from a user's tree: a link that
    /// resolves outside its folder is refused before a byte of it is read, and so, for [`Self::DEFAULT`]
    /// (a path devsim picked, not the user), is one that leaves the current folder (`inventory/` a link).
    pub fn read(path: &Path) -> Result<Self, ThresholdError> {
        let folder = match path == Path::new(Self::DEFAULT) {
            true => Path::new("."),
            false => crate::contain::folder_of(path),
        };
        let text =
            crate::scenario::load::corpus::read_contained(path, folder).map_err(|error| {
                ThresholdError::Refused {
                    path: path.to_path_buf(),
                    message: error.message,
                }
            })?;
        toml::from_str(&text).map_err(|source| ThresholdError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }
}

impl Coverage {
    /// Counts the kernel steps of every passing scenario; every catalog kernel gets a row, exercised or not.
    pub fn of(catalog: &Catalog, runs: &[(&Scenario, &ScenarioReport)]) -> Self {
        let mut coverage = Coverage::default();
        for kernel in catalog.iter() {
            coverage
                .kernels
                .entry(kernel.spec().name.to_string())
                .or_default();
        }
        for (scenario, report) in runs {
            if report.status != Status::Passed {
                continue;
            }
            let build = scenario.host.torch.to_string();
            for (step, result) in scenario.steps.iter().zip(&report.steps) {
                let (path, kernel) = match &step.action {
                    Action::Validate { kernel, .. } => ("validate", kernel),
                    Action::Warmup { kernel, .. } => ("warmup", kernel),
                    Action::Move { kernel, .. } => ("move", kernel),
                    _ => continue,
                };
                let Some(paths) = coverage.kernels.get_mut(kernel.as_str()) else {
                    continue;
                };
                let counts = paths
                    .entry(path.to_string())
                    .or_default()
                    .entry(build.clone())
                    .or_default();
                if result.observed.error.is_some() {
                    counts.refused += 1;
                } else {
                    counts.ran += 1;
                }
            }
        }
        coverage
    }

    /// Every `kernel path build` the threshold asks for that no passing scenario exercised.
    pub fn gaps(&self, threshold: &Threshold) -> Vec<String> {
        let mut gaps = Vec::new();
        for (kernel, paths) in &self.kernels {
            for path in &threshold.paths {
                for build in &threshold.builds {
                    let build = build.to_string();
                    let exercised = paths
                        .get(path)
                        .and_then(|builds| builds.get(&build))
                        .is_some_and(Exercised::any);
                    if !exercised {
                        gaps.push(format!("{kernel} {path} on a {build} build"));
                    }
                }
            }
        }
        gaps
    }

    /// A table for people: one row per kernel, one column per path and build (`ran/refused` counts).
    pub fn table(&self) -> String {
        let builds: BTreeSet<&str> = self
            .kernels
            .values()
            .flat_map(|paths| paths.values())
            .flat_map(|builds| builds.keys().map(String::as_str))
            .collect();
        let mut columns = Vec::new();
        for path in PATHS {
            for build in &builds {
                columns.push((path, *build));
            }
        }
        let mut out = format!("{:<22}", "kernel");
        for (path, build) in &columns {
            out.push_str(&format!(" {:>14}", format!("{path}/{build}")));
        }
        out.push('\n');
        for (kernel, paths) in &self.kernels {
            out.push_str(&format!("{kernel:<22}"));
            for (path, build) in &columns {
                let cell = paths
                    .get(*path)
                    .and_then(|b| b.get(*build))
                    .filter(|e| e.any())
                    .map_or("-".to_string(), |e| format!("{}/{}", e.ran, e.refused));
                out.push_str(&format!(" {cell:>14}"));
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::run_simulated;
    use crate::scenario::load::{ProfileSources, parse_scenario};

    const WARMUP_ON_HIP: &str = "format = 1\ndescription = \"x\"\n[host]\nprofile = \"r9700x2\"\n\
        [[step]]\naction = \"warmup\"\nkernel = \"gptq_torch\"\ndevice = \"cuda:1\"\n";

    #[test]
    fn a_passing_step_counts_and_every_missing_cell_is_a_gap() {
        let catalog = Catalog::reference();
        let scenario = parse_scenario(
            Path::new("w.toml"),
            WARMUP_ON_HIP,
            &catalog,
            &ProfileSources::shipped(),
        )
        .expect("loads");
        let report = run_simulated(&scenario, &catalog);
        assert_eq!(report.status, Status::Passed);
        let coverage = Coverage::of(&catalog, &[(&scenario, &report)]);
        assert_eq!(
            coverage.kernels["gptq_torch"]["warmup"]["hip"],
            Exercised { ran: 1, refused: 0 }
        );
        let threshold = Threshold {
            paths: vec!["warmup".into()],
            builds: vec![TorchBuild::Hip, TorchBuild::Cuda],
        };
        let gaps = coverage.gaps(&threshold);
        assert!(gaps.contains(&"gptq_torch warmup on a cuda build".to_string()));
        assert!(!gaps.contains(&"gptq_torch warmup on a hip build".to_string()));
        assert_eq!(gaps.len(), catalog.len() * 2 - 1);
    }

    #[test]
    fn a_failing_scenario_covers_nothing() {
        let catalog = Catalog::reference();
        let wrong = WARMUP_ON_HIP.replace(
            "device = \"cuda:1\"\n",
            "device = \"cuda:1\"\n[step.expect]\nran_on = 0\n",
        );
        let scenario = parse_scenario(
            Path::new("w.toml"),
            &wrong,
            &catalog,
            &ProfileSources::shipped(),
        )
        .expect("loads");
        let report = run_simulated(&scenario, &catalog);
        assert_eq!(report.status, Status::Failed);
        let coverage = Coverage::of(&catalog, &[(&scenario, &report)]);
        assert!(coverage.kernels["gptq_torch"].is_empty());
    }
}
