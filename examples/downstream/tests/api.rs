//! The library API as a downstream crate uses it: a deliberately broken kernel is caught by its scenario,
//! a scenario runs on this crate's own runtime wrapper, and the crate's own binary judges its catalog.

use std::path::{Path, PathBuf};
use std::process::Command;

use devsim::dispatch::{Dispatch, DispatchError};
use devsim::kernel::{Catalog, Kernel, KernelSpec};
use devsim::runner::Status;
use devsim::runner::run_scenario;
use devsim::runner::run_simulated;
use devsim::runtime::{LaunchOn, SimRuntime};
use devsim::scenario::{ProfileSources, load_scenario_with};
use downstream_kernels::{LaunchLog, TinyRepack, catalog};

/// This crate's own profile folder, then devsim's built-in profiles.
fn profiles() -> ProfileSources {
    ProfileSources::folders(vec![
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/hosts"),
    ])
    .expect("the folder exists")
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

/// tiny_repack with a bug: it repacks on GPU 0 whatever the target, leaving GPU 0 current for the launch.
struct RepacksOnGpuZero(TinyRepack);

impl Kernel for RepacksOnGpuZero {
    fn spec(&self) -> &KernelSpec {
        self.0.spec()
    }

    fn prepare_on_device(&self, dispatch: &Dispatch) -> Result<(), DispatchError> {
        dispatch.runtime.set_device(0)?;
        dispatch
            .runtime
            .launch(LaunchOn::CurrentDevice, "tiny_repack_pack")?;
        Ok(())
    }
}

#[test]
fn the_warmup_scenario_catches_a_kernel_that_repacks_on_the_wrong_gpu() {
    let path = scenario("tiny_repack_warmup_repacks_in_target_context.toml");
    let good = catalog().expect("consistent");
    let scenario = load_scenario_with(&path, &good, &profiles()).expect("loads");
    assert_eq!(run_simulated(&scenario, &good).status, Status::Passed);

    let broken = Catalog::reference_builder()
        .with_spec(downstream_kernels::tiny_gemm())
        .with(RepacksOnGpuZero(TinyRepack::new()))
        .build()
        .expect("consistent");
    let report = run_simulated(&scenario, &broken);
    assert_eq!(report.status, Status::Failed);
    let keys: Vec<&str> = report.steps[0]
        .mismatches
        .iter()
        .map(|m| m.key.as_str())
        .collect();
    assert!(keys.contains(&"ran_on"), "{keys:?}");
}

#[test]
fn a_scenario_runs_on_the_crates_own_runtime_wrapper() {
    let good = catalog().expect("consistent");
    let scenario = load_scenario_with(
        &scenario("tiny_repack_warmup_repacks_in_target_context.toml"),
        &good,
        &profiles(),
    )
    .expect("loads");
    let log = std::sync::Arc::new(LaunchLog::new(
        SimRuntime::new(scenario.host.clone()).expect("a valid host"),
    ));
    let report = run_scenario(&scenario, &good, Box::new(log.clone()));
    assert_eq!(report.status, Status::Passed);
    assert_eq!(log.launched(), ["tiny_repack_pack", "tiny_repack"]);
}

#[test]
fn the_crates_own_binary_runs_its_scenarios_and_devsims_cannot() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let own = Command::new(env!("CARGO_BIN_EXE_downstream-devsim"))
        .arg("run")
        .arg(&folder)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&own.stdout);
    assert!(own.status.success(), "{stdout}");
    assert!(stdout.contains("8 passed, 0 failed, 0 skipped"), "{stdout}");

    let kernels = Command::new(env!("CARGO_BIN_EXE_downstream-devsim"))
        .arg("kernels")
        .output()
        .expect("runs");
    let listing = String::from_utf8_lossy(&kernels.stdout);
    assert!(
        listing.contains("tiny_gemm")
            && listing.contains("tiny_repack")
            && listing.contains("tiny_leak")
    );
}
