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

/// A matrix file of `a × b` cases, each of `steps` normalize steps.
fn matrix_file(a: usize, b: usize, steps: usize) -> String {
    let values = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    format!(
        "format = 1\ndescription = \"a large matrix\"\n[matrix]\na = [{}]\nb = [{}]\n[host]\nprofile = \"h200x2\"\n{}",
        values(a),
        values(b),
        "[[step]]\naction = \"normalize\"\ndevice = \"cuda:{a}\"\n".repeat(steps)
    )
}

#[test]
fn files_each_within_their_limits_are_refused_together_naming_the_one_that_crosses() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    // Each 100 x 100 x 25 = 250,000 step executions: every file is at the matrix limit, so the second
    // already takes the run past it.
    for i in 0..8 {
        std::fs::write(
            dir.path().join(format!("m{i}.toml")),
            matrix_file(100, 100, 25),
        )
        .expect("write");
    }
    let catalog = Catalog::reference();
    let error = load_all(&[dir.path().to_path_buf()], &catalog).expect_err("over the run's budget");
    let devsim::scenario::CorpusError::OverBudget(load) = &error else {
        panic!("expected the run's budget, got {error}");
    };
    assert!(load.path.ends_with("m1.toml"), "{error}");
    assert_eq!(load.line, 3, "at the [matrix] header: {error}");
    assert!(
        load.message
            .contains("500000 matrix cases' step executions"),
        "{error}"
    );
    assert!(error.to_string().contains("m1.toml:3:1"), "{error}");
}

#[test]
fn files_within_the_budget_together_all_load() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    std::fs::write(dir.path().join("big.toml"), matrix_file(10, 10, 25)).expect("write");
    for i in 0..20 {
        std::fs::write(dir.path().join(format!("s{i}.toml")), matrix_file(2, 2, 1)).expect("write");
    }
    let catalog = Catalog::reference();
    let (scenarios, errors) =
        load_all(&[dir.path().to_path_buf()], &catalog).expect("within the budget");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(scenarios.len(), 100 + 20 * 4);
}

#[test]
fn plain_files_count_against_the_run_too() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let file = "format = 1\ndescription = \"many repeats\"\n[host]\nprofile = \"h200x2\"\n"
        .to_string()
        + &"[[step]]\naction = \"discover\"\nrepeat = 10000\n".repeat(60);
    for i in 0..2 {
        std::fs::write(dir.path().join(format!("p{i}.toml")), &file).expect("write");
    }
    let catalog = Catalog::reference();
    let error = load_all(&[dir.path().to_path_buf()], &catalog).expect_err("1,200,000 executions");
    assert!(error.to_string().contains("p1.toml:1:1"), "{error}");
    assert!(
        error.to_string().contains("1200000 step executions"),
        "{error}"
    );
}
