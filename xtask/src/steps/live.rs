//! The steps for a machine with real GPUs: the probe, and the corpus live with its JUnit.

use xshell::cmd;

use crate::ci::{Ci, StepError};

pub fn probe(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(
        ci.sh(),
        "cargo run --locked --release -- probe --require-gpu 1"
    ))
}

pub fn run(ci: &Ci) -> Result<(), StepError> {
    let required = std::env::var("REQUIRE_LIVE").unwrap_or_else(|_| "1".to_string());
    let live = ci.run(cmd!(
        ci.sh(),
        "cargo run --locked --release -- run --live --require-live {required}"
    ));
    // the JUnit report is written whatever the run's verdict, and the verdict is the first run's
    let junit = cmd!(
        ci.sh(),
        "cargo run --locked --release -q -- run --live --require-live {required} --format junit"
    )
    .ignore_status();
    let report = ci.read(junit)?;
    ci.write("target/devsim/live.xml", &format!("{report}\n"))?;
    live
}
