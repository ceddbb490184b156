//! One trial per shipped GPU host profile replays the corpus through the fake that drives its build: the
//! scenarios that run live are exactly those whose host the faked machine satisfies, every one passes, and
//! each step's trace equals the simulated run's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use devsim::TorchBuild;
use devsim::host::HostSpec;
use devsim::kernel::Catalog;
use devsim::runtime::live::machine::{RealGpu, RealMachine};
use devsim::scenario::{ProfileSources, find_named, load_found, load_profile};
use devsim_metadata::output::{Outcome, ScenarioOutput, TraceEntryOutput};

use crate::common::{Fake, devsim, plain_devsim, profile_path, repo, reports, text};

/// Every GPU host profile shipped in `scenarios/hosts/`, with the fake that drives its build.
pub fn profiles() -> Vec<(String, Fake)> {
    let folder = repo().join("scenarios/hosts");
    let mut profiles: Vec<(String, Fake)> = std::fs::read_dir(&folder)
        .expect("list the host profiles")
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let name = path.file_stem()?.to_str()?.to_string();
            let host = load_profile(&path).ok()?;
            Some((name, Fake::for_build(host.torch)?))
        })
        .collect();
    profiles.sort_by(|a, b| a.0.cmp(&b.0));
    profiles
}

/// The simulated run of the whole corpus (once per test process), by scenario name.
fn simulated() -> &'static BTreeMap<String, ScenarioOutput> {
    static SIMULATED: OnceLock<BTreeMap<String, ScenarioOutput>> = OnceLock::new();
    SIMULATED.get_or_init(|| {
        let output = plain_devsim(&["run", "--format", "json", "scenarios/"]);
        assert!(
            output.status.success(),
            "the simulated corpus fails:\n{}",
            text(&output.stdout)
        );
        reports(&output).1
    })
}

/// Each step's trace without `context_switch` entries (the switches the live runtime makes inside a call,
/// entering another GPU's context to allocate, copy or free, are live-only: the simulator has none), and how
/// many switches it had.
fn traces(report: &ScenarioOutput) -> Vec<(Vec<TraceEntryOutput>, usize)> {
    report
        .steps
        .iter()
        .map(|step| {
            let (calls, switches): (Vec<_>, Vec<_>) = step
                .trace
                .iter()
                .cloned()
                .partition(|entry| !matches!(entry, TraceEntryOutput::ContextSwitch { .. }));
            (calls, switches.len())
        })
        .collect()
}

/// The machine a fake over `profile` shows a process whose visible-device variables are `env`:
/// what the real driver would show (CUDA's `cuInit` fails when no GPU is visible; HIP loads and
/// counts zero; a mask the model refuses leaves the fake without devices; a mask the driver rejects,
/// a repeated CUDA ordinal, makes `cuInit` fail, so only CPU scenarios run there).
fn faked_machine(profile: &HostSpec, env: &BTreeMap<String, String>) -> RealMachine {
    let mut host = profile.clone();
    host.env = env.clone();
    if devsim::visible::runtime_rejects(host.torch, env).is_some() {
        return RealMachine::cpu_only();
    }
    let Ok(visible) = host.visible() else {
        return RealMachine::cpu_only();
    };
    RealMachine {
        build: host.torch,
        library: Some("fake".into()),
        fake: true,
        gpus: visible
            .iter()
            .map(|physical| {
                let gpu = &host.gpus[*physical];
                RealGpu {
                    arch: gpu.arch.clone(),
                    name: gpu.name.clone(),
                    smem_optin: gpu.smem_optin,
                    uuid: gpu.uuid.clone(),
                }
            })
            .collect(),
    }
}

/// The scenarios that must run live over `profile`: the same routing `devsim run --live` makes (an
/// `env` scenario in a child with its variables, a smaller host in a child narrowed by a mask, else
/// here), each judged by `RealMachine::satisfies` against the machine the fake shows there.
/// Returns `(name, is a GPU scenario)`.
fn expected_live(profile: &HostSpec) -> BTreeMap<String, bool> {
    let catalog = Catalog::reference();
    let files = find_named(&[repo().join("scenarios")]).expect("list scenarios");
    let parent = faked_machine(profile, &BTreeMap::new());
    let mut expected = BTreeMap::new();
    let profiles = ProfileSources::for_paths(&[repo().join("scenarios")]);
    let scenarios = files
        .iter()
        .flat_map(|file| load_found(file, &catalog, &profiles, None))
        .map(|(name, loaded)| loaded.unwrap_or_else(|e| panic!("{name} loads: {e}")));
    for scenario in scenarios {
        let host = &scenario.host;
        let machine = if !host.env.is_empty() {
            faked_machine(profile, &host.env)
        } else if let Some((variable, value)) = parent.restrict_to(host) {
            faked_machine(profile, &BTreeMap::from([(variable.to_string(), value)]))
        } else {
            parent.clone()
        };
        if machine.satisfies(host).is_ok() && host.views_differ().is_none() {
            expected.insert(scenario.name.clone(), host.torch != TorchBuild::Cpu);
        }
    }
    expected
}

/// Replays the whole corpus live through `fake` answering from `profile`, and checks it against the
/// expected set and the simulated traces.
pub fn replay(fake: Fake, profile: &str) {
    let host_path = profile_path(profile);
    let host = load_profile(&host_path).expect("the profile loads");
    let output = devsim(
        fake,
        &host_path,
        &[],
        &["run", "--live", "--format", "json", "scenarios/"],
    );
    let (live, by_name) = reports(&output);
    let machine = live.machine.as_deref().unwrap_or_default();
    assert!(
        machine.contains(&fake.describes()),
        "{profile}: not run through the fake: {machine}\n{}",
        text(&output.stderr)
    );
    let failed: Vec<String> = by_name
        .values()
        .filter(|report| report.status == Outcome::Failed)
        .map(|report| serde_json::to_string_pretty(report).unwrap_or_default())
        .collect();
    assert!(
        failed.is_empty(),
        "{profile}: scenarios failed live:\n{}",
        failed.join("\n")
    );
    assert!(output.status.success(), "{}", text(&output.stderr));

    let passed: BTreeSet<String> = by_name
        .iter()
        .filter(|(_, report)| report.status == Outcome::Passed)
        .map(|(name, _)| name.clone())
        .collect();
    let expected = expected_live(&host);
    let wanted: BTreeSet<String> = expected.keys().cloned().collect();
    assert_eq!(
        passed,
        wanted,
        "{profile}: ran live but not expected: {:?}; expected but not run: {:?}",
        passed.difference(&wanted).collect::<Vec<_>>(),
        wanted
            .difference(&passed)
            .map(|name| (name, by_name.get(name).and_then(|r| r.reason.as_deref())))
            .collect::<Vec<_>>()
    );
    let gpu: Vec<&String> = expected
        .iter()
        .filter(|(_, is_gpu)| **is_gpu)
        .map(|(name, _)| name)
        .collect();
    assert!(!gpu.is_empty(), "{profile}: no GPU scenario ran live");

    let simulated = simulated();
    let mut switched = 0;
    for name in &passed {
        let sim = simulated
            .get(name)
            .unwrap_or_else(|| panic!("{name} has no simulated report"));
        assert_eq!(sim.status, Outcome::Passed, "{name} fails simulated");
        let (live, sim) = (traces(&by_name[name]), traces(sim));
        let calls = |traces: &[(Vec<TraceEntryOutput>, usize)]| -> Vec<Vec<TraceEntryOutput>> {
            traces.iter().map(|(calls, _)| calls.clone()).collect()
        };
        assert_eq!(
            calls(&live),
            calls(&sim),
            "{profile}: {name}: the live trace through the fake differs from the simulated one"
        );
        // Each switch into another GPU's context is followed by the switch back: a passing step has an
        // even number.
        let counts: Vec<usize> = live.iter().map(|(_, switches)| *switches).collect();
        assert!(
            counts.iter().all(|n| n % 2 == 0),
            "{profile}: {name}: a context switch without its switch back: {counts:?}"
        );
        switched += counts.iter().sum::<usize>();
    }

    println!(
        "[fakes] {profile} through {}: {} scenario(s) ran live ({} GPU, {} CPU), traces equal to simulated \
         but for {switched} context switch(es) inside calls",
        fake.describes(),
        passed.len(),
        gpu.len(),
        passed.len() - gpu.len()
    );
    for name in &gpu {
        println!("[fakes]   {profile} gpu  {name}");
    }
}
