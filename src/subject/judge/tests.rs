use super::*;
use crate::subject::protocol::Wording;

fn capabilities(levels: &[Level]) -> Capabilities {
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
        }),
        ..Observed::default()
    }
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

/// A subject that declares `exl3_exllama_v3` for CUDA only, judged at the contract level.
fn declaring() -> Capabilities {
    let mut capabilities = capabilities(&[Level::Contract]);
    capabilities.actions = vec!["validate".into()];
    capabilities.declared = vec![KernelDeclaration {
        name: "exl3_exllama_v3".into(),
        families: vec!["cuda".into()],
        methods: Vec::new(),
        bits: Vec::new(),
        priority: None,
        alternatives: Vec::new(),
        source: None,
        tolerances: Vec::new(),
    }];
    capabilities
}

/// Step 1 validates `exl3_exllama_v3` on "cuda" and, as policy, expects a refusal.
fn validate_expecting_refusal() -> Step {
    let mut levels = Levels::default();
    levels.insert("ok".into(), Conformance::policy("declared-families"));
    Step {
        number: 1,
        line: 1,
        description: None,
        action: Action::Validate {
            kernel: "exl3_exllama_v3".into(),
            device: Selector::from("cuda"),
        },
        repeat: 1,
        expect: Expectations {
            ok: Some(false),
            levels,
            ..Expectations::default()
        },
    }
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

#[test]
fn a_step_that_stopped_is_held_to_its_never_rules_over_what_it_did() {
    let mut capabilities = capabilities(&[]);
    capabilities.events.push("extension_load".into());
    let mut step = validate_expecting_refusal();
    step.expect.trace.never = vec!["extension_load".into()];
    let key = crate::conformance::trace_key("never", "extension_load");
    step.expect
        .levels
        .insert(key, Conformance::policy("extensions-after-gates"));
    let load = Entry::Reported {
        event: "extension_load".parse().expect("an event"),
        device: None,
        detail: None,
    };
    let rules = TraceRules {
        never: vec!["extension_load".into()],
        once: vec!["set_device".into()], // unknowable on a prefix: never judged there
        ..TraceRules::default()
    };
    let mut levels = Levels::default();
    levels.insert(
        crate::conformance::trace_key("never", "extension_load"),
        Conformance::policy("extensions-after-gates"),
    );
    levels.insert(
        crate::conformance::trace_key("once", "set_device"),
        Conformance::policy("target-context"),
    );
    let mut judge = Judge::new(&capabilities, TorchBuild::Hip, 2);
    assert!(
        judge.stopped(&step, (&rules, &levels), &[], &[]).is_empty(),
        "nothing happened yet: nothing broken"
    );
    let broken = judge.stopped(&step, (&rules, &levels), &[], &[load]);
    let keys: Vec<&str> = broken.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(keys, ["trace.never", "expect.trace.never"], "{broken:?}");
}
