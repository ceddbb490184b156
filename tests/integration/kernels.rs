//! Kernel contracts beyond what scenario files say: the inventory as data and selection order. The seed's
//! cases live in scenarios/seed/, selection in scenarios/selection/, and the whole-catalog invariants in
//! scenarios/invariants/ (matrices over every kernel and profile).

use crate::common;

use common::{Sim, host};
use devsim::kernel::Catalog;
use devsim::kernel::Method;
use devsim::kernel::audit::{Inventory, RocmDecision};
use devsim::kernel::select::select;
use devsim::{Family, TorchBuild};

#[test]
fn the_inventory_file_and_the_catalog_agree_row_for_row() {
    let inventory = Inventory::reference();
    let problems = inventory.check(&Catalog::reference());
    assert!(
        problems.is_empty(),
        "kernel inventory problems:\n{}",
        problems.join("\n")
    );
    let rows: Vec<&str> = inventory.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        rows,
        Catalog::reference().names(),
        "rows follow the catalog's order"
    );
}

#[test]
fn a_kernel_added_without_a_row_fails_the_inventory_naming_the_file_to_edit() {
    use devsim::kernel::KernelSpec;
    let catalog = Catalog::reference_builder()
        .with_spec(KernelSpec::new(
            "gptq_new_fast_path",
            Method::Gptq,
            &[4],
            &[Family::Cuda],
        ))
        .build()
        .expect("a consistent catalog");
    assert_eq!(
        Inventory::reference().check(&catalog),
        [
            "gptq_new_fast_path: no row in inventory/kernels.toml; add a [[kernel]] row with its families, its ROCm decision and why"
        ]
    );
}

/// The contributor path, end to end: a catalog entry, an inventory row and a scenario file are all a new
/// kernel needs; nothing else counts or lists kernels.
#[test]
fn adding_a_kernel_takes_a_catalog_entry_an_inventory_row_and_a_scenario() {
    use devsim::kernel::KernelSpec;
    use devsim::kernel::audit::{AuditedArch, InventoryRow};
    let spec = KernelSpec::new("gptq_new_fast_path", Method::Gptq, &[4], &[Family::Cuda]);
    let catalog = Catalog::reference_builder()
        .with_spec(spec.clone())
        .build()
        .expect("a consistent catalog");
    let mut inventory = Inventory::reference().clone();
    inventory.rows.push(InventoryRow {
        name: "gptq_new_fast_path".into(),
        families: vec![Family::Cuda],
        rocm: RocmDecision::Refused,
        reason: "an NVIDIA-only fast path".into(),
        arch: AuditedArch::of(&spec),
    });
    assert_eq!(inventory.check(&catalog), Vec::<String>::new());

    let folder = tempfile::tempdir().expect("a scratch folder");
    std::fs::write(
        folder.path().join("new_kernel_gates.toml"),
        r#"format = 1
description = "The new kernel runs on its declared CUDA family and refuses an AMD GPU."

[host]
profile = "r9700x2"

[[step]]
action = "validate"
kernel = "gptq_new_fast_path"
device = "cuda:0"
[step.expect]
error = "unsupported-family"
"#,
    )
    .expect("write the scenario");
    let hosts = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/hosts");
    let trials = devsim::harness::Harness::new(catalog)
        .scenarios(folder.path())
        .hosts(hosts)
        .trials()
        .expect("the folder lists");
    let args = libtest_mimic::Arguments {
        test_threads: Some(1),
        quiet: true,
        ..libtest_mimic::Arguments::default()
    };
    let conclusion = libtest_mimic::run(&args, trials);
    assert_eq!((conclusion.num_passed, conclusion.num_failed), (1, 0));
}

#[test]
fn a_row_that_drifted_from_its_contract_is_named() {
    let mut inventory = Inventory::reference().clone();
    let row = inventory
        .rows
        .iter_mut()
        .find(|r| r.name == "bitsandbytes")
        .expect("a row");
    row.families.retain(|f| *f != Family::Rocm);
    row.rocm = RocmDecision::Refused;
    let problems = inventory.check(&Catalog::reference());
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("bitsandbytes: inventory/kernels.toml records families"));
    assert_eq!(
        problems[1],
        "bitsandbytes: audited as refused but declares rocm or all (inventory/kernels.toml)"
    );
}

#[test]
fn explicit_only_kernels_are_never_selected_automatically() {
    let catalog = Catalog::reference();
    for method in Method::KNOWN {
        for kernel in devsim::kernel::select::candidates(&catalog, &method) {
            assert!(kernel.spec().selectable, "{}", kernel.spec().name);
        }
    }
    let sim = Sim::new(host(TorchBuild::Cpu, &[]));
    let error = select(
        &sim.dispatch(),
        &catalog,
        &Method::Embedding,
        4,
        &"cpu".into(),
    )
    .err()
    .expect("the embedding kernel is explicit-only");
    assert_eq!(error.kind(), "no-kernel");
}

#[test]
fn ties_break_by_name() {
    use devsim::kernel::KernelSpec;
    let a = KernelSpec::new("b_kernel", Method::Gptq, &[4], &[Family::All]).priority(5);
    let b = KernelSpec::new("a_kernel", Method::Gptq, &[4], &[Family::All]).priority(5);
    let catalog = Catalog::builder()
        .with_spec(a)
        .with_spec(b)
        .build()
        .expect("a consistent catalog");
    let names: Vec<&str> = devsim::kernel::select::candidates(&catalog, &Method::Gptq)
        .iter()
        .map(|k| k.spec().name.as_ref())
        .collect();
    assert_eq!(names, ["a_kernel", "b_kernel"]);
}

/// bitsandbytes ships one path per vendor: a warmup launches the path of the target's family (the trace
/// shows only the launch's name, which trace rules cannot match, so this is pinned here).
#[rstest::rstest]
#[case::nvidia("h200x2", "cuda:1", "bitsandbytes_cuda")]
#[case::amd_through_the_cuda_spelling("r9700x2", "cuda:1", "bitsandbytes_rocm")]
#[case::cpu("cpu", "cpu", "bitsandbytes_cpu")]
fn bitsandbytes_launches_the_path_of_its_targets_family(
    #[case] profile: &str,
    #[case] device: &str,
    #[case] launched: &str,
) {
    use devsim::trace::{Call, Entry};
    let sim = Sim::profile(profile, 0);
    Catalog::reference()
        .get("bitsandbytes")
        .expect("shipped")
        .warmup(&sim.dispatch(), &device.into())
        .expect("bitsandbytes runs on every family it declares");
    let launches: Vec<String> = sim
        .recorder
        .trace()
        .entries()
        .into_iter()
        .filter_map(|entry| match entry {
            Entry::Call {
                call: Call::Launch,
                detail,
                ..
            } => detail.map(String::from),
            _ => None,
        })
        .collect();
    assert_eq!(launches, [launched]);
}
