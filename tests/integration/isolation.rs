//! Scenarios never touch the real process: its environment, and the caller's current device even when a
//! step panics.

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::Sim;
use devsim::dispatch::Dispatch;
use devsim::dispatch::DispatchError;
use devsim::kernel::Catalog;
use devsim::kernel::{Kernel, KernelSpec, Method};
use devsim::scenario::Status;
use devsim::scenario::{load_all, run_simulated};
use devsim::vocab::Family;
use serial_test::serial;

#[test]
#[serial]
fn the_simulator_ignores_the_real_visible_device_variables() {
    // SAFETY: #[serial] keeps every test that touches the environment apart.
    unsafe { std::env::set_var("CUDA_VISIBLE_DEVICES", "1") };
    let sim = Sim::profile("h200x2", 0);
    let count = sim.recorder.inner().device_count();
    // SAFETY: as above, no other test runs while this one changes the environment.
    unsafe { std::env::remove_var("CUDA_VISIBLE_DEVICES") };
    assert_eq!(
        count,
        Ok(2),
        "only a scenario's own `env` masks its simulated GPUs"
    );
}

#[test]
#[serial]
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
