//! Conversions from devsim's internal results into the typed tool output of [`crate::output`].

use std::time::Duration;

use crate::host::{Fault, Gpu, HostSpec};
use crate::kernel::KernelSpec;
use crate::kernel::audit::{Inventory, InventoryRow, RocmDecision};
use crate::kernel::contract::NvidiaRule;
use crate::output::{
    ArchRulesOutput, AuditDecision, AuditOutput, CapabilityOutput, CheckedOutput, FaultOutput,
    GpuOutput, HostOutput, KernelOutput, LoadErrorOutput, MismatchOutput, NvidiaRuleOutput,
    ScenarioOutput, StepOutput, SummaryOutput, TraceDevice, TraceEntryOutput,
};
use crate::runner::ScenarioReport;
use crate::runner::Summary;
use crate::runner::coverage::{Coverage, Threshold};
use crate::runner::expect::Mismatch;
use crate::runner::run::StepReport;
use crate::scenario::{LoadError, Scenario};
use crate::trace::Entry;
use crate::vocab::ComputeCapability;

/// One scenario's result, with the scenario's tags, host and matrix parameters, and its wall time.
pub fn scenario(report: &ScenarioReport, scenario: &Scenario, took: Duration) -> ScenarioOutput {
    let (status, reason) = (report.status.outcome(), report.status.reason());
    ScenarioOutput {
        name: report.name.clone(),
        path: report.path.clone(),
        description: report.description.clone(),
        tags: scenario.tags.clone(),
        host: scenario.host.name.clone(),
        params: scenario.params.iter().cloned().collect(),
        status,
        reason,
        duration_secs: took.as_secs_f64(),
        steps: report.steps.iter().map(step).collect(),
        trace_mismatches: report.trace_mismatches.iter().map(mismatch).collect(),
    }
}

fn step(report: &StepReport) -> StepOutput {
    StepOutput {
        number: report.number,
        line: report.line,
        action: report.action.clone(),
        kernel: report.kernel.clone(),
        device: report.device.clone(),
        observed: report.observed.clone(),
        mismatches: report.mismatches.iter().map(mismatch).collect(),
        trace: report.trace.iter().map(entry).collect(),
        repetitions_elided: (!report.elided.is_empty()).then(|| crate::output::ElidedOutput {
            repetitions: report.elided.repetitions(),
            first: [report.elided.first.start, report.elided.first.end],
        }),
    }
}

fn entry(entry: &Entry) -> TraceEntryOutput {
    match entry {
        Entry::Call {
            device, detail, ok, ..
        } => TraceEntryOutput::Call {
            call: entry.name().to_string(),
            device: device
                .as_ref()
                .map(|device| TraceDevice::parse(&device.words())),
            detail: detail.as_ref().map(ToString::to_string),
            ok: *ok,
        },
        Entry::Gate { passed, detail, .. } => TraceEntryOutput::Gate {
            gate: entry.name().to_string(),
            passed: *passed,
            detail: detail.to_string(),
        },
        Entry::ContextSwitch { device, during, ok } => TraceEntryOutput::ContextSwitch {
            device: TraceDevice::parse(&device.words()),
            during: during.to_string(),
            ok: *ok,
        },
        Entry::Reported { device, detail, .. } => TraceEntryOutput::Reported {
            event: entry.name().to_string(),
            device: device.as_deref().map(TraceDevice::parse),
            detail: detail.clone(),
        },
    }
}

fn mismatch(m: &Mismatch) -> MismatchOutput {
    MismatchOutput {
        key: m.key.clone(),
        level: m.conformance.as_ref().map(ToString::to_string),
        expected: m.expected.clone(),
        actual: m.actual.clone(),
    }
}

/// One distinct finding, with whether a live run showed it.
pub fn finding(
    finding: &crate::findings::Finding,
    mark: &crate::live_record::Mark,
) -> crate::output::FindingOutput {
    use crate::live_record::Mark;
    use crate::output::{LiveMarkOutput, LiveStatusOutput};
    let s = &finding.signature;
    let live = match mark {
        Mark::Simulated => LiveMarkOutput {
            status: LiveStatusOutput::Simulated,
            devices: Vec::new(),
            date: None,
            fake_driver: false,
        },
        Mark::Confirmed {
            devices,
            date,
            fake_driver,
        } => LiveMarkOutput {
            status: LiveStatusOutput::Confirmed,
            devices: devices.clone(),
            date: Some(date.clone()),
            fake_driver: *fake_driver,
        },
    };
    crate::output::FindingOutput {
        check: s.check.clone(),
        action: s.action.clone(),
        form: s.form.clone(),
        build: s.build.clone(),
        kernel: s.kernel.clone(),
        key: s.key.clone(),
        expected: s.expected.clone(),
        actual: s.actual.clone(),
        decided_by: finding.decided_by(),
        scenarios: finding.scenarios.clone(),
        live: Some(live),
    }
}

/// A file that failed to load.
pub fn load_error(error: &LoadError) -> LoadErrorOutput {
    LoadErrorOutput {
        path: error.path.display().to_string(),
        line: error.line,
        column: error.column,
        message: error.message.clone(),
        help: error.help.clone(),
    }
}

/// A run's counts (`failed` counts the files that did not load, as the document always has).
pub fn summary(summary: &Summary) -> SummaryOutput {
    SummaryOutput {
        passed: summary.passed,
        failed: summary.failures(),
        skipped: summary.skipped,
        not_applicable: summary.not_applicable,
        set_aside: summary.set_aside,
        load_errors: summary.load_errors,
        errored: summary.errored,
    }
}

/// A scenario that loaded.
pub fn checked(scenario: &Scenario) -> CheckedOutput {
    CheckedOutput {
        name: scenario.name.clone(),
        path: scenario.path.display().to_string(),
        tags: scenario.tags.clone(),
        steps: scenario.steps.len(),
    }
}

fn capability(cc: ComputeCapability) -> CapabilityOutput {
    CapabilityOutput {
        major: cc.major,
        minor: cc.minor,
    }
}

fn nvidia_rule(rule: &NvidiaRule) -> NvidiaRuleOutput {
    match rule {
        NvidiaRule::AtLeast { min } => NvidiaRuleOutput::AtLeast {
            min: capability(*min),
        },
        NvidiaRule::Range { min, below } => NvidiaRuleOutput::Range {
            min: capability(*min),
            below: capability(*below),
        },
        NvidiaRule::OneOf { set } => NvidiaRuleOutput::OneOf {
            set: set.iter().copied().map(capability).collect(),
        },
    }
}

fn audit(row: &InventoryRow) -> AuditOutput {
    AuditOutput {
        decision: match row.rocm {
            RocmDecision::Admitted => AuditDecision::Admitted,
            RocmDecision::Refused => AuditDecision::Refused,
            RocmDecision::RestrictedByArch => AuditDecision::RestrictedByArch,
        },
        reason: row.reason.clone(),
    }
}

/// One kernel's contract and audit decision.
pub fn kernel(spec: &KernelSpec) -> KernelOutput {
    KernelOutput {
        name: spec.name.to_string(),
        method: spec.method.as_str().to_string(),
        bits: spec.bits.to_vec(),
        families: spec
            .families
            .iter()
            .map(|f| f.as_str().to_string())
            .collect(),
        arch: ArchRulesOutput {
            nvidia: spec.nvidia.as_ref().map(nvidia_rule),
            smem_optin_min: spec.smem_optin_min,
            amd_targets: spec
                .amd_targets
                .as_ref()
                .map(|targets| targets.iter().map(ToString::to_string).collect()),
        },
        extension: spec.extension.as_ref().map(ToString::to_string),
        requires: spec.requires.as_ref().map(ToString::to_string),
        priority: spec.priority,
        selectable: spec.selectable,
        alternative: spec.alternative.as_ref().map(ToString::to_string),
        repacks: spec.repacks,
        rocm_audit: Inventory::reference().row(&spec.name).map(audit),
    }
}

fn gpu(gpu: &Gpu) -> GpuOutput {
    GpuOutput {
        arch: gpu.arch.to_string(),
        name: gpu.name.clone(),
        smem_optin: gpu.smem_optin,
        uuid: gpu.uuid.clone(),
        memory_mib: gpu.memory_mib,
    }
}

fn fault(fault: &Fault) -> FaultOutput {
    FaultOutput {
        call: fault.call.map(|c| c.as_str().to_string()),
        device: fault.device,
        after: fault.after,
        code: fault.code,
        message: fault.message.clone(),
    }
}

/// One host profile.
pub fn host(host: &HostSpec) -> HostOutput {
    HostOutput {
        name: host.name.clone(),
        torch: host.torch.to_string(),
        gpus: host.gpus.iter().map(gpu).collect(),
        foreign_gpus: host.foreign_gpus.iter().map(gpu).collect(),
        current: host.current,
        env: host.env.clone(),
        visible: host.visible().ok(),
        runtime_version: host.runtime_version.clone(),
        arch_list: host.arch_list.clone(),
        faults: host.faults.iter().map(fault).collect(),
    }
}

/// `devsim coverage --format json`: the counts, the threshold they were held to, and the gaps.
pub fn coverage(counted: &Coverage, threshold: &Threshold, gaps: &[String]) -> serde_json::Value {
    serde_json::json!({
        "version": crate::output::VERSION,
        "coverage": counted,
        "threshold": threshold,
        "gaps": gaps,
    })
}
