//! Generated reproductions: what a script holds, which failures get none and why, and the folder.

use std::path::Path;

use super::script::{docstring, slug};
use super::*;
use crate::conformance::Conformance;
use crate::findings::findings;
use crate::kernel::Catalog;
use crate::output::ObservedOutput;
use crate::runner::{Mismatch, Status};
use crate::scenario::load::{ProfileSources, parse_scenario};
use crate::subject::judge::UNBACKED;
use devsim_metadata::protocol::DecidedBy;

/// The scenario file `text`, loaded with the reference catalog and named `name`.
fn named_scenario(text: &str, name: &str) -> Scenario {
    let mut scenario = parse_scenario(
        Path::new("s.toml"),
        text,
        &Catalog::reference(),
        &ProfileSources::shipped(),
    )
    .expect("loads");
    scenario.name = name.into();
    scenario
}

/// A two-step scenario on a two-GPU HIP host: set GPU 1 current, then resolve `"cuda"`.
fn scenario() -> Scenario {
    let text = "format = 1\ndescription = \"x\"\n[host]\nprofile = \"r9700x2\"\n\
                [expect.trace]\nnever = [\"nvidia_capability\"]\n\
                [[step]]\naction = \"set_device\"\nordinal = 1\n\
                [[step]]\naction = \"resolve\"\ndevice = \"cuda\"\n\
                [step.expect]\nfamily = \"rocm\"\ntorch_device = \"cuda\"\n";
    named_scenario(text, "placement/s.toml")
}

/// A failed report of [`scenario`] whose step 2 shows `mismatch`, decided by `p.helpers:_canonical`, and
/// whose scenario-level trace rules show `trace`.
fn report(scenario: &Scenario, mismatch: Mismatch, trace: Vec<Mismatch>) -> ScenarioReport {
    let mut report = ScenarioReport::with_status(scenario, Status::Failed);
    report.name = scenario.name.clone();
    for step in &scenario.steps {
        let mut observed = ObservedOutput::default();
        let mut mismatches = Vec::new();
        if step.number == 2 {
            observed.decided_by.insert(
                "torch_device".into(),
                DecidedBy {
                    module: "p.helpers".into(),
                    function: "_canonical".into(),
                    line: 42,
                    file: "/abs/p/helpers.py".into(),
                },
            );
            mismatches.push(mismatch.clone());
        }
        report.steps.push(crate::runner::run::StepReport::of(
            step,
            observed,
            mismatches,
            Vec::new(),
            std::time::Duration::ZERO,
        ));
    }
    report.trace_mismatches = trace;
    report
}

fn context() -> Context {
    Context {
        launch: Launch::File("../../p.toml".into()),
        source: None,
        kit: Some("../../kit/src".into()),
        generated_by: "devsim run --subject subjects/p.toml --repro subjects/p/repro scenarios"
            .into(),
    }
}

fn resolve_late() -> Mismatch {
    Mismatch {
        key: "torch_device".into(),
        expected: "cuda".into(),
        actual: "cuda:0".into(),
        conformance: Some(Conformance::policy("resolve-late")),
    }
}

/// The scripts of every finding of one report.
fn scripts_of(scenario: &Scenario, report: &ScenarioReport) -> Vec<Result<Script, String>> {
    let found = findings([(scenario, report)]);
    scripts(&found, [(scenario, report)], &context())
}

#[test]
fn a_finding_by_deciding_function_is_a_script_replaying_its_messages_up_to_the_failing_step() {
    let scenario = scenario();
    let report = report(&scenario, resolve_late(), Vec::new());
    let scripts = scripts_of(&scenario, &report);
    let [Ok(script)] = scripts.as_slice() else {
        panic!("one script: {scripts:?}");
    };
    assert_eq!(script.file_name, "resolve-late-canonical.py");
    let text = script.text.replace(env!("CARGO_PKG_VERSION"), "<version>");
    insta::assert_snapshot!(text);
}

#[test]
fn a_scenario_level_trace_rule_replays_every_step_and_counts_the_event() {
    let scenario = scenario();
    let never = Mismatch {
        key: "expect.trace.never".into(),
        expected: "nvidia_capability x0".into(),
        actual: "nvidia_capability x2".into(),
        conformance: Some(Conformance::policy("no-cross-vendor-probe")),
    };
    let report = report(&scenario, resolve_late(), vec![never]);
    let scripts = scripts_of(&scenario, &report);
    let texts: Vec<&str> = scripts
        .iter()
        .map(|s| s.as_ref().expect("a script").text.as_str())
        .collect();
    let trace = texts
        .iter()
        .find(|t| t.contains("\"kind\": \"trace\""))
        .expect("the trace rule's script");
    assert!(
        trace.contains("\"event\": \"nvidia_capability\""),
        "{trace}"
    );
    assert!(trace.contains("\"count\": 0"), "{trace}");
    assert!(trace.contains("\"scope\": \"scenario\""), "{trace}");
    assert!(trace.contains("\"type\": \"end\""), "{trace}");
    assert!(trace.contains("The seed's words:"), "{trace}");
}

#[test]
fn a_check_the_kit_cannot_restate_gets_no_script_and_says_why() {
    let scenario = scenario();
    let cases = [
        (
            Mismatch::breakdown("subject p", "`done`", "no answer within 1.0 s"),
            "a breakdown of the subject's process",
        ),
        (
            Mismatch {
                key: "numerics".into(),
                expected: "within".into(),
                actual: "max |error| 1".into(),
                conformance: Some(Conformance::policy("resolve-late")),
            },
            "only on a real GPU",
        ),
        (
            Mismatch {
                key: "torch_device".into(),
                expected: UNBACKED.into(),
                actual: "subject p does not observe torch_device".into(),
                conformance: Some(Conformance::policy("resolve-late")),
            },
            "cannot observe torch_device",
        ),
    ];
    for (mismatch, why) in cases {
        let report = report(&scenario, mismatch, Vec::new());
        let scripts = scripts_of(&scenario, &report);
        let [Err(said)] = scripts.as_slice() else {
            panic!("no script: {scripts:?}");
        };
        assert!(said.contains(why), "{said}");
        assert!(
            said.contains("placement/s.toml"),
            "names the scenario: {said}"
        );
    }
}

#[test]
fn a_refusal_the_projects_arch_rule_admits_is_restated_as_that_refusal() {
    let scenario = scenario();
    let refused = Mismatch {
        key: "error".into(),
        expected: "no unsupported-arch refusal (the subject's k declares min capability sm_90; p:K.cap, which the target, GPU 1, sm_90, satisfies)".into(),
        actual: "unsupported-arch: requires capability 90".into(),
        conformance: Some(Conformance::policy("per-target-arch")),
    };
    let report = report(&scenario, refused, Vec::new());
    let scripts = scripts_of(&scenario, &report);
    let [Ok(script)] = scripts.as_slice() else {
        panic!("one script: {scripts:?}");
    };
    assert!(
        script.text.contains("\"kind\": \"not_refused_as\"")
            && script.text.contains("\"refusal\": \"unsupported-arch\""),
        "{}",
        script.text
    );
}

#[test]
fn the_step_a_subject_stopped_at_is_the_next_one_sent_not_one_left_out() {
    let text = "format = 1\ndescription = \"x\"\n[host]\nprofile = \"r9700x2\"\n\
                [[step]]\naction = \"resolve\"\ndevice = \"cuda\"\n\
                [[step]]\naction = \"validate\"\nkernel = \"gptq_allspark\"\ndevice = \"cuda\"\n\
                [[step]]\naction = \"warmup\"\nkernel = \"gptq_torch\"\ndevice = \"cuda\"\n\
                [step.expect.trace]\nnever = [\"nvidia_capability\"]\n";
    let scenario = named_scenario(text, "probes/s.toml");
    let mut report = ScenarioReport::with_status(&scenario, Status::Failed);
    report.steps.push(crate::runner::run::StepReport::of(
        &scenario.steps[0],
        ObservedOutput::default(),
        Vec::new(),
        Vec::new(),
        std::time::Duration::ZERO,
    ));
    report.left_out = vec![2]; // the subject lacks gptq_allspark: step 2 was never sent
    report.trace_mismatches = vec![Mismatch {
        key: "trace.never".into(),
        expected: "nvidia_capability x0".into(),
        actual: "nvidia_capability x1".into(),
        conformance: Some(Conformance::policy("no-cross-vendor-probe")),
    }];
    let scripts = scripts_of(&scenario, &report);
    let [Ok(script)] = scripts.as_slice() else {
        panic!("one script: {scripts:?}");
    };
    assert!(script.text.contains("\"step\": 3"), "{}", script.text);
    assert!(!script.text.contains("gptq_allspark"), "{}", script.text);
}

#[test]
fn writing_a_folder_indexes_every_finding_and_removes_only_stale_generated_scripts() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let stale = dir.path().join("old-finding.py");
    std::fs::write(&stale, format!("#!/usr/bin/env python3\n{MARKER}\n")).expect("writes");
    let own = dir.path().join("mine.py");
    std::fs::write(&own, "print('hand-written')\n").expect("writes");
    let scenario = scenario();
    let report = report(&scenario, resolve_late(), Vec::new());
    let found = findings([(&scenario, &report)]);
    let mut scripts = scripts(&found, [(&scenario, &report)], &context());
    scripts.push(Err("why not".into()));
    let mut all = found.clone();
    all.push(found[0].clone());
    let done = write(dir.path(), &all, scripts, &context()).expect("writes");
    assert_eq!(
        done,
        vec![
            Reproduction::Written(dir.path().join("resolve-late-canonical.py")),
            Reproduction::Missing("why not".into()),
        ]
    );
    assert!(!stale.exists(), "a stale generated script is removed");
    assert!(own.exists(), "a file devsim did not generate is kept");
    let index = std::fs::read_to_string(dir.path().join("README.md")).expect("an index");
    assert!(
        index.contains("- `resolve-late-canonical.py`: [policy:resolve-late]"),
        "{index}"
    );
    assert!(
        index.contains("- no reproduction: [policy:resolve-late]"),
        "{index}"
    );
    assert!(index.contains("why not"), "{index}");
}

#[test]
fn a_path_is_written_relative_to_the_folder() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let repro = dir.path().join("subjects/p/repro");
    std::fs::create_dir_all(&repro).expect("makes");
    std::fs::write(dir.path().join("subjects/p.toml"), "").expect("writes");
    assert_eq!(
        relative(&dir.path().join("subjects/p.toml"), &repro).expect("resolves"),
        "../../p.toml"
    );
    assert_eq!(relative(&repro, &repro).expect("resolves"), ".");
    assert!(matches!(
        relative(&dir.path().join("missing"), &repro),
        Err(ReproError::Resolve { .. })
    ));
}

#[test]
fn a_slug_is_lower_case_words_joined_by_dashes() {
    assert_eq!(slug("DEVICE.to_torch_device"), "device-to-torch-device");
    assert_eq!(slug("--a__b--"), "a-b");
    assert_eq!(slug(&"x".repeat(60)).len(), 48);
}

#[test]
fn findings_sharing_a_stem_are_told_apart_by_their_signature_alone() {
    let scenario = scenario();
    let report = report(&scenario, resolve_late(), Vec::new());
    let one = findings([(&scenario, &report)]).remove(0);
    let mut other = one.clone();
    other.signature.check = "policy:resolve-late ".into();
    let names = file_names(&[one.clone(), other.clone()]);
    assert!(
        names[0].starts_with("resolve-late-canonical-")
            && names[0].len() == "resolve-late-canonical-000000.py".len()
    );
    assert_ne!(names[0], names[1]);
    assert_eq!(
        file_names(&[other, one])[1],
        names[0],
        "the order of the findings does not matter"
    );
    assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
}

#[test]
fn a_docstring_cannot_be_closed_by_its_text() {
    assert_eq!(docstring(r#"a """ b \ c"#), r#"a \"\"\" b \\ c"#);
}
