//! Format compatibility: a file that loaded under `format = N` loads under every later release with the same
//! meaning. `tests/formats/format-N/` is the corpus as it stood when format N was last extended (format 1:
//! the scenarios of 2026-12-01, before conformance levels); it must load and pass against the reference
//! catalog. Deprecated forms load with a located warning naming the migration, as does every file under
//! `tests/fixtures/warned/` (its first line says why; the rendered warnings are pinned by insta snapshots).

use std::path::Path;

use devsim::kernel::Catalog;
use devsim::runner::{Status, run_simulated};
use devsim::scenario::{load_all, load_scenario, render};

#[test]
fn the_format_1_corpus_of_2026_12_01_loads_and_passes() {
    let catalog = Catalog::reference();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/formats/format-1");
    let (scenarios, errors) = load_all(&[root], &catalog).expect("the frozen corpus lists");
    assert!(errors.is_empty(), "older files must load: {errors:#?}");
    assert!(scenarios.len() >= 1000, "{} scenarios", scenarios.len());
    let failing: Vec<&str> = scenarios
        .iter()
        .filter(|s| run_simulated(s, &catalog).status != Status::Passed)
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        failing,
        Vec::<&str>::new(),
        "older files keep their meaning"
    );
    let warned: Vec<&str> = scenarios
        .iter()
        .flat_map(|s| &s.warnings)
        .map(|w| w.0.message.as_str())
        .filter(|m| {
            !(m.starts_with("read `trace.") && m.contains(".extension_load` without a level"))
        })
        .collect();
    assert_eq!(
        warned,
        Vec::<&str>::new(),
        "the only deprecation of format 1"
    );
}

#[test]
fn files_that_warn_load_with_a_located_warning_and_its_remedy() {
    let catalog = Catalog::reference();
    insta::glob!("../", "fixtures/warned/*.toml", |path| {
        let relative = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(path);
        let bytes = std::fs::read(path).expect("fixture");
        assert!(
            bytes.starts_with(b"# warns: "),
            "{}: the first line says why it warns",
            relative.display()
        );
        let scenario = load_scenario(relative, &catalog).expect("a file that warns still loads");
        assert!(!scenario.warnings.is_empty(), "and says so");
        let rendered: Vec<String> = scenario.warnings.iter().map(|w| render(w)).collect();
        insta::assert_snapshot!(rendered.join("\n"));
    });
}

/// Copies the files of `from` into `to`, folders included.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("make the copy's folder");
    for entry in std::fs::read_dir(from).expect("list the frozen corpus") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("its type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy a file");
        }
    }
}

#[test]
fn migrate_writes_the_levels_format_1_read_and_the_corpus_keeps_its_verdicts() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let root = scratch.path().join("format-1");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/formats/format-1"),
        &root,
    );
    let migrate = |check: bool| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_devsim"));
        command.arg("migrate").arg(&root);
        if check {
            command.arg("--check");
        }
        command.output().expect("devsim runs").status.code()
    };
    assert_eq!(
        migrate(true),
        Some(1),
        "the older corpus has deprecated forms"
    );
    assert_eq!(migrate(false), Some(0));
    assert_eq!(migrate(true), Some(0), "and none after migrating");
    let catalog = Catalog::reference();
    let (scenarios, errors) = load_all(&[root], &catalog).expect("the migrated corpus lists");
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(scenarios.iter().all(|s| s.warnings.is_empty()));
    let failing = scenarios
        .iter()
        .filter(|s| run_simulated(s, &catalog).status != Status::Passed)
        .count();
    assert_eq!(failing, 0, "the same verdicts after the migration");
}
