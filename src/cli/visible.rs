//! `devsim visible --stdin-jsonl` (hidden): both visible-device views for many masks, one JSON line in and
//! one out, for `tools/torch_visible/diff.py`, which compares them with PyTorch itself.
//!
//! In: `{"build": "hip", "uuids": ["0000000000000000", ...], "env": {"ROCR_VISIBLE_DEVICES": "0,0"}}`.
//! Out: `{"torch_count": 2, "runtime": [0]}`, or `{"error": "<kind>", "message": "..."}` where the variables
//! cannot be applied (the kinds of `VisibleError::kind`, and `bad-input` for a line that is not a case).

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufWriter, Write};

use serde::{Deserialize, Serialize};

use crate::visible::visibility;
use crate::vocab::TorchBuild;

/// One case.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    build: TorchBuild,
    uuids: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

/// One answer.
#[derive(Serialize)]
#[serde(untagged)]
enum Answer {
    Views {
        torch_count: usize,
        runtime: Vec<usize>,
    },
    Error {
        error: &'static str,
        message: String,
    },
}

fn answer(line: &str) -> Answer {
    let case: Case = match serde_json::from_str(line) {
        Ok(case) => case,
        Err(error) => {
            return Answer::Error {
                error: "bad-input",
                message: format!("read a case: {error}"),
            };
        }
    };
    match visibility(case.build, &case.env, &case.uuids) {
        Ok(seen) => Answer::Views {
            torch_count: seen.torch_count,
            runtime: seen.runtime,
        },
        Err(error) => Answer::Error {
            error: error.kind(),
            message: error.to_string(),
        },
    }
}

/// Answers every line of stdin on stdout, in order.
pub(super) fn stdin_jsonl() -> io::Result<()> {
    let stdin = io::stdin().lock();
    let mut out = BufWriter::new(io::stdout().lock());
    for line in stdin.lines() {
        let line = line?;
        serde_json::to_writer(&mut out, &answer(&line))?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
