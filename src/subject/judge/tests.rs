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
    judge.filter(&mut table, None, &BTreeSet::new(), "", &mut unbacked);
    assert!(
        table.trace.order.is_empty(),
        "a reference detail does not bind it"
    );
    assert!(unbacked.is_empty());

    let claims = capabilities(&[Level::Reference]);
    let mut judge = Judge::new(&claims, TorchBuild::Hip, 2);
    let mut table = with_order(&["set_device", "launch"]);
    judge.filter(&mut table, None, &BTreeSet::new(), "", &mut unbacked);
    assert!(table.trace.order.is_empty());
    assert_eq!(unbacked.len(), 1, "claimed but unobservable: a failure");
    assert!(unbacked[0].actual.contains("does not record launch"));

    let mut judge = Judge::new(&claims, TorchBuild::Hip, 2);
    let mut table = with_order(&["set_device"]);
    let mut unbacked = Vec::new();
    judge.filter(&mut table, None, &BTreeSet::new(), "", &mut unbacked);
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
