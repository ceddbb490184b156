//! devsim's integration tests, one binary with a module per topic (the scenario corpus, live replay, the
//! fake drivers and the subjects are libtest-mimic binaries of their own: tests/*.rs with `harness = false`).

mod accept;
mod catalog;
mod ci_config;
mod cli;
mod common;
mod containment;
mod discovery;
mod drivers;
mod escaping;
mod family_model;
mod format_reference;
mod formats;
mod isolation;
mod kernels;
mod layering;
mod loader;
mod mock_runtime;
mod mutants;
mod pool;
mod properties;
mod repeats;
mod schema;
mod skills;
mod tools;
mod writes;
