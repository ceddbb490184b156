//! The human tables of the inspecting commands: the catalog's kernels (`devsim kernels`), host profiles
//! (`devsim hosts`), a subject's handshake and its declared contract beside devsim's (`devsim check
//! --subject`) and corpus coverage against a threshold (`devsim coverage`). Each returns its lines; user
//! text is placed through [`field`], and the caller prints each line through human output's rule
//! ([`crate::shown::lines`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::host::HostSpec;
use crate::kernel::Catalog;
use crate::runner::coverage::Coverage;
use crate::shown::field;
use crate::subject::Capabilities;
use crate::subject::protocol::KernelDeclaration;

/// `devsim check --subject`'s first lines: the subject, how long its handshake took, and the actions,
/// kernels and events it declares.
pub fn handshake(describe: &str, took: Duration, capabilities: &Capabilities) -> Vec<String> {
    vec![
        format!(
            "subject: {} (handshake in {:.1} ms)",
            field(describe),
            took.as_secs_f64() * 1e3
        ),
        format!("  actions: {}", field(capabilities.actions.join(", "))),
        format!("  kernels: {}", field(capabilities.kernels.join(", "))),
        format!("  events: {}", field(capabilities.events.join(", "))),
    ]
}

/// A subject's own declared contract beside devsim's reference catalog, one row per kernel it declares,
/// marked where the families differ; no lines when it declares none. Information, never failures: a
/// project's declarations are its own decision.
pub fn declared_contract(declared: &[KernelDeclaration], reference: &Catalog) -> Vec<String> {
    if declared.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        "  declared contract (the subject's own, beside devsim's reference catalog):".to_string(),
    ];
    let rows: Vec<[String; 4]> = declared
        .iter()
        .map(|d| {
            let devsim = reference
                .get(&d.name)
                .map_or_else(|_| "-".into(), |k| k.spec().families_text());
            let own = if d.families.is_empty() {
                "(none)".to_string()
            } else {
                d.families.join(", ")
            };
            let differs = if own == devsim { "" } else { "differs" };
            [
                field(&d.name).to_string(),
                field(own).to_string(),
                devsim,
                differs.to_string(),
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].len()).max().unwrap_or(0).max(6);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    out.push(format!("    {:w0$}  {:w1$}  devsim", "kernel", "subject"));
    for [name, own, devsim, differs] in &rows {
        let line = format!("    {name:w0$}  {own:w1$}  {devsim:w2$}  {differs}");
        out.push(line.trim_end().to_string());
    }
    out
}

/// The catalog's kernels, one row each with the ROCm decision the inventory records (`-`: a kernel it
/// does not list), then their count.
pub fn kernels(catalog: &Catalog) -> Vec<String> {
    let mut out = vec![format!(
        "{:<22} {:<12} {:<26} {:>4} {:<5} {:<14} {:<18} arch",
        "name", "method", "families", "prio", "auto", "extension", "rocm (inventory)"
    )];
    let inventory = crate::kernel::audit::Inventory::reference();
    for kernel in catalog.iter() {
        let spec = kernel.spec();
        let rocm = inventory
            .row(&spec.name)
            .map_or("-", |row| row.rocm.as_str());
        out.push(format!(
            "{:<22} {:<12} {:<26} {:>4} {:<5} {:<14} {:<18} {}",
            spec.name,
            spec.method.as_str(),
            spec.families_text(),
            spec.priority,
            if spec.selectable { "yes" } else { "no" },
            spec.extension.as_deref().unwrap_or("-"),
            rocm,
            spec.arch_text()
        ));
    }
    out.push(format!("{} kernels", catalog.len()));
    out
}

/// Host profiles, one line each, then how many came from where (`configured`: the folders searched before
/// the built-in profiles).
pub fn hosts(profiles: &[HostSpec], configured: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    for host in profiles {
        let gpus: Vec<String> = host.gpus.iter().map(|g| g.arch.to_string()).collect();
        let foreign: Vec<String> = host
            .foreign_gpus
            .iter()
            .map(|g| g.arch.to_string())
            .collect();
        out.push(format!(
            "{:<14} torch={:<5} gpus=[{}]{}",
            field(&host.name),
            host.torch,
            gpus.join(", "),
            if foreign.is_empty() {
                String::new()
            } else {
                format!(" foreign=[{}]", foreign.join(", "))
            }
        ));
    }
    let mut searched: Vec<String> = configured
        .iter()
        .map(|f| field(f.display()).to_string())
        .collect();
    searched.push("the built-in profiles".into());
    out.push(format!(
        "{} host profile(s) from {}",
        profiles.len(),
        searched.join(", ")
    ));
    out
}

/// Corpus coverage as a table, its legend, and the threshold's gaps.
pub fn coverage(counted: &Coverage, threshold_file: &Path, gaps: &[String]) -> Vec<String> {
    let mut out = vec![
        counted.table().trim_end().to_string(),
        "cells: ran/refused steps of passing scenarios; - none".to_string(),
        format!(
            "threshold {}: {} gap(s)",
            threshold_file.display(),
            gaps.len()
        ),
    ];
    out.extend(gaps.iter().map(|gap| format!("  not exercised: {gap}")));
    out
}
