//! `devsim probe --check-masks`: devsim's model of visible-device masks checked against the real driver.
//! The machine is read in a child with no mask; then, for each mask generated from its GPUs (every index,
//! every order, subsets, UUID prefixes, and masks that hide everything or that the driver rejects), a child
//! with only that variable set reports what the driver shows (`devsim driver-view`), and the ordinals,
//! names and UUIDs are compared with the runtime view devsim predicts. The model (the masks, the
//! prediction, the judgement) is `runtime::live::masks`; this module runs the children and says how each
//! mask came out.

use std::path::Path;
use std::process::Command;

use thiserror::Error;

use crate::runtime::live::masks::{
    DriverView, Mask, MaskVerdict, Prediction, judge, machine_of, masks_for, predict,
};
use crate::visible::VISIBLE_DEVICE_VARIABLES;

/// Why the masks could not be checked.
#[derive(Debug, Error)]
pub enum MaskCheckError {
    /// The driver's view without a mask does not describe a machine devsim can model.
    #[error("{0}")]
    Machine(String),
}

/// How many masks agreed with devsim's model, disagreed, or could not be compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaskTally {
    /// The driver showed what devsim predicts.
    pub agree: usize,
    /// They differ.
    pub disagree: usize,
    /// Not comparable.
    pub skipped: usize,
}

/// Checks every mask generated from the machine, running `exe driver-view` once without a mask and once
/// per mask; each line of the report goes to `show` as it is known.
pub fn check_masks(exe: &Path, show: &mut dyn FnMut(&str)) -> Result<MaskTally, MaskCheckError> {
    let machine = match view_in_child(exe, None) {
        DriverView::Gpus { build, gpus } => {
            machine_of(build, &gpus).map_err(MaskCheckError::Machine)?
        }
        other => {
            show(&format!(
                "masks: 0 checked, all skipped: the driver shows no GPU without a mask ({other:?})"
            ));
            return Ok(MaskTally::default());
        }
    };
    let names: Vec<String> = machine
        .gpus
        .iter()
        .map(|gpu| format!("{} {}", gpu.name, gpu.uuid))
        .collect();
    show(&format!(
        "machine ({} build, no mask): {}",
        machine.build,
        names.join(", ")
    ));
    let mut tally = MaskTally::default();
    for mask in masks_for(&machine) {
        let predicted = predict(&machine, &mask);
        let view = view_in_child(exe, Some(&mask));
        let verdict = judge(&mask, &predicted, &view);
        match verdict {
            MaskVerdict::Agree => tally.agree += 1,
            MaskVerdict::Skip(_) => tally.skipped += 1,
            MaskVerdict::Disagree { .. } => tally.disagree += 1,
        }
        show(&line(&mask, &predicted, &verdict));
    }
    show(&format!(
        "masks: {} agree, {} disagree, {} skipped",
        tally.agree, tally.disagree, tally.skipped
    ));
    Ok(tally)
}

/// One mask's line (two more for a disagreement).
fn line(mask: &Mask, predicted: &Prediction, verdict: &MaskVerdict) -> String {
    match verdict {
        MaskVerdict::Agree => {
            let shown = match predicted {
                Prediction::Rejected(_) => "init fails, as predicted".to_string(),
                Prediction::Gpus(gpus) if gpus.is_empty() => "no GPU".to_string(),
                Prediction::Gpus(gpus) => gpus
                    .iter()
                    .map(|(_, uuid)| uuid.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            format!("agree     {mask}: {shown}")
        }
        MaskVerdict::Skip(reason) => format!("skip      {mask}: {reason}"),
        MaskVerdict::Disagree { predicted, driver } => format!(
            "DISAGREE  {mask}:\n    devsim predicts: {predicted}\n    the driver shows: {driver}"
        ),
    }
}

/// Runs `exe driver-view` with only `mask` set (none when `None`) and reads its answer.
fn view_in_child(exe: &Path, mask: Option<&Mask>) -> DriverView {
    let mut command = Command::new(exe);
    command.arg("driver-view");
    for variable in VISIBLE_DEVICE_VARIABLES {
        command.env_remove(variable);
    }
    if let Some(mask) = mask {
        command.env(mask.variable, &mask.value);
    }
    match command.output() {
        Err(error) => DriverView::Unavailable {
            detail: format!("start {} driver-view: {error}", exe.display()),
        },
        Ok(output) => {
            serde_json::from_slice(&output.stdout).unwrap_or_else(|error| DriverView::Unavailable {
                detail: format!(
                    "read the child's answer ({error}, exit {:?}): {}",
                    output.status.code(),
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
            })
        }
    }
}
