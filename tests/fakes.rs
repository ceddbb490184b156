//! Live replay through the fake drivers (`fakes/cuda`, `fakes/hip`) on a machine without GPUs.
//!
//! The fakes are built once per test process, copied into scratch folders under their real names
//! (`libcuda.so.1`, `libamdhip64.so`), and put first on `LD_LIBRARY_PATH` of a child `devsim`, which
//! finds them through the loader's ordinary search, exactly as it finds a real driver. Each child
//! gets `DEVSIM_FAKE_HOST`, the host profile the fake answers from.
//!
//! For every profile, the scenarios that run live are exactly those whose host the faked machine
//! satisfies (directly, in a narrowed child, or in an `env` child), every one passes, and each step's
//! trace equals the simulated run's. `devsim probe` proves the fake is the library mapped, and
//! profile faults (a launch failure, a lost GPU) surface through the C ABI as driver errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Instant;

use devsim::TorchBuild;
use devsim::host::HostSpec;
use devsim::kernel::Catalog;
use devsim::runtime::live::machine::{RealGpu, RealMachine};
use devsim::scenario::{find_scenarios, load_profile, load_scenario};
use devsim::visible::VISIBLE_DEVICE_VARIABLES;
use serde_json::Value;

/// The HIP host profiles replayed through the HIP fake.
const HIP_PROFILES: [&str; 3] = ["r9700x2", "mi300x", "amd_mixed"];
/// The CUDA host profiles replayed through the CUDA fake.
const CUDA_PROFILES: [&str; 5] = ["h200", "h200x2", "a100", "rtx4090", "b200"];

/// Which fake a child runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fake {
    Cuda,
    Hip,
    /// The HIP fake alone, without the CUDA fake in front of it.
    HipOnly,
}

impl Fake {
    /// What `devsim run --live` says it runs through.
    fn describes(self) -> &'static str {
        match self {
            Fake::Cuda => "cuda build through libcuda.so.1",
            Fake::Hip | Fake::HipOnly => "hip build through libamdhip64.so",
        }
    }
}

/// The built fakes, each in its own folder.
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
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// When the first test of this file started.
fn started() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// Starts timing a test (and the file, at its first test).
fn begin() -> Instant {
    started();
    Instant::now()
}

/// Prints how long a test took and how long the file has run so far.
fn report_time(test: &str, start: Instant) {
    println!(
        "[fakes] {test}: {:.2}s (file so far {:.2}s)",
        start.elapsed().as_secs_f64(),
        started().elapsed().as_secs_f64()
    );
}

/// A scratch folder of this test process, under cargo's per-target scratch folder. The first call
/// removes the folders of earlier test processes that have exited.
fn scratch(name: &str) -> PathBuf {
    static SWEPT: OnceLock<()> = OnceLock::new();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    SWEPT.get_or_init(|| {
        for entry in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("fakes-") else {
                continue;
            };
            if !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
    let folder = tmp.join(format!("fakes-{}", std::process::id())).join(name);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("create a scratch folder");
    folder
}

/// Builds both fakes (once per test process) and lays them out under their real names.
fn fakes() -> &'static Fakes {
    static FAKES: OnceLock<Fakes> = OnceLock::new();
    FAKES.get_or_init(|| {
        let start = begin();
        let output = Command::new(env!("CARGO"))
            .args(["build", "-p", "devsim-fake-cuda", "-p", "devsim-fake-hip"])
            .arg("--message-format=json-render-diagnostics")
            .current_dir(repo())
            .output()
            .expect("run cargo build for the fakes");
        assert!(
            output.status.success(),
            "building the fakes failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut built: BTreeMap<String, PathBuf> = BTreeMap::new();
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let Ok(message) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if message["reason"] != "compiler-artifact" {
                continue;
            }
            for file in message["filenames"].as_array().into_iter().flatten() {
                let Some(file) = file.as_str() else { continue };
                let path = PathBuf::from(file);
                if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                    if name == "libcuda.so" || name == "libamdhip64.so" {
                        built.insert(name.to_string(), path.clone());
                    }
                }
            }
        }
        let library = |name: &str| {
            built
                .get(name)
                .unwrap_or_else(|| panic!("cargo built no {name}: {built:?}"))
        };
        let cuda = scratch("cuda");
        let hip = scratch("hip");
        std::fs::copy(library("libcuda.so"), cuda.join("libcuda.so.1")).expect("copy");
        std::fs::copy(library("libamdhip64.so"), hip.join("libamdhip64.so")).expect("copy");
        std::fs::copy(library("libcuda.so"), hip.join("libcuda.so.1")).expect("copy");
        let hip_only = scratch("hip-only");
        std::fs::copy(library("libamdhip64.so"), hip_only.join("libamdhip64.so")).expect("copy");
        report_time("build the fakes", start);
        Fakes {
            cuda,
            hip,
            hip_only,
        }
    })
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

/// Each step's trace of a report.
fn traces(report: &Value) -> Vec<Value> {
    report["steps"]
        .as_array()
        .map(|steps| steps.iter().map(|step| step["trace"].clone()).collect())
        .unwrap_or_default()
}

/// The machine a fake over `profile` shows a process whose visible-device variables are `env`:
/// what the real driver would show (CUDA's `cuInit` fails when no GPU is visible; HIP loads and
/// counts zero; a mask the model refuses leaves the fake without devices).
fn faked_machine(profile: &HostSpec, env: &BTreeMap<String, String>) -> RealMachine {
    let mut host = profile.clone();
    host.env = env.clone();
    let Ok(visible) = host.visible() else {
        return RealMachine::cpu_only();
    };
    if visible.is_empty() && host.torch == TorchBuild::Cuda {
        return RealMachine::cpu_only();
    }
    RealMachine {
        build: host.torch,
        library: Some("fake".into()),
        gpus: visible
            .iter()
            .map(|physical| {
                let gpu = &host.gpus[*physical];
                RealGpu {
                    arch: gpu.arch.clone(),
                    name: gpu.name.clone(),
                    smem_optin: gpu.smem_optin,
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
    let files = find_scenarios(&[repo().join("scenarios")]).expect("list scenarios");
    let parent = faked_machine(profile, &BTreeMap::new());
    let mut expected = BTreeMap::new();
    for file in files {
        let scenario = load_scenario(&file, &catalog).expect("the corpus loads");
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
    let start = begin();
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
        machine.contains(fake.describes()),
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
    }

    println!(
        "[fakes] {profile} through {}: {} scenario(s) ran live ({} GPU, {} CPU), traces equal to simulated",
        fake.describes(),
        passed.len(),
        gpu.len(),
        passed.len() - gpu.len()
    );
    for name in &gpu {
        println!("[fakes]   {profile} gpu  {name}");
    }
    report_time(&format!("replay {profile}"), start);
}

#[test]
fn hip_r9700x2_replays_through_the_hip_fake() {
    replay(Fake::Hip, HIP_PROFILES[0]);
}

#[test]
fn hip_mi300x_replays_through_the_hip_fake() {
    replay(Fake::Hip, HIP_PROFILES[1]);
}

#[test]
fn hip_amd_mixed_replays_through_the_hip_fake() {
    replay(Fake::Hip, HIP_PROFILES[2]);
}

#[test]
fn cuda_h200_replays_through_the_cuda_fake() {
    replay(Fake::Cuda, CUDA_PROFILES[0]);
}

#[test]
fn cuda_h200x2_replays_through_the_cuda_fake() {
    replay(Fake::Cuda, CUDA_PROFILES[1]);
}

#[test]
fn cuda_a100_replays_through_the_cuda_fake() {
    replay(Fake::Cuda, CUDA_PROFILES[2]);
}

#[test]
fn cuda_rtx4090_replays_through_the_cuda_fake() {
    replay(Fake::Cuda, CUDA_PROFILES[3]);
}

#[test]
fn cuda_b200_replays_through_the_cuda_fake() {
    replay(Fake::Cuda, CUDA_PROFILES[4]);
}

/// `devsim probe` through `fake`: the profile it prints, checked to name the fake as the mapped driver.
fn probe(fake: Fake, host: &Path, env: &[(&str, &str)]) -> String {
    let output = devsim(fake, host, env, &["probe"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let profile = text(&output.stdout);
    let library = match fake {
        Fake::Cuda => "libcuda.so.1",
        Fake::Hip | Fake::HipOnly => "libamdhip64.so",
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

#[test]
fn probe_maps_the_fake_and_reads_the_profile() {
    let start = begin();
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
    report_time("probe", start);
}

#[test]
fn the_fakes_apply_the_visible_device_variables() {
    let start = begin();
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
    report_time("visible-device variables", start);
}

#[test]
fn without_a_usable_profile_the_fakes_have_no_device() {
    let start = begin();
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
        assert!(profile.contains("torch = \"cpu\""), "{profile}\n{stderr}");
        assert!(
            stderr.contains("no devices") && stderr.contains(reason),
            "{stderr}"
        );
        assert!(
            stderr.contains("NO_DEVICE") || stderr.contains("NoDevice"),
            "{stderr}"
        );
    }
    report_time("no usable profile", start);
}

/// A scratch scenario root: `hosts/` with the shipped `profile`, one scenario, and the fake's own
/// profile (the shipped one plus `faults`) outside `hosts/`. Returns `(scenario, fake host)`.
fn fault_case(name: &str, profile: &str, faults: &str, scenario: &str) -> (PathBuf, PathBuf) {
    let root = scratch(name);
    std::fs::create_dir_all(root.join("hosts")).expect("dir");
    let shipped = std::fs::read_to_string(profile_path(profile)).expect("profile");
    std::fs::write(root.join("hosts").join(format!("{profile}.toml")), &shipped).expect("write");
    let fake_host = root.join("fake-host.toml");
    std::fs::write(&fake_host, format!("{shipped}\n{faults}")).expect("write");
    let file = root.join(format!("{name}.toml"));
    std::fs::write(&file, scenario).expect("write");
    (file, fake_host)
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
            .is_some_and(|machine| machine.contains(fake.describes())),
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

#[test]
fn a_launch_fault_in_the_profile_fails_a_warmup_on_gpu1() {
    let start = begin();
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
        let (file, host) = fault_case(
            &format!("launch-fault-{profile}"),
            profile,
            fault,
            &warmup(profile),
        );
        let output = fails_only_through_the_faulty_fake(fake, &file, &host);
        assert!(output.contains(name), "{name} not reported:\n{output}");
        assert!(output.contains("719"), "{output}");
    }
    report_time("launch fault", start);
}

#[test]
fn a_lost_gpu_in_the_profile_fails_allspark_validation_on_it() {
    let start = begin();
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
    let (file, host) = fault_case("lost-gpu1", "r9700x2", lost, scenario);
    let output = fails_only_through_the_faulty_fake(Fake::Hip, &file, &host);
    assert!(output.contains("hipErrorUnknown"), "{output}");
    assert!(output.contains("hipGetDevicePropertiesR0600"), "{output}");

    // Lost from the start, the probe itself cannot read GPU 1.
    let (_, host) = fault_case(
        "lost-gpu1-at-start",
        "r9700x2",
        "[[fault]]\ndevice = 1\n",
        "",
    );
    let output = devsim(Fake::Hip, &host, &[], &["probe"]);
    let stderr = text(&output.stderr);
    assert!(text(&output.stdout).contains("torch = \"cpu\""), "{stderr}");
    assert!(
        stderr.contains("read the GPUs of libamdhip64.so") && stderr.contains("hipErrorUnknown"),
        "{stderr}"
    );
    report_time("lost GPU", start);
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

/// In the parent: runs itself as a child per fake. In the child (`DEVSIM_FAKE_ABI_LIBRARY` set): calls
/// the fake's C ABI directly (the fake reads its profile from the environment at first use, which a
/// test must not set in its own process).
#[test]
fn the_fakes_answer_with_the_drivers_error_codes() {
    let Some(path) = std::env::var_os("DEVSIM_FAKE_ABI_LIBRARY") else {
        let start = begin();
        abi_check("libcuda.so.1", Fake::Cuda, "h200x2");
        abi_check("libamdhip64.so", Fake::HipOnly, "amd_mixed");
        report_time("ABI checks", start);
        return;
    };
    // SAFETY: the library is one of this workspace's fakes, built by this test file; its
    // initializers are Rust's own.
    let library = unsafe { libloading::Library::new(&path) }.expect("open the fake");
    // Never unloaded, as devsim never unloads a driver: the fake's thread-local destructors run
    // from its own code when this thread exits.
    let library = std::mem::ManuallyDrop::new(library);
    if Path::new(&path).ends_with("libcuda.so.1") {
        abi::cuda(&library);
    } else {
        abi::hip(&library);
    }
}

/// Direct calls into the fakes' exported functions.
mod abi {
    use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

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

    type Out<T> = unsafe extern "C" fn(*mut T) -> c_int;

    /// The CUDA fake over `h200x2`.
    pub fn cuda(library: &Library) {
        // SAFETY: every type below is the C signature in `cuda.h` (and devsim's `cuda.rs`); every
        // pointer passed is a live local of the right type and size.
        unsafe {
            let init: unsafe extern "C" fn(c_uint) -> c_int = get(library, "cuInit");
            let count: Out<c_int> = get(library, "cuDeviceGetCount");
            let device_get: unsafe extern "C" fn(*mut c_int, c_int) -> c_int =
                get(library, "cuDeviceGet");
            let name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int =
                get(library, "cuDeviceGetName");
            let attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int =
                get(library, "cuDeviceGetAttribute");
            let retain: unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int =
                get(library, "cuDevicePrimaryCtxRetain");
            let get_current: Out<*mut c_void> = get(library, "cuCtxGetCurrent");
            let set_current: unsafe extern "C" fn(*mut c_void) -> c_int =
                get(library, "cuCtxSetCurrent");
            let ctx_device: Out<c_int> = get(library, "cuCtxGetDevice");
            let alloc: unsafe extern "C" fn(*mut u64, usize) -> c_int =
                get(library, "cuMemAlloc_v2");
            let free: unsafe extern "C" fn(u64) -> c_int = get(library, "cuMemFree_v2");
            let htod: unsafe extern "C" fn(u64, *const c_void, usize) -> c_int =
                get(library, "cuMemcpyHtoD_v2");
            let dtoh: unsafe extern "C" fn(*mut c_void, u64, usize) -> c_int =
                get(library, "cuMemcpyDtoH_v2");
            let memset: unsafe extern "C" fn(u64, u8, usize) -> c_int =
                get(library, "cuMemsetD8_v2");
            let synchronize: unsafe extern "C" fn() -> c_int = get(library, "cuCtxSynchronize");
            let error_name: unsafe extern "C" fn(c_int, *mut *const c_char) -> c_int =
                get(library, "cuGetErrorName");
            let error_string: unsafe extern "C" fn(c_int, *mut *const c_char) -> c_int =
                get(library, "cuGetErrorString");
            let version: Out<c_int> = get(library, "cuDriverGetVersion");

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
            let init: unsafe extern "C" fn(c_uint) -> c_int = get(library, "hipInit");
            let count: Out<c_int> = get(library, "hipGetDeviceCount");
            let get_device: Out<c_int> = get(library, "hipGetDevice");
            let set_device: unsafe extern "C" fn(c_int) -> c_int = get(library, "hipSetDevice");
            let attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int =
                get(library, "hipDeviceGetAttribute");
            let properties: unsafe extern "C" fn(*mut c_void, c_int) -> c_int =
                get(library, "hipGetDevicePropertiesR0600");
            let malloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int =
                get(library, "hipMalloc");
            let free: unsafe extern "C" fn(*mut c_void) -> c_int = get(library, "hipFree");
            let memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int =
                get(library, "hipMemcpy");
            let memset: unsafe extern "C" fn(*mut c_void, c_int, usize) -> c_int =
                get(library, "hipMemset");
            let error_name: unsafe extern "C" fn(c_int) -> *const c_char =
                get(library, "hipGetErrorName");
            let error_string: unsafe extern "C" fn(c_int) -> *const c_char =
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
