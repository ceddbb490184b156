//! `fuzz-loader`: feeds mutated scenario files to devsim's loader, its diagnostic renderer and, for files
//! that load, the simulated runner. Needs no nightly toolchain: a seeded mutator (byte edits, token
//! insertions, line-level splices across corpus files, plain random bytes), `catch_unwind` around every
//! input and a watchdog thread that fails the run when one input takes longer than the limit.
//!
//! Exit status: 0 when every input finished without a panic or a hang; 1 otherwise, with each offending
//! input written under `--out`.

use std::io::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod answers;

use clap::{Parser, ValueEnum};
use devsim::kernel::Catalog;
use devsim::runner::run_simulated;
use devsim::scenario::render;
use devsim::scenario::{ProfileSources, decode, expand_scenarios, find_scenarios};

/// What the inputs are fed to.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Target {
    /// Scenario files: the loader (matrix expansion included), the renderer and the simulated runner.
    Loader,
    /// Subject answers: handshakes and step answers, read and judged as the protocol client does.
    Answers,
}

/// Fuzz the scenario loader and runner, or devsim's side of the subject protocol.
#[derive(Parser)]
struct Args {
    /// What to fuzz.
    #[arg(long, value_enum, default_value_t = Target::Loader)]
    target: Target,
    /// Seed lines for `--target answers`.
    #[arg(long, default_value = "fuzz/answers/seeds.jsonl")]
    answer_seeds: PathBuf,
    /// How many inputs to try.
    #[arg(long, default_value_t = 100_000)]
    iterations: u64,
    /// Stop after this many seconds even if inputs remain (0: no limit).
    #[arg(long, default_value_t = 0)]
    seconds: u64,
    /// The random seed (runs are reproducible per seed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folders of seed files (`*.toml`, walked).
    #[arg(long, default_values = ["scenarios", "tests/fixtures/invalid"])]
    corpus: Vec<PathBuf>,
    /// Where failing inputs are written.
    #[arg(long, default_value = "target/fuzz-loader")]
    out: PathBuf,
    /// The most milliseconds one input may take.
    #[arg(long, default_value_t = 5_000)]
    input_limit_ms: u64,
}

/// xorshift64*: small, fast, seeded.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Fragments that reach interesting corners of the format and the renderer.
const TOKENS: &[&str] = &[
    "[[step]]\n",
    "[step]\n",
    "[step.expect]\n",
    "[host]\n",
    "[[host.gpu]]\n",
    "[[host.fault]]\n",
    "[expect.trace]\n",
    "[matrix]\n",
    "kernel = \"*\"\n",
    "host = [\"h200x2\", \"r9700x2\"]\n",
    "{kernel}",
    "{host}",
    "{kernel.alternative}",
    "{host.family}",
    "[step.when_ok]\n",
    "[step.when_refused]\n",
    "action = \"",
    "device = ",
    "kernel = \"",
    "profile = \"",
    "ok = false\n",
    "error = \"",
    "message = \"",
    "\"",
    "'",
    "= ",
    "\n",
    "\r\n",
    "\t",
    "#",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\u{1b}[31m",
    "\u{202e}",
    "\u{0}",
    "\\u001b",
    "é",
    "🦀",
    "cuda:",
    "cuda:99999999999999999999",
    "-1",
    "9223372036854775807",
    "rocm",
    "hip:1",
    "gfx942",
    "sm_90",
    "gfx9999",
    "\"h200\"",
    "\"amd_mixed\"",
    "env = { CUDA_VISIBLE_DEVICES = \"",
    "GPU-",
    ",0,0",
    "selected = \"",
    "covers = [\"",
    "archs = [",
    "ran_on = ",
    "lands_on = ",
    "current_after = ",
    "format = 1\n",
    "description = \"x\"\n",
    "never = [\"",
    "order = [\"",
    "count = { ",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], tokens: &[&str]) -> Vec<u8> {
    if rng.below(50) == 0 {
        let len = rng.below(512);
        return (0..len).map(|_| rng.next() as u8).collect();
    }
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(6) {
        let at = rng.below(data.len() + 1);
        match rng.below(9) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] ^= 1 << rng.below(8);
            }
            1 => data.insert(at, rng.next() as u8),
            2 if !data.is_empty() => {
                let end = (at + rng.below(32)).min(data.len());
                data.drain(at.min(end)..end);
            }
            3 | 4 => {
                let token = tokens[rng.below(tokens.len())].as_bytes();
                data.splice(at..at, token.iter().copied());
            }
            5 | 6 => {
                // A line from another seed, inserted at a line start: structure-aware splicing.
                let other = &seeds[rng.below(seeds.len())];
                let lines: Vec<&[u8]> = other.split(|b| *b == b'\n').collect();
                let line = lines[rng.below(lines.len())];
                let start = data[..at]
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |p| p + 1);
                let mut piece = line.to_vec();
                piece.push(b'\n');
                data.splice(start..start, piece);
            }
            7 => {
                // Delete or duplicate a whole line.
                let lines: Vec<Vec<u8>> = data.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
                let i = rng.below(lines.len());
                let mut edited = lines.clone();
                if rng.below(2) == 0 {
                    edited.remove(i);
                } else {
                    edited.insert(i, lines[i].clone());
                }
                data = edited.join(&b'\n');
            }
            _ if !data.is_empty() => {
                // Repeat a chunk: long lines, deep nesting, many steps.
                let end = (at + 1 + rng.below(64)).min(data.len());
                let start = at.min(end.saturating_sub(1));
                let chunk = data[start..end].to_vec();
                for _ in 0..1 + rng.below(200) {
                    data.splice(start..start, chunk.iter().copied());
                }
            }
            _ => {}
        }
    }
    data
}

/// One input through the loader (matrix expansion included), the renderer and, for each case that loads,
/// the runner. Cases are capped so that one input stays bounded.
fn exercise(bytes: Vec<u8>, catalog: &Catalog, profiles: &ProfileSources) -> bool {
    let path = Path::new("fuzz/input.toml");
    let loaded = match decode(path, bytes) {
        Ok(text) => expand_scenarios(path, &text, catalog, profiles),
        Err(error) => vec![(String::new(), Err(error))],
    };
    let mut ran = false;
    for (_, case) in loaded.into_iter().take(64) {
        match case {
            Ok(scenario) => {
                run_simulated(&scenario, catalog);
                ran = true;
            }
            Err(error) => {
                let shown = render(&error);
                assert!(!shown.is_empty());
            }
        }
    }
    ran
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let files = find_scenarios(&args.corpus).unwrap_or_else(|error| {
        eprintln!("error: failed to list the seed corpus: {error}");
        std::process::exit(2);
    });
    let files: Vec<Vec<u8>> = files.iter().filter_map(|f| std::fs::read(f).ok()).collect();
    if files.is_empty() {
        eprintln!("error: failed to find seed files under {:?}", args.corpus);
        return std::process::ExitCode::from(2);
    }
    let catalog = Catalog::reference();
    let profiles = ProfileSources::shipped();
    let (seeds, tokens, answers) = match args.target {
        Target::Loader => (files, TOKENS, None),
        Target::Answers => {
            let lines: Vec<Vec<u8>> = std::fs::read(&args.answer_seeds)
                .unwrap_or_default()
                .split(|b| *b == b'\n')
                .filter(|line| !line.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            let scenarios = files
                .iter()
                .filter_map(|bytes| {
                    let path = Path::new("fuzz/seed.toml");
                    let text = decode(path, bytes.clone()).ok()?;
                    let loaded = expand_scenarios(path, &text, &catalog, &profiles);
                    Some(loaded.into_iter().filter_map(|(_, case)| case.ok()).take(4))
                })
                .flatten()
                .collect();
            match lines
                .first()
                .map(|first| answers::Answers::new(first, scenarios))
            {
                Some(Ok(answers)) => {
                    // The seeds themselves must reach the judge, or the mutations explore nothing.
                    let accepted = lines
                        .iter()
                        .filter(|line| answers.exercise(line, 0))
                        .count();
                    eprintln!(
                        "fuzz-loader answers: {accepted} of {} seed lines accepted as they are",
                        lines.len()
                    );
                    (lines, answers::TOKENS, Some(answers))
                }
                Some(Err(why)) => {
                    eprintln!("error: failed to prepare the answers target: {why}");
                    return std::process::ExitCode::from(2);
                }
                None => {
                    eprintln!(
                        "error: failed to read seed lines from {}",
                        args.answer_seeds.display()
                    );
                    return std::process::ExitCode::from(2);
                }
            }
        }
    };
    let _ = std::fs::create_dir_all(&args.out);

    // The watchdog: the main loop stamps the start of each input; a stamp older than the limit is a hang.
    let epoch = Instant::now();
    let stamp = Arc::new(AtomicU64::new(u64::MAX));
    let current = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    {
        let (stamp, current, out, limit) = (
            Arc::clone(&stamp),
            Arc::clone(&current),
            args.out.clone(),
            args.input_limit_ms,
        );
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(100));
                let started = stamp.load(Ordering::Relaxed);
                let now = epoch.elapsed().as_millis() as u64;
                if started != u64::MAX && now.saturating_sub(started) > limit {
                    let input = current.lock().map(|c| c.clone()).unwrap_or_default();
                    let path = out.join("hang.toml");
                    let _ = std::fs::write(&path, input);
                    eprintln!(
                        "HANG: one input took over {limit} ms; written to {}",
                        path.display()
                    );
                    std::process::exit(1);
                }
            }
        });
    }
    std::panic::set_hook(Box::new(|_| {}));

    let mut rng = Rng(args.seed.max(1));
    let (mut loaded, mut panics) = (0u64, 0u64);
    let started = Instant::now();
    let mut done = 0u64;
    while done < args.iterations {
        if args.seconds > 0 && started.elapsed().as_secs() >= args.seconds {
            break;
        }
        let input = mutate(&mut rng, &seeds, tokens);
        let pick = rng.below(1 << 20);
        if let Ok(mut slot) = current.lock() {
            slot.clone_from(&input);
        }
        stamp.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        let outcome = catch_unwind(AssertUnwindSafe(|| match &answers {
            Some(answers) => answers.exercise(&input, pick),
            None => exercise(input, &catalog, &profiles),
        }));
        match outcome {
            Ok(true) => loaded += 1,
            Ok(false) => {}
            Err(_) => {
                panics += 1;
                let bytes = current.lock().map(|c| c.clone()).unwrap_or_default();
                let path = args.out.join(format!("panic-{done}.toml"));
                let _ = std::fs::write(&path, bytes);
                eprintln!("PANIC on input {done}; written to {}", path.display());
            }
        }
        stamp.store(u64::MAX, Ordering::Relaxed);
        done += 1;
        if done % 1_000_000 == 0 {
            eprintln!(
                "{done} inputs, {loaded} loaded, {panics} panics, {:.0} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let _ = writeln!(
        std::io::stdout(),
        "fuzz-loader {}: {done} inputs in {elapsed:.1} s ({:.0}/s), {loaded} {}, {panics} panics, 0 hangs (limit {} ms), seed {}",
        if answers.is_some() {
            "answers"
        } else {
            "loader"
        },
        done as f64 / elapsed.max(1e-9),
        if answers.is_some() {
            "accepted and judged"
        } else {
            "loaded and ran"
        },
        args.input_limit_ms,
        args.seed
    );
    if panics > 0 {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}
