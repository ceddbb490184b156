//! CI's steps as `cargo xtask ci` plans them: the list (`--list`) and each step's commands (`--dry-run`),
//! read once per test run.

use std::sync::OnceLock;

/// One planned step: its name, whether it runs in the torch venv, and its dry-run text.
pub struct Planned {
    /// `cargo xtask ci --step NAME`.
    pub name: String,
    /// Whether it runs on the hardware-less runner (else the live one).
    pub hardware_less: bool,
    /// Whether the plan says it runs in the torch venv.
    pub torch_env: bool,
    /// The commands the dry run printed for it.
    pub text: String,
}

/// `cargo xtask ci ARGS` from the repository root under `CI=true`: its stdout, or why it failed.
fn xtask(args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["xtask", "ci"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CI", "true")
        .output()
        .map_err(|e| format!("start cargo xtask: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo xtask ci {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("cargo xtask's output: {e}"))
}

/// The sections of a dry run, one per `== NAME: what` header.
fn sections(plan: &str, hardware_less: bool) -> Vec<Planned> {
    let mut planned: Vec<Planned> = Vec::new();
    for line in plan.lines() {
        if let Some((name, _)) = line.strip_prefix("== ").and_then(|l| l.split_once(':')) {
            planned.push(Planned {
                name: name.to_string(),
                hardware_less,
                torch_env: false,
                text: String::new(),
            });
        } else if let Some(step) = planned.last_mut() {
            step.torch_env |= line.starts_with("# in the torch venv");
            step.text.push_str(line);
            step.text.push('\n');
        }
    }
    planned
}

/// Every step of both runners, in order, as the dry runs plan them.
pub fn plan() -> Result<&'static [Planned], String> {
    static PLAN: OnceLock<Result<Vec<Planned>, String>> = OnceLock::new();
    PLAN.get_or_init(|| {
        let mut all = sections(&xtask(&["--dry-run", "--runner", "hardware-less"])?, true);
        all.extend(sections(&xtask(&["--dry-run", "--runner", "live"])?, false));
        Ok(all)
    })
    .as_ref()
    .map(Vec::as_slice)
    .map_err(Clone::clone)
}

/// The planned step `name`.
pub fn find(name: &str) -> Result<&'static Planned, String> {
    plan()?
        .iter()
        .find(|step| step.name == name)
        .ok_or_else(|| format!("no CI step `{name}` in `cargo xtask ci --dry-run`"))
}
