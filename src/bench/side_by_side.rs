//! Subjects side by side (`devsim bench --subject A [--subject B …]`): the corpus through the reference catalog and each subject, side
//! by side. The first table times them (per-step median, the corpus without and with start-up, start-up
//! alone, and each against the reference). The second is a conformance table: each subject's outcomes and its
//! distinct findings, with the findings counted by the rule or level they break, and how many of them the
//! subject file's live record (`live_record`) confirms on a real GPU (`-`: no record; the rest are simulated).

use crate::shown::field;
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{BenchError, Sink, ms};
use crate::findings::findings;
use crate::kernel::Catalog;
use crate::live_record::LiveRecord;
use crate::runner::ScenarioReport;
use crate::scenario::Scenario;
use crate::subject::{CatalogSubject, Lanes, Subject, SubjectSpec, useful_lanes};
use crate::suite::run_suite;
use crate::sweep::median;
use {crate::runner::Summary, crate::scenario::load_all};

/// One subject's figures over the corpus (the conformance counts from its last round).
struct Figures {
    name: String,
    describe: String,
    start: f64,
    best_corpus: f64,
    step_median: Duration,
    steps: usize,
    summary: Summary,
    /// Distinct findings by the check they break (`policy:<rule>`, `contract`, `reference`, `breakdown`).
    findings: BTreeMap<String, usize>,
    distinct: usize,
    /// How many distinct findings its live record confirms; `None`: it has no live record.
    confirmed: Option<usize>,
}

fn measure(
    subject: &mut dyn Subject,
    start: f64,
    scenarios: &[Scenario],
    rounds: u32,
    record: Option<&LiveRecord>,
) -> Figures {
    let mut best_corpus = f64::MAX;
    let mut step_times = Vec::new();
    let mut last: Vec<ScenarioReport> = Vec::new();
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        let reports = run_suite(subject, scenarios, 0, &mut ()).plain_reports();
        best_corpus = best_corpus.min(started.elapsed().as_secs_f64());
        step_times.extend(
            reports
                .iter()
                .flat_map(|r| r.steps.iter().map(|s| s.elapsed)),
        );
        last = reports;
    }
    let found = findings(scenarios.iter().zip(&last));
    let mut by_check = BTreeMap::new();
    for finding in &found {
        *by_check.entry(finding.signature.check.clone()).or_insert(0) += 1;
    }
    let steps = step_times.len();
    Figures {
        name: subject.name().to_string(),
        describe: subject.describe(),
        start,
        best_corpus,
        step_median: median(&mut step_times),
        steps,
        summary: Summary::of(&last, 0),
        findings: by_check,
        distinct: found.len(),
        confirmed: record.map(|record| {
            crate::live_record::marks(&found, Some(record))
                .iter()
                .filter(|mark| mark.is_confirmed())
                .count()
        }),
    }
}

/// A row: a label, then one right-aligned cell per subject.
fn row(label: &str, cells: impl IntoIterator<Item = String>) -> String {
    let mut line = format!("{label:<36}");
    for cell in cells {
        line.push_str(&format!(" {cell:>16}"));
    }
    line
}

fn ratio(reference: f64, subject: f64) -> String {
    if reference > 0.0 {
        format!("{:.1}x", subject / reference)
    } else {
        "-".into()
    }
}

/// `devsim bench --subject …`: each subject (a command line or a subject file, as `--subject` takes it)
/// started and measured over the corpus under `root`, beside the reference catalog.
pub fn run_subjects(
    root: &Path,
    subjects: &[String],
    source: Option<&Path>,
    rounds: u32,
    jobs: NonZeroUsize,
    show: Sink<'_>,
) -> Result<(), BenchError> {
    let specs = subjects
        .iter()
        .map(|s| SubjectSpec::parse_with_source(s, source))
        .collect::<Result<Vec<_>, _>>()?;
    let (scenarios, errors) = load_all(&[root.to_path_buf()], &Catalog::reference())?;
    let started = Instant::now();
    let mut reference = CatalogSubject::reference();
    let reference_start = started.elapsed().as_secs_f64();
    let mut all = vec![measure(
        &mut reference,
        reference_start,
        &scenarios,
        rounds,
        None,
    )];
    for spec in specs {
        let mut lanes = Lanes::start(&spec, useful_lanes(&scenarios, jobs))?;
        // A subject file's `live_record` marks its findings confirmed on a real GPU or simulated.
        let record = match &spec.live_record {
            Some(path) => Some(LiveRecord::read(path)?.for_subject(path, lanes.name())?),
            None => None,
        };
        let start = lanes.start_time().as_secs_f64();
        all.push(measure(
            &mut lanes,
            start,
            &scenarios,
            rounds,
            record.as_ref(),
        ));
    }
    emit!(
        show,
        "bench: {} scenarios ({} failed to load), best of {} round(s)",
        scenarios.len(),
        errors.len(),
        rounds.max(1)
    );
    emit!(
        show,
        "{}",
        row("", all.iter().map(|f| field(&f.name).to_string()))
    );
    let base = &all[0];
    let step = |f: &Figures| f.step_median.as_secs_f64();
    let with_start = |f: &Figures| f.start + f.best_corpus;
    emit!(
        show,
        "{}",
        row(
            "step median (us)",
            all.iter().map(|f| format!("{:.1}", step(f) * 1e6))
        )
    );
    emit!(
        show,
        "{}",
        row(
            "  against the reference",
            all.iter().map(|f| ratio(step(base), step(f)))
        )
    );
    emit!(
        show,
        "{}",
        row(
            "corpus, start excluded (ms)",
            all.iter().map(|f| ms(f.best_corpus))
        )
    );
    emit!(
        show,
        "{}",
        row(
            "corpus, start included (ms)",
            all.iter().map(|f| ms(with_start(f)))
        )
    );
    emit!(
        show,
        "{}",
        row(
            "  against the reference",
            all.iter().map(|f| ratio(with_start(base), with_start(f)))
        )
    );
    emit!(
        show,
        "{}",
        row("start (ms)", all.iter().map(|f| ms(f.start)))
    );
    emit!(
        show,
        "{}",
        row("steps timed", all.iter().map(|f| f.steps.to_string()))
    );
    show("");
    emit!(
        show,
        "{}",
        row(
            "conformance (scenarios)",
            all.iter().map(|f| field(&f.name).to_string())
        )
    );
    type Count = fn(&Summary) -> usize;
    let outcomes: [(&str, Count); 5] = [
        ("passed", |s| s.passed),
        ("failed", |s| s.failed),
        ("set aside", |s| s.set_aside),
        ("skipped", |s| s.skipped),
        ("not applicable", |s| s.not_applicable),
    ];
    for (label, count) in outcomes {
        emit!(
            show,
            "{}",
            row(label, all.iter().map(|f| count(&f.summary).to_string()))
        );
    }
    emit!(
        show,
        "{}",
        row(
            "distinct findings",
            all.iter().map(|f| f.distinct.to_string())
        )
    );
    emit!(
        show,
        "{}",
        row(
            "  confirmed on a real GPU",
            all.iter()
                .map(|f| f.confirmed.map_or("-".into(), |n| n.to_string()))
        )
    );
    let checks: std::collections::BTreeSet<&String> =
        all.iter().flat_map(|f| f.findings.keys()).collect();
    for check in checks {
        emit!(
            show,
            "{}",
            row(
                &format!("  {}", field(check)),
                all.iter()
                    .map(|f| f.findings.get(check).copied().unwrap_or(0).to_string())
            )
        );
    }
    for figures in &all {
        emit!(
            show,
            "{}: {}",
            field(&figures.name),
            field(&figures.describe)
        );
    }
    Ok(())
}
