//! `fuzz-loader`: feeds mutated scenario files to devsim's loader, its diagnostic renderer and, for files
//! that load, the simulated runner and the human reporter. Needs no nightly toolchain: a seeded mutator
//! (byte edits, token insertions, line-level splices across corpus files, `[matrix]` values and file names
//! full of control characters, plain random bytes), `catch_unwind` around every input and a watchdog thread
//! that fails the run when one input takes longer than the limit. Every rendered text (a load error, a
//! scenario's report, the findings summary) must hold no raw control character but its own newlines, and
//! no line of its own that a value started: a panic, like any other.
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
use devsim::shown::is_printable;

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

/// Pieces of the text that matrix values and file names are made of: every kind of control character, bidi
/// overrides, and lines that read like devsim's own.
const HOSTILE: &[&str] = &[
    "\n",
    "\r",
    "\r\n",
    "\t",
    "\u{1b}[2J",
    "\u{1b}[31m",
    "\u{1b}]0;title\u{7}",
    "\u{7}",
    "\u{0}",
    "\u{8}",
    "\u{b}",
    "\u{c}",
    "\u{7f}",
    "\u{85}",
    "\u{9b}",
    "\u{202e}",
    "\u{2066}",
    "\u{fffe}",
    "ok      placement/x.toml",
    "FAILED  seed/x.toml",
    "5 passed, 0 failed",
    "subject reference: 9 passed, 0 failed, 0 skipped",
    "x",
    "é",
    "[",
    "]",
    "=",
    ",",
    " ",
];

/// A short string of [`HOSTILE`] pieces.
fn hostile(rng: &mut Rng) -> String {
    (0..1 + rng.below(6))
        .map(|_| HOSTILE[rng.below(HOSTILE.len())])
        .collect()
}

/// `text` as a TOML basic string: quotes, backslashes and every control character escaped.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Gives a seed a `[matrix]` parameter of hostile values and places it in the description (and, at times,
/// in a step's kernel or the host's profile), so that it reaches case names, reports and load errors.
fn with_hostile_matrix(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(data);
    let values: Vec<String> = (0..1 + rng.below(3))
        .map(|_| toml_string(&hostile(rng)))
        .collect();
    let matrix = format!("[matrix]\nnote = [{}]\n\n", values.join(", "));
    // Before the first table header: the keys above it stay top-level.
    let at = text
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| text[i..].starts_with('['))
        .unwrap_or(text.len());
    let mut out = format!("{}{matrix}{}", &text[..at], &text[at..]);
    out = out.replacen("description = \"", "description = \"{note} ", 1);
    match rng.below(4) {
        0 => out = out.replacen("kernel = \"", "kernel = \"{note}", 1),
        1 => out = out.replacen("profile = \"", "profile = \"{note}", 1),
        _ => {}
    }
    out.into_bytes()
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], tokens: &[&str]) -> Vec<u8> {
    if rng.below(50) == 0 {
        let len = rng.below(512);
        return (0..len).map(|_| rng.next() as u8).collect();
    }
    let mut data = seeds[rng.below(seeds.len())].clone();
    if tokens.len() == TOKENS.len() && rng.below(4) == 0 {
        // The loader's inputs: a quarter carry hostile matrix values, with or without further edits.
        data = with_hostile_matrix(rng, &data);
        if rng.below(2) == 0 {
            return data;
        }
    }
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
/// the runner and the human reporter, under the file name `name`. Cases are capped so that one input stays
/// bounded. Every rendered text must be safe to print ([`safe`]).
fn exercise(bytes: Vec<u8>, name: &str, catalog: &Catalog, profiles: &ProfileSources) -> bool {
    let path = PathBuf::from(format!("fuzz/{name}"));
    let loaded = match decode(&path, bytes) {
        Ok(text) => expand_scenarios(&path, &text, catalog, profiles),
        Err(error) => vec![(String::new(), Err(error))],
    };
    let mut ran = Vec::new();
    for (_, case) in loaded.into_iter().take(64) {
        match case {
            Ok(scenario) => {
                let report = run_simulated(&scenario, catalog);
                safe("a report", &devsim::report::human(&report));
                ran.push((scenario, report));
            }
            Err(error) => {
                let shown = render(&error);
                assert!(!shown.is_empty());
                safe("a load error", &shown);
            }
        }
    }
    let found = devsim::findings::findings(ran.iter().map(|(s, r)| (s, r)));
    let failed = ran.iter().filter(|(_, r)| r.status.fails_run()).count();
    let summary = devsim::reporter::findings::human(failed, &found, &[]);
    safe("the findings summary", &summary);
    if failed > 0 {
        assert!(summary.starts_with(&format!("{failed} failed scenario(s)")));
    }
    !ran.is_empty()
}

/// Rendered human text: no raw control character but newlines, and no line a value started (each line after
/// the first is indented, or a diagnostic's own frame).
fn safe(what: &str, text: &str) {
    assert!(is_printable(text), "{what} holds a raw control character");
    for line in text.lines().skip(1) {
        assert!(
            !line.starts_with("ok ")
                && !line.starts_with("FAILED ")
                && !line.starts_with("5 passed"),
            "{what} has a forged line: {line:?}"
        );
    }
}

/// A file name for one input: mostly plain, at times full of control characters.
fn file_name(rng: &mut Rng) -> String {
    if rng.below(4) == 0 {
        format!("in{}put.toml", hostile(rng))
    } else {
        "input.toml".to_string()
    }
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
        let name = file_name(&mut rng);
        let pick = rng.below(1 << 20);
        if let Ok(mut slot) = current.lock() {
            slot.clone_from(&input);
        }
        stamp.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        let outcome = catch_unwind(AssertUnwindSafe(|| match &answers {
            Some(answers) => answers.exercise(&input, pick),
            None => exercise(input, &name, &catalog, &profiles),
        }));
        match outcome {
            Ok(true) => loaded += 1,
            Ok(false) => {}
            Err(_) => {
                panics += 1;
                let bytes = current.lock().map(|c| c.clone()).unwrap_or_default();
                let path = args.out.join(format!("panic-{done}.toml"));
                let _ = std::fs::write(&path, bytes);
                let _ = std::fs::write(args.out.join(format!("panic-{done}.name")), &name);
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
