//! Costs that once grew with the square of the input (issue 53), each timed at the size that showed it: a
//! pool lock on `all` over many GPUs, repeated; many scenarios naming a profile that is not among many; a
//! did-you-mean search for a name of megabytes.

use std::path::Path;
use std::time::Instant;

use super::{BenchError, Sink};
use crate::kernel::Catalog;
use crate::runner::run_simulated;
use crate::scenario::load::{ProfileSources, load_all, parse_scenario};

/// GPUs of the host the lock benchmark locks `all` on.
pub const LOCK_GPUS: usize = 10_000;
/// How many times the lock benchmark's step locks `all`.
pub const LOCK_REPEAT: u32 = 10_000;
/// Scenarios, and profiles beside them, of the unknown-profile benchmark.
pub const UNKNOWN_PROFILE_FILES: usize = 10_000;
/// Bytes of the unknown name the did-you-mean benchmark looks up.
pub const HUGE_NAME_BYTES: usize = 4_000_000;

/// Hands one formatted line to a [`Sink`].
macro_rules! emit {
    ($sink:expr, $($arg:tt)*) => {
        ($sink)(&format!($($arg)*))
    };
}

/// The three lines, one per cost.
pub fn run_costs(catalog: &Catalog, show: Sink<'_>) -> Result<(), BenchError> {
    run_lock(catalog, show)?;
    run_unknown_profiles(catalog, show)?;
    run_huge_name(catalog, show)
}

/// A write lock on `all` over [`LOCK_GPUS`] GPUs, [`LOCK_REPEAT`] times, on the simulated runtime.
pub fn run_lock(catalog: &Catalog, show: Sink<'_>) -> Result<(), BenchError> {
    let gpus = vec!["\"sm_90\""; LOCK_GPUS].join(",");
    let text = format!(
        "format = 1\ndescription = \"a lock on every GPU of a large host\"\n[host]\ntorch = \"cuda\"\ngpus = [{gpus}]\n[[step]]\naction = \"lock\"\nscope = \"all\"\nmode = \"write\"\nrepeat = {LOCK_REPEAT}\n"
    );
    let scenario = parse_scenario(
        Path::new("lock.toml"),
        &text,
        catalog,
        &ProfileSources::shipped(),
    )?;
    let started = Instant::now();
    let report = run_simulated(&scenario, catalog);
    emit!(
        show,
        "lock: scope all on {LOCK_GPUS} GPUs x repeat {LOCK_REPEAT} run in {:.2} s, {}",
        started.elapsed().as_secs_f64(),
        report.status.word()
    );
    Ok(())
}

/// [`UNKNOWN_PROFILE_FILES`] scenarios naming one profile that is not among as many profiles, loaded (every
/// one an error with its suggestion), in a scratch folder removed afterwards.
pub fn run_unknown_profiles(catalog: &Catalog, show: Sink<'_>) -> Result<(), BenchError> {
    let scratch =
        std::env::temp_dir().join(format!("devsim-bench-profiles-{}", std::process::id()));
    let measured = (|| -> Result<(f64, usize), BenchError> {
        let hosts = scratch.join("hosts");
        std::fs::create_dir_all(&hosts)?;
        for i in 0..UNKNOWN_PROFILE_FILES {
            std::fs::write(hosts.join(format!("box{i}.toml")), "torch = \"cuda\"\n")?;
            std::fs::write(
                scratch.join(format!("s{i}.toml")),
                "format = 1\ndescription = \"names a profile no folder has\"\n[host]\nprofile = \"nobox\"\n[[step]]\naction = \"discover\"\n",
            )?;
        }
        let started = Instant::now();
        let (_, errors) = load_all(std::slice::from_ref(&scratch), catalog)?;
        Ok((started.elapsed().as_secs_f64(), errors.len()))
    })();
    let removed = std::fs::remove_dir_all(&scratch);
    let (seconds, errors) = measured?;
    removed?;
    emit!(
        show,
        "unknown profile: {UNKNOWN_PROFILE_FILES} scenarios beside {UNKNOWN_PROFILE_FILES} profiles loaded in {seconds:.2} s ({errors} errors)",
    );
    Ok(())
}

/// A scenario whose step names a kernel of [`HUGE_NAME_BYTES`] bytes, loaded: the error and its
/// suggestion search.
pub fn run_huge_name(catalog: &Catalog, show: Sink<'_>) -> Result<(), BenchError> {
    let name = format!("gptq_marlin{}", "x".repeat(HUGE_NAME_BYTES));
    let text = format!(
        "format = 1\ndescription = \"names a kernel of megabytes\"\n[host]\nprofile = \"h200x2\"\n[[step]]\naction = \"validate\"\nkernel = \"{name}\"\ndevice = \"cuda\"\n"
    );
    let started = Instant::now();
    let loaded = parse_scenario(
        Path::new("huge.toml"),
        &text,
        catalog,
        &ProfileSources::shipped(),
    );
    emit!(
        show,
        "did you mean: a {:.1} MB unknown kernel name {} in {:.2} ms",
        text.len() as f64 / 1e6,
        if loaded.is_err() { "refused" } else { "LOADED" },
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
