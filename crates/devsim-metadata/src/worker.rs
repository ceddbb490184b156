//! The live worker's messages (`devsim live-worker`): JSON lines between a live run and the child it
//! starts for scenarios whose visible-device variables differ from its own. The parent writes one
//! [`WorkRequest`] per scenario; the worker answers one [`WorkAnswer`].
//!
//! The report inside an answer is devsim's own scenario report, which both sides read with the same
//! devsim binary: [`WorkAnswer`] is generic over it, and reads as plain JSON (`serde_json::Value`, the
//! default) for a tool that only relays or logs the exchange.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One scenario for a worker to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkRequest {
    /// The scenario file.
    pub path: PathBuf,
    /// The scenario's name (a matrix file holds several).
    pub name: String,
    /// The file's name, as the parent found it: the worker names the file's scenarios from it, so names
    /// agree whatever folder the parent walked.
    pub file: String,
}

/// A worker's answer to one [`WorkRequest`]: the report, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkAnswer<R = serde_json::Value> {
    /// The scenario's name, as requested (empty when the request could not be read).
    pub name: String,
    /// Its report, when the worker could run it (absent: none; serde reads a missing `Option` as `None`,
    /// and `default` would ask `R: Default`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<R>,
    /// Why the worker could not run it (the file failed to load, no scenario of that name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_keep_their_lines() {
        let request = r#"{"path":"scenarios/a.toml","name":"a.toml","file":"a.toml"}"#;
        let read: WorkRequest = serde_json::from_str(request).expect("a request");
        assert_eq!(serde_json::to_string(&read).ok().as_deref(), Some(request));
        for answer in [
            r#"{"name":"a.toml","report":{"name":"a.toml"}}"#,
            r#"{"name":"","error":"read the request (EOF): x"}"#,
        ] {
            let read: WorkAnswer = serde_json::from_str(answer).expect("an answer");
            assert_eq!(serde_json::to_string(&read).ok().as_deref(), Some(answer));
        }
    }
}
