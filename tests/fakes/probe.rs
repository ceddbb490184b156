//! `devsim probe` through the fakes: the profile it reads and the driver it maps, the visible-device
//! variables applied, no device where the fake has no usable profile, and `--check-masks`.

use std::path::Path;

use crate::common::{Fake, devsim, printed, profile_path, repo, snapshot_settings, text};

/// `devsim probe` through `fake`: the profile it prints, checked to name the fake as the mapped driver.
fn probe(fake: Fake, host: &Path, env: &[(&str, &str)]) -> String {
    let output = devsim(fake, host, env, &["probe"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let profile = text(&output.stdout);
    let driver = profile
        .lines()
        .find_map(|line| line.strip_prefix("# driver: "))
        .unwrap_or_else(|| panic!("probe names no mapped driver:\n{profile}"));
    assert_eq!(
        Path::new(driver),
        fake.library(),
        "the mapped driver is not the fake:\n{profile}"
    );
    profile
}

/// Visible-device variables, `(name, value)`.
type Env<'a> = &'a [(&'a str, &'a str)];

/// Probes through `fake` over each shipped profile with `env`, and compares the profile printed with the
/// snapshot `name` (`snapshots/fakes__probe__<name>.snap`).
fn probe_snapshots(cases: &[(&str, Fake, &str, Env)]) {
    for (name, fake, profile, env) in cases {
        let probed = probe(*fake, &profile_path(profile), env);
        let mut settings = snapshot_settings(None);
        settings.set_description(format!(
            "probe through {fake:?} over {profile} with {env:?}"
        ));
        settings.bind(|| insta::assert_snapshot!(*name, probed));
    }
}

pub fn maps_the_fake_and_reads_the_profile() {
    probe_snapshots(&[
        ("r9700x2", Fake::Hip, "r9700x2", &[]),
        // gcnArchName keeps its feature suffixes.
        ("amd_mixed", Fake::Hip, "amd_mixed", &[]),
        ("h200x2", Fake::Cuda, "h200x2", &[]),
    ]);

    // The live workflows' first step: a fake's GPUs are never real ones.
    let output = devsim(
        Fake::Cuda,
        &profile_path("h200x2"),
        &[],
        &["probe", "--require-gpu", "1"],
    );
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: failed to find 1 real GPU(s): live: FAKE DRIVER"),
        "{stderr}"
    );
}

pub fn applies_the_visible_device_variables() {
    probe_snapshots(&[
        (
            "amd_mixed_hip_visible_1_0",
            Fake::Hip,
            "amd_mixed",
            &[("HIP_VISIBLE_DEVICES", "1,0")],
        ),
        (
            "amd_mixed_rocr_visible_1",
            Fake::Hip,
            "amd_mixed",
            &[("ROCR_VISIBLE_DEVICES", "1")],
        ),
        (
            "h200x2_cuda_visible_1",
            Fake::Cuda,
            "h200x2",
            &[("CUDA_VISIBLE_DEVICES", "1")],
        ),
    ]);
}

pub fn without_a_usable_profile_the_fakes_have_no_device() {
    let missing = repo().join("no/such/profile.toml");
    let cases = [
        (
            "cuda_over_hip",
            Fake::Cuda,
            profile_path("r9700x2"),
            "a hip host",
        ),
        (
            "hip_over_cuda",
            Fake::HipOnly,
            profile_path("h200"),
            "a cuda host",
        ),
        (
            "hip_over_cpu",
            Fake::HipOnly,
            profile_path("cpu"),
            "a cpu host",
        ),
        (
            "hip_unreadable",
            Fake::HipOnly,
            missing.clone(),
            "read the file",
        ),
        ("cuda_unreadable", Fake::Cuda, missing, "read the file"),
    ];
    for (name, fake, host, reason) in cases {
        let output = devsim(fake, &host, &[], &["probe"]);
        let profile = text(&output.stdout);
        let stderr = text(&output.stderr);
        // The driver is present and answers "no device": what it is, not "no GPU driver".
        let build = if fake == Fake::Cuda { "cuda" } else { "hip" };
        assert!(
            profile.contains(&format!("torch = \"{build}\"")) && !profile.contains("[[gpu]]"),
            "{profile}\n{stderr}"
        );
        assert!(
            stderr.contains("no devices") && stderr.contains(reason),
            "{stderr}"
        );
        assert!(
            stderr.contains("shows no GPU") && !stderr.contains("no GPU driver on this machine"),
            "{stderr}"
        );
        assert!(
            stderr.contains("NO_DEVICE") || stderr.contains("NoDevice"),
            "{stderr}"
        );
        assert!(output.status.success(), "{stderr}");
        let mut settings = snapshot_settings(None);
        let shown = host.strip_prefix(repo()).unwrap_or(&host);
        settings.set_description(format!("probe through {fake:?} over {}", shown.display()));
        settings.bind(|| insta::assert_snapshot!(format!("no_device__{name}"), printed(&output)));
    }
}

/// `probe --check-masks` through each fake: every generated mask agrees with the driver (the fakes
/// apply devsim's model, so this proves the plumbing: the children, UUIDs, the rejected `0,0`).
pub fn check_masks_agrees_through_the_fakes() {
    for (fake, profile, expected) in [
        (
            Fake::Cuda,
            "h200x2",
            "CUDA_VISIBLE_DEVICES=\"0,0\": init fails, as predicted",
        ),
        (
            Fake::Hip,
            "r9700x2",
            "ROCR_VISIBLE_DEVICES=\"1,0\": 0000000000000001, 0000000000000000",
        ),
    ] {
        let output = devsim(
            fake,
            &profile_path(profile),
            &[],
            &["probe", "--check-masks"],
        );
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{profile}: {}", printed(&output));
        assert!(stdout.contains(expected), "{profile}: {stdout}");
        assert!(
            stdout.contains(" 0 disagree, 0 skipped"),
            "{profile}: {stdout}"
        );
        assert!(!stdout.contains("DISAGREE"), "{profile}: {stdout}");
    }
}
