//! The grouping of failures into findings, case by case.

use std::path::Path;

use super::*;
use crate::conformance::Conformance;
use crate::kernel::Catalog;
use crate::scenario::load::{ProfileSources, parse_scenario};

/// One step of `action` on `kernel` (none: "") for "cuda:1" on a HIP host.
fn one_step(action: &str, kernel: &str) -> Scenario {
    let kernel = match kernel {
        "" => String::new(),
        kernel => format!("kernel = \"{kernel}\"\n"),
    };
    let text = format!(
        "format = 1\ndescription = \"x\"\n[host]\nprofile = \"r9700x2\"\n\
         [[step]]\naction = \"{action}\"\n{kernel}device = \"cuda:1\"\n"
    );
    parse_scenario(
        Path::new("s.toml"),
        &text,
        &Catalog::reference(),
        &ProfileSources::shipped(),
    )
    .expect("loads")
}

fn mismatch(key: &str, rule: &str) -> Mismatch {
    Mismatch {
        key: key.into(),
        expected: "false".into(),
        actual: "true".into(),
        conformance: Some(Conformance::policy(rule)),
    }
}

#[test]
fn a_kernel_admitted_where_it_does_not_belong_is_one_finding_whatever_the_action() {
    let admitted = mismatch("ok", "declared-families");
    let through = |action| signature(&admitted, &one_step(action, "gptq_triton"), Some(1));
    assert_eq!(through("validate"), through("move"));
    assert_eq!(through("validate"), through("warmup"));
    assert_eq!(through("warmup").action, ANY_ACTION);
    assert_ne!(
        through("validate"),
        signature(&admitted, &one_step("validate", "gptq_marlin"), Some(1)),
        "the kernel stays part of it"
    );
    let placed = mismatch("ran_on", "target-context");
    assert_ne!(
        signature(&placed, &one_step("warmup", "gptq_triton"), Some(1)).action,
        ANY_ACTION,
        "a rule that depends on the action keeps it"
    );
}

#[test]
fn a_conditional_expectation_is_the_observation_of_its_plain_key() {
    let scenario = one_step("move", "gptq_torch");
    let plain = signature(
        &mismatch("lands_on", "family-move-current"),
        &scenario,
        Some(1),
    );
    let when_ok = signature(
        &mismatch("when_ok.lands_on", "family-move-current"),
        &scenario,
        Some(1),
    );
    assert_eq!(plain, when_ok);
    assert_eq!(when_ok.key, "lands_on");
}

#[test]
fn one_breakdown_in_many_scenarios_is_one_finding() {
    let first = one_step("validate", "gptq_triton");
    let mut second = first.clone();
    second.name = "other.toml".into();
    second.host.torch = crate::vocab::TorchBuild::Cuda;
    let broke = |scenario: &Scenario| {
        Mismatch::breakdown(
            "subject x",
            format!("`ready` or `unsupported` for scenario {}", scenario.name),
            "no answer within 1.0 s\n  stderr: …",
        )
    };
    let a = signature(&broke(&first), &first, None);
    assert_eq!(a, signature(&broke(&second), &second, None));
    assert_eq!(
        a.expected,
        "`ready` or `unsupported` for scenario <scenario>"
    );
    let other = Mismatch::breakdown("subject x", "`done`", "no answer within 1.0 s");
    assert_ne!(a, signature(&other, &first, None));
}

/// One failed observation of a table case: the step's action and kernel, the host's build, the
/// mismatched key and its rule, and the deciding function and line the subject named (`None`: unknown).
struct Seen {
    action: &'static str,
    kernel: &'static str,
    build: crate::vocab::TorchBuild,
    key: &'static str,
    rule: &'static str,
    decided_by: Option<(&'static str, u32)>,
}

const HIP: crate::vocab::TorchBuild = crate::vocab::TorchBuild::Hip;
const CUDA: crate::vocab::TorchBuild = crate::vocab::TorchBuild::Cuda;

fn seen(
    action: &'static str,
    kernel: &'static str,
    key: &'static str,
    rule: &'static str,
    decided_by: Option<(&'static str, u32)>,
) -> Seen {
    Seen {
        action,
        kernel,
        build: HIP,
        key,
        rule,
        decided_by,
    }
}

/// The findings of one failed scenario per observation, as `findings` groups them.
fn findings_of(observations: &[Seen]) -> Vec<Finding> {
    let runs: Vec<(Scenario, ScenarioReport)> = observations
        .iter()
        .enumerate()
        .map(|(n, o)| {
            let mut scenario = one_step(o.action, o.kernel);
            scenario.name = format!("s{n}.toml");
            scenario.host.torch = o.build;
            let mut observed = crate::output::ObservedOutput::default();
            if let Some((function, line)) = o.decided_by {
                let (module, function) = function.split_once(':').expect("module:function");
                observed.decided_by.insert(
                    o.key.to_string(),
                    DecidedBy {
                        module: module.into(),
                        function: function.into(),
                        line,
                        file: "x.py".into(),
                    },
                );
            }
            let mut report = ScenarioReport::with_status(&scenario, Status::Failed);
            report.steps.push(crate::runner::run::StepReport::of(
                &scenario.steps[0],
                observed,
                vec![mismatch(o.key, o.rule)],
                Vec::new(),
                std::time::Duration::ZERO,
            ));
            (scenario, report)
        })
        .collect();
    findings(runs.iter().map(|(s, r)| (s, r)))
}

#[test]
fn findings_group_by_rule_and_deciding_function_where_known() {
    const GATE: Option<(&str, u32)> = Some(("p.importer:validate_quant_linear", 275));
    const CANON: Option<(&str, u32)> = Some(("p.helpers:_canonical_device", 297));
    // (case, observations, distinct findings, how each reads: decided by ... or the plain signature)
    let cases: Vec<(&str, Vec<Seen>, &[&str])> = vec![
        (
            "the ordinal and torch-device forms of one decision are one finding",
            vec![
                seen("resolve", "", "ordinal", "resolve-late", CANON),
                seen("resolve", "", "torch_device", "resolve-late", CANON),
            ],
            &["[policy:resolve-late] decided by p.helpers:_canonical_device:297"],
        ),
        (
            "one decision seen on both builds and through several actions is one finding",
            vec![
                Seen {
                    build: CUDA,
                    ..seen("move", "gptq_torch", "torch_device", "resolve-late", CANON)
                },
                seen("resolve", "", "torch_device", "resolve-late", CANON),
            ],
            &["[policy:resolve-late] decided by p.helpers:_canonical_device:297"],
        ),
        (
            "kernels admitted by the shared gate are one finding, whatever lines of it decided",
            vec![
                seen("validate", "gptq_triton", "ok", "declared-families", GATE),
                seen("validate", "gptq_marlin", "ok", "declared-families", GATE),
                seen(
                    "warmup",
                    "gptq_marlin",
                    "ok",
                    "declared-families",
                    Some(("p.importer:validate_quant_linear", 254)),
                ),
            ],
            &["[policy:declared-families] decided by p.importer:validate_quant_linear:254,275"],
        ),
        (
            "a kernel's own override is its own finding",
            vec![
                seen("validate", "gptq_triton", "ok", "declared-families", GATE),
                seen(
                    "validate",
                    "gptq_marlin",
                    "ok",
                    "declared-families",
                    Some(("p.marlin:MarlinLinear.validate_device", 40)),
                ),
            ],
            &[
                "[policy:declared-families] decided by p.importer:validate_quant_linear:275",
                "[policy:declared-families] decided by p.marlin:MarlinLinear.validate_device:40",
            ],
        ),
        (
            "one function breaking two rules is two findings",
            vec![
                seen("move", "gptq_torch", "torch_device", "resolve-late", CANON),
                seen(
                    "move",
                    "gptq_torch",
                    "lands_on",
                    "family-move-current",
                    CANON,
                ),
            ],
            &[
                "[policy:family-move-current] decided by p.helpers:_canonical_device:297",
                "[policy:resolve-late] decided by p.helpers:_canonical_device:297",
            ],
        ),
        (
            "where the location is unknown the signature is today's",
            vec![
                seen("validate", "gptq_triton", "ok", "declared-families", None),
                seen("validate", "gptq_marlin", "ok", "declared-families", None),
                seen("validate", "gptq_marlin", "ok", "declared-families", GATE),
            ],
            &[
                "[policy:declared-families] decided by p.importer:validate_quant_linear:275",
                "[policy:declared-families] validate/move/warmup (string selector, hip build, kernel gptq_marlin): ok expected false, got true\n    location unknown",
                "[policy:declared-families] validate/move/warmup (string selector, hip build, kernel gptq_triton): ok expected false, got true\n    location unknown",
            ],
        ),
    ];
    for (case, observations, expected) in cases {
        let found = findings_of(&observations);
        let mut read: Vec<String> = found
            .iter()
            .map(|f| match f.decided_by() {
                Some(place) => format!("[{}] decided by {place}", f.signature.check),
                None => format!("{}\n    {}", f.signature, f.location()),
            })
            .collect();
        read.sort();
        assert_eq!(read, expected, "{case}");
    }
}

#[test]
fn a_finding_by_function_lists_what_it_groups_and_its_place() {
    let found = findings_of(&[
        seen("resolve", "", "ordinal", "resolve-late", Some(("p.c:f", 3))),
        seen("resolve", "", "ok", "declared-families", None),
    ]);
    let by_function = found
        .iter()
        .find(|f| f.signature.decided_by.is_some())
        .expect("a finding by function");
    assert_eq!(
        by_function.signature.to_string(),
        "[policy:resolve-late] decided by p.c:f"
    );
    assert_eq!(by_function.shows.len(), 1);
    assert!(by_function.shows[0].contains("ordinal expected false, got true"));
    assert_eq!(by_function.decided_by().as_deref(), Some("p.c:f:3"));
}

#[test]
fn a_trace_rule_is_placed_by_the_first_event_it_names() {
    assert_eq!(
        decided_fields("expect.trace.never", "nvidia_capability, amd_arch"),
        ["trace.nvidia_capability"]
    );
    assert_eq!(
        decided_fields("trace.count", "launch x2"),
        Vec::<String>::new()
    );
    assert_eq!(decided_fields("message", "x"), ["error", "ok"]);
    assert_eq!(decided_fields("torch_device", "cuda:0"), ["torch_device"]);
}

#[test]
fn the_subjects_wording_is_not_part_of_a_finding() {
    assert_eq!(
        without_wording("false (unsupported-arch: W4A needs cc 12.1; device 0 reports 10.0.)"),
        "false (unsupported-arch)"
    );
    assert_eq!(
        without_wording("unsupported-family: TritonV2Linear refuses rocm"),
        "unsupported-family"
    );
    assert_eq!(
        without_wording("nvidia_capability x1"),
        "nvidia_capability x1"
    );
    assert_eq!(without_wording("cuda:0"), "cuda:0");
}

#[test]
fn how_often_a_forbidden_event_happened_is_not_part_of_a_finding() {
    let never = |values: &str| without_counts("expect.trace.never", values.to_string());
    assert_eq!(never("nvidia_capability x2"), "nvidia_capability");
    assert_eq!(
        never("nvidia_capability x1, amd_arch x12"),
        "nvidia_capability, amd_arch"
    );
    assert_eq!(
        without_counts("expect.trace.count", "launch x2".to_string()),
        "launch x2",
        "a count rule's counts are the finding"
    );
}
