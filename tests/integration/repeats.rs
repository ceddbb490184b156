//! Repeated steps: a repetition that records what the first did is counted, not stored again, and every
//! trace rule still sees every repetition.

use devsim::kernel::Catalog;
use devsim::runner::{Status, run_simulated};
use devsim::scenario::load_all;

/// Five warmups of marlin on GPU 1 from a GPU-0 context: each switches to GPU 1 and back and launches once.
const FIVE_WARMUPS: &str = r#"format = 1
description = "five warmups on GPU 1"

[host]
profile = "h200x2"
current = 0

[[step]]
action = "warmup"
kernel = "gptq_marlin"
device = "cuda:1"
repeat = 5

[step.expect]
ran_on = 1
current_after = 0

[step.expect.trace]
count = { set_device = COUNT, launch = 5 }
"#;

fn run(count: usize) -> devsim::runner::ScenarioReport {
    let dir = tempfile::tempdir().expect("a scratch folder");
    std::fs::create_dir_all(dir.path().join("hosts")).expect("hosts");
    let path = dir.path().join("five.toml");
    std::fs::write(&path, FIVE_WARMUPS.replace("COUNT", &count.to_string())).expect("write");
    let catalog = Catalog::reference();
    let roots = [dir.path().to_path_buf()];
    let (scenarios, errors) = load_all(&roots, &catalog).expect("the folder lists");
    assert!(errors.is_empty(), "{errors:?}");
    run_simulated(&scenarios[0], &catalog)
}

#[test]
fn identical_repetitions_are_stored_once_and_counted_by_every_rule() {
    let report = run(10);
    assert_eq!(report.status, Status::Passed, "{report:?}");
    let step = &report.steps[0];
    assert_eq!(
        step.elided.repetitions(),
        4,
        "four repetitions did what the first did"
    );
    let first = step.elided.first.clone();
    assert_eq!(first.start, 0);
    assert_eq!(
        step.trace.len(),
        first.end,
        "only the first repetition is stored"
    );
    let switches = step
        .trace
        .iter()
        .filter(|e| e.name() == "set_device")
        .count();
    assert_eq!(switches, 2, "one repetition: to GPU 1 and back");
}

#[test]
fn a_count_rule_sees_the_elided_repetitions_too() {
    let report = run(2);
    assert_eq!(report.status, Status::Failed);
    let mismatch = &report.steps[0].mismatches[0];
    assert_eq!(mismatch.key, "trace.count");
    assert_eq!(mismatch.expected, "set_device x2");
    assert_eq!(
        mismatch.actual, "set_device x10",
        "all five repetitions counted"
    );
}
