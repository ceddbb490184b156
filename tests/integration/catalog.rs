//! The catalog is open: downstream crates add, replace and remove kernels, and every catalog is checked
//! when it is built.

use crate::common;

use devsim::dispatch::{Dispatch, DispatchError};
use devsim::kernel::{Catalog, CatalogError, Kernel, KernelSpec, Method, SpecKernel};
use devsim::runner::Status;
use devsim::runner::run_simulated;
use devsim::scenario::load_all;
use devsim::vocab::{Family, TorchDevice, TorchType};
use rstest::rstest;

fn spec(name: &str) -> KernelSpec {
    KernelSpec::new(name.to_string(), Method::Gptq, vec![4], vec![Family::Cuda])
}

#[test]
fn the_reference_catalog_builds_through_the_builder_unchanged() {
    let built = Catalog::reference_builder().build().expect("consistent");
    assert_eq!(built.names(), Catalog::reference().names());
}

/// A catalog names itself: the name is never guessed from its kernels, so a catalog built from the
/// reference with the same kernels is not reported (or baselined) as the reference.
#[test]
fn a_catalog_is_named_by_its_builder_never_by_its_kernels() {
    assert_eq!(Catalog::reference().name(), "reference");
    let same_kernels = Catalog::reference_builder().build().expect("consistent");
    assert_eq!(same_kernels.name(), "catalog");
    let named = Catalog::reference_builder()
        .named("my-kernels")
        .build()
        .expect("consistent");
    assert_eq!(named.name(), "my-kernels");
}

#[rstest]
#[case::duplicate(Catalog::reference_builder().with_spec(spec("gptq_torch")), "register kernel `gptq_torch`: a kernel of that name is already in the catalog")]
#[case::replace_missing(Catalog::reference_builder().replace(SpecKernel(spec("nope"))), "replace kernel `nope`: no kernel of that name is in the catalog")]
#[case::remove_missing(Catalog::builder().remove("gptq_torch"), "remove kernel `gptq_torch`: no kernel of that name is in the catalog")]
#[case::empty_bits(Catalog::builder().with_spec(KernelSpec::new("k", Method::Gptq, vec![], vec![Family::Cuda])), "register kernel `k`: `bits` is empty")]
#[case::empty_families(Catalog::builder().with_spec(KernelSpec::new("k", Method::Gptq, vec![4], vec![])), "register kernel `k`: `families` is empty")]
#[case::unknown_alternative(Catalog::reference_builder().with_spec(spec("k").alternative("gptq_troch")), "register kernel `k`: `alternative` names `gptq_troch`, which is not in the catalog (did you mean gptq_torch?)")]
#[case::alternative_removed(Catalog::reference_builder().remove("gptq_torch"), "register kernel `gptq_triton`: `alternative` names `gptq_torch`, which is not in the catalog (did you mean gptq_torch_int8?)")]
#[case::nvidia_arch_as_amd_target(Catalog::builder().with_spec(spec("k").amd_targets(["sm_90"])), "register kernel `k`: `amd_targets` lists `sm_90`: it is not an AMD target")]
#[case::empty_range(Catalog::builder().with_spec(spec("k").cc_range((9, 0), (8, 0))), "register kernel `k`: `nvidia` range 9.0..8.0 admits no compute capability")]
fn inconsistent_catalogs_are_refused_naming_the_kernel_and_field(
    #[case] builder: devsim::kernel::CatalogBuilder,
    #[case] message: &str,
) {
    let error: CatalogError = builder.build().err().expect("refused");
    assert_eq!(error.to_string(), message);
}

#[test]
fn an_unknown_gfx_target_names_what_is_accepted() {
    let error = Catalog::builder()
        .with_spec(spec("k").amd_targets(["gfx9999"]))
        .build()
        .err()
        .expect("refused");
    let message = error.to_string();
    assert!(
        message.starts_with(
            "register kernel `k`: `amd_targets` lists `gfx9999`: parse arch `gfx9999`: expected"
        ),
        "{message}"
    );
}

#[test]
fn replace_keeps_the_place_and_remove_drops_the_kernel() {
    let catalog = Catalog::reference_builder()
        .replace(SpecKernel(spec("gptq_torch_fused")))
        .remove("gptq_torch_int8")
        .build()
        .expect("consistent");
    let names = catalog.names();
    assert_eq!(names[1], "gptq_torch_fused");
    assert!(!names.contains(&"gptq_torch_int8"));
    let replaced = catalog.get("gptq_torch_fused").expect("present");
    assert_eq!(&*replaced.spec().families, &[Family::Cuda]);
}

#[test]
fn kernels_added_from_outside_leave_every_shipped_scenario_passing() {
    let catalog = Catalog::reference_builder()
        .with_spec(
            KernelSpec::new(
                "downstream_custom",
                Method::named("downstream_q"),
                vec![4],
                vec![Family::Cuda, Family::Rocm],
            )
            .priority(1000),
        )
        .with_spec(
            KernelSpec::new("downstream_gptq", Method::Gptq, vec![4], vec![Family::Cpu])
                .priority(1),
        )
        .build()
        .expect("consistent");
    let (scenarios, errors) = load_all(&[common::scenario_root()], &catalog).expect("corpus");
    assert!(errors.is_empty(), "{errors:?}");
    let failing: Vec<String> = scenarios
        .iter()
        .filter(|s| run_simulated(s, &catalog).status != Status::Passed)
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(failing, Vec::<String>::new());
}

#[test]
fn a_method_of_the_users_own_is_a_string_and_known_methods_stay_typed() {
    assert_eq!(Method::named("GPTQ"), Method::Gptq);
    assert_eq!(Method::named("Downstream_Q").as_str(), "downstream_q");
    assert!("downstream_q".parse::<Method>().is_err());
}

/// A kernel that leaks on purpose: each repack allocates 4 KiB on the target and never frees it.
struct Leaky(KernelSpec);

impl Kernel for Leaky {
    fn spec(&self) -> &KernelSpec {
        &self.0
    }

    fn prepare_on_device(&self, dispatch: &Dispatch) -> Result<(), DispatchError> {
        let current = TorchDevice {
            kind: TorchType::Cuda,
            index: None,
        };
        dispatch.runtime.alloc(current, 4096)?;
        Ok(())
    }
}

#[test]
fn a_retained_bytes_scenario_catches_a_kernel_that_leaks() {
    let leaky = KernelSpec::new("leaky", Method::Gptq, vec![4], vec![Family::All]).repacks();
    let catalog = Catalog::reference_builder()
        .with(Leaky(leaky))
        .build()
        .expect("consistent");
    let fixture =
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/leak"));
    let (scenarios, errors) = load_all(&[fixture], &catalog).expect("the folder is readable");
    assert!(errors.is_empty(), "{errors:?}");
    let [scenario] = scenarios.as_slice() else {
        panic!("one leak scenario, got {}", scenarios.len())
    };
    let report = run_simulated(scenario, &catalog);
    assert_eq!(report.status, Status::Failed);
    let mismatches: Vec<String> = report.steps[0]
        .mismatches
        .iter()
        .map(|m| format!("{}: expected {}, got {}", m.key, m.expected, m.actual))
        .collect();
    assert_eq!(mismatches, ["retained_bytes: expected 0, got 12288"]);
}
