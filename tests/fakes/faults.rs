//! Faults written in the fake's host profile (`[[fault]]`) surface through the C ABI: the scenario passes
//! simulated and fails live through the faulty fake, naming the driver's error.

use std::path::{Path, PathBuf};

use devsim_metadata::output::Outcome;
use tempfile::TempDir;

use crate::common::{Fake, arg, devsim, plain_devsim, profile_path, reports, text};

/// A scratch scenario root: `hosts/` with the shipped `profile`, one scenario, and the fake's own
/// profile (the shipped one plus `faults`) outside `hosts/`. Returns the scratch folder (removed when
/// dropped), the scenario and the fake's host.
fn fault_case(
    name: &str,
    profile: &str,
    faults: &str,
    scenario: &str,
) -> (TempDir, PathBuf, PathBuf) {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let root = scratch.path().to_path_buf();
    std::fs::create_dir_all(root.join("hosts")).expect("dir");
    let shipped = std::fs::read_to_string(profile_path(profile)).expect("profile");
    std::fs::write(root.join("hosts").join(format!("{profile}.toml")), &shipped).expect("write");
    let fake_host = root.join("fake-host.toml");
    std::fs::write(&fake_host, format!("{shipped}\n{faults}")).expect("write");
    let file = root.join(format!("{name}.toml"));
    std::fs::write(&file, scenario).expect("write");
    (scratch, file, fake_host)
}

/// Runs one scenario simulated (no fault: it must pass) and live through `fake` over `fake_host`
/// (the fault fires: it must fail), returning the live run's output.
fn fails_only_through_the_faulty_fake(fake: Fake, file: &Path, fake_host: &Path) -> String {
    let simulated = plain_devsim(&["run", arg(file)]);
    assert!(
        simulated.status.success(),
        "the scenario must pass without the fault:\n{}",
        text(&simulated.stdout)
    );
    let live = devsim(
        fake,
        fake_host,
        &[],
        &["run", "--live", "--format", "json", arg(file)],
    );
    let shown = text(&live.stdout);
    let (run, by_name) = reports(&live);
    assert!(
        run.machine
            .as_deref()
            .is_some_and(|machine| machine.contains(&fake.describes())),
        "{shown}"
    );
    assert!(
        !live.status.success(),
        "the fault did not fail the run: {shown}"
    );
    assert!(
        by_name
            .values()
            .all(|report| report.status == Outcome::Failed),
        "{shown}"
    );
    shown
}

pub fn a_launch_fault_in_the_profile_fails_a_warmup_on_gpu1() {
    let warmup = |profile: &str| {
        format!(
            r#"format = 1
description = "A warmup on cuda:1 runs on GPU 1 and restores GPU 0"

[host]
profile = "{profile}"

[[step]]
action = "warmup"
kernel = "gptq_torch"
device = "cuda:1"

[step.expect]
ran_on = 1
current_after = 0
"#
        )
    };
    let fault = "[[fault]]\ncall = \"launch\"\ndevice = 1\ncode = 719\n";
    for (fake, profile, name) in [
        (Fake::Hip, "r9700x2", "hipErrorLaunchFailure"),
        (Fake::Cuda, "h200x2", "CUDA_ERROR_LAUNCH_FAILED"),
    ] {
        let (_scratch, file, host) = fault_case(
            &format!("launch-fault-{profile}"),
            profile,
            fault,
            &warmup(profile),
        );
        let output = fails_only_through_the_faulty_fake(fake, &file, &host);
        assert!(output.contains(name), "{name} not reported:\n{output}");
        assert!(output.contains("719"), "{output}");
    }
}

pub fn a_lost_gpu_in_the_profile_fails_allspark_validation_on_it() {
    let scenario = r#"format = 1
description = "AllSpark validates on cuda:1 of an R9700 pair"

[host]
profile = "r9700x2"

[[step]]
action = "validate"
kernel = "gptq_allspark"
device = "cuda:1"

[step.expect]
family = "rocm"
ordinal = 1
"#;
    // Probing the machine makes three calls on GPU 1 (gcnArchName, name, shared memory); the GPU
    // is lost after them, so the scenario runs live and its gcnArchName query fails.
    let lost = "[[fault]]\ndevice = 1\nafter = 3\n";
    let (_scratch, file, host) = fault_case("lost-gpu1", "r9700x2", lost, scenario);
    let output = fails_only_through_the_faulty_fake(Fake::Hip, &file, &host);
    assert!(output.contains("hipErrorUnknown"), "{output}");
    assert!(output.contains("hipGetDevicePropertiesR0600"), "{output}");

    // Lost from the start, the probe itself cannot read GPU 1.
    let (_scratch_at_start, _, host) = fault_case(
        "lost-gpu1-at-start",
        "r9700x2",
        "[[fault]]\ndevice = 1\n",
        "",
    );
    let output = devsim(Fake::Hip, &host, &[], &["probe"]);
    let stderr = text(&output.stderr);
    assert!(text(&output.stdout).contains("torch = \"cpu\""), "{stderr}");
    assert!(
        stderr.contains("present but failing")
            && stderr.contains("read the GPUs of")
            && stderr.contains("hipErrorUnknown"),
        "{stderr}"
    );
    assert_eq!(
        output.status.code(),
        Some(3),
        "a failing driver has its own exit code: {stderr}"
    );
    // The same through `run --live`: its own exit code, not a pass with every GPU scenario skipped.
    let output = devsim(
        Fake::Hip,
        &host,
        &[],
        &["run", "--live", "scenarios/live/cpu_moves_and_warmups.toml"],
    );
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("present but failing"),
        "{}",
        text(&output.stdout)
    );
}
