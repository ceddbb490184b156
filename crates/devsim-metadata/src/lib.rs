//! devsim's machine-readable surface, for tools that read what devsim prints or speak to it, without
//! depending on devsim itself (the role nextest-metadata plays for nextest):
//! - [`output`]: the JSON documents of `devsim run|check|kernels|hosts --format json`;
//! - [`protocol`]: the subject protocol's messages (`docs/subject-protocol.md`);
//! - [`Place`]: where work ran or data sits, a GPU ordinal or the CPU;
//! - [`Level`]: conformance levels (`docs/conformance.md`);
//! - [`exit`]: the `devsim` command's exit codes;
//! - [`worker`]: the messages between a live run and its `devsim live-worker` children.
//!
//! It depends on serde, serde_json and schemars only.

pub mod exit;
mod level;
pub mod output;
mod place;
pub mod protocol;
pub mod worker;

pub use level::Level;
pub use place::Place;
