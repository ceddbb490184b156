//! The architecture as a test: dependencies between devsim's top-level modules flow one way.
//!
//! Every `crate::<module>` path in a module's files is an edge. The graph must have no cycle, and the
//! vocabulary (`vocab`) depends on nothing else in devsim.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Top-level module name → the other top-level modules its files name.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src");
        let first = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a component");
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let source = fs::read_to_string(&file).expect("readable source");
        // Comments (doc links included) are not dependencies.
        let text: String = source
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let edges = graph.entry(module.clone()).or_default();
        for (index, _) in text.match_indices("crate::") {
            let rest = &text[index + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != module {
                edges.insert(name);
            }
        }
    }
    graph
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[start..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, stack, done) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn top_level_modules_have_no_dependency_cycle() {
    let graph = module_graph();
    assert!(graph.len() > 5, "the graph was read: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "dependency cycle between top-level modules: {}\nfull graph: {graph:#?}",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn the_vocabulary_depends_on_nothing_else_in_devsim() {
    let graph = module_graph();
    let vocab = graph.get("vocab").expect("src/vocab exists");
    assert!(vocab.is_empty(), "vocab depends on {vocab:?}");
}

#[test]
fn nothing_below_the_command_line_depends_on_it() {
    let graph = module_graph();
    let users: Vec<&String> = graph
        .iter()
        .filter(|(_, edges)| edges.contains("cli"))
        .map(|(module, _)| module)
        .collect();
    assert!(users.is_empty(), "modules depending on cli: {users:?}");
}

/// README's layer table: top-level module → its layer number (`| 3 | `src/runtime/` | ... |`).
fn documented_layers() -> BTreeMap<String, u32> {
    let readme = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md is readable");
    let mut layers = BTreeMap::new();
    for line in readme.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(number), Some(modules)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Ok(layer) = number.parse::<u32>() else {
            continue;
        };
        for module in modules.split(',') {
            let path = module.trim().trim_matches('`');
            if let Some(name) = path.strip_prefix("src/") {
                let name = name.trim_end_matches('/').trim_end_matches(".rs");
                layers.insert(name.to_string(), layer);
            }
        }
    }
    layers
}

#[test]
fn every_module_uses_only_lower_layers_as_the_readme_numbers_them() {
    let layers = documented_layers();
    assert!(
        layers.len() > 10,
        "README's layer table was read: {layers:?}"
    );
    let graph = module_graph();
    let mut wrong = Vec::new();
    for (module, edges) in &graph {
        let Some(&layer) = layers.get(module) else {
            wrong.push(format!("{module} is in no layer of README's table"));
            continue;
        };
        for used in edges {
            match layers.get(used) {
                Some(&below) if below < layer => {}
                Some(&other) => wrong.push(format!(
                    "{module} (layer {layer}) uses {used} (layer {other})"
                )),
                None => {} // not a module of devsim (an external crate path such as crate::Catalog)
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_source_file_is_at_most_500_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "crates", "xtask/src", "tools", "examples"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "the sources were found: {}", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = fs::read_to_string(file).ok()?.lines().count();
            (lines > 500).then(|| format!("{} ({lines} lines)", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by job: {long:?}");
}
