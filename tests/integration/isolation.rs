//! Scenarios never touch the real process: its environment, and the caller's current device even when a
//! step panics.

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::Sim;
use devsim::dispatch::Dispatch;
use devsim::dispatch::DispatchError;
use devsim::kernel::Catalog;
use devsim::kernel::{Kernel, KernelSpec, Method};
use devsim::runner::Status;
use devsim::runner::run_simulated;
use devsim::scenario::load_all;
use devsim::vocab::Family;

#[test]
fn the_simulator_ignores_the_real_visible_device_variables() {
    // The variables are set for a child devsim only: this test process's environment is never changed, so
    // tests that spawn processes beside it cannot inherit a mask.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(["run", "scenarios/live/h200x2_warmup_on_gpu1_from_gpu0.toml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CUDA_VISIBLE_DEVICES", "1")
        .env("HIP_VISIBLE_DEVICES", "0")
        .env("ROCR_VISIBLE_DEVICES", "0")
        .output()
        .expect("devsim runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed, 0 failed"),
        "only a scenario's own `env` masks its simulated GPUs:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn running_scenarios_with_env_leaves_the_real_environment_alone() {
    let before: Vec<(String, String)> = std::env::vars().collect();
    let catalog = Catalog::reference();
    let (scenarios, _) =
        load_all(&[common::scenario_root().join("visible-devices")], &catalog).expect("corpus");
    assert!(
        scenarios.iter().any(|s| !s.host.env.is_empty()),
        "the folder has env scenarios"
    );
    for scenario in &scenarios {
        assert_eq!(
            run_simulated(scenario, &catalog).status,
            Status::Passed,
            "{}",
            scenario.name
        );
    }
    let after: Vec<(String, String)> = std::env::vars().collect();
    assert_eq!(before, after);
}

/// A kernel whose on-device preparation panics, as a buggy repack might.
struct PanickingRepack(KernelSpec);

impl Kernel for PanickingRepack {
    fn spec(&self) -> &KernelSpec {
        &self.0
    }

    fn prepare_on_device(&self, _dispatch: &Dispatch) -> Result<(), DispatchError> {
        panic!("repack blew up inside the target's context");
    }
}

#[test]
fn a_panic_inside_the_target_context_still_restores_the_callers_device() {
    let sim = Sim::profile("h200x2", 0);
    let kernel = PanickingRepack(KernelSpec::new(
        "panicky",
        Method::Gptq,
        &[4],
        &[Family::Cuda],
    ));
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        kernel.warmup(&sim.dispatch(), &"cuda:1".into())
    }));
    assert!(outcome.is_err(), "the panic propagates");
    assert_eq!(sim.current(), 0, "the guard restored GPU 0 while unwinding");
    assert_eq!(sim.count("set_device"), 2);
}
