//! A subject's handshake: the version it speaks, what it can do and record, its kernels' declared contracts,
//! the levels it claims and the fields it observes ([`Capabilities`]), every name checked against devsim's.

use std::collections::{BTreeMap, BTreeSet};

use crate::conformance::Level;
use crate::kernel::Catalog;
use crate::scenario::model::Action;
use crate::subject::SubjectError;
use crate::subject::protocol::{
    ACCEPTED, EventName, FromSubject, KernelDeclaration, KernelEntry, PROTOCOL, Wording,
};
use crate::trace::is_event_name;

use super::session::clip;

mod declarations;

use declarations::{arch_rules, tolerances};

/// What a subject said it can do.
#[derive(Debug, Clone, PartialEq)]
pub struct Capabilities {
    /// The protocol version it speaks.
    pub protocol: u32,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The actions it performs.
    pub actions: Vec<String>,
    /// The devsim kernels it maps.
    pub kernels: Vec<String>,
    /// The events it records.
    pub events: Vec<String>,
    /// Whose wording its error messages use.
    pub messages: Wording,
    /// Its kernels' own declared contracts (protocol 2; empty for protocol 1).
    pub declared: Vec<KernelDeclaration>,
    /// The levels it claims beyond `policy`.
    pub levels: BTreeSet<Level>,
    /// Per action, the fields it observes; `None`: every field (protocol 1).
    pub observes: Option<BTreeMap<String, BTreeSet<String>>>,
    /// Whether it can run scenarios live, on the real machine.
    pub live: bool,
    /// The import packages of the project under test, inside which every `decided_by` must lie.
    pub packages: Vec<String>,
}

impl Capabilities {
    /// Whether its error messages are devsim's, word for word.
    pub fn compares_messages(&self) -> bool {
        self.messages == Wording::Devsim
    }

    /// A warning for the run's output, if the subject speaks a deprecated protocol.
    pub fn deprecation(&self) -> Option<String> {
        (self.protocol < PROTOCOL).then(|| {
            format!(
                "warning: subject {} speaks protocol {}, which is deprecated: it declares no contract, so contract expectations are not applicable to it; protocol {PROTOCOL} adds declared kernels, levels and observed fields (docs/subject-protocol.md)",
                self.name, self.protocol
            )
        })
    }
}

/// Reads a subject's handshake line as devsim does at start: the version first (another version may well
/// have other fields), then the message, its capabilities for that version, and every name in it. The
/// error of a [`SubjectError::Handshake`] carries no stderr here.
pub fn handshake(subject: &str, line: &str) -> Result<Capabilities, SubjectError> {
    let problem = |problem: String| SubjectError::Handshake {
        subject: subject.to_string(),
        problem,
        stderr: String::new(),
    };
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(line) {
        if value.get("type").and_then(|t| t.as_str()) == Some("handshake") {
            let protocol = value.get("protocol");
            let accepted = protocol
                .and_then(|p| p.as_u64())
                .is_some_and(|p| ACCEPTED.iter().any(|a| u64::from(*a) == p));
            if !accepted {
                return Err(SubjectError::ProtocolVersion {
                    subject: subject.to_string(),
                    got: protocol.map_or("(none)".into(), ToString::to_string),
                    expected: PROTOCOL,
                });
            }
        }
    }
    let capabilities = match serde_json::from_str::<FromSubject>(line) {
        Ok(FromSubject::Handshake {
            protocol,
            subject: info,
            actions,
            kernels,
            events,
            messages,
            levels,
            observes,
            live,
            packages,
        }) => capabilities(
            protocol, info, actions, kernels, events, messages, levels, observes, live,
        )
        .and_then(|c| with_packages(c, packages))
        .map_err(|why| problem(format!("{why} in `{}`", clip(line))))?,
        Ok(_) => {
            return Err(problem(format!(
                "expected a handshake, got `{}`",
                clip(line)
            )));
        }
        Err(error) => {
            return Err(problem(format!(
                "`{}` is not a protocol message: {error}",
                clip(line)
            )));
        }
    };
    check_names(&capabilities)?;
    Ok(capabilities)
}

/// The capabilities a handshake states, checked against its protocol version: protocol 1 names kernels,
/// protocol 2 declares each once, with families devsim knows.
#[allow(clippy::too_many_arguments)]
pub(super) fn capabilities(
    protocol: u32,
    subject: crate::subject::protocol::SubjectInfo,
    actions: Vec<String>,
    kernels: Vec<KernelEntry>,
    events: Vec<EventName>,
    messages: Wording,
    levels: Vec<Level>,
    observes: Option<BTreeMap<String, Vec<String>>>,
    live: bool,
) -> Result<Capabilities, String> {
    let mut names = Vec::with_capacity(kernels.len());
    let mut declared = Vec::new();
    for entry in kernels {
        if names.iter().any(|n: &String| n == entry.name()) {
            return Err(format!("kernel `{}` is declared twice", entry.name()));
        }
        names.push(entry.name().to_string());
        match entry {
            KernelEntry::Name(name) if protocol >= 2 => {
                return Err(format!(
                    "kernel `{name}` is a bare name: protocol 2 declares each kernel as an object with its `name` and `families`"
                ));
            }
            KernelEntry::Name(_) => {}
            KernelEntry::Declared(declaration) if protocol < 2 => {
                return Err(format!(
                    "kernel `{}` is declared as an object: protocol 1 lists names only",
                    declaration.name
                ));
            }
            KernelEntry::Declared(declaration) => {
                for family in &declaration.families {
                    let known = crate::vocab::Family::EVERY
                        .iter()
                        .any(|f| f.as_str() == family);
                    if !known {
                        return Err(format!(
                            "kernel `{}` declares family `{family}`, which does not exist (expected cpu, cuda, rocm, xpu, mps or all)",
                            declaration.name
                        ));
                    }
                }
                declared.push(declaration);
            }
        }
    }
    for declaration in &declared {
        tolerances(declaration, &names)?;
        if let Some(rules) = &declaration.arch {
            arch_rules(&declaration.name, rules)?;
        }
    }
    if protocol < 2 && (!levels.is_empty() || observes.is_some() || live) {
        return Err("`levels`, `observes` and `live` are protocol 2 fields".into());
    }
    let observes = observes.map(|map| {
        map.into_iter()
            .map(|(action, keys)| (action, keys.into_iter().collect()))
            .collect()
    });
    Ok(Capabilities {
        protocol,
        name: subject.name,
        version: subject.version,
        actions,
        kernels: names,
        events: events.iter().map(ToString::to_string).collect(),
        messages,
        declared,
        levels: levels.into_iter().collect(),
        observes,
        live,
        packages: Vec::new(),
    })
}

/// `capabilities` with the project's packages: dotted Python package names (`gptqmodel`), protocol 2 only.
fn with_packages(
    mut capabilities: Capabilities,
    packages: Vec<String>,
) -> Result<Capabilities, String> {
    if packages.is_empty() {
        return Ok(capabilities);
    }
    if capabilities.protocol < 2 {
        return Err("`packages` is a protocol 2 field".into());
    }
    for package in &packages {
        let dotted = !package.is_empty()
            && package.split('.').all(|part| {
                !part.is_empty()
                    && part.chars().all(|c| c.is_alphanumeric() || c == '_')
                    && !part.starts_with(|c: char| c.is_ascii_digit())
            });
        if !dotted {
            return Err(format!(
                "package `{package}` is not a dotted package name (expected e.g. `gptqmodel`)"
            ));
        }
    }
    capabilities.packages = packages;
    Ok(capabilities)
}

/// Every kernel must be in devsim's reference catalog, every action and event one of devsim's.
pub(super) fn check_names(capabilities: &Capabilities) -> Result<(), SubjectError> {
    let unknown = |what: &'static str, name: &str, expected: String| SubjectError::UnknownName {
        subject: capabilities.name.clone(),
        what,
        name: name.to_string(),
        expected,
    };
    let catalog = Catalog::reference();
    for kernel in &capabilities.kernels {
        if let Err(error) = catalog.get(kernel) {
            let expected = match crate::kernel::catalog::closest(
                kernel,
                catalog.iter().map(|k| k.spec().name.as_ref()),
            ) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!("see `devsim kernels`; {error}"),
            };
            return Err(unknown("kernel", kernel, expected));
        }
    }
    for action in &capabilities.actions {
        if !Action::NAMES.contains(&action.as_str()) {
            return Err(unknown("action", action, Action::NAMES.join(", ")));
        }
    }
    for event in &capabilities.events {
        if !is_event_name(event) {
            return Err(unknown(
                "event",
                event,
                crate::trace::event_names().join(", "),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(protocol: u32, packages: &str) -> Result<Capabilities, SubjectError> {
        let kernels = if protocol >= 2 {
            r#"[{"name": "gptq_torch", "families": ["all"]}]"#
        } else {
            r#"["gptq_torch"]"#
        };
        handshake(
            "s",
            &format!(
                r#"{{"type": "handshake", "protocol": {protocol}, "subject": {{"name": "s", "version": "1"}},
                "actions": ["resolve"], "kernels": {kernels}, "events": [], "packages": {packages}}}"#
            ),
        )
    }

    #[test]
    fn a_handshake_names_the_projects_packages_as_dotted_names() {
        let accepted = with(2, r#"["gptqmodel", "vllm.model_executor"]"#).expect("accepted");
        assert_eq!(accepted.packages, ["gptqmodel", "vllm.model_executor"]);
        for (protocol, packages, problem) in [
            (1, r#"["gptqmodel"]"#, "`packages` is a protocol 2 field"),
            (
                2,
                r#"["gptq/model"]"#,
                "package `gptq/model` is not a dotted package name",
            ),
            (
                2,
                r#"["a..b"]"#,
                "package `a..b` is not a dotted package name",
            ),
            (2, r#"[""]"#, "package `` is not a dotted package name"),
        ] {
            let refused = with(protocol, packages).expect_err(packages).to_string();
            assert!(refused.contains(problem), "{refused}");
        }
    }

    /// A handshake whose `gptq_marlin` declares `tolerance` (and `gptq_torch`, its reference, none).
    fn tolerating(tolerance: &str) -> Result<Capabilities, SubjectError> {
        handshake(
            "s",
            &format!(
                r#"{{"type": "handshake", "protocol": 2, "subject": {{"name": "s", "version": "1"}},
                "actions": ["warmup"], "events": [], "kernels": [
                  {{"name": "gptq_torch", "families": ["all"]}},
                  {{"name": "gptq_marlin", "families": ["cuda"], "tolerances": [{tolerance}]}}]}}"#
            ),
        )
    }

    #[test]
    fn a_declared_tolerance_says_where_the_project_states_it() {
        let stated = r#"{"dtype": "float16", "rtol": 0.15, "atol": 0.001, "reference": "gptq_torch",
            "source": "tests/kernels/test_gptq.py::TestKernelOutput.float16_cases"}"#;
        let accepted = tolerating(stated).expect("accepted");
        assert_eq!(accepted.declared[1].tolerances[0].atol, 0.001);
        let against_oracle = r#"{"dtype": "bfloat16", "rtol": 0, "atol": 0.008, "reference": "fp64_oracle", "source": "t.py::T"}"#;
        assert!(tolerating(against_oracle).is_ok());
        for (tolerance, problem) in [
            (
                r#"{"dtype": "float16", "rtol": 0.15, "atol": 0.001, "reference": "gptq_torch", "source": " "}"#,
                "kernel `gptq_marlin` declares a float16 tolerance without a `source`",
            ),
            (
                r#"{"dtype": "float16", "rtol": 0.15, "atol": 0.001, "reference": "gptq_torch"}"#,
                "missing field `source`",
            ),
            (
                r#"{"dtype": "half", "rtol": 0.15, "atol": 0.001, "reference": "gptq_torch", "source": "t"}"#,
                "declares a tolerance for dtype `half` (expected float16, bfloat16, float32)",
            ),
            (
                r#"{"dtype": "float16", "rtol": -1, "atol": 0.001, "reference": "gptq_torch", "source": "t"}"#,
                "declares a float16 `rtol` of -1 (expected a finite number >= 0)",
            ),
            (
                r#"{"dtype": "float16", "rtol": 0.1, "atol": 0.001, "reference": "awq_torch", "source": "t"}"#,
                "against `awq_torch`, which is neither a declared kernel nor `fp64_oracle`",
            ),
            (
                &format!("{stated}, {stated}"),
                "kernel `gptq_marlin` declares its float16 tolerance twice",
            ),
        ] {
            let refused = tolerating(tolerance).expect_err(tolerance).to_string();
            assert!(refused.contains(problem), "{refused}");
        }
    }

    /// A handshake whose `gptq_marlin` declares `arch` (and `gptq_torch` none).
    fn with_arch(arch: &str) -> Result<Capabilities, SubjectError> {
        handshake(
            "s",
            &format!(
                r#"{{"type": "handshake", "protocol": 2, "subject": {{"name": "s", "version": "1"}},
                "actions": ["select"], "events": [], "kernels": [
                  {{"name": "gptq_torch", "families": ["all"]}},
                  {{"name": "gptq_marlin", "families": ["cuda"], "arch": {arch}}}]}}"#
            ),
        )
    }

    #[test]
    fn declared_arch_rules_are_checked_at_the_handshake() {
        let accepted = with_arch(
            r#"{"min_capability": 80, "max_capability": 120, "gfx": ["gfx942", "gfx12"], "min_smem_optin": 65536,
                "source": "vllm.model_executor.kernels.linear.mixed_precision.marlin:MarlinLinearKernel.get_min_capability"}"#,
        )
        .expect("accepted");
        let rules = accepted.declared[1].arch.as_ref().expect("declared");
        assert_eq!(rules.min_capability, Some(80));
        assert_eq!(rules.gfx, ["gfx942", "gfx12"]);
        assert!(accepted.declared[0].arch.is_none(), "optional");
        for (arch, problem) in [
            (r#"{"min_capabilty": 80}"#, "unknown field `min_capabilty`"),
            (
                r#"{"min_capability": "8.0"}"#,
                "invalid type: string \"8.0\"",
            ),
            (r#"{"min_capability": -80}"#, "invalid value: integer `-80`"),
            (r#"{"gfx": "gfx942"}"#, "invalid type: string \"gfx942\""),
            (
                r#"{}"#,
                "kernel `gptq_marlin` declares `arch` without a rule",
            ),
            (
                r#"{"source": "x"}"#,
                "kernel `gptq_marlin` declares `arch` without a rule",
            ),
            (
                r#"{"min_capability": 8}"#,
                "declares an arch `min_capability` of 8 (expected major·10 + minor",
            ),
            (
                r#"{"max_capability": 1000}"#,
                "declares an arch `max_capability` of 1000",
            ),
            (
                r#"{"min_capability": 90, "max_capability": 80}"#,
                "`min_capability` of 90 above its `max_capability` of 80",
            ),
            (
                r#"{"gfx": ["gfx942:sramecc+"]}"#,
                "declares arch gfx `gfx942:sramecc+` (expected a base target or family prefix",
            ),
            (r#"{"gfx": ["sm_90"]}"#, "declares arch gfx `sm_90`"),
            (r#"{"gfx": ["gfx"]}"#, "declares arch gfx `gfx`"),
            (r#"{"gfx": ["GFX942"]}"#, "declares arch gfx `GFX942`"),
            (
                r#"{"gfx": ["gfx11", "gfx11"]}"#,
                "declares arch gfx `gfx11` twice",
            ),
            (
                r#"{"min_smem_optin": 0}"#,
                "declares an arch `min_smem_optin` of 0",
            ),
            (
                r#"{"min_capability": 80, "source": " "}"#,
                "declares arch rules with an empty `source`",
            ),
        ] {
            let refused = with_arch(arch).expect_err(arch).to_string();
            assert!(refused.contains(problem), "{arch}: {refused}");
        }
    }
}
