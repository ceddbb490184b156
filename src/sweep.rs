//! The kernel sweep behind `devsim bench` (not a scenario `[matrix]`, which is `scenario::matrix`): every
//! catalog kernel × every host × several selector spellings × validate, warmup and move, each checked
//! against the invariants the seed demands.

use std::time::{Duration, Instant};

use crate::dispatch::Dispatch;
use crate::dispatch::DispatchError;
use crate::dispatch::selector::Selector;
use crate::host::HostSpec;
use crate::kernel::{Catalog, Kernel};
use crate::parallel::in_parallel;
use crate::runtime::{Place, Recorder, SimRuntime};
use crate::trace::{Call, Entry, has};
use crate::vocab::Family;
use crate::vocab::TorchBuild;
use crate::vocab::{Target, TorchDevice};

/// The three paths every kernel has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Gates only.
    Validate,
    /// Gates, then a launch in the target's context.
    Warmup,
    /// Gates, then the weights moved to the resolved device.
    Move,
}

impl Path {
    /// All three.
    pub const EVERY: [Path; 3] = [Path::Validate, Path::Warmup, Path::Move];
}

/// What a matrix run found.
#[derive(Debug, Default)]
pub struct MatrixOutcome {
    /// Cases run.
    pub cases: usize,
    /// Cases a kernel accepted.
    pub accepted: usize,
    /// Cases refused (by a gate or normalization).
    pub refused: usize,
    /// Broken invariants, each naming its case.
    pub violations: Vec<String>,
    /// The wall time of each validate case.
    pub validate_times: Vec<Duration>,
}

/// Selector spellings to try on a host: strings in several cases, ordinals, family enums, torch devices.
pub fn selectors_for(host: &HostSpec) -> Vec<Selector> {
    let last = host
        .visible()
        .map(|v| v.len())
        .unwrap_or(0)
        .saturating_sub(1) as u32;
    vec![
        Selector::from("cpu"),
        Selector::from("cuda"),
        Selector::from("CUDA:0"),
        Selector::Text(format!("cuda:{last}")),
        Selector::from("rocm"),
        Selector::Text(format!("hip:{last}")),
        Selector::Ordinal(i64::from(last)),
        Selector::Family(Family::Cuda),
        Selector::Family(Family::Rocm),
        Selector::Torch(TorchDevice::cuda(last)),
        Selector::Text(format!("torch.device('cuda:{last}')")),
    ]
}

/// The current devices to start from: the first and the last visible GPU.
fn starting_devices(host: &HostSpec) -> Vec<u32> {
    let visible = host.visible().map(|v| v.len()).unwrap_or(0) as u32;
    match visible {
        0 => vec![0],
        1 => vec![0],
        n => vec![0, n - 1],
    }
}

struct Case<'a> {
    host: &'a HostSpec,
    /// The host's runtime as built, each case running on a fresh copy; `None` when the host does not validate.
    runtime: Option<&'a SimRuntime>,
    kernel: &'a dyn Kernel,
    selector: &'a Selector,
    path: Path,
    current: u32,
}

impl Case<'_> {
    fn name(&self) -> String {
        format!(
            "{} on {} (current {}) {:?} {}",
            self.kernel.spec().name,
            self.host.name,
            self.current,
            self.path,
            self.selector
        )
    }
}

/// Runs the whole matrix over `hosts`, each host and starting device on its own across the machine's cores:
/// the outcome (violations in order, validate times grouped by host) is the same however they are shared
/// out.
pub fn run_matrix(hosts: &[HostSpec], catalog: &Catalog) -> MatrixOutcome {
    let parts = in_parallel(&starts(hosts), 1, |&(host, current)| {
        run_from(host, current, catalog)
    });
    merged(parts)
}

/// [`run_matrix`] on the calling thread alone: what single calls are timed from, undisturbed by work on
/// the other cores.
pub fn run_matrix_on_one_thread(hosts: &[HostSpec], catalog: &Catalog) -> MatrixOutcome {
    let parts = starts(hosts)
        .into_iter()
        .map(|(host, current)| run_from(host, current, catalog));
    merged(parts)
}

/// Every host with each device it starts from.
fn starts(hosts: &[HostSpec]) -> Vec<(&HostSpec, u32)> {
    hosts
        .iter()
        .flat_map(|host| {
            starting_devices(host)
                .into_iter()
                .map(move |current| (host, current))
        })
        .collect()
}

/// The outcomes of parts of the matrix as one, in the order given.
fn merged(parts: impl IntoIterator<Item = MatrixOutcome>) -> MatrixOutcome {
    let mut outcome = MatrixOutcome::default();
    for part in parts {
        outcome.cases += part.cases;
        outcome.accepted += part.accepted;
        outcome.refused += part.refused;
        outcome.violations.extend(part.violations);
        outcome.validate_times.extend(part.validate_times);
    }
    outcome
}

/// Every kernel, selector and path on one host, starting from the current device `current`.
fn run_from(host: &HostSpec, current: u32, catalog: &Catalog) -> MatrixOutcome {
    let mut outcome = MatrixOutcome::default();
    let selectors = selectors_for(host);
    let mut host = host.clone();
    host.current = current;
    let runtime = SimRuntime::new(host.clone()).ok();
    for kernel in catalog.iter() {
        for selector in &selectors {
            for path in Path::EVERY {
                let case = Case {
                    host: &host,
                    runtime: runtime.as_ref(),
                    kernel,
                    selector,
                    path,
                    current,
                };
                run_case(&case, &mut outcome);
            }
        }
    }
    outcome
}

/// What a path returned, reduced to what the invariants need.
struct PathOutcome {
    target: Option<Target>,
    place: Option<Place>,
    error: Option<DispatchError>,
}

fn run_case(case: &Case, outcome: &mut MatrixOutcome) {
    let Some(sim) = case.runtime.map(SimRuntime::fresh) else {
        outcome
            .violations
            .push(format!("{}: host does not validate", case.name()));
        return;
    };
    let recorder = Recorder::new(Box::new(sim));
    let dispatch = Dispatch::new(&recorder, recorder.trace().clone());
    let started = Instant::now();
    let result = match case.path {
        Path::Validate => {
            let r = case.kernel.validate(&dispatch, case.selector);
            outcome.validate_times.push(started.elapsed());
            match r {
                Ok(v) => PathOutcome {
                    target: Some(v.target),
                    place: None,
                    error: None,
                },
                Err(e) => PathOutcome {
                    target: None,
                    place: None,
                    error: Some(e),
                },
            }
        }
        Path::Warmup => match case.kernel.warmup(&dispatch, case.selector) {
            Ok(w) => PathOutcome {
                target: Some(w.validated.target),
                place: Some(w.ran_on),
                error: None,
            },
            Err(e) => PathOutcome {
                target: None,
                place: None,
                error: Some(e),
            },
        },
        Path::Move => match case.kernel.move_weights(&dispatch, case.selector) {
            Ok(m) => PathOutcome {
                target: Some(m.validated.target),
                place: Some(m.lands_on),
                error: None,
            },
            Err(e) => PathOutcome {
                target: None,
                place: None,
                error: Some(e),
            },
        },
    };
    outcome.cases += 1;
    let current_after = recorder.inner().get_device().ok();
    let mut violations = recorder
        .trace()
        .read(|trace| check_invariants(case, &result, trace, current_after));
    if result.error.is_some() {
        outcome.refused += 1;
    } else {
        outcome.accepted += 1;
    }
    outcome.violations.extend(
        violations
            .drain(..)
            .map(|v| format!("{}: {v}", case.name())),
    );
}

fn check_invariants(
    case: &Case,
    result: &PathOutcome,
    trace: &[Entry],
    current_after: Option<u32>,
) -> Vec<String> {
    let mut broken = Vec::new();
    let spec = case.kernel.spec();
    let build = case.host.torch;
    if let Some(target) = result.target {
        if !spec.declares(target.family) {
            broken.push(format!(
                "accepted a {} target it does not declare",
                target.family
            ));
        }
        if build == TorchBuild::Hip && target.family == Family::Cuda {
            broken.push("a HIP build produced a CUDA target".into());
        }
    }
    if build == TorchBuild::Hip && has(trace, Call::NvidiaCapability.as_str()) {
        broken.push("an AMD request saw an NVIDIA capability query".into());
    }
    if build == TorchBuild::Cuda && has(trace, Call::AmdArch.as_str()) {
        broken.push("an NVIDIA request saw an AMD arch query".into());
    }
    let refused = matches!(
        result.error,
        Some(DispatchError::UnsupportedFamily { .. } | DispatchError::UnsupportedArch { .. })
    );
    if refused && has(trace, Call::ExtensionLoad.as_str()) {
        broken.push("a refused kernel loaded its native extension".into());
    }
    let has_gpus = current_after.is_some();
    if has_gpus && current_after != Some(case.current) {
        broken.push(format!(
            "left device {current_after:?} current instead of restoring {}",
            case.current
        ));
    }
    if let (Some(target), Some(place)) = (result.target, result.place) {
        let expected = match target.family {
            Family::Cpu => Place::Cpu,
            _ => Place::Gpu(target.ordinal.unwrap_or(case.current)),
        };
        if place != expected {
            broken.push(format!(
                "{:?} ended on {place} instead of {expected}",
                case.path
            ));
        }
    }
    broken
}

/// The median of some durations.
pub fn median(times: &mut [Duration]) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    times.sort_unstable();
    times[times.len() / 2]
}

/// Loads every host profile under `root/hosts`.
pub fn shipped_hosts(root: &std::path::Path) -> Result<Vec<HostSpec>, crate::scenario::LoadError> {
    crate::scenario::load::profile_names(root)
        .iter()
        .map(|name| {
            crate::scenario::load_profile(
                &root
                    .join(crate::scenario::load::HOSTS_DIR)
                    .join(format!("{name}.toml")),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_catalog_keeps_every_invariant_on_every_shipped_host() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let hosts = shipped_hosts(&root).expect("the shipped profiles load");
        let catalog = Catalog::reference();
        let outcome = run_matrix(&hosts, &catalog);
        let starts: usize = hosts.iter().map(|h| starting_devices(h).len()).sum();
        assert_eq!(
            outcome.cases,
            starts * catalog.len() * 11 * Path::EVERY.len()
        );
        assert_eq!(outcome.accepted + outcome.refused, outcome.cases);
        assert!(outcome.accepted > 0 && outcome.refused > 0, "{outcome:?}");
        assert_eq!(
            outcome.validate_times.len(),
            outcome.cases / Path::EVERY.len()
        );
        assert!(outcome.violations.is_empty(), "{:#?}", outcome.violations);
        let alone = run_matrix_on_one_thread(&hosts, &catalog);
        assert_eq!(
            (
                alone.cases,
                alone.accepted,
                alone.refused,
                alone.validate_times.len()
            ),
            (
                outcome.cases,
                outcome.accepted,
                outcome.refused,
                outcome.validate_times.len()
            )
        );
    }
}
