//! `devsim run --live` through the fakes: a fake is named one and counts as live only when allowed, UUID
//! masks are mapped onto the GPUs the driver shows, an errored run has its own exit code, and a live
//! record confirms exactly the findings that failed live.

use devsim_metadata::exit;
use tempfile::TempDir;

use crate::common::{
    Fake, arg, devsim, printed, profile_path, repo, reports, snapshot_settings, text,
};

pub fn a_fake_is_named_fake_and_never_satisfies_require_live() {
    let host = profile_path("h200x2");
    let args = [
        "run",
        "--live",
        "--require-live",
        "1",
        "--filter",
        "live/h200x2",
    ];
    let refused = devsim(Fake::Cuda, &host, &[], &args);
    let shown = printed(&refused);
    assert!(
        shown.contains("live: FAKE DRIVER (devsim's stand-in, no real GPU)"),
        "the header names the fake: {shown}"
    );
    assert_eq!(refused.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("the driver is one of devsim's fakes"),
        "{shown}"
    );
    let mut allowed = args.to_vec();
    allowed.push("--allow-fake");
    let output = devsim(Fake::Cuda, &host, &[], &allowed);
    assert!(
        output.status.success(),
        "--allow-fake counts them: {}",
        printed(&output)
    );
}

/// The UUID-prefix scenarios, written against h200x2's profile UUIDs, replay on a machine whose GPUs
/// have other UUIDs: live replay maps each prefix onto the real GPU at the same position.
pub fn uuid_masks_are_mapped_onto_the_real_gpus() {
    let scratch = TempDir::new().expect("scratch dir");
    let machine = scratch.path().join("h200x2_other_uuids.toml");
    let profile = std::fs::read_to_string(profile_path("h200x2")).expect("read h200x2");
    let mut uuids = [
        "GPU-5e8a1c2d-0b3f-4a6e-9c7d-1f2e3d4c5b6a",
        "GPU-a1b2c3d4-0000-4000-8000-000000000001",
    ]
    .into_iter();
    let patched: String = profile
        .lines()
        .map(|line| match line.starts_with("smem_optin") {
            true => format!("{line}\nuuid = \"{}\"\n", uuids.next().unwrap_or_default()),
            false => format!("{line}\n"),
        })
        .collect();
    std::fs::write(&machine, patched).expect("write the profile");
    let output = devsim(
        Fake::Cuda,
        &machine,
        &[],
        &[
            "run",
            "--live",
            "scenarios/live/h200x2_uuid_prefix_selects_gpu1.toml",
            "scenarios/live/h200x2_uuid_prefixes_reorder_gpus.toml",
        ],
    );
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", printed(&output));
    assert!(stdout.contains("2 passed, 0 failed, 0 skipped"), "{stdout}");
}

/// A run in which devsim fails to run a scenario exits with its own code (4), apart from failures (1) and
/// bad input (2), in every format. The live worker cannot load the scenario: its host profile comes from
/// `--hosts`, which a worker (loading the file as `devsim run FILE` would) does not search.
pub fn an_errored_run_exits_with_its_own_code() {
    let scratch = TempDir::new().expect("scratch dir");
    let scenarios = scratch.path().join("scenarios");
    let hosts = scratch.path().join("elsewhere");
    std::fs::create_dir_all(&scenarios).expect("make the scenario folder");
    std::fs::create_dir_all(&hosts).expect("make the hosts folder");
    std::fs::copy(profile_path("h200x2"), hosts.join("moved.toml")).expect("copy the profile");
    let fixture = repo().join("tests/fixtures/live-worker/a_ends_with_gpu1_current.toml");
    let original = std::fs::read_to_string(fixture).expect("read the fixture");
    let moved = original.replace("profile = \"h200x2\"", "profile = \"moved\"");
    assert_ne!(moved, original, "the fixture names its profile");
    std::fs::write(scenarios.join("a.toml"), moved).expect("write the scenario");
    let args = ["run", "--live", "--hosts", arg(&hosts), arg(&scenarios)];
    for format in ["human", "json", "junit"] {
        let mut with_format = args.to_vec();
        with_format.extend(["--format", format]);
        let output = devsim(Fake::Cuda, &profile_path("h200x2"), &[], &with_format);
        assert_eq!(
            output.status.code(),
            Some(i32::from(exit::ERRORED)),
            "{format}: {}",
            printed(&output)
        );
        if format == "human" {
            let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
            assert!(stdout.contains("ERROR   a.toml"), "{stdout}");
            assert!(stdout.contains("find host profile `moved`"), "{stdout}");
            assert!(stdout.contains("0 failed"), "{stdout}");
            assert!(
                stderr.contains("error: failed to run or judge 1 scenario(s)"),
                "{stderr}"
            );
        }
    }
}

/// A warmup on GPU 1 expected on GPU 0: it fails wherever it runs, simulated or live.
const FLIPPED_WARMUP: &str = r#"format = 1
description = "a warmup on GPU 1 from a GPU-0 context, expected on GPU 0"

[host]
profile = "h200x2"

[[step]]
action = "warmup"
kernel = "gptq_marlin"
device = "cuda:1"

[step.expect]
ran_on = 0
"#;

/// `devsim run --live --write-live-record` through the CUDA fake, then a simulated run given that record: the
/// finding of the scenario that failed live is confirmed (through the fake, which the mark names), the one of
/// the scenario the fake machine could not run (a HIP host) stays simulated (the snapshot
/// `live_record_findings`).
pub fn a_live_record_confirms_what_failed_live_and_nothing_else() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let root = scratch.path().join("scenarios");
    std::fs::create_dir_all(&root).expect("dir");
    std::fs::write(root.join("cuda.toml"), FLIPPED_WARMUP).expect("write");
    let on_hip = FLIPPED_WARMUP
        .replace("h200x2", "r9700x2")
        .replace("gptq_marlin", "gptq_torch");
    std::fs::write(root.join("hip.toml"), on_hip).expect("write");
    let record = scratch.path().join("live.toml");
    let date = [("DEVSIM_LIVE_RECORD_DATE", "2026-12-06")];
    let host = profile_path("h200x2");
    let live = devsim(
        Fake::Cuda,
        &host,
        &date,
        &[
            "run",
            "--live",
            "--write-live-record",
            arg(&record),
            arg(&root),
        ],
    );
    assert_eq!(live.status.code(), Some(1), "{}", text(&live.stderr));
    let simulated = devsim(
        Fake::Cuda,
        &host,
        &[],
        &[
            "run",
            "--format",
            "json",
            "--live-record",
            arg(&record),
            arg(&root),
        ],
    );
    let (run, _) = reports(&simulated);
    snapshot_settings(Some(scratch.path())).bind(|| {
        insta::assert_json_snapshot!("live_record_findings", run.findings);
    });
}
