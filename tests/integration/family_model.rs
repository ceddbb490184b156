//! The family model: selector spellings, normalization per build, and resolution at the boundary.

use devsim::dispatch::DispatchError;
use devsim::dispatch::selector::{Selector, normalize, to_torch_device};
use devsim::vocab::{Target, TorchDevice};
use devsim::{Family, TorchBuild};
use rstest::rstest;

fn norm(
    selector: impl Into<Selector>,
    build: TorchBuild,
    visible: u32,
) -> Result<Target, DispatchError> {
    normalize(&selector.into(), build, || Ok(visible))
}

#[rstest]
#[case::cuda_string("cuda", Family::Rocm, None)]
#[case::cuda_upper("CUDA", Family::Rocm, None)]
#[case::cuda_ordinal("cuda:1", Family::Rocm, Some(1))]
#[case::rocm("rocm", Family::Rocm, None)]
#[case::rocm_upper_ordinal("ROCM:0", Family::Rocm, Some(0))]
#[case::hip("hip", Family::Rocm, None)]
#[case::hip_ordinal("hip:1", Family::Rocm, Some(1))]
#[case::gptqmodel_enum("DEVICE.CUDA", Family::Rocm, None)]
#[case::torch_device("torch.device('cuda:1')", Family::Rocm, Some(1))]
#[case::torch_device_two_args("torch.device(\"cuda\", 1)", Family::Rocm, Some(1))]
#[case::torch_repr("device(type='cuda', index=0)", Family::Rocm, Some(0))]
#[case::integer_string("1", Family::Rocm, Some(1))]
#[case::cpu("cpu", Family::Cpu, None)]
#[case::cpu_index_dropped("cpu:0", Family::Cpu, None)]
fn every_cuda_spelling_means_rocm_on_hip(
    #[case] text: &str,
    #[case] family: Family,
    #[case] ordinal: Option<u32>,
) {
    assert_eq!(
        norm(text, TorchBuild::Hip, 2),
        Ok(Target { family, ordinal })
    );
}

#[rstest]
#[case::enum_cuda(Selector::Family(Family::Cuda), Target::family(Family::Rocm))]
#[case::enum_rocm(Selector::Family(Family::Rocm), Target::family(Family::Rocm))]
#[case::integer(Selector::Ordinal(1), Target::device(Family::Rocm, 1))]
#[case::torch_cuda(Selector::Torch(TorchDevice::cuda(0)), Target::device(Family::Rocm, 0))]
fn non_string_selectors_normalize_alike_on_hip(#[case] selector: Selector, #[case] target: Target) {
    assert_eq!(norm(selector, TorchBuild::Hip, 2), Ok(target));
}

#[rstest]
#[case("cuda", Target::family(Family::Cuda))]
#[case("cuda:1", Target::device(Family::Cuda, 1))]
#[case("DEVICE.CUDA", Target::family(Family::Cuda))]
fn cuda_spellings_stay_cuda_on_cuda_builds(#[case] text: &str, #[case] target: Target) {
    assert_eq!(norm(text, TorchBuild::Cuda, 2), Ok(target));
}

#[rstest]
#[case::rocm_on_cuda("rocm", TorchBuild::Cuda, "family-not-present")]
#[case::hip_on_cuda("hip:0", TorchBuild::Cuda, "family-not-present")]
#[case::cuda_on_cpu("cuda", TorchBuild::Cpu, "family-not-present")]
#[case::ordinal_on_cpu("0", TorchBuild::Cpu, "family-not-present")]
#[case::xpu_absent("xpu", TorchBuild::Cuda, "family-not-present")]
#[case::mps_absent("mps", TorchBuild::Hip, "family-not-present")]
#[case::past_visible("cuda:2", TorchBuild::Cuda, "no-such-device")]
#[case::typo("cdua", TorchBuild::Cuda, "unknown-selector")]
#[case::negative_ordinal("cuda:-1", TorchBuild::Cuda, "unknown-selector")]
#[case::empty_ordinal("cuda:", TorchBuild::Cuda, "unknown-selector")]
#[case::all_is_not_a_device("all", TorchBuild::Cuda, "unknown-selector")]
#[case::malformed_torch_device("torch.device('cuda'", TorchBuild::Cuda, "unknown-selector")]
fn bad_selectors_are_typed_errors_naming_the_input(
    #[case] text: &str,
    #[case] build: TorchBuild,
    #[case] kind: &str,
) {
    let error = norm(text, build, 2).expect_err("must be refused");
    assert_eq!(error.kind(), kind, "{error}");
}

#[test]
fn unknown_selector_messages_name_the_input_and_the_accepted_forms() {
    let message = norm("cdua:1", TorchBuild::Cuda, 2)
        .expect_err("typo")
        .to_string();
    assert!(message.contains("cdua:1"), "{message}");
    assert!(message.contains("rocm[:N]"), "{message}");
}

#[test]
fn negative_integers_are_unknown_selectors() {
    let error = norm(-1i64, TorchBuild::Cuda, 2).expect_err("negative");
    assert_eq!(error.kind(), "unknown-selector");
}

#[test]
fn a_mask_that_hides_every_gpu_leaves_the_family_absent() {
    let error = norm("cuda", TorchBuild::Hip, 0).expect_err("no visible GPU");
    assert_eq!(error.kind(), "family-not-present");
}

#[test]
fn cpu_requests_ask_the_runtime_nothing() {
    let target = normalize(&"cpu".into(), TorchBuild::Hip, || {
        panic!("no device count for cpu")
    });
    assert_eq!(target, Ok(Target::family(Family::Cpu)));
}

#[rstest]
#[case::rocm_family(Target::family(Family::Rocm), "cuda")]
#[case::rocm_ordinal(Target::device(Family::Rocm, 1), "cuda:1")]
#[case::cuda_family(Target::family(Family::Cuda), "cuda")]
#[case::cuda_ordinal(Target::device(Family::Cuda, 0), "cuda:0")]
#[case::cpu(Target::family(Family::Cpu), "cpu")]
#[case::xpu(Target::device(Family::Xpu, 0), "xpu:0")]
#[case::mps(Target::family(Family::Mps), "mps")]
fn resolution_keeps_ordinals_and_leaves_families_indexless(
    #[case] target: Target,
    #[case] device: &str,
) {
    assert_eq!(to_torch_device(&target).to_string(), device);
}
