//! Live replay through the fake drivers (`fakes/cuda`, `fakes/hip`) on a machine without GPUs.
//!
//! The fakes are built by `scripts/build-fake-drivers` (CI runs it first) into `target/fake-drivers/`
//! under their real names; no test builds them. Each child `devsim` gets one of those folders first on
//! `LD_LIBRARY_PATH` and finds the fake through the loader's ordinary search, exactly as it finds a real
//! driver, plus `DEVSIM_FAKE_HOST`, the host profile the fake answers from. When the fakes were not
//! built every trial is listed as ignored, with the reason printed, or fails under `CI=true`.
//!
//! One trial per shipped GPU profile replays the corpus: the scenarios that run live are exactly those
//! whose host the faked machine satisfies, every one passes, and each step's trace equals the simulated
//! run's. Further trials: `devsim probe` maps the fake, the visible-device variables apply, profile
//! faults surface through the C ABI, and the C ABI itself answers with the drivers' codes. The
//! `live_subject` trials run `devsim run --live --subject` with this test binary as the scripted
//! fixture subject (`tests/subject_fixture`, started in a mode by `DEVSIM_FIXTURE_SUBJECT`).

mod subject_fixture;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use devsim_sys::{cuda, hip};
use libtest_mimic::{Arguments, Failed, Trial};
use tempfile::TempDir;

use devsim::TorchBuild;
use devsim::host::HostSpec;
use devsim::kernel::Catalog;
use devsim::replay::worker::WorkerPool;
use devsim::runner::Status;
use devsim::runtime::live::machine::{RealGpu, RealMachine};
use devsim::scenario::{ProfileSources, find_named, load_found, load_profile};
use devsim::visible::VISIBLE_DEVICE_VARIABLES;
use serde_json::Value;

/// Which fake a child runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fake {
    Cuda,
    Hip,
    /// The HIP fake alone, without the CUDA fake in front of it.
    HipOnly,
}

impl Fake {
    /// What `devsim run --live` says it runs through: the build and the fake's resolved path.
    fn describes(self) -> String {
        match self {
            Fake::Cuda => format!(
                "cuda build through {}",
                fakes().folder(self).join(cuda::LIBRARY).display()
            ),
            Fake::Hip | Fake::HipOnly => format!(
                "hip build through {}",
                fakes().folder(self).join(hip::LIBRARY).display()
            ),
        }
    }

    /// The fake that drives a build's profiles.
    fn for_build(build: TorchBuild) -> Option<Self> {
        match build {
            TorchBuild::Cuda => Some(Fake::Cuda),
            TorchBuild::Hip => Some(Fake::Hip),
            TorchBuild::Cpu => None,
        }
    }
}

/// The built fakes, each in its own folder under `target/fake-drivers/`.
struct Fakes {
    /// Holds `libcuda.so.1` only.
    cuda: PathBuf,
    /// Holds `libamdhip64.so`, and the CUDA fake as `libcuda.so.1`: devsim tries CUDA first, and on a
    /// machine with a real CUDA driver the loader would otherwise find it. The CUDA fake declines a
    /// HIP profile (`cuInit` answers `CUDA_ERROR_NO_DEVICE`), so devsim goes on to HIP.
    hip: PathBuf,
    /// Holds `libamdhip64.so` only.
    hip_only: PathBuf,
}

impl Fakes {
    fn folder(&self, fake: Fake) -> &Path {
        match fake {
            Fake::Cuda => &self.cuda,
            Fake::Hip => &self.hip,
            Fake::HipOnly => &self.hip_only,
        }
    }

    /// The folders `scripts/build-fake-drivers` lays out, or why they are not there.
    fn locate() -> Result<Self, String> {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target"));
        let root = target.join("fake-drivers");
        let fakes = Self {
            cuda: root.join("cuda"),
            hip: root.join("hip"),
            hip_only: root.join("hip-only"),
        };
        let needed = [
            fakes.cuda.join(cuda::LIBRARY),
            fakes.hip.join(cuda::LIBRARY),
            fakes.hip.join(hip::LIBRARY),
            fakes.hip_only.join(hip::LIBRARY),
        ];
        match needed.iter().find(|path| !path.is_file()) {
            None => Ok(fakes),
            Some(missing) => Err(format!(
                "the fake drivers are not built ({} is missing): run scripts/build-fake-drivers",
                missing.display()
            )),
        }
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The located fakes; only called by trials, which run only when [`Fakes::locate`] succeeded.
fn fakes() -> &'static Fakes {
    static FAKES: OnceLock<Fakes> = OnceLock::new();
    FAKES.get_or_init(|| Fakes::locate().unwrap_or_else(|reason| panic!("{reason}")))
}

/// A shipped host profile's path.
fn profile_path(name: &str) -> PathBuf {
    repo().join("scenarios/hosts").join(format!("{name}.toml"))
}

/// Runs `devsim args` with `fake` first on the library path, answering from `host`, with no
/// visible-device variable but those in `env`.
fn devsim(fake: Fake, host: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_devsim"));
    command
        .args(args)
        .current_dir(repo())
        .env("LD_LIBRARY_PATH", fakes().folder(fake))
        .env("DEVSIM_FAKE_HOST", host);
    for variable in VISIBLE_DEVICE_VARIABLES {
        command.env_remove(variable);
    }
    command.envs(env.iter().copied());
    command.output().expect("run devsim")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Parses `devsim run --format json` output into its reports, by scenario name.
fn reports(output: &Output) -> (Value, BTreeMap<String, Value>) {
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "devsim printed no JSON ({error}):\n{}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    let by_name = value["scenarios"]
        .as_array()
        .expect("a scenarios array")
        .iter()
        .map(|report| {
            let name = report["name"].as_str().expect("a name").to_string();
            (name, report.clone())
        })
        .collect();
    (value, by_name)
}

/// The simulated run of the whole corpus (once per test process), by scenario name.
fn simulated() -> &'static BTreeMap<String, Value> {
    static SIMULATED: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    SIMULATED.get_or_init(|| {
        let output = Command::new(env!("CARGO_BIN_EXE_devsim"))
            .args(["run", "--format", "json", "scenarios/"])
            .current_dir(repo())
            .output()
            .expect("run devsim");
        assert!(
            output.status.success(),
            "the simulated corpus fails:\n{}",
            text(&output.stdout)
        );
        reports(&output).1
    })
}

/// Each step's trace entries, split by whether the entry is a `context_switch`: the switches the live
/// runtime makes inside a call (entering another GPU's context to allocate, copy or free) are live-only,
/// the simulator has none.
fn split_traces(report: &Value) -> Vec<(Vec<Value>, Vec<Value>)> {
    let steps = report["steps"].as_array().cloned().unwrap_or_default();
    steps
        .iter()
        .map(|step| {
            let entries = step["trace"].as_array().cloned().unwrap_or_default();
            entries
                .into_iter()
                .partition(|entry| entry["type"] != "context_switch")
        })
        .collect()
}

/// Each step's trace without `context_switch` entries.
fn traces(report: &Value) -> Vec<Value> {
    split_traces(report)
        .into_iter()
        .map(|(calls, _)| Value::Array(calls))
        .collect()
}

/// How many `context_switch` entries each step of a report has; each switch into another GPU's context is
/// followed by the switch back, so a passing step has an even number.
fn switches(report: &Value) -> Vec<usize> {
    split_traces(report)
        .into_iter()
        .map(|(_, switches)| switches.len())
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
fn replay(fake: Fake, profile: &str) {
    let host_path = profile_path(profile);
    let host = load_profile(&host_path).expect("the profile loads");
    let output = devsim(
        fake,
        &host_path,
        &[],
        &["run", "--live", "--format", "json", "scenarios/"],
    );
    let (live, by_name) = reports(&output);
    let machine = live["machine"].as_str().unwrap_or_default();
    assert!(
        machine.contains(&fake.describes()),
        "{profile}: not run through the fake: {machine}\n{}",
        text(&output.stderr)
    );
    let failed: Vec<String> = by_name
        .values()
        .filter(|report| report["status"] == "failed")
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
        .filter(|(_, report)| report["status"] == "passed")
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
            .map(|name| (name, &by_name[name]["reason"]))
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
        assert_eq!(sim["status"], "passed", "{name} fails simulated");
        assert_eq!(
            traces(&by_name[name]),
            traces(sim),
            "{profile}: {name}: the live trace through the fake differs from the simulated one"
        );
        let counts = switches(&by_name[name]);
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

/// `devsim probe` through `fake`: the profile it prints, checked to name the fake as the mapped driver.
fn probe(fake: Fake, host: &Path, env: &[(&str, &str)]) -> String {
    let output = devsim(fake, host, env, &["probe"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let profile = text(&output.stdout);
    let library = match fake {
        Fake::Cuda => cuda::LIBRARY,
        Fake::Hip | Fake::HipOnly => hip::LIBRARY,
    };
    let mapped = fakes().folder(fake).join(library);
    let driver = profile
        .lines()
        .find_map(|line| line.strip_prefix("# driver: "))
        .unwrap_or_else(|| panic!("probe names no mapped driver:\n{profile}"));
    assert_eq!(
        Path::new(driver),
        mapped,
        "the mapped driver is not the fake:\n{profile}"
    );
    profile
}

/// The `arch = "…"` lines of a probed profile.
fn archs(profile: &str) -> Vec<&str> {
    profile
        .lines()
        .filter_map(|line| line.strip_prefix("arch = \""))
        .map(|rest| rest.trim_end_matches('"'))
        .collect()
}

fn a_fake_is_named_fake_and_never_satisfies_require_live() {
    let host = profile_path("h200x2");
    let args = [
        "run",
        "--live",
        "--require-live",
        "1",
        "--filter",
        "live/h200x2",
    ];
    let refused = devsim(Fake::Cuda, &host, &[], &args);
    let printed = format!("{}{}", text(&refused.stdout), text(&refused.stderr));
    assert!(
        printed.contains("live: FAKE DRIVER (devsim's stand-in, no real GPU)"),
        "the header names the fake: {printed}"
    );
    assert_eq!(refused.status.code(), Some(1), "{printed}");
    assert!(
        printed.contains("the driver is one of devsim's fakes"),
        "{printed}"
    );
    let mut allowed = args.to_vec();
    allowed.push("--allow-fake");
    let output = devsim(Fake::Cuda, &host, &[], &allowed);
    assert!(
        output.status.success(),
        "--allow-fake counts them: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

fn probe_maps_the_fake_and_reads_the_profile() {
    let profile = probe(Fake::Hip, &profile_path("r9700x2"), &[]);
    assert!(profile.contains("torch = \"hip\""), "{profile}");
    assert_eq!(archs(&profile), ["gfx1201", "gfx1201"], "{profile}");
    assert!(profile.contains("name = \"AMD Radeon AI PRO R9700\""));

    let profile = probe(Fake::Hip, &profile_path("amd_mixed"), &[]);
    assert_eq!(
        archs(&profile),
        ["gfx942:sramecc+:xnack-", "gfx1201"],
        "gcnArchName keeps its feature suffixes:\n{profile}"
    );

    let profile = probe(Fake::Cuda, &profile_path("h200x2"), &[]);
    assert!(profile.contains("torch = \"cuda\""), "{profile}");
    assert_eq!(archs(&profile), ["sm_90", "sm_90"], "{profile}");
    assert!(profile.contains("smem_optin = 232448"), "{profile}");

    // The live workflows' first step: a fake's GPUs are never real ones.
    let output = devsim(
        Fake::Cuda,
        &profile_path("h200x2"),
        &[],
        &["probe", "--require-gpu", "1"],
    );
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: failed to find 1 real GPU(s): live: FAKE DRIVER"),
        "{stderr}"
    );
}

fn the_fakes_apply_the_visible_device_variables() {
    let profile = probe(
        Fake::Hip,
        &profile_path("amd_mixed"),
        &[("HIP_VISIBLE_DEVICES", "1,0")],
    );
    assert_eq!(
        archs(&profile),
        ["gfx1201", "gfx942:sramecc+:xnack-"],
        "{profile}"
    );
    let profile = probe(
        Fake::Hip,
        &profile_path("amd_mixed"),
        &[("ROCR_VISIBLE_DEVICES", "1")],
    );
    assert_eq!(archs(&profile), ["gfx1201"], "{profile}");
    let profile = probe(
        Fake::Cuda,
        &profile_path("h200x2"),
        &[("CUDA_VISIBLE_DEVICES", "1")],
    );
    assert_eq!(archs(&profile), ["sm_90"], "{profile}");
}

fn without_a_usable_profile_the_fakes_have_no_device() {
    let missing = repo().join("no/such/profile.toml");
    let cases = [
        (Fake::Cuda, profile_path("r9700x2"), "a hip host"),
        (Fake::HipOnly, profile_path("h200"), "a cuda host"),
        (Fake::HipOnly, profile_path("cpu"), "a cpu host"),
        (Fake::HipOnly, missing.clone(), "read the file"),
        (Fake::Cuda, missing, "read the file"),
    ];
    for (fake, host, reason) in cases {
        let output = devsim(fake, &host, &[], &["probe"]);
        let profile = text(&output.stdout);
        let stderr = text(&output.stderr);
        // The driver is present and answers "no device": what it is, not "no GPU driver".
        let build = if fake == Fake::Cuda { "cuda" } else { "hip" };
        assert!(
            profile.contains(&format!("torch = \"{build}\"")) && !profile.contains("[[gpu]]"),
            "{profile}\n{stderr}"
        );
        assert!(
            stderr.contains("no devices") && stderr.contains(reason),
            "{stderr}"
        );
        assert!(
            stderr.contains("shows no GPU") && !stderr.contains("no GPU driver on this machine"),
            "{stderr}"
        );
        assert!(
            stderr.contains("NO_DEVICE") || stderr.contains("NoDevice"),
            "{stderr}"
        );
        assert!(output.status.success(), "{stderr}");
    }
}

/// A scratch scenario root: `hosts/` with the shipped `profile`, one scenario, and the fake's own
/// profile (the shipped one plus `faults`) outside `hosts/`. Returns the scratch folder (removed when
/// dropped), the scenario and the fake's host.
fn fault_case(
    name: &str,
    profile: &str,
    faults: &str,
    scenario: &str,
) -> (TempDir, PathBuf, PathBuf) {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let root = scratch.path().to_path_buf();
    std::fs::create_dir_all(root.join("hosts")).expect("dir");
    let shipped = std::fs::read_to_string(profile_path(profile)).expect("profile");
    std::fs::write(root.join("hosts").join(format!("{profile}.toml")), &shipped).expect("write");
    let fake_host = root.join("fake-host.toml");
    std::fs::write(&fake_host, format!("{shipped}\n{faults}")).expect("write");
    let file = root.join(format!("{name}.toml"));
    std::fs::write(&file, scenario).expect("write");
    (scratch, file, fake_host)
}

/// Runs one scenario simulated (no fault: it must pass) and live through `fake` over `fake_host`
/// (the fault fires: it must fail), returning the live run's output.
fn fails_only_through_the_faulty_fake(fake: Fake, file: &Path, fake_host: &Path) -> String {
    let file = file.to_str().expect("a UTF-8 path");
    let simulated = Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(["run", file])
        .output()
        .expect("run devsim");
    assert!(
        simulated.status.success(),
        "the scenario must pass without the fault:\n{}",
        text(&simulated.stdout)
    );
    let live = devsim(
        fake,
        fake_host,
        &[],
        &["run", "--live", "--format", "json", file],
    );
    let (value, by_name) = reports(&live);
    assert!(
        value["machine"]
            .as_str()
            .is_some_and(|machine| machine.contains(&fake.describes())),
        "{value}"
    );
    assert!(
        !live.status.success(),
        "the fault did not fail the run: {value}"
    );
    assert!(
        by_name.values().all(|report| report["status"] == "failed"),
        "{value}"
    );
    value.to_string()
}

fn a_launch_fault_in_the_profile_fails_a_warmup_on_gpu1() {
    let warmup = |profile: &str| {
        format!(
            r#"format = 1
description = "A warmup on cuda:1 runs on GPU 1 and restores GPU 0"

[host]
profile = "{profile}"

[[step]]
action = "warmup"
kernel = "gptq_torch"
device = "cuda:1"

[step.expect]
ran_on = 1
current_after = 0
"#
        )
    };
    let fault = "[[fault]]\ncall = \"launch\"\ndevice = 1\ncode = 719\n";
    for (fake, profile, name) in [
        (Fake::Hip, "r9700x2", "hipErrorLaunchFailure"),
        (Fake::Cuda, "h200x2", "CUDA_ERROR_LAUNCH_FAILED"),
    ] {
        let (_scratch, file, host) = fault_case(
            &format!("launch-fault-{profile}"),
            profile,
            fault,
            &warmup(profile),
        );
        let output = fails_only_through_the_faulty_fake(fake, &file, &host);
        assert!(output.contains(name), "{name} not reported:\n{output}");
        assert!(output.contains("719"), "{output}");
    }
}

fn a_lost_gpu_in_the_profile_fails_allspark_validation_on_it() {
    let scenario = r#"format = 1
description = "AllSpark validates on cuda:1 of an R9700 pair"

[host]
profile = "r9700x2"

[[step]]
action = "validate"
kernel = "gptq_allspark"
device = "cuda:1"

[step.expect]
family = "rocm"
ordinal = 1
"#;
    // Probing the machine makes three calls on GPU 1 (gcnArchName, name, shared memory); the GPU
    // is lost after them, so the scenario runs live and its gcnArchName query fails.
    let lost = "[[fault]]\ndevice = 1\nafter = 3\n";
    let (_scratch, file, host) = fault_case("lost-gpu1", "r9700x2", lost, scenario);
    let output = fails_only_through_the_faulty_fake(Fake::Hip, &file, &host);
    assert!(output.contains("hipErrorUnknown"), "{output}");
    assert!(output.contains("hipGetDevicePropertiesR0600"), "{output}");

    // Lost from the start, the probe itself cannot read GPU 1.
    let (_scratch_at_start, _, host) = fault_case(
        "lost-gpu1-at-start",
        "r9700x2",
        "[[fault]]\ndevice = 1\n",
        "",
    );
    let output = devsim(Fake::Hip, &host, &[], &["probe"]);
    let stderr = text(&output.stderr);
    assert!(text(&output.stdout).contains("torch = \"cpu\""), "{stderr}");
    assert!(
        stderr.contains("present but failing")
            && stderr.contains("read the GPUs of")
            && stderr.contains("hipErrorUnknown"),
        "{stderr}"
    );
    assert_eq!(
        output.status.code(),
        Some(3),
        "a failing driver has its own exit code: {stderr}"
    );
    // The same through `run --live`: its own exit code, not a pass with every GPU scenario skipped.
    let output = devsim(
        Fake::Hip,
        &host,
        &[],
        &["run", "--live", "scenarios/live/cpu_moves_and_warmups.toml"],
    );
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("present but failing"),
        "{}",
        text(&output.stdout)
    );
}

/// Runs this file's ABI test again in a child process with `library` and `profile` named in its
/// environment (the child calls the C ABI directly), and checks the child passed.
fn abi_check(library: &str, fake: Fake, profile: &str) {
    let path = fakes().folder(fake).join(library);
    let output = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "the_fakes_answer_with_the_drivers_error_codes",
            "--exact",
            "--nocapture",
        ])
        .args(["--test-threads", "1"])
        .env("DEVSIM_FAKE_ABI_LIBRARY", &path)
        .env("DEVSIM_FAKE_HOST", profile_path(profile))
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("HIP_VISIBLE_DEVICES")
        .env_remove("ROCR_VISIBLE_DEVICES")
        .output()
        .expect("run the ABI child");
    let stdout = text(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{library}: the ABI checks failed:\n{stdout}\n{}",
        text(&output.stderr)
    );
}

/// In the parent: runs this trial again as a child per fake. In the child (`DEVSIM_FAKE_ABI_LIBRARY`
/// set): calls the fake's C ABI directly (the fake reads its profile from the environment at first
/// use, which a test must not set in its own process).
fn the_fakes_answer_with_the_drivers_error_codes() {
    let Some(path) = std::env::var_os("DEVSIM_FAKE_ABI_LIBRARY") else {
        abi_check(cuda::LIBRARY, Fake::Cuda, "h200x2");
        abi_check(hip::LIBRARY, Fake::HipOnly, "amd_mixed");
        return;
    };
    // SAFETY: the library is one of this workspace's fakes, built by scripts/build-fake-drivers;
    // its initializers are Rust's own.
    let library = unsafe { libloading::Library::new(&path) }.expect("open the fake");
    // Never unloaded, as devsim never unloads a driver: the fake's thread-local destructors run
    // from its own code when this thread exits.
    let library = std::mem::ManuallyDrop::new(library);
    if Path::new(&path).ends_with(cuda::LIBRARY) {
        abi::cuda(&library);
    } else {
        abi::hip(&library);
    }
}

/// A worker command for the pool: a shell script in `dir` that runs `devsim` over the CUDA fake
/// answering from h200x2, after `prelude` (shell lines run before, e.g. to die or hang once).
fn worker_script(dir: &Path, prelude: &str) -> PathBuf {
    let script = dir.join("worker.sh");
    let body = format!(
        "#!/bin/sh\n{prelude}\nexport LD_LIBRARY_PATH='{}'\nexport DEVSIM_FAKE_HOST='{}'\nexec '{}' \"$@\"\n",
        fakes().folder(Fake::Cuda).display(),
        profile_path("h200x2").display(),
        env!("CARGO_BIN_EXE_devsim"),
    );
    std::fs::write(&script, body).expect("write the worker script");
    let mut permissions = std::fs::metadata(&script).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).expect("chmod");
    script
}

/// The two worker-isolation scenarios (`tests/fixtures/live-worker/`), in order: the first leaves
/// GPU 1 current, the second expects to start on GPU 0.
fn worker_scenarios() -> Vec<devsim::scenario::Scenario> {
    let folder = repo().join("tests/fixtures/live-worker");
    let profiles = ProfileSources::for_paths(std::slice::from_ref(&folder));
    let files = find_named(&[folder]).expect("list the fixtures");
    files
        .iter()
        .flat_map(|file| load_found(file, &Catalog::reference(), &profiles, None))
        .map(|(name, loaded)| loaded.unwrap_or_else(|e| panic!("{name} loads: {e}")))
        .collect()
}

fn status(report: &devsim::runner::ScenarioReport) -> String {
    format!("{:?}: {}", report.status, devsim::report::human(report))
}

/// One worker runs both scenarios (one environment, one worker), and the second still starts on
/// GPU 0 although the first left GPU 1 current on the worker's thread.
fn a_worker_resets_the_current_device_between_scenarios() {
    let scratch = TempDir::new().expect("scratch dir");
    let pool = WorkerPool::new(worker_script(scratch.path(), ""));
    let scenarios = worker_scenarios();
    assert_eq!(scenarios.len(), 2);
    for scenario in &scenarios {
        let report = pool.run(scenario, &scenario.host.env);
        assert_eq!(report.status, Status::Passed, "{}", status(&report));
    }
    assert_eq!(pool.started(), 1, "both scenarios share one worker");
}

/// A worker that dies mid-scenario errors that scenario (devsim's failure, not a finding) with its exit
/// status and stderr, and the next scenario runs in a fresh worker.
fn a_worker_that_dies_errors_its_scenario_and_is_replaced() {
    let scratch = TempDir::new().expect("scratch dir");
    let marker = scratch.path().join("died-once");
    let prelude = format!(
        "if [ ! -e '{0}' ]; then touch '{0}'; read line; echo 'worker crashed on purpose' >&2; exit 7; fi",
        marker.display()
    );
    let pool = WorkerPool::new(worker_script(scratch.path(), &prelude));
    let scenarios = worker_scenarios();
    let first = pool.run(&scenarios[0], &scenarios[0].host.env);
    assert!(
        matches!(first.status, Status::Errored(_)),
        "{:?}",
        first.status
    );
    let text = devsim::report::human(&first);
    assert!(text.contains("died mid-scenario"), "{text}");
    assert!(text.contains("exit status: 7"), "{text}");
    assert!(text.contains("worker crashed on purpose"), "{text}");
    let second = pool.run(&scenarios[1], &scenarios[1].host.env);
    assert_eq!(second.status, Status::Passed, "{}", status(&second));
    assert_eq!(pool.started(), 2, "the dead worker was replaced");
}

/// A worker that never answers is killed after the timeout and its scenario errors saying so.
fn a_silent_worker_times_out() {
    let scratch = TempDir::new().expect("scratch dir");
    let pool = WorkerPool::new(worker_script(scratch.path(), "read line; exec sleep 60"))
        .with_timeout(std::time::Duration::from_secs(1));
    let scenarios = worker_scenarios();
    // Were the timeout not applied, the run would wait out the worker's 60 s sleep and report its death
    // instead of the timeout: the message, not a stopwatch, tells the two apart.
    let report = pool.run(&scenarios[0], &scenarios[0].host.env);
    assert!(
        matches!(report.status, Status::Errored(_)),
        "{:?}",
        report.status
    );
    let text = devsim::report::human(&report);
    assert!(text.contains("did not answer within 1 s"), "{text}");
}

/// A run in which devsim fails to run a scenario exits with its own code (4), apart from failures (1) and
/// bad input (2), in every format. The live worker cannot load the scenario: its host profile comes from
/// `--hosts`, which a worker (loading the file as `devsim run FILE` would) does not search.
fn an_errored_run_exits_with_its_own_code() {
    let scratch = TempDir::new().expect("scratch dir");
    let scenarios = scratch.path().join("scenarios");
    let hosts = scratch.path().join("elsewhere");
    std::fs::create_dir_all(&scenarios).expect("make the scenario folder");
    std::fs::create_dir_all(&hosts).expect("make the hosts folder");
    std::fs::copy(profile_path("h200x2"), hosts.join("moved.toml")).expect("copy the profile");
    let fixture = repo().join("tests/fixtures/live-worker/a_ends_with_gpu1_current.toml");
    let original = std::fs::read_to_string(fixture).expect("read the fixture");
    let moved = original.replace("profile = \"h200x2\"", "profile = \"moved\"");
    assert_ne!(moved, original, "the fixture names its profile");
    std::fs::write(scenarios.join("a.toml"), moved).expect("write the scenario");
    let (hosts, scenarios) = (hosts.display().to_string(), scenarios.display().to_string());
    let args = ["run", "--live", "--hosts", &hosts, &scenarios];
    let output = devsim(Fake::Cuda, &profile_path("h200x2"), &[], &args);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(
        output.status.code(),
        Some(i32::from(devsim_metadata::exit::ERRORED)),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("ERROR   a.toml"), "{stdout}");
    assert!(stdout.contains("find host profile `moved`"), "{stdout}");
    assert!(stdout.contains("0 failed"), "{stdout}");
    assert!(
        stderr.contains("error: failed to run or judge 1 scenario(s)"),
        "{stderr}"
    );
    for format in ["json", "junit"] {
        let mut with_format = args.to_vec();
        with_format.extend(["--format", format]);
        let output = devsim(Fake::Cuda, &profile_path("h200x2"), &[], &with_format);
        assert_eq!(
            output.status.code(),
            Some(i32::from(devsim_metadata::exit::ERRORED)),
            "{format}: {}",
            text(&output.stderr)
        );
    }
}

/// `probe --check-masks` through each fake: every generated mask agrees with the driver (the fakes
/// apply devsim's model, so this proves the plumbing: the children, UUIDs, the rejected `0,0`).
fn check_masks_agrees_through_the_fakes() {
    for (fake, profile, expected) in [
        (
            Fake::Cuda,
            "h200x2",
            "CUDA_VISIBLE_DEVICES=\"0,0\": init fails, as predicted",
        ),
        (
            Fake::Hip,
            "r9700x2",
            "ROCR_VISIBLE_DEVICES=\"1,0\": 0000000000000001, 0000000000000000",
        ),
    ] {
        let output = devsim(
            fake,
            &profile_path(profile),
            &[],
            &["probe", "--check-masks"],
        );
        let stdout = text(&output.stdout);
        assert!(
            output.status.success(),
            "{profile}: {stdout}{}",
            text(&output.stderr)
        );
        assert!(stdout.contains(expected), "{profile}: {stdout}");
        assert!(
            stdout.contains(" 0 disagree, 0 skipped"),
            "{profile}: {stdout}"
        );
        assert!(!stdout.contains("DISAGREE"), "{profile}: {stdout}");
    }
}

/// The UUID-prefix scenarios, written against h200x2's profile UUIDs, replay on a machine whose GPUs
/// have other UUIDs: live replay maps each prefix onto the real GPU at the same position.
fn uuid_masks_are_mapped_onto_the_real_gpus() {
    let scratch = TempDir::new().expect("scratch dir");
    let machine = scratch.path().join("h200x2_other_uuids.toml");
    let profile = std::fs::read_to_string(profile_path("h200x2")).expect("read h200x2");
    let mut uuids = [
        "GPU-5e8a1c2d-0b3f-4a6e-9c7d-1f2e3d4c5b6a",
        "GPU-a1b2c3d4-0000-4000-8000-000000000001",
    ]
    .into_iter();
    let patched: String = profile
        .lines()
        .map(|line| match line.starts_with("smem_optin") {
            true => format!("{line}\nuuid = \"{}\"\n", uuids.next().unwrap_or_default()),
            false => format!("{line}\n"),
        })
        .collect();
    std::fs::write(&machine, patched).expect("write the profile");
    let output = devsim(
        Fake::Cuda,
        &machine,
        &[],
        &[
            "run",
            "--live",
            "scenarios/live/h200x2_uuid_prefix_selects_gpu1.toml",
            "scenarios/live/h200x2_uuid_prefixes_reorder_gpus.toml",
        ],
    );
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("2 passed, 0 failed, 0 skipped"), "{stdout}");
}

/// The scenarios of the live-subject trials, by file name: one a one-GPU CUDA fake satisfies, one with a
/// repeated step (sent live, never skipped), and three it cannot run live: a HIP build, two GPUs, and a
/// visible-device mask (the subject process runs under devsim's own environment).
const LIVE_SUBJECT_SCENARIOS: [(&str, &str); 6] = [
    (
        "cuda_h200.toml",
        r#"format = 1
description = "CUDA spellings on one H200"

[host]
profile = "h200"

[[step]]
action = "normalize"
device = "cuda:0"
[step.expect]
family = "cuda"
ordinal = 0

[[step]]
action = "resolve"
device = "cuda"
[step.expect]
family = "cuda"
torch_device = "cuda"
"#,
    ),
    (
        "repeated_on_h200.toml",
        r#"format = 1
description = "A repeated step on one H200"

[host]
profile = "h200"

[[step]]
action = "resolve"
device = "cuda:0"
repeat = 3
[step.expect]
family = "cuda"
torch_device = "cuda:0"
"#,
    ),
    (
        "hip_mi300x.toml",
        r#"format = 1
description = "A HIP build, which a CUDA machine cannot run"

[host]
profile = "mi300x"

[[step]]
action = "normalize"
device = "cuda:0"
[step.expect]
family = "rocm"
ordinal = 0
"#,
    ),
    (
        "cuda_h200x2.toml",
        r#"format = 1
description = "Two H200s"

[host]
profile = "h200x2"

[[step]]
action = "resolve"
device = "cuda:1"
[step.expect]
family = "cuda"
torch_device = "cuda:1"
"#,
    ),
    (
        "cpu_build.toml",
        r#"format = 1
description = "A CPU build, which a live subject on a GPU machine cannot be"

[host]
profile = "cpu"

[[step]]
action = "normalize"
device = "cpu"
[step.expect]
family = "cpu"
"#,
    ),
    (
        "masked_h200x2.toml",
        r#"format = 1
description = "Two H200s behind a visible-device mask"

[host]
profile = "h200x2"
env = { CUDA_VISIBLE_DEVICES = "1" }

[[step]]
action = "resolve"
device = "cuda:0"
[step.expect]
family = "cuda"
torch_device = "cuda:0"
"#,
    ),
];

/// A scratch folder holding [`LIVE_SUBJECT_SCENARIOS`] under `scenarios/` and one subject file per mode
/// (`<mode>.toml`) starting this test binary as the fixture subject in that mode.
fn live_subject_scratch(modes: &[&str]) -> TempDir {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let root = scratch.path().join("scenarios");
    std::fs::create_dir_all(&root).expect("dir");
    for (name, text) in LIVE_SUBJECT_SCENARIOS {
        std::fs::write(root.join(name), text).expect("write a scenario");
    }
    let exe = std::env::current_exe().expect("this test binary");
    for mode in modes {
        let subject = format!(
            "name = \"fixture\"\ncommand = [{exe:?}]\nstep_timeout_s = 5\nstart_timeout_s = 5\n\
             env = {{ {} = \"{mode}\" }}\n",
            subject_fixture::MODE
        );
        std::fs::write(scratch.path().join(format!("{mode}.toml")), subject).expect("write");
    }
    scratch
}

/// `devsim run --live --subject <mode>.toml <extra…> scenarios/` in `scratch`, through the CUDA fake
/// answering from the shipped `profile`.
fn live_subject_run(scratch: &TempDir, mode: &str, profile: &str, extra: &[&str]) -> Output {
    let subject = scratch.path().join(format!("{mode}.toml"));
    let root = scratch.path().join("scenarios");
    let mut args = vec![
        "run",
        "--live",
        "--subject",
        subject.to_str().expect("a UTF-8 path"),
    ];
    args.extend_from_slice(extra);
    args.push(root.to_str().expect("a UTF-8 path"));
    devsim(Fake::Cuda, &profile_path(profile), &[], &args)
}

/// A report's status and reason, for assertions.
fn outcome(by_name: &BTreeMap<String, Value>, name: &str) -> (String, String) {
    let report = by_name
        .get(name)
        .unwrap_or_else(|| panic!("no report for {name}: {by_name:?}"));
    (
        report["status"].as_str().unwrap_or_default().to_string(),
        report["reason"].as_str().unwrap_or_default().to_string(),
    )
}

fn live_subject_runs_what_the_fake_machine_satisfies_and_skips_the_rest() {
    let scratch = live_subject_scratch(&["live"]);
    let output = live_subject_run(&scratch, "live", "h200", &["--format", "json"]);
    let (value, by_name) = reports(&output);
    let shown = format!("{value:#}\n{}", text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert_eq!(value["mode"], "live", "{shown}");
    assert_eq!(value["subject"]["name"], "fixture", "{shown}");
    assert_eq!(value["subject"]["kind"], "process", "{shown}");
    let machine = value["machine"].as_str().unwrap_or_default();
    assert!(
        machine.starts_with("live: FAKE DRIVER (devsim's stand-in, no real GPU)")
            && machine.contains(&Fake::Cuda.describes())
            && machine.contains("1 GPU(s)"),
        "the machine is named a fake: {shown}"
    );
    assert_eq!(by_name.len(), LIVE_SUBJECT_SCENARIOS.len(), "{shown}");
    for name in ["cuda_h200.toml", "repeated_on_h200.toml"] {
        assert_eq!(
            outcome(&by_name, name),
            ("passed".into(), String::new()),
            "{name}: {shown}"
        );
    }
    let skipped = |name: &str, fragment: &str| {
        let (status, reason) = outcome(&by_name, name);
        assert!(
            status == "skipped" && reason.contains(fragment),
            "{name}: expected skipped with {fragment:?}, got {status}: {reason}\n{shown}"
        );
    };
    let fake_cuda = fakes().folder(Fake::Cuda).join(cuda::LIBRARY);
    skipped(
        "hip_mi300x.toml",
        &format!(
            "wrong vendor: the scenario needs a hip build, this machine runs cuda ({})",
            fake_cuda.display()
        ),
    );
    skipped(
        "cuda_h200x2.toml",
        "too few GPUs: the scenario sees 2, 1 visible here",
    );
    skipped(
        "masked_h200x2.toml",
        "the live subject runs without visible-device variables",
    );
    skipped(
        "cpu_build.toml",
        "a CPU-build scenario: this machine's torch is a cuda build driving 1 GPU(s)",
    );

    // The human header: the subject, then the machine, a fake named as one first.
    let output = live_subject_run(&scratch, "live", "h200", &[]);
    let stdout = text(&output.stdout);
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some("subject: fixture 0.0.1 (process)"),
        "{stdout}"
    );
    assert!(
        lines
            .next()
            .is_some_and(|line| line.starts_with("live: FAKE DRIVER")),
        "{stdout}"
    );
    assert!(
        stdout
            .trim_end()
            .ends_with("subject fixture: 2 passed, 0 failed, 4 skipped"),
        "{stdout}"
    );
    assert_eq!(output.status.code(), Some(0), "{stdout}");

    // JUnit says it too: in the suite's name, its properties and every case's output.
    let output = live_subject_run(&scratch, "live", "h200", &["--format", "junit"]);
    let junit = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{junit}");
    assert!(
        junit.contains(r#"name="devsim scenarios (live through a FAKE DRIVER)""#)
            && junit.contains(r#"<property name="driver" value="fake"/>"#)
            && junit.contains(r#"<property name="mode" value="live"/>"#)
            && junit
                .matches("this result proves nothing about a GPU")
                .count()
                == LIVE_SUBJECT_SCENARIOS.len(),
        "{junit}"
    );

    // A machine with more GPUs than a scenario cannot narrow the one subject process: skipped.
    let output = live_subject_run(&scratch, "live", "h200x2", &["--format", "json"]);
    let (value, by_name) = reports(&output);
    let shown = format!("{value:#}\n{}", text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert_eq!(outcome(&by_name, "cuda_h200x2.toml").0, "passed", "{shown}");
    for name in ["cuda_h200.toml", "repeated_on_h200.toml"] {
        let (status, reason) = outcome(&by_name, name);
        assert!(
            status == "skipped"
                && reason.contains("this machine has 2 GPU(s), more than the scenario's 1"),
            "{name}: {status}: {reason}\n{shown}"
        );
    }
}

fn live_subject_that_cannot_reach_the_machine_fails() {
    let scratch = live_subject_scratch(&["live-unreachable"]);
    let output = live_subject_run(&scratch, "live-unreachable", "h200", &["--format", "json"]);
    let (value, by_name) = reports(&output);
    let shown = format!("{value:#}\n{}", text(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{shown}");
    for name in ["cuda_h200.toml", "repeated_on_h200.toml"] {
        let report = &by_name[name];
        assert_eq!(report["status"], "failed", "{name}: never a skip: {shown}");
        let said = report.to_string();
        assert!(
            said.contains("torch sees no GPU")
                && said.contains("the subject to run the scenario on this machine, live"),
            "{name}: {said}"
        );
    }
    // What the machine cannot run is still skipped, never sent to the subject.
    assert_eq!(outcome(&by_name, "hip_mi300x.toml").0, "skipped", "{shown}");
    assert_eq!(value["summary"]["passed"], 0, "{shown}");

    let output = live_subject_run(&scratch, "live-unreachable", "h200", &[]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("FAILED  cuda_h200.toml")
            && stdout.contains("answered `unsupported`: torch sees no GPU"),
        "{stdout}"
    );
    assert!(
        text(&output.stderr).contains("error: failed to pass 2 scenario(s)"),
        "{}",
        text(&output.stderr)
    );
}

fn live_subject_require_live_counts_only_what_ran_and_never_a_fake_unasked() {
    let scratch = live_subject_scratch(&["live"]);
    let output = live_subject_run(&scratch, "live", "h200", &["--require-live", "1"]);
    let printed = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{printed}");
    assert!(
        printed.contains("the driver is one of devsim's fakes"),
        "{printed}"
    );
    // Through --allow-fake: the two GPU scenarios that ran count, the three skipped do not.
    let output = live_subject_run(
        &scratch,
        "live",
        "h200",
        &["--require-live", "2", "--allow-fake"],
    );
    let printed = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{printed}");
    let output = live_subject_run(
        &scratch,
        "live",
        "h200",
        &["--require-live", "3", "--allow-fake"],
    );
    let printed = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{printed}");
    assert!(
        printed.contains("run 3 GPU scenario(s) live: only 2 ran, the rest were skipped"),
        "{printed}"
    );
}

fn live_subject_without_live_in_its_handshake_is_refused() {
    let scratch = live_subject_scratch(&["good"]);
    let output = live_subject_run(&scratch, "good", "h200", &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "error: failed to replay subject `fixture` live: its handshake does not say `live`"
        ),
        "{stderr}"
    );
    assert!(
        text(&output.stdout).is_empty(),
        "nothing runs: {}",
        text(&output.stdout)
    );
}

/// A warmup on GPU 1 expected on GPU 0: it fails wherever it runs, simulated or live.
const FLIPPED_WARMUP: &str = r#"format = 1
description = "a warmup on GPU 1 from a GPU-0 context, expected on GPU 0"

[host]
profile = "h200x2"

[[step]]
action = "warmup"
kernel = "gptq_marlin"
device = "cuda:1"

[step.expect]
ran_on = 0
"#;

/// `devsim run --live --write-live-record` through the CUDA fake, then a simulated run given that record: the
/// finding of the scenario that failed live is confirmed (through the fake, which the mark names), the one of
/// the scenario the fake machine could not run (a HIP host) stays simulated.
fn a_live_record_confirms_what_failed_live_and_nothing_else() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let root = scratch.path().join("scenarios");
    std::fs::create_dir_all(&root).expect("dir");
    std::fs::write(root.join("cuda.toml"), FLIPPED_WARMUP).expect("write");
    let on_hip = FLIPPED_WARMUP
        .replace("h200x2", "r9700x2")
        .replace("gptq_marlin", "gptq_torch");
    std::fs::write(root.join("hip.toml"), on_hip).expect("write");
    let record = scratch.path().join("live.toml");
    let (root, record) = (
        root.to_str().expect("a UTF-8 path"),
        record.to_str().expect("a UTF-8 path"),
    );
    let date = [("DEVSIM_LIVE_RECORD_DATE", "2026-12-06")];
    let host = profile_path("h200x2");
    let live = devsim(
        Fake::Cuda,
        &host,
        &date,
        &["run", "--live", "--write-live-record", record, root],
    );
    assert_eq!(live.status.code(), Some(1), "{}", text(&live.stderr));
    let simulated = devsim(
        Fake::Cuda,
        &host,
        &[],
        &["run", "--format", "json", "--live-record", record, root],
    );
    let (value, _) = reports(&simulated);
    let marks: BTreeMap<String, Value> = value["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["scenarios"][0].as_str().unwrap_or_default().to_string(),
                f["live"].clone(),
            )
        })
        .collect();
    let h200 = load_profile(&host).expect("the profile").gpus[0]
        .name
        .clone();
    let expected = BTreeMap::from([
        (
            "cuda.toml".to_string(),
            serde_json::json!({
                "status": "confirmed",
                "devices": [h200],
                "date": "2026-12-06",
                "fake_driver": true
            }),
        ),
        (
            "hip.toml".to_string(),
            serde_json::json!({ "status": "simulated" }),
        ),
    ]);
    assert_eq!(marks, expected, "{value:#}");
}

/// A trial whose body panics on failure; the panic message is the failure.
fn trial(name: impl Into<String>, body: impl FnOnce() + Send + 'static) -> Trial {
    Trial::test(name, move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).map_err(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(ToString::to_string))
                .unwrap_or_else(|| "the trial panicked".into());
            Failed::from(message)
        })
    })
}

/// Every GPU host profile shipped in `scenarios/hosts/`, with the fake that drives its build.
fn gpu_profiles() -> Vec<(String, Fake)> {
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

fn main() {
    if let Ok(mode) = std::env::var(subject_fixture::MODE) {
        std::process::exit(subject_fixture::serve(&mode));
    }
    let args = Arguments::from_args();
    let mut trials: Vec<Trial> = gpu_profiles()
        .into_iter()
        .map(|(profile, fake)| trial(format!("replay::{profile}"), move || replay(fake, &profile)))
        .collect();
    let others: [(&str, fn()); 18] = [
        (
            "a_live_record_confirms_what_failed_live_and_nothing_else",
            a_live_record_confirms_what_failed_live_and_nothing_else,
        ),
        (
            "live_subject::runs_what_the_fake_machine_satisfies_and_skips_the_rest",
            live_subject_runs_what_the_fake_machine_satisfies_and_skips_the_rest,
        ),
        (
            "live_subject::that_cannot_reach_the_machine_fails",
            live_subject_that_cannot_reach_the_machine_fails,
        ),
        (
            "live_subject::require_live_counts_only_what_ran_and_never_a_fake_unasked",
            live_subject_require_live_counts_only_what_ran_and_never_a_fake_unasked,
        ),
        (
            "live_subject::without_live_in_its_handshake_is_refused",
            live_subject_without_live_in_its_handshake_is_refused,
        ),
        (
            "a_fake_is_named_fake_and_never_satisfies_require_live",
            a_fake_is_named_fake_and_never_satisfies_require_live,
        ),
        (
            "uuid_masks_are_mapped_onto_the_real_gpus",
            uuid_masks_are_mapped_onto_the_real_gpus,
        ),
        (
            "a_worker_resets_the_current_device_between_scenarios",
            a_worker_resets_the_current_device_between_scenarios,
        ),
        (
            "a_worker_that_dies_errors_its_scenario_and_is_replaced",
            a_worker_that_dies_errors_its_scenario_and_is_replaced,
        ),
        ("a_silent_worker_times_out", a_silent_worker_times_out),
        (
            "an_errored_run_exits_with_its_own_code",
            an_errored_run_exits_with_its_own_code,
        ),
        (
            "check_masks_agrees_through_the_fakes",
            check_masks_agrees_through_the_fakes,
        ),
        (
            "probe_maps_the_fake_and_reads_the_profile",
            probe_maps_the_fake_and_reads_the_profile,
        ),
        (
            "the_fakes_apply_the_visible_device_variables",
            the_fakes_apply_the_visible_device_variables,
        ),
        (
            "without_a_usable_profile_the_fakes_have_no_device",
            without_a_usable_profile_the_fakes_have_no_device,
        ),
        (
            "a_launch_fault_in_the_profile_fails_a_warmup_on_gpu1",
            a_launch_fault_in_the_profile_fails_a_warmup_on_gpu1,
        ),
        (
            "a_lost_gpu_in_the_profile_fails_allspark_validation_on_it",
            a_lost_gpu_in_the_profile_fails_allspark_validation_on_it,
        ),
        (
            "the_fakes_answer_with_the_drivers_error_codes",
            the_fakes_answer_with_the_drivers_error_codes,
        ),
    ];
    trials.extend(others.into_iter().map(|(name, body)| trial(name, body)));
    if let Err(reason) = Fakes::locate() {
        if std::env::var("CI").is_ok_and(|value| value == "true") {
            // Under CI the fakes must have been built: every trial fails with the reason.
            trials = trials
                .into_iter()
                .map(|t| {
                    let reason = reason.clone();
                    Trial::test(t.name().to_string(), move || Err(reason.into()))
                })
                .collect();
        } else {
            if !args.list {
                eprintln!("fakes: every trial ignored: {reason}");
            }
            trials = trials
                .into_iter()
                .map(|t| {
                    let reason = reason.clone();
                    Trial::test(t.name().to_string(), move || Err(reason.into()))
                        .with_ignored_flag(true)
                })
                .collect();
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// Direct calls into the fakes' exported functions.
mod abi {
    use std::ffi::{CStr, c_char, c_int, c_void};

    use libloading::Library;

    /// Resolves `name` as a function pointer of type `T`.
    ///
    /// # Safety
    ///
    /// `T` is the symbol's C signature.
    unsafe fn get<T: Copy>(library: &Library, name: &str) -> T {
        // SAFETY: the caller guarantees the type; the library outlives every call in this module.
        *unsafe { library.get::<T>(name.as_bytes()) }
            .unwrap_or_else(|error| panic!("{name}: {error}"))
    }

    fn c_text(buffer: &[u8]) -> String {
        let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
        String::from_utf8_lossy(&buffer[..end]).into_owned()
    }

    /// A C string returned by the library.
    ///
    /// # Safety
    ///
    /// `text` is a NUL-terminated string that lives as long as the library.
    unsafe fn static_text(text: *const c_char) -> String {
        assert!(!text.is_null());
        // SAFETY: non-null, and the fake returns static NUL-terminated strings.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }

    /// The CUDA fake over `h200x2`.
    pub fn cuda(library: &Library) {
        // SAFETY: every type below is the C signature in `cuda.h` (and devsim's `cuda.rs`); every
        // pointer passed is a live local of the right type and size.
        unsafe {
            let init: devsim_sys::cuda::fns::cuInit = get(library, "cuInit");
            let count: devsim_sys::cuda::fns::cuDeviceGetCount = get(library, "cuDeviceGetCount");
            let device_get: devsim_sys::cuda::fns::cuDeviceGet = get(library, "cuDeviceGet");
            let name: devsim_sys::cuda::fns::cuDeviceGetName = get(library, "cuDeviceGetName");
            let attribute: devsim_sys::cuda::fns::cuDeviceGetAttribute =
                get(library, "cuDeviceGetAttribute");
            let retain: devsim_sys::cuda::fns::cuDevicePrimaryCtxRetain =
                get(library, "cuDevicePrimaryCtxRetain");
            let get_current: devsim_sys::cuda::fns::cuCtxGetCurrent =
                get(library, "cuCtxGetCurrent");
            let set_current: devsim_sys::cuda::fns::cuCtxSetCurrent =
                get(library, "cuCtxSetCurrent");
            let ctx_device: devsim_sys::cuda::fns::cuCtxGetDevice = get(library, "cuCtxGetDevice");
            let alloc: devsim_sys::cuda::fns::cuMemAlloc_v2 = get(library, "cuMemAlloc_v2");
            let free: devsim_sys::cuda::fns::cuMemFree_v2 = get(library, "cuMemFree_v2");
            let htod: devsim_sys::cuda::fns::cuMemcpyHtoD_v2 = get(library, "cuMemcpyHtoD_v2");
            let dtoh: devsim_sys::cuda::fns::cuMemcpyDtoH_v2 = get(library, "cuMemcpyDtoH_v2");
            let memset: devsim_sys::cuda::fns::cuMemsetD8_v2 = get(library, "cuMemsetD8_v2");
            let synchronize: devsim_sys::cuda::fns::cuCtxSynchronize =
                get(library, "cuCtxSynchronize");
            let error_name: devsim_sys::cuda::fns::cuGetErrorName = get(library, "cuGetErrorName");
            let error_string: devsim_sys::cuda::fns::cuGetErrorString =
                get(library, "cuGetErrorString");
            let version: devsim_sys::cuda::fns::cuDriverGetVersion =
                get(library, "cuDriverGetVersion");

            let mut n: c_int = -1;
            assert_eq!(version(&mut n), 0);
            assert!(n >= 12000, "{n}");
            assert_eq!(count(&mut n), 3, "CUDA_ERROR_NOT_INITIALIZED before cuInit");
            assert_eq!(init(1), 1, "flags must be 0");
            assert_eq!(init(0), 0);
            assert_eq!(count(&mut n), 0);
            assert_eq!(n, 2);
            assert_eq!(count(std::ptr::null_mut()), 1);

            let mut dev: c_int = -1;
            assert_eq!(device_get(&mut dev, 2), 101);
            assert_eq!(device_get(&mut dev, -1), 101);
            assert_eq!(device_get(&mut dev, 1), 0);
            assert_eq!(dev, 1);
            let mut buffer = [0xffu8; 64];
            assert_eq!(name(buffer.as_mut_ptr().cast(), 64, 1), 0);
            assert_eq!(c_text(&buffer), "NVIDIA H200");
            assert_eq!(name(buffer.as_mut_ptr().cast(), 4, 1), 0);
            assert_eq!(c_text(&buffer), "NVI");
            assert_eq!(name(buffer.as_mut_ptr().cast(), 64, 7), 101);
            for (attr, want) in [(75, 9), (76, 0), (97, 232_448)] {
                let mut value: c_int = -1;
                assert_eq!(attribute(&mut value, attr, 0), 0);
                assert_eq!(value, want, "attribute {attr}");
            }
            assert_eq!(attribute(&mut n, 1, 0), 1, "unmodelled attribute");

            let mut context: *mut c_void = std::ptr::dangling_mut();
            assert_eq!(get_current(&mut context), 0);
            assert!(
                context.is_null(),
                "no context is current before cuCtxSetCurrent"
            );
            let mut ptr: u64 = 0;
            assert_eq!(alloc(&mut ptr, 16), 201, "CUDA_ERROR_INVALID_CONTEXT");
            assert_eq!(ctx_device(&mut dev), 201);
            assert_eq!(synchronize(), 201);
            assert_eq!(set_current(std::ptr::without_provenance_mut(0x1000)), 201);
            assert_eq!(retain(&mut context, 1), 0);
            assert!(!context.is_null());
            assert_eq!(set_current(context), 0);
            let mut current: *mut c_void = std::ptr::null_mut();
            assert_eq!(get_current(&mut current), 0);
            assert_eq!(current, context);
            assert_eq!(ctx_device(&mut dev), 0);
            assert_eq!(dev, 1);
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    let mut other: *mut c_void = std::ptr::dangling_mut();
                    assert_eq!(get_current(&mut other), 0);
                    assert!(other.is_null(), "the context is per thread");
                });
            });

            assert_eq!(alloc(&mut ptr, 0), 1);
            assert_eq!(alloc(&mut ptr, 1 << 40), 2, "CUDA_ERROR_OUT_OF_MEMORY");
            assert_eq!(alloc(&mut ptr, 16), 0);
            let data: Vec<u8> = (0..16).collect();
            assert_eq!(htod(ptr, data.as_ptr().cast(), 16), 0);
            let mut back = [0u8; 16];
            assert_eq!(dtoh(back.as_mut_ptr().cast(), ptr, 16), 0);
            assert_eq!(back.as_slice(), data.as_slice());
            assert_eq!(htod(ptr, [0u8; 17].as_ptr().cast(), 17), 1, "past the end");
            assert_eq!(memset(ptr, 0x5a, 8), 0);
            assert_eq!(synchronize(), 0);
            assert_eq!(dtoh(back.as_mut_ptr().cast(), ptr, 16), 0);
            assert_eq!(&back[..8], &[0x5a; 8]);
            assert_eq!(&back[8..], &data[8..]);
            assert_eq!(free(ptr), 0);
            assert_eq!(free(ptr), 1, "double free");
            assert_eq!(dtoh(back.as_mut_ptr().cast(), ptr, 16), 1, "freed pointer");
            assert_eq!(memset(ptr + 1, 0, 1), 1, "unknown pointer");

            let mut text: *const c_char = std::ptr::null();
            for (code, want) in [
                (0, "CUDA_SUCCESS"),
                (1, "CUDA_ERROR_INVALID_VALUE"),
                (101, "CUDA_ERROR_INVALID_DEVICE"),
                (201, "CUDA_ERROR_INVALID_CONTEXT"),
                (719, "CUDA_ERROR_LAUNCH_FAILED"),
                (999, "CUDA_ERROR_UNKNOWN"),
            ] {
                assert_eq!(error_name(code, &mut text), 0);
                assert_eq!(static_text(text), want);
            }
            assert_eq!(error_string(100, &mut text), 0);
            assert_eq!(static_text(text), "no CUDA-capable device is detected");
            assert_eq!(error_name(12_345, &mut text), 1);
            assert!(text.is_null());
        }
    }

    /// The HIP fake over `amd_mixed`.
    pub fn hip(library: &Library) {
        // SAFETY: every type below is the C signature in `hip_runtime_api.h` (and devsim's
        // `hip.rs`); every pointer passed is a live local of the right type and size.
        unsafe {
            let init: devsim_sys::hip::fns::hipInit = get(library, "hipInit");
            let count: devsim_sys::hip::fns::hipGetDeviceCount = get(library, "hipGetDeviceCount");
            let get_device: devsim_sys::hip::fns::hipGetDevice = get(library, "hipGetDevice");
            let set_device: devsim_sys::hip::fns::hipSetDevice = get(library, "hipSetDevice");
            let attribute: devsim_sys::hip::fns::hipDeviceGetAttribute =
                get(library, "hipDeviceGetAttribute");
            let properties: devsim_sys::hip::fns::hipGetDevicePropertiesR0600 =
                get(library, "hipGetDevicePropertiesR0600");
            let malloc: devsim_sys::hip::fns::hipMalloc = get(library, "hipMalloc");
            let free: devsim_sys::hip::fns::hipFree = get(library, "hipFree");
            let memcpy: devsim_sys::hip::fns::hipMemcpy = get(library, "hipMemcpy");
            let memset: devsim_sys::hip::fns::hipMemset = get(library, "hipMemset");
            let error_name: devsim_sys::hip::fns::hipGetErrorName = get(library, "hipGetErrorName");
            let error_string: devsim_sys::hip::fns::hipGetErrorString =
                get(library, "hipGetErrorString");

            let mut n: c_int = -1;
            assert_eq!(count(&mut n), 0, "HIP initializes on first use");
            assert_eq!(n, 2);
            assert_eq!(init(0), 0);
            assert_eq!(get_device(&mut n), 0);
            assert_eq!(n, 0);
            assert_eq!(set_device(2), 101);
            assert_eq!(set_device(-1), 101);
            assert_eq!(set_device(1), 0);
            assert_eq!(get_device(&mut n), 0);
            assert_eq!(n, 1);
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    let mut other: c_int = -1;
                    assert_eq!(get_device(&mut other), 0);
                    assert_eq!(other, 0, "the current device is per thread");
                });
            });

            #[repr(C, align(8))]
            struct Props([u8; 4096]);
            let mut props = Box::new(Props([0xff; 4096]));
            let int_at = |props: &Props, offset: usize| {
                c_int::from_ne_bytes(props.0[offset..offset + 4].try_into().expect("4 bytes"))
            };
            assert_eq!(properties(props.0.as_mut_ptr().cast(), 0), 0);
            assert_eq!(c_text(&props.0[..256]), "AMD Instinct MI300X");
            assert_eq!(c_text(&props.0[1160..1416]), "gfx942:sramecc+:xnack-");
            assert_eq!((int_at(&props, 360), int_at(&props, 364)), (9, 4));
            assert_eq!(int_at(&props, 308), 64, "wavefront 64 on CDNA");
            assert_eq!(props.0[1471], 0, "the struct is zeroed");
            assert_eq!(
                props.0[1472], 0xff,
                "nothing past sizeof(hipDeviceProp_tR0600)"
            );
            assert_eq!(properties(props.0.as_mut_ptr().cast(), 1), 0);
            assert_eq!(c_text(&props.0[1160..1416]), "gfx1201");
            assert_eq!((int_at(&props, 360), int_at(&props, 364)), (12, 0));
            assert_eq!(int_at(&props, 308), 32, "wavefront 32 on RDNA");
            assert_eq!(properties(props.0.as_mut_ptr().cast(), 2), 101);
            assert_eq!(properties(std::ptr::null_mut(), 0), 1);
            for (attr, want) in [(23, 12), (61, 0), (75, 65_536)] {
                let mut value: c_int = -1;
                assert_eq!(attribute(&mut value, attr, 1), 0);
                assert_eq!(value, want, "attribute {attr}");
            }

            let mut ptr: *mut c_void = std::ptr::dangling_mut();
            assert_eq!(malloc(&mut ptr, 0), 0);
            assert!(ptr.is_null(), "hipMalloc of 0 bytes gives null");
            assert_eq!(free(std::ptr::null_mut()), 0, "hipFree(NULL) is a no-op");
            assert_eq!(malloc(&mut ptr, 16), 0);
            let data: Vec<u8> = (0..16).collect();
            assert_eq!(memcpy(ptr, data.as_ptr().cast(), 16, 1), 0);
            let mut back = [0u8; 16];
            assert_eq!(memcpy(back.as_mut_ptr().cast(), ptr, 16, 2), 0);
            assert_eq!(back.as_slice(), data.as_slice());
            assert_eq!(
                memcpy(back.as_mut_ptr().cast(), ptr, 16, 4),
                0,
                "default kind"
            );
            assert_eq!(memcpy(back.as_mut_ptr().cast(), ptr, 16, 9), 21);
            assert_eq!(
                memcpy(back.as_mut_ptr().cast(), ptr, 17, 2),
                1,
                "past the end"
            );
            assert_eq!(memset(ptr, 0x15a, 16), 0);
            assert_eq!(memcpy(back.as_mut_ptr().cast(), ptr, 16, 2), 0);
            assert_eq!(back, [0x5a; 16], "hipMemset writes the value's low byte");
            assert_eq!(free(ptr), 0);
            assert_eq!(free(ptr), 1, "double free");
            assert_eq!(
                memcpy(back.as_mut_ptr().cast(), ptr, 16, 2),
                1,
                "freed pointer"
            );

            for (code, want) in [
                (0, "hipSuccess"),
                (1, "hipErrorInvalidValue"),
                (100, "hipErrorNoDevice"),
                (101, "hipErrorInvalidDevice"),
                (719, "hipErrorLaunchFailure"),
                (999, "hipErrorUnknown"),
                (12_345, "hipErrorUnknown"),
            ] {
                assert_eq!(static_text(error_name(code)), want);
            }
            assert_eq!(static_text(error_string(101)), "invalid device ordinal");
        }
    }
}
