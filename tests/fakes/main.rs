//! Live replay through the fake drivers (`fakes/cuda`, `fakes/hip`) on a machine without GPUs.
//!
//! The fakes are built by `scripts/build-fake-drivers` (CI runs it first) into `target/fake-drivers/`
//! under their real names; no test builds them. Each child `devsim` gets one of those folders first on
//! `LD_LIBRARY_PATH` and finds the fake through the loader's ordinary search, exactly as it finds a real
//! driver, plus `DEVSIM_FAKE_HOST`, the host profile the fake answers from. When the fakes were not
//! built every trial is listed as ignored, with the reason printed, or fails under `CI=true`.
//!
//! One trial per topic's test, named `topic::test`: [`replay`] (one trial per shipped GPU profile),
//! [`probe`], [`faults`], [`abi`], [`workers`], [`live_run`] and [`live_subject`]; what they share is in
//! [`common`]. Whole outputs are insta snapshots in `snapshots/`, with what differs between machines
//! redacted ([`common::snapshot_settings`]); under `CI=true` a missing or changed snapshot fails.

mod abi;
mod common;
mod faults;
mod live_run;
mod live_subject;
mod probe;
mod replay;
#[path = "../subject_fixture/mod.rs"]
mod subject_fixture;
mod workers;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::common::Fakes;

/// A topic's tests, by name.
type Topic = &'static [(&'static str, fn())];

/// Each topic's tests, by name.
const TESTS: &[(&str, Topic)] = &[
    (
        "probe",
        &[
            (
                "maps_the_fake_and_reads_the_profile",
                probe::maps_the_fake_and_reads_the_profile,
            ),
            (
                "applies_the_visible_device_variables",
                probe::applies_the_visible_device_variables,
            ),
            (
                "without_a_usable_profile_the_fakes_have_no_device",
                probe::without_a_usable_profile_the_fakes_have_no_device,
            ),
            (
                "check_masks_agrees_through_the_fakes",
                probe::check_masks_agrees_through_the_fakes,
            ),
        ],
    ),
    (
        "faults",
        &[
            (
                "a_launch_fault_in_the_profile_fails_a_warmup_on_gpu1",
                faults::a_launch_fault_in_the_profile_fails_a_warmup_on_gpu1,
            ),
            (
                "a_lost_gpu_in_the_profile_fails_allspark_validation_on_it",
                faults::a_lost_gpu_in_the_profile_fails_allspark_validation_on_it,
            ),
        ],
    ),
    (
        "abi",
        &[(
            "the_fakes_answer_with_the_drivers_error_codes",
            abi::the_fakes_answer_with_the_drivers_error_codes,
        )],
    ),
    (
        "workers",
        &[
            (
                "a_worker_resets_the_current_device_between_scenarios",
                workers::a_worker_resets_the_current_device_between_scenarios,
            ),
            (
                "a_worker_that_dies_errors_its_scenario_and_is_replaced",
                workers::a_worker_that_dies_errors_its_scenario_and_is_replaced,
            ),
            (
                "a_silent_worker_times_out",
                workers::a_silent_worker_times_out,
            ),
        ],
    ),
    (
        "live_run",
        &[
            (
                "a_fake_is_named_fake_and_never_satisfies_require_live",
                live_run::a_fake_is_named_fake_and_never_satisfies_require_live,
            ),
            (
                "uuid_masks_are_mapped_onto_the_real_gpus",
                live_run::uuid_masks_are_mapped_onto_the_real_gpus,
            ),
            (
                "an_errored_run_exits_with_its_own_code",
                live_run::an_errored_run_exits_with_its_own_code,
            ),
            (
                "a_live_record_confirms_what_failed_live_and_nothing_else",
                live_run::a_live_record_confirms_what_failed_live_and_nothing_else,
            ),
        ],
    ),
    (
        "live_subject",
        &[
            (
                "runs_what_the_fake_machine_satisfies_and_skips_the_rest",
                live_subject::runs_what_the_fake_machine_satisfies_and_skips_the_rest,
            ),
            (
                "that_cannot_reach_the_machine_fails",
                live_subject::that_cannot_reach_the_machine_fails,
            ),
            (
                "require_live_counts_only_what_ran_and_never_a_fake_unasked",
                live_subject::require_live_counts_only_what_ran_and_never_a_fake_unasked,
            ),
            (
                "without_live_in_its_handshake_is_refused",
                live_subject::without_live_in_its_handshake_is_refused,
            ),
        ],
    ),
];

/// A trial whose body panics on failure; the panic message is the failure.
fn trial(name: impl Into<String>, body: impl FnOnce() + Send + 'static) -> Trial {
    Trial::test(name, move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).map_err(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(ToString::to_string))
                .unwrap_or_else(|| "the trial panicked".into());
            Failed::from(message)
        })
    })
}

fn main() {
    if let Ok(mode) = std::env::var(subject_fixture::MODE) {
        std::process::exit(subject_fixture::serve(&mode));
    }
    let args = Arguments::from_args();
    let mut trials: Vec<Trial> = replay::profiles()
        .into_iter()
        .map(|(profile, fake)| {
            trial(format!("replay::{profile}"), move || {
                replay::replay(fake, &profile)
            })
        })
        .collect();
    for (topic, tests) in TESTS {
        trials.extend(
            tests
                .iter()
                .map(|(name, body)| trial(format!("{topic}::{name}"), body)),
        );
    }
    if let Err(reason) = Fakes::locate() {
        // Under CI the fakes must have been built: every trial fails with the reason. Elsewhere each is
        // listed as ignored.
        let ci = std::env::var("CI").is_ok_and(|value| value == "true");
        if !ci && !args.list {
            eprintln!("fakes: every trial ignored: {reason}");
        }
        trials = trials
            .into_iter()
            .map(|t| {
                let reason = reason.clone();
                Trial::test(t.name().to_string(), move || Err(reason.into())).with_ignored_flag(!ci)
            })
            .collect();
    }
    libtest_mimic::run(&args, trials).exit();
}
