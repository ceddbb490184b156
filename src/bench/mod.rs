//! The benchmarks behind `devsim bench`: decisions per second over the kernel matrix, the median cost of one
//! validate, scenarios per second over the corpus, and load times at scale (a generated scenario of 1,000,000
//! steps, a visible-device mask of 200,000 entries, discovery of a tree 2,000 folders deep); the cost of a
//! live replay against direct runtime calls (`--live`); subjects side by side ([`side_by_side`]); and the
//! costs that once grew with the square of their input ([`costs`]).
//!
//! Each benchmark hands its figures, one line at a time as they are measured, to a sink the caller gives
//! (the command line prints them); it prints nothing itself.

use std::path::Path;
use std::time::Instant;

use thiserror::Error;

use crate::dispatch::DispatchError;
use crate::kernel::Catalog;
use crate::scenario::load::{MAX_DEPTH, ProfileSources, find_named, parse_scenario};
use crate::sweep::{median, run_matrix, run_matrix_on_one_thread, shipped_hosts};
use crate::visible::torch::{TorchList, parse_list};
use {crate::runner::run_simulated, crate::scenario::load_all};

/// Where a benchmark's figures go, one line each: human text, user text already placed through
/// [`crate::shown::field`].
pub type Sink<'a> = &'a mut dyn FnMut(&str);

/// Hands one formatted line to a [`Sink`].
macro_rules! emit {
    ($sink:expr, $($arg:tt)*) => {
        ($sink)(&format!($($arg)*))
    };
}

/// Why a benchmark could not be measured.
#[derive(Debug, Error)]
pub enum BenchError {
    /// A scratch tree could not be made or removed, or the running binary could not be found.
    #[error("set up the benchmark: {0}")]
    Io(#[from] std::io::Error),
    /// The corpus could not be listed.
    #[error(transparent)]
    Corpus(#[from] crate::scenario::CorpusError),
    /// A generated scenario or a shipped profile did not load.
    #[error(transparent)]
    Load(#[from] crate::scenario::LoadError),
    /// A kernel the benchmark needs is missing from the catalog.
    #[error(transparent)]
    Dispatch(#[from] DispatchError),
    /// A subject could not be started.
    #[error(transparent)]
    Subject(#[from] crate::subject::SubjectError),
    /// A subject file's live record could not be read.
    #[error(transparent)]
    LiveRecord(#[from] crate::live_record::LiveRecordError),
    /// A runtime or dispatch call of the live benchmark failed.
    #[error("measure the live runtime: {0}")]
    Live(String),
}

pub mod costs;
pub mod side_by_side;

/// Steps in the generated scenario that `bench` loads.
pub const GENERATED_STEPS: usize = 1_000_000;
/// Entries in the generated visible-device mask that `bench` parses.
pub const MASK_ENTRIES: usize = 200_000;

/// A scenario of `steps` steps (alternating normalize, validate and discover) on a shipped profile.
pub fn generated_scenario(steps: usize) -> String {
    let mut text = String::from(
        "format = 1\ndescription = \"a generated scenario for load benchmarks\"\n[host]\nprofile = \"h200x2\"\n",
    );
    for i in 0..steps {
        text.push_str(match i % 3 {
            0 => "[[step]]\naction = \"normalize\"\ndevice = \"cuda:1\"\n",
            1 => "[[step]]\naction = \"validate\"\nkernel = \"gptq_marlin\"\ndevice = \"cuda\"\n",
            _ => "[[step]]\naction = \"discover\"\n[step.expect]\nvendor = \"nvidia\"\n",
        });
    }
    text
}

/// Load time of a generated scenario and parse time of a long visible-device mask.
pub fn run_load_scale(catalog: &Catalog, show: Sink<'_>) -> Result<(), BenchError> {
    let text = generated_scenario(GENERATED_STEPS);
    let started = Instant::now();
    let scenario = parse_scenario(
        Path::new("generated.toml"),
        &text,
        catalog,
        &ProfileSources::shipped(),
    )?;
    let load_time = started.elapsed();
    emit!(
        show,
        "load: {} steps ({:.1} MiB) loaded in {:.2} s",
        scenario.steps.len(),
        text.len() as f64 / (1024.0 * 1024.0),
        load_time.as_secs_f64()
    );
    let mask: Vec<String> = (0..MASK_ENTRIES).map(|i| i.to_string()).collect();
    let mask = mask.join(",");
    let started = Instant::now();
    let parsed = parse_list(&mask);
    let mask_time = started.elapsed();
    let entries = match parsed {
        Ok(TorchList::Ordinals(ordinals)) => ordinals.len(),
        Ok(TorchList::Ids(ids)) => ids.len(),
        Ok(TorchList::Range(n)) => n,
        Err(_) => 0,
    };
    emit!(
        show,
        "mask: {MASK_ENTRIES} entries ({entries} kept) parsed in {:.2} ms",
        mask_time.as_secs_f64() * 1e3
    );
    run_depth(show)
}

/// Folders in the deep tree whose refusal `bench` times.
pub const DEEP_FOLDERS: usize = 2_000;

/// Discovery over depth: a tree [`MAX_DEPTH`] folders deep (listed) and one [`DEEP_FOLDERS`] deep (refused
/// at the limit), each with one scenario at the bottom, in a scratch folder removed afterwards.
pub fn run_depth(show: Sink<'_>) -> Result<(), BenchError> {
    let scratch = std::env::temp_dir().join(format!("devsim-bench-depth-{}", std::process::id()));
    let timed = |depth: usize| -> Result<(f64, bool), BenchError> {
        let root = scratch.join(depth.to_string());
        let below: std::path::PathBuf = (0..depth).map(|_| "d").chain(["x.toml"]).collect();
        std::fs::create_dir_all(&root).map_err(BenchError::Io)?;
        crate::contain::write_file(&root, &below, b"", crate::contain::Permissions::Kept)
            .map_err(|error| BenchError::Io(std::io::Error::other(error)))?;
        let started = Instant::now();
        let listed = find_named(&[root]).is_ok();
        Ok((started.elapsed().as_secs_f64() * 1e3, listed))
    };
    let measured = timed(MAX_DEPTH).and_then(|limit| Ok((limit, timed(DEEP_FOLDERS)?)));
    let removed = std::fs::remove_dir_all(&scratch);
    let ((limit_ms, limit_listed), (deep_ms, deep_listed)) = measured?;
    removed.map_err(BenchError::Io)?;
    emit!(
        show,
        "depth: {MAX_DEPTH} folders {} in {limit_ms:.2} ms, {DEEP_FOLDERS} folders {} in {deep_ms:.2} ms",
        if limit_listed { "listed" } else { "REFUSED" },
        if deep_listed {
            "LISTED"
        } else {
            "refused at the limit"
        },
    );
    Ok(())
}

/// Runs the benchmarks and prints their figures.
pub fn run(root: &Path, catalog: &Catalog, rounds: u32, show: Sink<'_>) -> Result<(), BenchError> {
    let hosts = shipped_hosts(root)?;
    let mut best_rate = 0.0f64;
    let mut best_validate = std::time::Duration::MAX;
    let mut validate_calls = 0;
    let mut cases = 0;
    let mut violations = Vec::new();
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        let outcome = run_matrix(&hosts, catalog);
        let elapsed = started.elapsed();
        cases = outcome.cases;
        best_rate = best_rate.max(outcome.cases as f64 / elapsed.as_secs_f64());
        violations = outcome.violations;
        let mut times = run_matrix_on_one_thread(&hosts, catalog).validate_times;
        validate_calls = times.len();
        best_validate = best_validate.min(median(&mut times));
    }
    emit!(
        show,
        "matrix: {} kernels x {} hosts = {cases} cases per round, {rounds} round(s)",
        catalog.len(),
        hosts.len()
    );
    emit!(
        show,
        "matrix: {best_rate:.0} decisions/s (best round, on up to one thread per core), {} invariant violation(s)",
        violations.len()
    );
    for violation in violations.iter().take(10) {
        emit!(show, "  violated: {violation}");
    }
    emit!(
        show,
        "validate: median {:.2} us over {validate_calls} calls (best round; each call timed alone, on one thread)",
        best_validate.as_secs_f64() * 1e6,
    );
    let load_started = Instant::now();
    let (scenarios, errors) = load_all(&[root.to_path_buf()], catalog)?;
    let load_time = load_started.elapsed();
    let mut best_corpus = f64::MAX;
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        for scenario in &scenarios {
            run_simulated(scenario, catalog);
        }
        best_corpus = best_corpus.min(started.elapsed().as_secs_f64());
    }
    emit!(
        show,
        "corpus: {} scenarios ({} failed to load) loaded in {:.1} ms, run in {:.2} ms (best of {rounds}): {:.0} scenarios/s",
        scenarios.len(),
        errors.len(),
        load_time.as_secs_f64() * 1e3,
        best_corpus * 1e3,
        scenarios.len() as f64 / best_corpus
    );
    run_budget(catalog, show)?;
    run_load_scale(catalog, show)?;
    costs::run_costs(catalog, show)
}

/// The largest repeated input the budget accepts ([`crate::scenario::Step::MAX_EXECUTIONS`] warmups, each
/// switching devices and launching), run on the simulated runtime: its time and the process's peak resident
/// memory while it ran (Linux: the high-water mark is reset first through `/proc/self/clear_refs`).
pub fn run_budget(catalog: &Catalog, show: Sink<'_>) -> Result<(), BenchError> {
    let executions = crate::scenario::Step::MAX_EXECUTIONS;
    let (steps, repeat) = (executions / 10_000, 10_000);
    let mut text = String::from(
        "format = 1\ndescription = \"the largest repeated input the budget accepts\"\n[host]\nprofile = \"h200x2\"\n",
    );
    for _ in 0..steps {
        text.push_str(&format!(
            "[[step]]\naction = \"warmup\"\nkernel = \"gptq_marlin\"\ndevice = \"cuda:1\"\nrepeat = {repeat}\n"
        ));
    }
    let scenario = parse_scenario(
        Path::new("budget.toml"),
        &text,
        catalog,
        &ProfileSources::shipped(),
    )?;
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let started = Instant::now();
    let report = run_simulated(&scenario, catalog);
    let took = started.elapsed();
    let peak = peak_resident_kib()
        .filter(|_| reset)
        .map_or("not measured (no /proc/self)".to_string(), |kib| {
            format!("{:.1} MiB", kib as f64 / 1024.0)
        });
    emit!(
        show,
        "budget: {executions} step executions ({steps} steps x repeat {repeat}) run in {:.2} s, peak resident memory {peak}, {}",
        took.as_secs_f64(),
        report.status.word()
    );
    Ok(())
}

/// The process's peak resident set (`VmHWM`), in KiB, where the system says it.
fn peak_resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `devsim bench --live`: the cost of a live replay against the same runtime calls made directly.
///
/// Both sides do the same work on the last visible GPU from a GPU-0 context: a weight move (alloc, copy in,
/// copy out, free) and a warmup (switch context, launch, synchronize, switch back). The harness side goes
/// through dispatch (normalize, gates, the recorder's trace); the direct side calls the runtime in a loop.
pub fn run_live(rounds: u32, show: Sink<'_>) -> Result<(), BenchError> {
    use crate::dispatch::Dispatch;
    use crate::dispatch::selector::Selector;
    use crate::runtime::live::LiveRuntime;
    use crate::runtime::live::driver::load_gpu_driver;
    use crate::runtime::{LaunchOn, Recorder, Runtime};
    use crate::vocab::TorchDevice;
    use std::sync::Arc;

    let driver = match load_gpu_driver() {
        Ok(driver) => Arc::<dyn crate::runtime::live::driver::GpuDriver>::from(driver),
        Err(errors) => {
            let why: Vec<String> = errors.iter().map(ToString::to_string).collect();
            emit!(
                show,
                "live bench: no GPU driver, nothing measured ({})",
                why.join("; ")
            );
            return Ok(());
        }
    };
    let tensors = cfg!(feature = "torch");
    let count = driver.device_count().unwrap_or(0);
    if count == 0 {
        emit!(show, "live bench: the driver sees no GPU, nothing measured");
        return Ok(());
    }
    let target = count - 1;
    let iterations = 50 * rounds.max(1);
    let catalog = Catalog::reference();
    let kernel = catalog.get("gptq_torch")?;
    let failure = BenchError::Live;

    let direct = LiveRuntime::new(Arc::clone(&driver), tensors);
    direct.set_device(0).map_err(|e| failure(e.to_string()))?;
    let data = vec![7u8; 4096];
    let direct_once = || -> Result<(), crate::runtime::DriverError> {
        let buffer = direct.alloc(TorchDevice::cuda(target), data.len())?;
        direct.copy_in(&buffer, &data)?;
        direct.copy_out(&buffer)?;
        direct.free(&buffer)?;
        let previous = direct.get_device()?;
        direct.set_device(target)?;
        direct.launch(LaunchOn::CurrentDevice, "gptq_torch")?;
        direct.synchronize()?;
        direct.set_device(previous)
    };
    direct_once().map_err(|e| failure(e.to_string()))?;
    let started = Instant::now();
    for _ in 0..iterations {
        direct_once().map_err(|e| failure(e.to_string()))?;
    }
    let direct_time = started.elapsed();

    let recorder = Recorder::new(Box::new(LiveRuntime::new(Arc::clone(&driver), tensors)));
    let selector = Selector::Text(format!("cuda:{target}"));
    let harness_once = || -> Result<(), crate::dispatch::DispatchError> {
        let dispatch = Dispatch::new(&recorder, recorder.trace().clone());
        kernel.move_weights(&dispatch, &selector)?;
        kernel.warmup(&dispatch, &selector)?;
        Ok(())
    };
    recorder.set_device(0).map_err(|e| failure(e.to_string()))?;
    harness_once().map_err(|e| failure(e.to_string()))?;
    let started = Instant::now();
    for _ in 0..iterations {
        harness_once().map_err(|e| failure(e.to_string()))?;
    }
    let harness_time = started.elapsed();
    let per = |t: std::time::Duration| t.as_secs_f64() * 1e6 / f64::from(iterations);
    emit!(
        show,
        "live bench on GPU {target} ({} iterations, {}): direct {:.1} us, through the harness {:.1} us per move+warmup; ratio {:.2}",
        iterations,
        if tensors { "tch tensors" } else { "driver API" },
        per(direct_time),
        per(harness_time),
        harness_time.as_secs_f64() / direct_time.as_secs_f64()
    );
    Ok(())
}

/// Seconds as milliseconds for the table.
pub(crate) fn ms(seconds: f64) -> String {
    format!("{:.2}", seconds * 1e3)
}

/// `bench --live`, second part: the scenario corpus under `root` simulated and live, wall time and
/// ratio, with the worker pool's part (workers started, scenarios they ran). The first live round
/// starts the workers (cold); later rounds reuse them (warm).
pub fn corpus_live(
    root: &Path,
    catalog: &Catalog,
    rounds: u32,
    show: Sink<'_>,
) -> Result<(), BenchError> {
    use crate::replay::LiveContext;
    use crate::runner::Status;

    let (scenarios, _) = load_all(&[root.to_path_buf()], catalog)?;
    let started = Instant::now();
    for scenario in &scenarios {
        run_simulated(scenario, catalog);
    }
    let simulated = started.elapsed().as_secs_f64();
    let exe = std::env::current_exe()?;
    let context = LiveContext::detect(Some(exe));
    let mut times = Vec::new();
    let (mut ran, mut skipped, mut failed) = (0, 0, 0);
    for _ in 0..rounds.clamp(1, 3) {
        let started = Instant::now();
        let reports: Vec<_> = scenarios
            .iter()
            .map(|scenario| context.run(scenario, catalog))
            .collect();
        times.push(started.elapsed().as_secs_f64());
        ran = reports
            .iter()
            .filter(|r| !matches!(r.status, Status::Skipped(_)))
            .count();
        skipped = reports.len() - ran;
        failed = reports.iter().filter(|r| r.status.fails_run()).count();
    }
    let in_workers = scenarios
        .iter()
        .filter(|scenario| context.plan(scenario).is_ok() && context.runs_in_worker(scenario))
        .count();
    let cold = times.first().copied().unwrap_or_default();
    let warm = times.iter().skip(1).copied().fold(f64::MAX, f64::min);
    emit!(
        show,
        "live corpus: {} scenario(s), {ran} ran live ({in_workers} in workers), {skipped} skipped, {failed} failed",
        scenarios.len()
    );
    emit!(
        show,
        "live corpus: simulated {} ms; live {} ms cold (workers started: {}), ratio live/simulated {:.1}",
        ms(simulated),
        ms(cold),
        context.workers().map_or(0, |pool| pool.started()),
        cold / simulated.max(f64::EPSILON)
    );
    if times.len() > 1 {
        emit!(
            show,
            "live corpus: {} ms warm (workers reused), ratio live/simulated {:.1}",
            ms(warm),
            warm / simulated.max(f64::EPSILON)
        );
    }
    Ok(())
}
