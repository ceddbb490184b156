//! Distinct findings ([`crate::findings`]) for a terminal: a heading, then each finding with its mark
//! against a live run and the first scenarios that show it.

use std::fmt::Write as _;

use crate::findings::{Finding, Mark};
use crate::shown::field;

/// What the findings of a run's failures are, for a terminal: a heading, then each distinct finding with
/// its mark (`marks[n]` for `findings[n]`: confirmed on a real GPU or simulated, [`crate::live_record`]) and
/// the first scenarios that show it; nothing when no scenario failed. User text goes through
/// [`crate::shown::field`].
pub fn human(failed: usize, findings: &[Finding], marks: &[Mark]) -> String {
    human_with(failed, findings, marks, &[])
}

/// [`human`], with one more line under each finding (`lines[n]` for `findings[n]`; none where absent): where
/// its reproduction was written, or why none was ([`crate::repro`]).
pub fn human_with(failed: usize, findings: &[Finding], marks: &[Mark], lines: &[String]) -> String {
    let mut out = String::new();
    if failed == 0 {
        return out;
    }
    let _ = writeln!(
        out,
        "{failed} failed scenario(s) hold {} distinct finding(s):",
        findings.len()
    );
    for (n, finding) in findings.iter().enumerate() {
        let (heading, unknown) = match finding.decided_by() {
            Some(place) => (
                format!("[{}] decided by {place}", finding.signature.check),
                "",
            ),
            None => (finding.signature.to_string(), "\n    location unknown"),
        };
        let mark = marks
            .get(n)
            .map_or_else(|| Mark::Simulated.human(), |m| m.human());
        let _ = writeln!(
            out,
            "  finding {}: {} — {}{unknown}\n    shown by {} scenario(s): {}",
            n + 1,
            field(&heading),
            field(&mark),
            finding.scenarios.len(),
            first_names(&finding.scenarios, 5)
        );
        for shows in finding.shows.iter().take(5) {
            let _ = writeln!(out, "    shows {}", field(shows));
        }
        if finding.shows.len() > 5 {
            let _ = writeln!(out, "    shows {} more", finding.shows.len() - 5);
        }
        if let Some(line) = lines.get(n) {
            let _ = writeln!(out, "    {}", field(line));
        }
    }
    crate::shown::lines(&out).into_owned()
}

/// The first `n` names, then how many more: `a, b, c and 4 more`; each name through
/// [`crate::shown::field`].
fn first_names(names: &[String], n: usize) -> String {
    let shown: Vec<String> = names
        .iter()
        .take(n)
        .map(|name| field(name).to_string())
        .collect();
    match names.len().saturating_sub(n) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Signature;

    fn signature(check: &str, decided_by: Option<&str>) -> Signature {
        Signature {
            check: check.into(),
            action: "resolve".into(),
            form: "string".into(),
            build: "hip".into(),
            kernel: None,
            key: "ok".into(),
            expected: "false".into(),
            actual: "true".into(),
            decided_by: decided_by.map(Into::into),
        }
    }

    #[test]
    fn a_finding_prints_its_place_or_that_it_is_unknown_and_its_mark() {
        let by_function = Finding {
            signature: signature("policy:resolve-late", Some("p.c:f")),
            scenarios: vec!["s0.toml".into()],
            shows: vec!["ordinal expected false, got true".into()],
            lines: vec![3],
        };
        let plain = Finding {
            signature: signature("policy:declared-families", None),
            scenarios: (0..7).map(|n| format!("s{n}.toml")).collect(),
            shows: Vec::new(),
            lines: Vec::new(),
        };
        let text = human(2, &[by_function, plain], &[]);
        assert!(
            text.contains("[policy:resolve-late] decided by p.c:f:3 — simulated"),
            "{text}"
        );
        assert!(
            text.contains("got true — simulated (no live run showed it)\n    location unknown\n"),
            "{text}"
        );
        assert!(
            text.contains("    shows ordinal expected false, got true\n"),
            "{text}"
        );
        assert!(
            text.contains("s0.toml, s1.toml, s2.toml, s3.toml, s4.toml and 2 more"),
            "{text}"
        );
        assert!(
            human(0, &[], &[]).is_empty(),
            "nothing when no scenario failed"
        );
    }
}
