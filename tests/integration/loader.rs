//! Loading scenario files. Every malformed file under `tests/fixtures/invalid/` (its first line says what
//! is wrong) must fail to load, and its full rendered diagnostic (location, excerpt, span, help) is pinned
//! by an insta snapshot in `tests/integration/snapshots/`. Review a changed one with `cargo insta review`.

use std::path::Path;

use devsim::kernel::Catalog;
use devsim::scenario::load_scenario;
use devsim::scenario::render;
use devsim::scenario::{LoadError, ProfileSources, load_scenarios_with};
use tempfile::TempDir;

#[test]
fn invalid_scenarios_give_located_diagnostics() {
    let catalog = Catalog::reference();
    insta::glob!("../", "fixtures/invalid/*.toml", |path| {
        let relative = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(path);
        let bytes = std::fs::read(path).expect("fixture");
        assert!(
            bytes.starts_with(b"# wrong: "),
            "{}: the first line says what is wrong",
            relative.display()
        );
        let error = first_error(relative, &catalog);
        assert!(error.line >= 1 && error.column >= 1);
        insta::assert_snapshot!(render(&error));
    });
}

/// The first error of loading `path` as every scenario it holds (a file with a `[matrix]` too); fails the
/// test when it loads.
fn first_error(path: &Path, catalog: &Catalog) -> LoadError {
    load_scenarios_with(path, catalog, &ProfileSources::shipped())
        .into_iter()
        .find_map(|(_, loaded)| loaded.err())
        .unwrap_or_else(|| panic!("{}: an invalid fixture must not load", path.display()))
}

/// The mistakes a new user makes most, each with what its message must name and the line it must point at:
/// the key (or value) at fault and where it is, never the step or the file as a whole.
#[test]
fn common_mistakes_name_the_key_and_its_line() {
    let catalog = Catalog::reference();
    let cases: &[(&str, &str, usize, Option<&str>)] = &[
        (
            "duplicate_key_step",
            "`action`",
            8,
            Some("keep one of the two"),
        ),
        (
            "duplicate_key_host_table",
            "`host`",
            6,
            Some("keep one of the two"),
        ),
        (
            "duplicate_key_matrix",
            "`host`",
            6,
            Some("keep one of the two"),
        ),
        (
            "duplicate_key_expect",
            "`vendor`",
            10,
            Some("keep one of the two"),
        ),
        (
            "duplicate_key_top",
            "`description`",
            4,
            Some("keep one of the two"),
        ),
        ("missing_format", "`format`", 1, Some("`format = 1`")),
        ("method_on_normalize", "`method`", 9, None),
        ("hint_family_case", "`ROCm`", 10, Some("write `rocm`")),
        ("hint_family_amd", "`amd`", 10, Some("write `rocm`")),
        ("key_the_action_ignores", "`kernel`", 8, None),
    ];
    for (name, names, line, help) in cases {
        let path = format!("tests/fixtures/invalid/{name}.toml");
        let error = first_error(Path::new(&path), &catalog);
        assert!(error.message.contains(names), "{name}: {error}");
        assert_eq!(error.line, *line, "{name}: {error}");
        if let Some(help) = help {
            assert!(
                error.help.as_deref().is_some_and(|h| h.contains(help)),
                "{name}: {error} / {:?}",
                error.help
            );
        }
    }
}

const HEADER: &str = "format = 1\ndescription = \"a scenario\"\n";

/// Writes `body` as `name.toml` in a scratch folder removed on drop.
fn write(name: &str, body: &str) -> (TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(format!("{name}.toml"));
    std::fs::write(&path, body).expect("write scenario");
    (dir, path)
}

#[test]
fn a_step_that_expects_an_unknown_kernel_may_name_one() {
    let (_dir, path) = write(
        "expects_unknown_kernel",
        &format!(
            "{HEADER}[host]\nprofile = \"h200\"\n[[step]]\naction = \"validate\"\nkernel = \"no_such\"\ndevice = \"cuda\"\n[step.expect]\nok = false\nerror = \"unknown-kernel\"\n"
        ),
    );
    let scenario = load_scenario(&path, &Catalog::reference()).expect("loads");
    assert_eq!(scenario.steps.len(), 1);
}

#[test]
fn inline_host_fields_override_the_profile() {
    let (_dir, path) = write(
        "inline_overrides",
        &format!(
            "{HEADER}[host]\nprofile = \"amd_mixed\"\ncurrent = 1\nenv = {{ HIP_VISIBLE_DEVICES = \"1,0\" }}\n[[step]]\naction = \"discover\"\n"
        ),
    );
    let scenario = load_scenario(&path, &Catalog::reference()).expect("loads");
    assert_eq!(scenario.host.current, 1);
    assert_eq!(scenario.host.gpus.len(), 2);
    assert_eq!(scenario.host.visible().expect("mask"), [1, 0]);
}

#[test]
fn host_facts_of_a_real_bug_host_load_with_their_meaning() {
    let (_dir, path) = write(
        "real_bug_host",
        &format!(
            "{HEADER}[host]\ntorch = \"hip\"\nruntime_version = \"6.4.43482-0f2d60242\"\narch_list = [\"gfx1030\", \"gfx1100\"]\n[[host.gpu]]\narch = \"gfx1030\"\nname = \"AMD Radeon RX 6800\"\nmemory_mib = 16368\n[[host.gpu]]\narch = \"gfx906:sramecc-:xnack-\"\n[[step]]\naction = \"discover\"\n"
        ),
    );
    let scenario = load_scenario(&path, &Catalog::reference()).expect("loads");
    let host = &scenario.host;
    assert_eq!(host.runtime_version.as_deref(), Some("6.4.43482-0f2d60242"));
    assert_eq!(
        host.arch_list.as_deref(),
        Some(&["gfx1030".to_string(), "gfx1100".to_string()][..])
    );
    assert_eq!(host.gpus[0].memory_mib, Some(16368));
    assert_eq!(host.gpus[1].memory_mib, None);
    assert_eq!(host.gpus[1].arch.to_string(), "gfx906:sramecc-:xnack-");
    let listed = devsim::reporter::json::host(host);
    assert_eq!(listed.arch_list, host.arch_list);
    assert_eq!(listed.gpus[0].memory_mib, Some(16368));
}

#[test]
fn a_profile_without_the_new_fields_sends_what_it_sent_before() {
    let (_dir, path) = write(
        "old_profile",
        &format!("{HEADER}[host]\nprofile = \"amd_mixed\"\n[[step]]\naction = \"discover\"\n"),
    );
    let scenario = load_scenario(&path, &Catalog::reference()).expect("loads");
    let sent = serde_json::to_value(devsim::reporter::json::host(&scenario.host)).expect("json");
    assert!(sent.get("arch_list").is_none(), "{sent}");
    assert!(sent["gpus"][0].get("memory_mib").is_none(), "{sent}");
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let error = load_scenario(Path::new("/nonexistent/devsim.toml"), &Catalog::reference())
        .expect_err("missing");
    assert!(
        error.to_string().contains("/nonexistent/devsim.toml:1:1"),
        "{error}"
    );
}

#[test]
fn step_lines_are_found_in_a_long_file_without_recounting() {
    // 32,000 steps took 14 s when every step recounted lines from the top; a line table makes it linear.
    let mut text = format!("{HEADER}[host]\nprofile = \"h200\"\n");
    for _ in 0..32_000 {
        text.push_str("[[step]]\naction = \"normalize\"\ndevice = \"cuda\"\n");
    }
    let (_dir, path) = write("long", &text);
    // Its speed is `devsim bench`'s to measure (no stopwatch in a unit test); this pins the line table.
    let scenario = load_scenario(&path, &Catalog::reference()).expect("loads");
    assert_eq!(scenario.steps.len(), 32_000);
    assert_eq!(scenario.steps[31_999].line, 5 + 3 * 31_999);
}

#[test]
fn tests_leave_no_scratch_behind() {
    // Every scratch folder in this suite is a TempDir: the one a write made is gone once it is dropped.
    // (Counting the temp folder's entries raced with the other tests of this binary, which run alongside.)
    let (dir, path) = write("scratch", HEADER);
    let folder = dir.path().to_path_buf();
    assert!(path.is_file(), "the scratch scenario was written");
    drop(dir);
    assert!(!folder.exists(), "{} was left behind", folder.display());
}
