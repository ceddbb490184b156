//! One answer line read and judged as the protocol client judges it mid-scenario, without a process: for
//! replaying a subject's transcript and for fuzzing devsim's side of the protocol (`fuzz/`, `--target
//! answers`). A line the client would not accept is an `Err` with the client's reason, never a panic.

use std::time::Duration;

use crate::runner::Status;
use crate::runner::run::StepReport;
use crate::scenario::Scenario;
use crate::subject::decode;
use crate::subject::handshake::Capabilities;
use crate::subject::judge::Judge;
use crate::subject::protocol::FromSubject;

/// What one observed answer to a step came to.
#[derive(Debug)]
pub struct Judged {
    /// The step's report: what was observed, its mismatches and trace.
    pub step: StepReport,
    /// The scenario's verdict had this been its only step.
    pub status: Status,
}

/// Judges `line` as the subject's answer to step `number` (1-based) of `scenario`, from a subject with
/// `capabilities`. `Err`: why the client would refuse the line (the scenario would fail with it).
pub fn judge_answer(
    capabilities: &Capabilities,
    scenario: &Scenario,
    number: usize,
    line: &str,
) -> Result<Judged, String> {
    let step = scenario
        .steps
        .iter()
        .find(|step| step.number == number)
        .ok_or_else(|| format!("scenario {} has no step {number}", scenario.name))?;
    let message = match serde_json::from_str::<FromSubject>(line) {
        Ok(FromSubject::Observed(message)) => message,
        Ok(_) => return Err("expected an `observed` answer".into()),
        Err(error) => return Err(format!("not a protocol message: {error}")),
    };
    if message.scenario != scenario.name || message.number != number {
        return Err("an answer out of order".into());
    }
    let (observed, trace) =
        decode::observed(&message, &capabilities.events, &capabilities.packages)
            .map_err(|invalid| invalid.to_string())?;
    decode::numerics(
        observed.numerics.as_ref(),
        step.action.kernel(),
        &capabilities.declared,
    )
    .map_err(|invalid| invalid.to_string())?;
    let mut judge = Judge::for_host(capabilities, &scenario.host);
    let mismatches = judge.step(step, &message, &observed, &trace);
    let trace_mismatches = judge.scenario(&scenario.trace_rules, &scenario.trace_levels, &trace);
    let status = if mismatches.is_empty() && trace_mismatches.is_empty() {
        judge.verdict()
    } else {
        Status::Failed
    };
    Ok(Judged {
        step: StepReport::of(step, observed, mismatches, trace, Duration::ZERO),
        status,
    })
}
