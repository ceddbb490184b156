//! Marking findings against a live record, and reading records, case by case.

use std::path::Path;

use super::*;
use crate::findings::Signature;

/// A finding of `check` shown by `scenarios`.
fn finding(check: &str, scenarios: &[&str]) -> Finding {
    Finding {
        signature: Signature {
            check: check.into(),
            action: "validate".into(),
            form: "string".into(),
            build: "cuda".into(),
            kernel: None,
            key: "ok".into(),
            expected: "false".into(),
            actual: "true".into(),
            decided_by: None,
        },
        scenarios: scenarios.iter().map(ToString::to_string).collect(),
        shows: Vec::new(),
        lines: Vec::new(),
    }
}

/// A record of subject `s` on an H100 on 2026-12-06 where `a.toml` ended `outcome`, showing `findings`.
fn record(outcome: LiveStatus, findings: &[&Finding]) -> LiveRecord {
    LiveRecord {
        format: FORMAT,
        subject: "s".into(),
        version: "1".into(),
        devices: vec!["NVIDIA H100 80GB HBM3".into()],
        fake_driver: false,
        date: "2026-12-06".into(),
        devsim: Some("0.2.0".into()),
        corpus: None,
        files: BTreeMap::new(),
        counts: None,
        scenarios: BTreeMap::from([(
            "a.toml".to_string(),
            LiveOutcome {
                outcome,
                findings: findings.iter().map(|f| f.signature.to_string()).collect(),
            },
        )]),
    }
}

fn confirmed_on_the_h100() -> Mark {
    Mark::Confirmed {
        devices: vec!["NVIDIA H100 80GB HBM3".into()],
        date: "2026-12-06".into(),
        fake_driver: false,
    }
}

#[test]
fn a_finding_is_confirmed_only_where_one_of_its_scenarios_failed_live_with_its_signature() {
    let judged = finding("policy:declared-families", &["a.toml", "b.toml"]);
    let other = finding("policy:resolve-late", &["a.toml"]);
    // (what a.toml did live, the findings it showed there) → the mark of `judged`.
    let cases = [
        (LiveStatus::Failed, vec![&judged], confirmed_on_the_h100()),
        (
            LiveStatus::Failed,
            vec![&other, &judged],
            confirmed_on_the_h100(),
        ),
        (LiveStatus::Failed, vec![&other], Mark::Simulated),
        (LiveStatus::Passed, vec![], Mark::Simulated),
    ];
    for (outcome, shown, expected) in cases {
        let live = record(outcome, &shown);
        assert_eq!(
            live.mark(&judged),
            expected,
            "a.toml {outcome:?} showing {shown:?}"
        );
    }
}

#[test]
fn a_scenario_the_record_does_not_hold_confirms_nothing() {
    let elsewhere = finding("policy:declared-families", &["b.toml"]);
    let live = record(
        LiveStatus::Failed,
        &[&finding("policy:declared-families", &["a.toml"])],
    );
    assert_eq!(live.mark(&elsewhere), Mark::Simulated);
    assert_eq!(marks(&[elsewhere], None), [Mark::Simulated]);
}

#[test]
fn a_mark_says_where_and_when_it_was_seen() {
    let fake = Mark::Confirmed {
        devices: vec!["Fake GPU".into()],
        date: "2026-12-06".into(),
        fake_driver: true,
    };
    let cases = [
        (
            confirmed_on_the_h100(),
            "confirmed on a real GPU (NVIDIA H100 80GB HBM3, 2026-12-06)",
        ),
        (Mark::Simulated, "simulated (no live run showed it)"),
        (
            fake,
            "confirmed live through devsim's FAKE DRIVER, not a real GPU (Fake GPU, 2026-12-06)",
        ),
    ];
    for (mark, text) in cases {
        assert_eq!(mark.human(), text);
    }
}

#[test]
fn a_record_reads_back_what_it_wrote() {
    let dir = tempfile::tempdir().expect("scratch");
    let path = dir.path().join("live.toml");
    let written = record(
        LiveStatus::Failed,
        &[&finding("policy:declared-families", &["a.toml"])],
    );
    written.write(&path).expect("writes");
    assert_eq!(LiveRecord::read(&path).expect("reads"), written);
}

#[test]
fn a_record_of_another_subject_is_refused_naming_the_file() {
    let error = record(LiveStatus::Passed, &[])
        .for_subject(Path::new("rec/live.toml"), "other")
        .expect_err("another subject");
    assert_eq!(
        error.to_string(),
        "use live record rec/live.toml: it records subject `s`, this run judges `other`"
    );
}

#[test]
fn a_malformed_record_is_refused_naming_the_file_and_line() {
    let head = "format = 1\nsubject = \"s\"\nversion = \"1\"\ndevices = []\n";
    // (the text, the start of the error).
    let cases = [
        (
            format!("{head}date = \"2026-12-06\"\n[scenarios.\"a.toml\"]\noutcome = \"maybe\"\n"),
            "parse live record live.toml:7: unknown variant `maybe`",
        ),
        (
            format!("{head}date = \"yesterday\"\n"),
            "parse live record live.toml:5: `yesterday` is not a date",
        ),
        (
            format!("{head}date = \"2026-12-06\"\ncolour = 1\n"),
            "parse live record live.toml:6: unknown field `colour`",
        ),
        (
            "format = 3\n".to_string(),
            "read live record live.toml: format 3 is not one this devsim reads (it reads formats 1 to 2)",
        ),
    ];
    for (text, start) in cases {
        let error = LiveRecord::parse(Path::new("live.toml"), &text).expect_err("malformed");
        assert!(
            error.to_string().starts_with(start),
            "{error}\n--- for ---\n{text}"
        );
    }
}

#[test]
fn the_date_is_the_utc_civil_date_of_the_day() {
    for (days, date) in [
        (0, "1970-01-01"),
        (11_016, "2000-02-29"),
        (20_793, "2026-12-06"),
    ] {
        assert_eq!(civil_date(days), date);
    }
    assert!(is_date("2026-12-06"));
    for bad in ["2026-13-01", "2026-1-01", "26-12-06", "2026-12-06x"] {
        assert!(!is_date(bad), "{bad}");
    }
}

/// A corpus of `files` (name, content).
fn corpus(files: &[(&str, &str)]) -> CorpusFiles {
    CorpusFiles(
        files
            .iter()
            .map(|(name, text)| (name.to_string(), digest(text.as_bytes())))
            .collect(),
    )
}

#[test]
fn a_record_confirms_only_on_the_corpus_and_subject_version_it_was_taken_on() {
    let taken_on = corpus(&[("a.toml", "one"), ("b.toml", "two"), ("c.toml", "three")]);
    let taken = record(LiveStatus::Passed, &[]).on_corpus(&taken_on);
    assert_eq!(taken.corpus, Some(taken_on.fingerprint()));
    assert_eq!(
        taken.staleness(&taken_on, "1"),
        None,
        "the same corpus and version"
    );
    // b.toml changed, c.toml is gone, d.toml and e.toml are new; and another subject version.
    let now = corpus(&[
        ("a.toml", "one"),
        ("b.toml", "two, changed"),
        ("d.toml", "four"),
        ("e.toml", "five"),
    ]);
    assert_ne!(now.fingerprint(), taken_on.fingerprint());
    let stale = taken.staleness(&now, "2").expect("stale");
    assert_eq!(
        stale.to_string(),
        "it was taken on s 1, this run judges 2; the corpus changed since it was taken (it lacks: 2 scenario files (d.toml, e.toml); changed since: 1 scenario files (b.toml); no longer in the corpus: 1 scenario files (c.toml))"
    );
    assert_eq!(
        taken.staleness(&now, "1").map(|s| s.reasons.len()),
        Some(1),
        "the corpus alone"
    );
}

#[test]
fn a_format_1_record_still_loads_and_is_stale_for_want_of_a_corpus() {
    let text = "format = 1\nsubject = \"s\"\nversion = \"1\"\ndevices = []\ndate = \"2026-12-06\"\n[scenarios.\"a.toml\"]\noutcome = \"failed\"\nfindings = [\"x\"]\n";
    let old = LiveRecord::parse(Path::new("live.toml"), text).expect("format 1 loads");
    assert_eq!((old.format, old.corpus.as_deref()), (1, None));
    let stale = old
        .staleness(&corpus(&[("a.toml", "one")]), "1")
        .expect("stale");
    assert_eq!(
        stale.to_string(),
        "it records no corpus fingerprint (a format 1 record: before records said what they were taken on)"
    );
}

#[test]
fn the_fingerprint_is_fnv1a_of_each_name_and_hash() {
    // FNV-1a 64 of the empty input and of "a": its definition's test vectors.
    assert_eq!(digest(b""), "cbf29ce484222325");
    assert_eq!(digest(b"a"), "af63dc4c8601ec8c");
    let one = corpus(&[("a.toml", "one")]);
    let listing = format!("a.toml\0{}\n", digest(b"one"));
    assert_eq!(one.fingerprint(), digest(listing.as_bytes()));
}
