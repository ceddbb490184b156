//! Invariants over random hosts and selectors.

use devsim::dispatch::Dispatch;
use devsim::dispatch::selector::{Selector, normalize, to_torch_device};
use devsim::kernel::Catalog;
use devsim::runtime::{Recorder, SimRuntime};
use devsim::trace::count;
use devsim::vocab::TorchDevice;
use devsim::{Arch, Family, HostSpec, TorchBuild};
use proptest::prelude::*;

const NVIDIA: [&str; 6] = ["sm_75", "sm_80", "sm_89", "sm_90", "sm_100", "sm_120"];
const AMD: [&str; 5] = ["gfx90a", "gfx942", "gfx1100", "gfx1200", "gfx1201"];

fn build() -> impl Strategy<Value = TorchBuild> {
    prop_oneof![
        Just(TorchBuild::Cuda),
        Just(TorchBuild::Hip),
        Just(TorchBuild::Cpu)
    ]
}

/// A random host: a build, 0–4 GPUs of its vendor, a current device in range.
fn random_host() -> impl Strategy<Value = HostSpec> {
    (
        build(),
        prop::collection::vec(0usize..6, 0..5),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(torch, picks, current)| {
            let archs: Vec<Arch> = match torch {
                TorchBuild::Cpu => Vec::new(),
                TorchBuild::Cuda => picks
                    .iter()
                    .map(|i| NVIDIA[i % NVIDIA.len()])
                    .map(|a| a.parse().expect("arch"))
                    .collect(),
                TorchBuild::Hip => picks
                    .iter()
                    .map(|i| AMD[i % AMD.len()])
                    .map(|a| a.parse().expect("arch"))
                    .collect(),
            };
            let mut host = HostSpec::new(torch, &archs);
            host.current = if archs.is_empty() {
                0
            } else {
                current.index(archs.len()) as u32
            };
            host
        })
}

/// A random selector in any spelling, with an optional ordinal.
fn random_selector() -> impl Strategy<Value = Selector> {
    let word = prop::sample::select(vec![
        "cuda",
        "CUDA",
        "Cuda",
        "rocm",
        "ROCM",
        "hip",
        "cpu",
        "DEVICE.CUDA",
        "DEVICE.ROCM",
    ]);
    let family = prop::sample::select(vec![Family::Cpu, Family::Cuda, Family::Rocm]);
    prop_oneof![
        word.clone().prop_map(Selector::from),
        (word, 0u32..4).prop_map(|(w, n)| Selector::Text(format!("{w}:{n}"))),
        (0i64..4).prop_map(Selector::Ordinal),
        family.prop_map(Selector::Family),
        (0u32..4).prop_map(|n| Selector::Torch(TorchDevice::cuda(n))),
        (0u32..4).prop_map(|n| Selector::Text(format!("torch.device('cuda:{n}')"))),
    ]
}

fn explicit_ordinal(selector: &Selector) -> Option<u32> {
    match selector {
        Selector::Ordinal(n) => u32::try_from(*n).ok(),
        Selector::Torch(device) => device.index,
        Selector::Text(text) => {
            let digits: String = text.chars().filter(char::is_ascii_digit).collect();
            if text.starts_with("cpu") {
                None
            } else {
                digits.parse().ok()
            }
        }
        Selector::Family(_) => None,
    }
}

proptest! {
    #[test]
    fn normalization_is_idempotent(host in random_host(), selector in random_selector()) {
        let visible = host.visible().expect("mask").len() as u32;
        if let Ok(target) = normalize(&selector, host.torch, || Ok(visible)) {
            let again = normalize(&Selector::Text(target.to_string()), host.torch, || Ok(visible));
            prop_assert_eq!(again, Ok(target));
            let as_enum = normalize(&Selector::Family(target.family), host.torch, || Ok(visible));
            prop_assert_eq!(as_enum.map(|t| t.family), Ok(target.family));
        }
    }

    #[test]
    fn a_hip_build_never_yields_cuda(host in random_host(), selector in random_selector()) {
        prop_assume!(host.torch == TorchBuild::Hip);
        let visible = host.visible().expect("mask").len() as u32;
        if let Ok(target) = normalize(&selector, host.torch, || Ok(visible)) {
            prop_assert_ne!(target.family, Family::Cuda);
        }
    }

    #[test]
    fn explicit_ordinals_survive_resolution(host in random_host(), selector in random_selector()) {
        let visible = host.visible().expect("mask").len() as u32;
        if let Ok(target) = normalize(&selector, host.torch, || Ok(visible)) {
            let device = to_torch_device(&target);
            match explicit_ordinal(&selector) {
                Some(n) if target.family != Family::Cpu => {
                    prop_assert_eq!(target.ordinal, Some(n));
                    prop_assert_eq!(device.index, Some(n));
                }
                _ => prop_assert_eq!(device.index, None, "a family target resolves indexless"),
            }
        }
    }

    #[test]
    fn validation_on_random_hosts_keeps_the_seed_invariants(
        host in random_host(),
        selector in random_selector(),
        kernel_index in any::<prop::sample::Index>(),
    ) {
        let catalog = Catalog::reference();
        let kernel = catalog.iter().nth(kernel_index.index(catalog.len())).expect("kernel");
        let recorder = Recorder::new(Box::new(SimRuntime::new(host.clone()).expect("host")));
        let dispatch = Dispatch::new(&recorder, recorder.trace().clone());
        let result = kernel.warmup(&dispatch, &selector);
        let trace = recorder.trace().entries();
        if let Ok(warmed) = &result {
            prop_assert!(kernel.spec().declares(warmed.validated.target.family));
        }
        if host.torch == TorchBuild::Hip {
            prop_assert_eq!(count(&trace, "nvidia_capability"), 0);
        }
        if matches!(result, Err(ref e) if e.kind().starts_with("unsupported")) {
            prop_assert_eq!(count(&trace, "extension_load"), 0);
        }
        if !host.gpus.is_empty() {
            prop_assert_eq!(recorder.inner().get_device().ok(), Some(host.current));
        }
    }
}
