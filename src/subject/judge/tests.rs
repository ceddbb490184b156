use super::*;
use crate::dispatch::selector::Selector;
use crate::output::ErrorOutput;
use crate::subject::protocol::{KernelDeclaration, Wording};

pub(super) fn capabilities(levels: &[Level]) -> Capabilities {
    Capabilities {
        protocol: 2,
        name: "s".into(),
        version: "1".into(),
        actions: vec!["resolve".into()],
        kernels: Vec::new(),
        events: vec!["set_device".into()],
        messages: Wording::Own,
        declared: Vec::new(),
        levels: levels.iter().copied().collect(),
        observes: None,
        live: false,
        packages: Vec::new(),
    }
}

fn with_order(names: &[&str]) -> Expectations {
    let mut levels = Levels::default();
    levels.insert(
        crate::conformance::ORDER_KEY.into(),
        Conformance::reference(),
    );
    Expectations {
        ok: None,
        trace: TraceRules {
            order: names.iter().map(|n| n.to_string()).collect(),
            ..TraceRules::default()
        },
        levels,
        ..Expectations::default()
    }
}

#[test]
fn an_order_rule_needs_every_event_it_names() {
    let plain = capabilities(&[]);
    let mut judge = Judge::new(&plain, TorchBuild::Hip, 2);
    let mut table = with_order(&["set_device", "launch"]);
    let mut unbacked = Vec::new();
    judge.filter(
        &mut table,
        None,
        &BTreeSet::new(),
        &BTreeMap::new(),
        "",
        &mut unbacked,
    );
    assert!(
        table.trace.order.is_empty(),
        "a reference detail does not bind it"
    );
    assert!(unbacked.is_empty());

    let claims = capabilities(&[Level::Reference]);
    let mut judge = Judge::new(&claims, TorchBuild::Hip, 2);
    let mut table = with_order(&["set_device", "launch"]);
    judge.filter(
        &mut table,
        None,
        &BTreeSet::new(),
        &BTreeMap::new(),
        "",
        &mut unbacked,
    );
    assert!(table.trace.order.is_empty());
    assert_eq!(unbacked.len(), 1, "claimed but unobservable: a failure");
    assert!(unbacked[0].actual.contains("does not record launch"));

    let mut judge = Judge::new(&claims, TorchBuild::Hip, 2);
    let mut table = with_order(&["set_device"]);
    let mut unbacked = Vec::new();
    judge.filter(
        &mut table,
        None,
        &BTreeSet::new(),
        &BTreeMap::new(),
        "",
        &mut unbacked,
    );
    assert_eq!(table.trace.order, ["set_device"], "recorded: judged");
    assert!(unbacked.is_empty());
}

fn forward(max_abs_error: f64, within: bool) -> Observed {
    Observed {
        numerics: Some(crate::output::NumericsOutput {
            max_abs_error,
            rtol: 2e-3,
            atol: 2e-3,
            within,
            shape: Some("64x512x128".into()),
            dtype: None,
            reference: None,
            reference_max_abs_error: None,
            tolerance_source: None,
            oracle: None,
            not_judged: None,
        }),
        ..Observed::default()
    }
}

#[test]
fn a_forward_the_project_states_no_tolerance_for_is_set_aside_with_its_error_and_oracle() {
    let mut observed = forward(6.65e-2, false);
    assert!(super::contract::not_judged(&observed).is_none(), "judged");
    if let Some(numerics) = observed.numerics.as_mut() {
        numerics.not_judged = Some("the project states no tolerance".into());
        numerics.oracle = Some("activations rounded to float8 e4m3, one scale per row".into());
    }
    assert!(
        numerics(&observed).is_none(),
        "never a failure at a tolerance the project does not state"
    );
    let why = super::contract::not_judged(&observed).expect("set aside");
    assert_eq!(
        why,
        "numerics not judged: the project states no tolerance (max |error| 6.65e-2 against the FP64 oracle: activations rounded to float8 e4m3, one scale per row)"
    );
}

#[test]
fn a_forward_outside_the_oracle_tolerance_fails_the_kernels_contract() {
    assert!(
        numerics(&Observed::default()).is_none(),
        "no forward, nothing to judge"
    );
    assert!(numerics(&forward(1.2e-3, true)).is_none());
    let outside = numerics(&forward(5.1e-3, false)).expect("a mismatch");
    assert_eq!(outside.key, "numerics");
    assert_eq!(outside.conformance, Some(Conformance::contract()));
    assert!(outside.actual.contains("5.1e-3") && outside.actual.contains("64x512x128"));
    // A subject that says `within` of a NaN is not believed.
    assert!(numerics(&forward(f64::NAN, true)).is_some());
    assert!(
        outside.expected.contains("the seed's rtol = 0.002")
            && outside
                .expected
                .contains("the project states no tolerance for it"),
        "{}",
        outside.expected
    );
}

#[test]
fn a_forward_outside_the_projects_own_tolerance_names_both_errors_and_the_source() {
    let mut observed = forward(5.11e-3, false);
    if let Some(numerics) = observed.numerics.as_mut() {
        (numerics.rtol, numerics.atol) = (0.15, 0.0068);
        numerics.reference = Some("gptq_torch".into());
        numerics.reference_max_abs_error = Some(7.5e-3);
        numerics.tolerance_source =
            Some("tests/kernels/test_gptq.py::TestKernelOutput.float16_cases".into());
    }
    let outside = numerics(&observed).expect("a mismatch");
    assert!(
        outside.expected.contains("of gptq_torch's output, the project's own tolerance (rtol = 0.15, atol = 0.0068; tests/kernels/test_gptq.py::TestKernelOutput.float16_cases)"),
        "{}",
        outside.expected
    );
    assert!(
        outside.actual.starts_with(
            "max |error| 7.5e-3 against gptq_torch, max |error| 5.11e-3 against the FP64 oracle"
        ),
        "{}",
        outside.actual
    );
    if let Some(numerics) = observed.numerics.as_mut() {
        numerics.reference_max_abs_error = Some(f64::INFINITY);
        numerics.within = true;
    }
    assert!(
        numerics(&observed).is_some(),
        "an infinite error is never within"
    );
}

/// A subject that declares `gptq_machete` (min capability sm_90, from its own code) and `gptq_marlin` with no
/// arch rules.
fn declaring_arch() -> Capabilities {
    let declared: Vec<KernelDeclaration> = serde_json::from_str(
        r#"[{"name": "gptq_machete", "families": ["cuda"],
             "arch": {"min_capability": 90, "source": "vllm…machete:MacheteLinearKernel.get_min_capability"}},
            {"name": "gptq_marlin", "families": ["cuda"]},
            {"name": "gptq_triton", "families": ["cuda", "rocm"], "arch": {"gfx": ["gfx11", "gfx12"]}}]"#,
    )
    .expect("declarations");
    Capabilities {
        actions: vec!["select".into(), "validate".into(), "set_device".into()],
        kernels: declared.iter().map(|d| d.name.clone()).collect(),
        declared,
        ..capabilities(&[])
    }
}

pub(super) fn step(action: Action) -> Step {
    Step {
        number: 1,
        line: 1,
        description: None,
        action,
        repeat: 1,
        expect: Expectations::default(),
    }
}

pub(super) fn select(device: &str) -> Step {
    step(Action::Select {
        method: crate::kernel::Method::Gptq,
        bits: 4,
        device: Selector::from(device),
    })
}

fn answer(selected: Option<&str>) -> (ObservedMessage, Observed) {
    let message: ObservedMessage =
        serde_json::from_str(r#"{"scenario": "s", "number": 1, "ok": true, "trace": []}"#)
            .expect("message");
    let observed = Observed {
        selected: selected.map(str::to_string),
        ..Observed::default()
    };
    (message, observed)
}

fn per_target_arch(mismatches: &[Mismatch]) -> Vec<&Mismatch> {
    mismatches
        .iter()
        .filter(|m| m.conformance == Some(Conformance::policy("per-target-arch")))
        .collect()
}

#[test]
fn a_kernel_chosen_for_gpu_1_must_admit_gpu_1_by_its_declared_arch_rules() {
    use crate::vocab::Arch;
    let subject = declaring_arch();
    // An H200 as GPU 0, an A100 as GPU 1: Machete (sm_90 and up) suits GPU 0 only.
    let host = crate::host::HostSpec::new(
        TorchBuild::Cuda,
        &[
            "sm_90".parse::<Arch>().expect("arch"),
            "sm_80".parse().expect("arch"),
        ],
    );
    let mut judge = Judge::for_host(&subject, &host);
    let (message, chosen) = answer(Some("gptq_machete"));
    let found = judge.step(&select("cuda:1"), &message, &chosen, &[]);
    let failed = per_target_arch(&found);
    assert_eq!(failed.len(), 1, "{found:?}");
    assert_eq!(failed[0].key, "selected");
    assert!(
        failed[0].expected.contains("GPU 1 (sm_80)")
            && failed[0]
                .actual
                .contains("gptq_machete (declares min capability sm_90")
            && failed[0]
                .actual
                .contains("MacheteLinearKernel.get_min_capability"),
        "{:?}",
        failed[0]
    );
    // The same kernel for GPU 0 admits it: judged, held, and a policy expectation for the verdict.
    let mut judge = Judge::for_host(&subject, &host);
    assert!(per_target_arch(&judge.step(&select("cuda:0"), &message, &chosen, &[])).is_empty());
    assert_eq!(judge.verdict(), Status::Passed);
    // Validation that admits Machete on GPU 1 fails on `ok`; a refusal is not judged this way.
    let validate = step(Action::Validate {
        kernel: "gptq_machete".into(),
        device: Selector::from("cuda:1"),
    });
    let mut judge = Judge::for_host(&subject, &host);
    let (message, admitted) = answer(None);
    let failed = judge.step(&validate, &message, &admitted, &[]);
    assert_eq!(per_target_arch(&failed)[0].key, "ok");
    let refused = Observed {
        error: Some(ErrorOutput {
            kind: "unsupported-arch".into(),
            message: "requires capability 90".into(),
        }),
        ..Observed::default()
    };
    assert!(per_target_arch(&judge.step(&validate, &message, &refused, &[])).is_empty());
    // Refusing Machete on GPU 0, the H200 its own rule admits, as unsupported-arch: judged on GPU 0, not on
    // the GPU the code read.
    let on_gpu_0 = step(Action::Validate {
        kernel: "gptq_machete".into(),
        device: Selector::from("cuda:0"),
    });
    let failed = judge.step(&on_gpu_0, &message, &refused, &[]);
    let failed = per_target_arch(&failed);
    assert_eq!(failed[0].key, "error");
    assert!(
        failed[0]
            .expected
            .contains("declares min capability sm_90; vllm…machete:MacheteLinearKernel.get_min_capability, which the target, GPU 0, sm_90, satisfies")
            && failed[0].actual == "unsupported-arch: requires capability 90",
        "{:?}",
        failed[0]
    );
    // Another refusal (not an arch one) says nothing about the rules.
    let other = Observed {
        error: Some(ErrorOutput {
            kind: "no-kernel".into(),
            message: "shape".into(),
        }),
        ..Observed::default()
    };
    assert!(per_target_arch(&judge.step(&on_gpu_0, &message, &other, &[])).is_empty());
}

#[test]
fn a_family_target_is_the_current_gpu_and_an_undeclared_kernel_is_not_judged() {
    use crate::vocab::Arch;
    let subject = declaring_arch();
    let mut host = crate::host::HostSpec::new(
        TorchBuild::Cuda,
        &[
            "sm_90".parse::<Arch>().expect("arch"),
            "sm_80".parse().expect("arch"),
        ],
    );
    host.current = 1;
    let mut judge = Judge::for_host(&subject, &host);
    let (message, chosen) = answer(Some("gptq_machete"));
    let failed = judge.step(&select("cuda"), &message, &chosen, &[]);
    assert!(
        per_target_arch(&failed)[0]
            .expected
            .contains("the current GPU 1 (sm_80)"),
        "{failed:?}"
    );
    // After a set_device to GPU 0, the family target is the H200.
    let (done, _) = answer(None);
    judge.step(
        &step(Action::SetDevice(0)),
        &done,
        &Observed::default(),
        &[],
    );
    assert!(per_target_arch(&judge.step(&select("cuda"), &message, &chosen, &[])).is_empty());
    // Marlin declares no arch rules: nothing is invented for it.
    let mut judge = Judge::for_host(&subject, &host);
    let (message, marlin) = answer(Some("gptq_marlin"));
    assert!(per_target_arch(&judge.step(&select("cuda:1"), &message, &marlin, &[])).is_empty());
    assert!(
        matches!(judge.verdict(), Status::NotApplicable(_)),
        "nothing judged"
    );
}

#[test]
fn gfx_rules_bind_amd_gpus_by_family_prefix() {
    use crate::vocab::Arch;
    let subject = declaring_arch();
    let host = crate::host::HostSpec::new(
        TorchBuild::Hip,
        &[
            "gfx942:sramecc+:xnack-".parse::<Arch>().expect("arch"),
            "gfx1201".parse().expect("arch"),
        ],
    );
    let (message, chosen) = answer(Some("gptq_triton"));
    let mut judge = Judge::for_host(&subject, &host);
    assert!(per_target_arch(&judge.step(&select("cuda:1"), &message, &chosen, &[])).is_empty());
    let failed = judge.step(&select("cuda:0"), &message, &chosen, &[]);
    assert!(
        per_target_arch(&failed)[0]
            .actual
            .contains("declares gfx gfx11, gfx12"),
        "{failed:?}"
    );
}

/// A subject that declares `exl3_exllama_v3` for CUDA only, judged at the contract level.
fn declaring() -> Capabilities {
    let mut capabilities = capabilities(&[Level::Contract]);
    capabilities.actions = vec!["validate".into()];
    capabilities.declared =
        serde_json::from_str(r#"[{"name": "exl3_exllama_v3", "families": ["cuda"]}]"#)
            .expect("a declaration");
    capabilities
}

/// Step 1 validates `exl3_exllama_v3` on "cuda" and, as policy, expects a refusal.
pub(super) fn validate_expecting_refusal() -> Step {
    let mut validate = step(Action::Validate {
        kernel: "exl3_exllama_v3".into(),
        device: Selector::from("cuda"),
    });
    validate.expect.ok = Some(false);
    validate
        .expect
        .levels
        .insert("ok".into(), Conformance::policy("declared-families"));
    validate
}

fn admitted(undecided: &[(&str, &str)]) -> ObservedMessage {
    let mut message: ObservedMessage =
        serde_json::from_str(r#"{"scenario": "s", "number": 1, "ok": true, "trace": []}"#)
            .expect("an answer");
    for (field, why) in undecided {
        message.undecided.insert((*field).into(), (*why).into());
    }
    message
}

#[test]
fn a_decision_the_project_makes_is_judged_by_its_declarations() {
    let capabilities = declaring();
    let mut judge = Judge::new(&capabilities, TorchBuild::Hip, 2);
    let message = admitted(&[]);
    let mismatches = judge.step(
        &validate_expecting_refusal(),
        &message,
        &Observed::default(),
        &[],
    );
    let keys: Vec<&str> = mismatches.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(
        keys,
        ["ok", "ok"],
        "the scenario's refusal and the declaration's"
    );
}

#[test]
fn a_decision_the_project_does_not_make_is_not_applicable() {
    let capabilities = declaring();
    let mut judge = Judge::new(&capabilities, TorchBuild::Hip, 2);
    let message = admitted(&[("ok", "ExllamaV3Linear has no device gate")]);
    let mismatches = judge.step(
        &validate_expecting_refusal(),
        &message,
        &Observed::default(),
        &[],
    );
    assert!(mismatches.is_empty(), "{mismatches:?}");
    match judge.verdict() {
        Status::NotApplicable(why) => assert!(
            why.contains("the project decides no ok on this step: ExllamaV3Linear has no device gate (declared-families.ok, ok)"),
            "{why}"
        ),
        other => panic!("expected not applicable, got {other:?}"),
    }
}

#[test]
fn a_kernel_that_declares_no_family_is_held_to_no_declaration() {
    let mut capabilities = declaring();
    capabilities.declared[0].families.clear();
    let mut judge = Judge::new(&capabilities, TorchBuild::Hip, 2);
    let message = admitted(&[]);
    let mismatches = judge.step(
        &validate_expecting_refusal(),
        &message,
        &Observed::default(),
        &[],
    );
    let keys: Vec<&str> = mismatches.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(keys, ["ok"], "the scenario's own refusal only");
    assert!(
        mismatches[0].expected == "false",
        "{:?}",
        mismatches[0].expected
    );
}
