//! What `observed` and `unsupported` answers devsim accepts, and the protocol error for each it refuses.
use super::*;

fn answer(module: &str, file: &str) -> ObservedMessage {
    let mut message: ObservedMessage = serde_json::from_str(
        r#"{"scenario": "s", "number": 1, "ok": true, "family": "cuda", "trace": []}"#,
    )
    .expect("an answer");
    message.decided_by.insert(
        "family".into(),
        DecidedBy {
            module: module.into(),
            function: "normalize_device".into(),
            line: 7,
            file: file.into(),
        },
    );
    message
}

#[test]
fn decided_by_must_name_an_existing_file_of_the_projects_packages() {
    let here = file!();
    let packages = ["gptqmodel".to_string()];
    let (read, _) =
        observed(&answer("gptqmodel.models._const", here), &[], &packages).expect("accepted");
    assert_eq!(read.decided_by["family"].function, "normalize_device");
    assert!(observed(&answer("gptqmodel", here), &[], &packages).is_ok());
    for (module, file, packages, problem) in [
        (
            "gptqmodelx.a",
            here,
            &packages[..],
            "`decided_by.family` names module `gptqmodelx.a`, outside the project's packages (gptqmodel)",
        ),
        (
            "gptqmodel.a",
            "/nonexistent.py",
            &packages[..],
            "`decided_by.family` names file `/nonexistent.py`, which does not exist",
        ),
        (
            "gptqmodel.a",
            here,
            &[][..],
            "`decided_by.family` is given but the handshake declares no `packages`",
        ),
    ] {
        assert_eq!(
            observed(&answer(module, file), &[], packages)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(problem.to_string())
        );
    }
}

#[test]
fn a_stopped_steps_decided_by_places_only_events_of_its_trace() {
    let here = file!();
    let packages = ["gptqmodel".to_string()];
    let place = DecidedBy {
        module: "gptqmodel.nn_modules.exllamav3".into(),
        function: "ExllamaV3Linear._ensure_inner".into(),
        line: 7,
        file: here.into(),
    };
    let trace: Vec<TraceEvent> =
        serde_json::from_str(r#"[{"event": "extension_load"}]"#).expect("a trace");
    let with = |key: &str, place: &DecidedBy| {
        std::collections::BTreeMap::from([(key.to_string(), place.clone())])
    };
    assert_eq!(
        stopped_decided_by(&with("trace.extension_load", &place), &trace, &packages),
        Ok(())
    );
    for (key, problem) in [
        (
            "trace.nvidia_capability",
            "`decided_by.trace.nvidia_capability` of an `unsupported` step names no event of its `trace` (keys are `trace.<event>`)",
        ),
        (
            "ok",
            "`decided_by.ok` of an `unsupported` step names no event of its `trace` (keys are `trace.<event>`)",
        ),
    ] {
        assert_eq!(
            stopped_decided_by(&with(key, &place), &trace, &packages).map_err(|e| e.to_string()),
            Err(problem.to_string())
        );
    }
    let outside = DecidedBy {
        module: "torch.cuda".into(),
        ..place
    };
    assert_eq!(
        stopped_decided_by(&with("trace.extension_load", &outside), &trace, &packages)
            .map_err(|e| e.to_string()),
        Err("`decided_by.trace.extension_load` names module `torch.cuda`, outside the project's packages (gptqmodel)".to_string())
    );
}

#[test]
fn the_protocols_error_kinds_are_devsims() {
    let known = ErrorKind::KNOWN;
    let wire: Vec<&str> = known.iter().map(|kind| kind.as_str()).collect();
    assert_eq!(wire, DispatchError::KINDS);
}

#[test]
fn the_protocols_events_are_devsims() {
    let known = crate::subject::protocol::EventName::KNOWN;
    let wire: Vec<&str> = known.iter().map(|event| event.as_str()).collect();
    assert_eq!(wire, crate::trace::event_names());
}

#[test]
fn undecided_names_an_unreported_field_with_a_reason() {
    let read = |json: &str| {
        let message: ObservedMessage = serde_json::from_str(json).expect("an answer");
        observed(&message, &[], &[])
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let head = r#""scenario": "s", "number": 1, "ok": true, "trace": []"#;
    assert_eq!(
        read(&format!(
            r#"{{{head}, "undecided": {{"ok": "no gate", "selected": "by backend alone"}}}}"#
        )),
        Ok(())
    );
    for (undecided, problem) in [
        (r#"{"ok": " "}"#, "`undecided.ok` gives no reason"),
        (
            r#"{"colour": "why"}"#,
            "`undecided.colour` names no observation field (ok, family, ordinal, torch_device, ran_on, lands_on, current_after, selected, covers, vendor, archs, torch_device_count, runtime_devices, retained_bytes)",
        ),
    ] {
        assert_eq!(
            read(&format!(r#"{{{head}, "undecided": {undecided}}}"#)),
            Err(problem.to_string())
        );
    }
    assert_eq!(
        read(&format!(
            r#"{{{head}, "family": "cuda", "undecided": {{"family": "why"}}}}"#
        )),
        Err(
            "`undecided.family` names a field the answer reports: an undecided field is left out"
                .into()
        )
    );
    let mut placed = answer("gptqmodel.a", file!());
    placed.family = None;
    placed.undecided.insert("family".into(), "why".into());
    assert_eq!(
        observed(&placed, &[], &["gptqmodel".to_string()])
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Err("`undecided.family` contradicts `decided_by.family`: a field is decided or not".into())
    );
}

/// A float16 forward of `gptq_marlin`, judged at `rtol`/`atol` against `reference` (from `source`).
fn forward(rtol: f64, atol: f64, reference: Option<&str>, source: Option<&str>) -> NumericsOutput {
    NumericsOutput {
        max_abs_error: 1.2e-3,
        rtol,
        atol,
        within: true,
        shape: None,
        dtype: None,
        reference: reference.map(Into::into),
        reference_max_abs_error: reference.map(|_| 4e-4),
        tolerance_source: source.map(Into::into),
        oracle: None,
        not_judged: None,
    }
}

#[test]
fn numerics_are_judged_by_the_declared_tolerance_or_else_the_seeds() {
    let declared: Vec<KernelDeclaration> = serde_json::from_str(
        r#"[{"name": "gptq_torch", "families": ["all"]},
            {"name": "gptq_marlin", "families": ["cuda"], "tolerances": [
              {"dtype": "float16", "rtol": 0.15, "atol": 0.001, "reference": "gptq_torch", "source": "t.py::T"}]}]"#,
    )
    .expect("declarations");
    let project = forward(0.15, 0.001, Some("gptq_torch"), Some("t.py::T"));
    let seed = forward(2e-3, 2e-3, None, None);
    let compared = forward(2e-3, 2e-3, Some("gptq_torch"), None);
    assert_eq!(
        numerics(Some(&compared), Some("gptq_triton"), &declared),
        Ok(()),
        "compared with the reference, judged by the seed's tolerance"
    );
    assert_eq!(numerics(None, Some("gptq_marlin"), &declared), Ok(()));
    assert_eq!(
        numerics(Some(&project), Some("gptq_marlin"), &declared),
        Ok(())
    );
    assert_eq!(numerics(Some(&seed), Some("gptq_torch"), &declared), Ok(()));
    let mut bfloat16 = seed.clone();
    bfloat16.dtype = Some("bfloat16".into());
    assert_eq!(
        numerics(Some(&bfloat16), Some("gptq_marlin"), &declared),
        Ok(()),
        "no bfloat16 tolerance declared: the seed's"
    );
    for (numbers, kernel, problem) in [
        (
            &seed,
            "gptq_marlin",
            "`numerics` of gptq_marlin in float16 were judged at rtol = 0.002, atol = 0.002 against fp64_oracle, not by the tolerance the handshake declares (rtol = 0.15, atol = 0.001 against gptq_torch, from t.py::T)",
        ),
        (
            &forward(0.15, 0.01, Some("gptq_torch"), Some("t.py::T")),
            "gptq_marlin",
            "not by the tolerance the handshake declares",
        ),
        (
            &forward(0.15, 0.001, Some("gptq_torch"), Some("t.py::T")),
            "gptq_torch",
            "but the handshake declares no tolerance for it (then the seed's rtol = atol = 0.002 against the FP64 oracle applies)",
        ),
    ] {
        let refused = numerics(Some(numbers), Some(kernel), &declared)
            .expect_err(problem)
            .to_string();
        assert!(refused.contains(problem), "{refused}");
    }
    let mut no_reference_error = project.clone();
    no_reference_error.reference_max_abs_error = None;
    assert!(numerics(Some(&no_reference_error), Some("gptq_marlin"), &declared).is_err());
}

#[test]
fn a_forward_left_unjudged_is_accepted_only_where_the_project_states_no_tolerance() {
    let declared: Vec<KernelDeclaration> = serde_json::from_str(
        r#"[{"name": "w4a_fp8", "families": ["cuda"]},
            {"name": "gptq_marlin", "families": ["cuda"], "tolerances": [
              {"dtype": "float16", "rtol": 0.15, "atol": 0.001, "reference": "gptq_torch", "source": "t.py::T"}]}]"#,
    )
    .expect("declarations");
    let mut unjudged = forward(2e-3, 2e-3, None, None);
    unjudged.within = false;
    unjudged.not_judged = Some("the project states no tolerance".into());
    assert_eq!(
        numerics(Some(&unjudged), Some("w4a_fp8"), &declared),
        Ok(())
    );
    let refused = numerics(Some(&unjudged), Some("gptq_marlin"), &declared)
        .expect_err("a stated tolerance must judge")
        .to_string();
    assert!(
        refused.contains("judged at nothing (not judged: the project states no tolerance), not by the tolerance the handshake declares"),
        "{refused}"
    );
}
