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
}
