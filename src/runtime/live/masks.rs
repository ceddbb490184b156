//! The visible-device mask check's model: the masks worth checking on a real machine (every index, every
//! order, subsets, UUID prefixes, and masks that hide everything or that the driver rejects), what devsim
//! predicts the runtime shows under each, and the judgement of that prediction against what the driver showed
//! a process with only that mask set ([`DriverView`]). `devsim probe --check-masks` runs the processes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::driver::{DriverProbe, probe_gpu_driver};
use super::machine::{RealGpu, RealMachine};
use crate::visible::{runtime_rejects, runtime_view};
use crate::vocab::{Arch, TorchBuild};

/// What the driver shows one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum DriverView {
    /// The driver shows these GPUs, in ordinal order.
    Gpus {
        /// The build whose driver answered.
        build: TorchBuild,
        /// Each GPU.
        gpus: Vec<ViewGpu>,
    },
    /// The driver initialised (or said "no device") but shows no GPU.
    NoGpu {
        /// What it answered.
        detail: String,
    },
    /// The driver's init call failed: under a mask, the driver rejects it.
    Rejected {
        /// The driver's error.
        detail: String,
    },
    /// The driver failed after init, or none is installed.
    Unavailable {
        /// Why.
        detail: String,
    },
}

/// One GPU as the driver shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewGpu {
    /// Its name.
    pub name: String,
    /// Its UUID (`GPU-…` on NVIDIA, the 16-hex-digit serial on AMD).
    pub uuid: String,
    /// Its arch.
    pub arch: String,
}

impl DriverView {
    /// What the drivers show this process.
    pub fn read() -> Self {
        match probe_gpu_driver() {
            DriverProbe::Ready(driver) => {
                match RealMachine::read(driver.as_ref(), driver.build()) {
                    Ok(machine) => DriverView::Gpus {
                        build: machine.build,
                        gpus: machine.gpus.iter().map(view_gpu).collect(),
                    },
                    Err(error) => DriverView::Unavailable {
                        detail: format!("read the GPUs of {}: {error}", driver.path()),
                    },
                }
            }
            DriverProbe::NoVisibleGpu {
                library, detail, ..
            } => DriverView::NoGpu {
                detail: format!("{library}: {detail}"),
            },
            DriverProbe::Failing {
                error,
                at_init: true,
                ..
            } => DriverView::Rejected { detail: error },
            DriverProbe::Failing { library, error, .. } => DriverView::Unavailable {
                detail: format!("{library} is present but failing: {error}"),
            },
            DriverProbe::Absent(errors) => DriverView::Unavailable {
                detail: format!(
                    "no GPU driver: {}",
                    errors
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            },
        }
    }
}

fn view_gpu(gpu: &RealGpu) -> ViewGpu {
    ViewGpu {
        name: gpu.name.clone(),
        uuid: gpu.uuid.clone(),
        arch: gpu.arch.to_string(),
    }
}

/// One visible-device mask to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mask {
    /// The variable set.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
}

impl std::fmt::Display for Mask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={:?}", self.variable, self.value)
    }
}

/// The masks worth checking on `machine`: every single index, every order of the GPUs (up to four),
/// every subset in both orders (up to four GPUs), each GPU's UUID in full and as an 8-digit prefix,
/// every UUID in reverse order, and masks that hide everything or that the driver should reject.
pub fn masks_for(machine: &RealMachine) -> Vec<Mask> {
    let n = machine.gpus.len();
    let mut values: Vec<(&'static str, String)> = Vec::new();
    let ordinal_variable = match machine.build {
        TorchBuild::Hip => "HIP_VISIBLE_DEVICES",
        _ => "CUDA_VISIBLE_DEVICES",
    };
    let join = |indices: &[usize]| -> String {
        indices
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    for i in 0..n {
        values.push((ordinal_variable, i.to_string()));
    }
    if n <= 4 {
        for order in permutations(&(0..n).collect::<Vec<_>>()) {
            values.push((ordinal_variable, join(&order)));
        }
        for bits in 1..(1usize << n) - 1 {
            let subset: Vec<usize> = (0..n).filter(|i| bits & (1 << i) != 0).collect();
            values.push((ordinal_variable, join(&subset)));
            let reversed: Vec<usize> = subset.iter().rev().copied().collect();
            values.push((ordinal_variable, join(&reversed)));
        }
    }
    let uuids: Vec<String> = machine
        .gpus
        .iter()
        .map(|gpu| match machine.build {
            TorchBuild::Hip => format!("GPU-{}", gpu.uuid),
            _ => gpu.uuid.clone(),
        })
        .collect();
    for uuid in &uuids {
        values.push((ordinal_variable, uuid.clone()));
        values.push((ordinal_variable, uuid.chars().take(12).collect()));
    }
    let reversed: Vec<String> = uuids.iter().rev().cloned().collect();
    values.push((ordinal_variable, reversed.join(",")));
    // Masks that hide everything, end early, or that the driver rejects.
    values.push((ordinal_variable, String::new()));
    values.push((ordinal_variable, n.to_string()));
    values.push((ordinal_variable, format!("0,{n}")));
    values.push((ordinal_variable, "-1".into()));
    values.push((ordinal_variable, "0,0".into()));
    values.push((ordinal_variable, "GPU-ffffffff-0000".into()));
    if machine.build == TorchBuild::Hip {
        for i in 0..n {
            values.push(("ROCR_VISIBLE_DEVICES", i.to_string()));
        }
        values.push((
            "ROCR_VISIBLE_DEVICES",
            join(&(0..n).rev().collect::<Vec<_>>()),
        ));
        for uuid in &uuids {
            values.push(("ROCR_VISIBLE_DEVICES", uuid.clone()));
        }
        values.push(("ROCR_VISIBLE_DEVICES", String::new()));
        values.push(("CUDA_VISIBLE_DEVICES", (n.saturating_sub(1)).to_string()));
    } else {
        values.push((ordinal_variable, "MIG-0".into()));
    }
    let mut masks: Vec<Mask> = Vec::new();
    for (variable, value) in values {
        let mask = Mask { variable, value };
        if !masks.contains(&mask) {
            masks.push(mask);
        }
    }
    masks
}

/// Every order of `items`.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (index, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(index);
        for mut tail in permutations(&rest) {
            tail.insert(0, *first);
            all.push(tail);
        }
    }
    all
}

/// What devsim predicts the driver shows under one mask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prediction {
    /// These GPUs (name and UUID), in ordinal order.
    Gpus(Vec<(String, String)>),
    /// The driver's init call fails, and why.
    Rejected(String),
}

/// devsim's prediction for `mask` on `machine` (read with no mask): the runtime view.
pub fn predict(machine: &RealMachine, mask: &Mask) -> Prediction {
    let env = BTreeMap::from([(mask.variable.to_string(), mask.value.clone())]);
    if let Some(why) = runtime_rejects(machine.build, &env) {
        return Prediction::Rejected(why);
    }
    let uuids: Vec<String> = machine.gpus.iter().map(|gpu| gpu.uuid.clone()).collect();
    Prediction::Gpus(
        runtime_view(machine.build, &env, &uuids)
            .into_iter()
            .filter_map(|physical| machine.gpus.get(physical))
            .map(|gpu| (gpu.name.clone(), gpu.uuid.clone()))
            .collect(),
    )
}

/// One mask's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaskVerdict {
    /// The driver shows what devsim predicts.
    Agree,
    /// They differ; both lists, as text.
    Disagree {
        /// devsim's prediction.
        predicted: String,
        /// What the driver showed.
        driver: String,
    },
    /// Not comparable, and why.
    Skip(String),
}

/// Compares a prediction with what the driver showed.
pub fn judge(mask: &Mask, predicted: &Prediction, view: &DriverView) -> MaskVerdict {
    let listed = |gpus: &[(String, String)]| -> String {
        if gpus.is_empty() {
            return "no GPU".into();
        }
        gpus.iter()
            .enumerate()
            .map(|(ordinal, (name, uuid))| format!("{ordinal}: {name} {uuid}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let shown = match view {
        DriverView::Gpus { gpus, .. } => gpus
            .iter()
            .map(|gpu| (gpu.name.clone(), gpu.uuid.clone()))
            .collect(),
        DriverView::NoGpu { .. } => Vec::new(),
        DriverView::Rejected { detail } => {
            return match predicted {
                Prediction::Rejected(_) => MaskVerdict::Agree,
                Prediction::Gpus(_) => MaskVerdict::Skip(format!(
                    "the driver rejects the mask {mask} ({detail}); devsim does not model that rejection"
                )),
            };
        }
        DriverView::Unavailable { detail } => {
            return MaskVerdict::Skip(format!("no driver answer under {mask}: {detail}"));
        }
    };
    match predicted {
        Prediction::Gpus(gpus) if *gpus == shown => MaskVerdict::Agree,
        Prediction::Gpus(gpus) => MaskVerdict::Disagree {
            predicted: listed(gpus),
            driver: listed(&shown),
        },
        Prediction::Rejected(why) => MaskVerdict::Disagree {
            predicted: format!("init fails: {why}"),
            driver: listed(&shown),
        },
    }
}

/// The machine a [`DriverView::Gpus`] describes (shared memory is not compared).
pub fn machine_of(build: TorchBuild, gpus: &[ViewGpu]) -> Result<RealMachine, String> {
    let gpus = gpus
        .iter()
        .map(|gpu| {
            Ok(RealGpu {
                arch: gpu
                    .arch
                    .parse::<Arch>()
                    .map_err(|error| format!("read arch `{}`: {error}", gpu.arch))?,
                name: gpu.name.clone(),
                smem_optin: 0,
                uuid: gpu.uuid.clone(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(RealMachine {
        build,
        library: None,
        fake: false,
        gpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200x2() -> RealMachine {
        let gpu = |uuid: &str| RealGpu {
            arch: "sm_90".parse().expect("arch"),
            name: "NVIDIA H200".into(),
            smem_optin: 232_448,
            uuid: uuid.into(),
        };
        RealMachine {
            build: TorchBuild::Cuda,
            library: None,
            fake: false,
            gpus: vec![
                gpu("GPU-5e8a1c2d-0b3f-4a6e-9c7d-1f2e3d4c5b6a"),
                gpu("GPU-a1b2c3d4-0000-4000-8000-000000000001"),
            ],
        }
    }

    fn mask(value: &str) -> Mask {
        Mask {
            variable: "CUDA_VISIBLE_DEVICES",
            value: value.into(),
        }
    }

    #[test]
    fn masks_cover_orders_subsets_prefixes_and_rejections() {
        let values: Vec<String> = masks_for(&h200x2()).into_iter().map(|m| m.value).collect();
        for expected in ["0", "1", "0,1", "1,0", "GPU-5e8a1c2d", "", "2", "0,0"] {
            assert!(
                values.contains(&expected.to_string()),
                "{expected} in {values:?}"
            );
        }
    }

    #[test]
    fn a_uuid_prefix_predicts_that_gpu() {
        let machine = h200x2();
        assert_eq!(
            predict(&machine, &mask("GPU-a1b2c3d4")),
            Prediction::Gpus(vec![("NVIDIA H200".into(), machine.gpus[1].uuid.clone())])
        );
        assert!(matches!(
            predict(&machine, &mask("0,0")),
            Prediction::Rejected(_)
        ));
    }

    #[test]
    fn a_different_order_disagrees_with_both_lists() {
        let machine = h200x2();
        let view = DriverView::Gpus {
            build: TorchBuild::Cuda,
            gpus: machine.gpus.iter().map(view_gpu).collect(),
        };
        let verdict = judge(&mask("1,0"), &predict(&machine, &mask("1,0")), &view);
        let MaskVerdict::Disagree { predicted, driver } = verdict else {
            panic!("expected a disagreement, got {verdict:?}");
        };
        assert!(
            predicted.starts_with("0: NVIDIA H200 GPU-a1b2c3d4"),
            "{predicted}"
        );
        assert!(
            driver.starts_with("0: NVIDIA H200 GPU-5e8a1c2d"),
            "{driver}"
        );
    }

    #[test]
    fn an_unpredicted_rejection_is_a_skip_that_says_so() {
        let view = DriverView::Rejected {
            detail: "initialize libcuda.so.1: cuInit: CUDA_ERROR_INVALID_DEVICE".into(),
        };
        let verdict = judge(&mask("1"), &predict(&h200x2(), &mask("1")), &view);
        let MaskVerdict::Skip(reason) = verdict else {
            panic!("expected a skip, got {verdict:?}");
        };
        assert!(reason.contains("the driver rejects the mask"), "{reason}");
        assert_eq!(
            judge(&mask("0,0"), &predict(&h200x2(), &mask("0,0")), &view),
            MaskVerdict::Agree
        );
    }
}
