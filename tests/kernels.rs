//! Kernel contracts: the seed's cases, the ROCm audit inventory, selection, and the whole matrix.

mod common;

use common::{Sim, host, scenario_root};
use devsim::dispatch::selector::Selector;
use devsim::kernel::Catalog;
use devsim::kernel::Method;
use devsim::kernel::audit::{ROCM_AUDIT, contradiction, decision};
use devsim::kernel::select::select;
use devsim::matrix::{run_matrix, shipped_hosts};
use devsim::runtime::{Place, Runtime};
use devsim::vocab::TorchDevice;
use devsim::{Family, TorchBuild};
use rstest::rstest;

/// Every row of ../shared/CATALOG.md, in its order.
const CATALOG_ROWS: [&str; 46] = [
    "gptq_torch",
    "gptq_torch_fused",
    "gptq_torch_aten",
    "gptq_torch_int8",
    "gptq_triton",
    "gptq_exllama_v2",
    "gptq_marlin",
    "gptq_machete",
    "gptq_swordfish",
    "gptq_bitblas",
    "gptq_allspark",
    "awq_torch",
    "awq_torch_fused",
    "awq_torch_aten",
    "awq_torch_int8",
    "awq_gemm",
    "awq_gemv",
    "awq_gemv_fast",
    "awq_llm",
    "awq_gemm_triton",
    "awq_gemv_triton",
    "awq_marlin",
    "awq_machete",
    "awq_swordfish",
    "awq_bitblas",
    "awq_exllama_v2",
    "awq_allspark",
    "qqq",
    "qqq_torch",
    "paroquant",
    "paroquant_triton",
    "fp8_torch",
    "w4a_fp8",
    "w4a_nvfp4",
    "bitsandbytes",
    "gguf_torch",
    "gguf_triton",
    "gguf_cpp_cpu",
    "gguf_cpp_cuda",
    "vptq_cuda",
    "mlx_gptq",
    "mlx_awq",
    "torch_quant_embedding",
    "exl3_exllama_v3",
    "exl3_torch",
    "fp4_source",
];

#[test]
fn the_catalog_registers_every_reference_row_and_nothing_else() {
    assert_eq!(Catalog::reference().names(), CATALOG_ROWS);
}

#[test]
fn every_registered_kernel_has_an_audited_rocm_decision_matching_its_contract() {
    let catalog = Catalog::reference();
    let mut problems = Vec::new();
    for kernel in catalog.iter() {
        let spec = kernel.spec();
        match decision(&spec.name) {
            None => problems.push(format!("{}: no audited ROCm decision", spec.name)),
            Some(decision) => {
                if let Some(why) = contradiction(spec, decision) {
                    problems.push(format!("{}: {why}", spec.name));
                }
            }
        }
    }
    for (name, _) in ROCM_AUDIT {
        if catalog.get(name).is_err() {
            problems.push(format!("{name}: audited but not registered"));
        }
    }
    assert!(
        problems.is_empty(),
        "ROCm audit problems:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_kernel_added_without_an_audit_entry_fails_the_inventory() {
    use devsim::kernel::KernelSpec;
    let unaudited = KernelSpec::new("gptq_new_fast_path", Method::Gptq, &[4], &[Family::Cuda]);
    let catalog = Catalog::builder()
        .with_spec(unaudited)
        .build()
        .expect("a consistent catalog");
    let missing: Vec<&str> = catalog
        .iter()
        .map(|k| k.spec().name.as_ref())
        .filter(|name| decision(name).is_none())
        .collect();
    assert_eq!(missing, ["gptq_new_fast_path"]);
}

const CUDA_ONLY: [&str; 14] = [
    "gptq_triton",
    "w4a_fp8",
    "w4a_nvfp4",
    "gptq_marlin",
    "gptq_machete",
    "gptq_swordfish",
    "gptq_bitblas",
    "awq_gemm",
    "awq_gemv",
    "awq_gemv_fast",
    "qqq",
    "vptq_cuda",
    "gptq_exllama_v2",
    "gguf_cpp_cuda",
];

const CUDA_SPELLINGS: [&str; 8] = [
    "cuda",
    "CUDA",
    "cuda:0",
    "cuda:1",
    "DEVICE.CUDA",
    "torch.device('cuda:1')",
    "0",
    "1",
];

#[test]
fn cuda_only_kernels_are_refused_on_hip_under_every_cuda_spelling() {
    let catalog = Catalog::reference();
    for kernel_name in CUDA_ONLY {
        let kernel = catalog.get(kernel_name).expect("registered");
        let selectors = CUDA_SPELLINGS.iter().map(|s| Selector::from(*s)).chain([
            Selector::Ordinal(1),
            Selector::Family(Family::Cuda),
            Selector::Torch(TorchDevice::cuda(0)),
        ]);
        for selector in selectors {
            let sim = Sim::profile("r9700x2", 0);
            let error = kernel
                .validate(&sim.dispatch(), &selector)
                .expect_err(&format!("{kernel_name} must be refused for {selector}"));
            assert_eq!(
                error.kind(),
                "unsupported-family",
                "{kernel_name} {selector}: {error}"
            );
            assert_eq!(sim.count("extension_load"), 0, "{kernel_name} {selector}");
            assert_eq!(
                sim.count("nvidia_capability"),
                0,
                "{kernel_name} {selector}"
            );
        }
    }
}

#[rstest]
#[case::cuda_string("cuda")]
#[case::rocm("rocm:1")]
#[case::ordinal("0")]
fn bitsandbytes_is_admitted_on_rocm(#[case] selector: &str) {
    let sim = Sim::profile("r9700x2", 0);
    let catalog = Catalog::reference();
    let validated = catalog
        .get("bitsandbytes")
        .expect("registered")
        .validate(&sim.dispatch(), &selector.into())
        .expect("bitsandbytes runs on ROCm");
    assert_eq!(validated.target.family, Family::Rocm);
}

#[test]
fn allspark_accepts_a_gfx1201_target_while_the_current_gpu_is_gfx942() {
    let sim = Sim::profile("amd_mixed", 0);
    let catalog = Catalog::reference();
    let warmed = catalog
        .get("gptq_allspark")
        .expect("registered")
        .warmup(&sim.dispatch(), &"cuda:1".into())
        .expect("gfx1201 target is supported");
    assert_eq!(warmed.ran_on, Place::Gpu(1), "warmup ran on the target");
    assert_eq!(sim.current(), 0, "the caller's device is restored");
    assert_eq!(sim.count("nvidia_capability"), 0);
    let names = sim.names();
    let repack = names
        .iter()
        .position(|n| *n == "launch")
        .expect("repack launch");
    let switch = names
        .iter()
        .position(|n| *n == "set_device")
        .expect("context switch");
    assert!(
        switch < repack,
        "repack ran inside the target's context: {names:?}"
    );
}

#[test]
fn allspark_refuses_a_gfx942_target_while_the_current_gpu_is_gfx1201() {
    let sim = Sim::profile("amd_mixed", 1);
    let catalog = Catalog::reference();
    let error = catalog
        .get("gptq_allspark")
        .expect("registered")
        .warmup(&sim.dispatch(), &"cuda:0".into())
        .expect_err("gfx942 target is unsupported");
    assert_eq!(error.kind(), "unsupported-arch");
    assert!(error.to_string().contains("gfx942"), "{error}");
    assert_eq!(sim.count("extension_load"), 0);
    assert_eq!(sim.count("launch"), 0);
    assert_eq!(sim.current(), 1);
}

#[test]
fn native_exl3_on_hip_refuses_before_loading_and_names_exl3_torch() {
    let sim = Sim::profile("r9700x2", 0);
    let catalog = Catalog::reference();
    let error = catalog
        .get("exl3_exllama_v3")
        .expect("registered")
        .validate(&sim.dispatch(), &"cuda".into())
        .expect_err("native EXL3 cannot run on HIP");
    assert!(error.to_string().contains("exl3_torch"), "{error}");
    assert_eq!(sim.count("extension_load"), 0);
}

#[rstest]
#[case::family_move_in_gpu1_context("cuda", 1, Place::Gpu(1))]
#[case::explicit_gpu0_from_gpu1_context("cuda:0", 1, Place::Gpu(0))]
#[case::explicit_gpu1_from_gpu0_context("cuda:1", 0, Place::Gpu(1))]
#[case::family_enum_in_gpu1_context("DEVICE.CUDA", 1, Place::Gpu(1))]
#[case::cpu("cpu", 1, Place::Cpu)]
fn moves_land_on_the_current_device_or_the_explicit_ordinal(
    #[case] selector: &str,
    #[case] current: u32,
    #[case] lands_on: Place,
) {
    let sim = Sim::profile("h200x2", current);
    let catalog = Catalog::reference();
    let moved = catalog
        .get("gptq_torch")
        .expect("registered")
        .move_weights(&sim.dispatch(), &selector.into())
        .expect("move");
    assert_eq!(moved.lands_on, lands_on);
    assert_eq!(sim.current(), current);
}

#[test]
fn a_rocm_lock_covers_every_amd_gpu() {
    use devsim::pool::{DevicePool, LockMode};
    let sim = Sim::profile("mi300x", 0);
    let pool = DevicePool::new(&sim.recorder).expect("pool");
    for scope in [
        Selector::from("rocm"),
        Selector::Family(Family::Rocm),
        Selector::from("cuda"),
    ] {
        let guard = pool
            .lock_selector(&sim.dispatch(), &scope, LockMode::Read)
            .expect("ROCM is a known pool family");
        let keys: Vec<String> = guard.covers().iter().map(ToString::to_string).collect();
        assert_eq!(keys, ["cuda:0", "cuda:1"], "{scope}");
    }
}

#[rstest]
#[case::h200("h200", Method::Gptq, 4, "gptq_machete")]
#[case::a100("a100", Method::Gptq, 4, "gptq_marlin")]
#[case::b200("b200", Method::Gptq, 4, "gptq_swordfish")]
#[case::cpu("cpu", Method::Gptq, 4, "gptq_torch_aten")]
#[case::rdna4("r9700x2", Method::Gptq, 4, "gptq_allspark")]
#[case::mi300x("mi300x", Method::Gptq, 4, "gptq_torch")]
#[case::awq_mi300x("mi300x", Method::Awq, 4, "awq_gemm_triton")]
#[case::gguf_hip("mi300x", Method::Gguf, 4, "gguf_triton")]
#[case::bnb_hip("r9700x2", Method::Bitsandbytes, 8, "bitsandbytes")]
#[case::exl3_hip("r9700x2", Method::Exl3, 4, "exl3_torch")]
#[case::exl3_cuda("h200", Method::Exl3, 4, "exl3_exllama_v3")]
#[case::qqq_hip("mi300x", Method::Qqq, 4, "qqq_torch")]
fn selection_picks_the_best_kernel_that_passes_every_gate(
    #[case] profile: &str,
    #[case] method: Method,
    #[case] bits: u32,
    #[case] expected: &str,
) {
    let sim = Sim::profile(profile, 0);
    let catalog = Catalog::reference();
    let device = if profile == "cpu" { "cpu" } else { "cuda" };
    let selected =
        select(&sim.dispatch(), &catalog, &method, bits, &device.into()).expect("a kernel");
    assert_eq!(selected.kernel.spec().name, expected);
    if sim.recorder.build() == TorchBuild::Hip {
        assert_eq!(sim.count("nvidia_capability"), 0);
    }
    assert!(
        sim.count("extension_load") <= 1,
        "only the winner loads its extension"
    );
}

#[test]
fn selection_refusing_everything_lists_each_candidate_and_why() {
    let sim = Sim::profile("r9700x2", 0);
    let catalog = Catalog::reference();
    let error = select(&sim.dispatch(), &catalog, &Method::W4a, 4, &"cuda".into())
        .err()
        .expect("no W4A kernel runs on ROCm");
    assert_eq!(error.kind(), "no-kernel");
    let message = error.to_string();
    assert!(
        message.contains("w4a_nvfp4 refused") && message.contains("w4a_fp8 refused"),
        "{message}"
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

#[test]
fn the_whole_matrix_keeps_every_invariant_on_every_shipped_host() {
    let hosts = shipped_hosts(&scenario_root()).expect("profiles load");
    assert!(hosts.len() >= 10, "every shipped profile is in the matrix");
    let catalog = Catalog::reference();
    let outcome = run_matrix(&hosts, &catalog);
    assert!(
        outcome.violations.is_empty(),
        "{} violation(s), first ones:\n{}",
        outcome.violations.len(),
        outcome
            .violations
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        outcome.accepted > 0 && outcome.refused > 0,
        "the matrix exercises both outcomes"
    );
    println!(
        "matrix: {} cases, {} accepted, {} refused",
        outcome.cases, outcome.accepted, outcome.refused
    );
}
