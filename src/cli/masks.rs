//! `devsim probe --check-masks`: devsim's model of visible-device masks checked against the real
//! driver. The machine is read in a child with no mask; then, for each mask generated from its GPUs
//! (every index, every order, subsets, UUID prefixes, and masks that hide everything or that the driver
//! rejects), a child with only that variable set reports what the driver shows (`devsim driver-view`),
//! and the ordinals, names and UUIDs are compared with the runtime view devsim predicts. The model (the masks,
//! the prediction, the judgement) is `runtime::live::masks`; this module runs the children and prints.

use std::path::Path;
use std::process::Command;

use crate::cli::{CliError, RunOutcome};
use crate::runtime::live::masks::{
    DriverView, Mask, MaskVerdict, Prediction, judge, machine_of, masks_for, predict,
};
use crate::visible::VISIBLE_DEVICE_VARIABLES;

/// `devsim driver-view`: prints [`DriverView::read`] as one JSON line.
pub fn driver_view() -> Result<(), CliError> {
    let text = serde_json::to_string(&DriverView::read())?;
    say(&text);
    Ok(())
}

fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
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

/// `devsim probe --check-masks`.
pub fn check() -> Result<RunOutcome, CliError> {
    let exe = std::env::current_exe()?;
    let machine = match view_in_child(&exe, None) {
        DriverView::Gpus { build, gpus } => {
            machine_of(build, &gpus).map_err(|error| CliError::Io(std::io::Error::other(error)))?
        }
        other => {
            say(&format!(
                "masks: 0 checked, all skipped: the driver shows no GPU without a mask ({other:?})"
            ));
            return Ok(RunOutcome::Passed);
        }
    };
    let names: Vec<String> = machine
        .gpus
        .iter()
        .map(|gpu| format!("{} {}", gpu.name, gpu.uuid))
        .collect();
    say(&format!(
        "machine ({} build, no mask): {}",
        machine.build,
        names.join(", ")
    ));
    let (mut agree, mut skipped, mut disagree) = (0, 0, 0);
    for mask in masks_for(&machine) {
        let predicted = predict(&machine, &mask);
        let view = view_in_child(&exe, Some(&mask));
        match judge(&mask, &predicted, &view) {
            MaskVerdict::Agree => {
                agree += 1;
                let shown = match &predicted {
                    Prediction::Rejected(_) => "init fails, as predicted".to_string(),
                    Prediction::Gpus(gpus) if gpus.is_empty() => "no GPU".to_string(),
                    Prediction::Gpus(gpus) => gpus
                        .iter()
                        .map(|(_, uuid)| uuid.clone())
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                say(&format!("agree     {mask}: {shown}"));
            }
            MaskVerdict::Skip(reason) => {
                skipped += 1;
                say(&format!("skip      {mask}: {reason}"));
            }
            MaskVerdict::Disagree { predicted, driver } => {
                disagree += 1;
                say(&format!(
                    "DISAGREE  {mask}:\n    devsim predicts: {predicted}\n    the driver shows: {driver}"
                ));
            }
        }
    }
    say(&format!(
        "masks: {agree} agree, {disagree} disagree, {skipped} skipped"
    ));
    if disagree > 0 {
        return Ok(RunOutcome::MasksDisagree { count: disagree });
    }
    Ok(RunOutcome::Passed)
}
