//! With the `torch` feature: keep libtorch_cuda linked and findable.
//!
//! rustc links with `--as-needed`, which drops `libtorch_cuda.so` because no symbol of it is referenced,
//! and then torch reports CUDA as unavailable. Link it explicitly, and add an rpath to the libtorch folder
//! torch-sys found (a machine with torch elsewhere sets LD_LIBRARY_PATH instead).

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    embed_shipped_hosts();
    if std::env::var_os("CARGO_FEATURE_TORCH").is_none() {
        return;
    }
    let Some(lib) = std::env::var_os("DEP_TCH_LIBTORCH_LIB") else {
        println!(
            "cargo:warning=torch-sys did not report its libtorch folder; CUDA may be unavailable to tch"
        );
        return;
    };
    let lib = Path::new(&lib);
    println!("cargo:rustc-link-search=native={}", lib.display());
    for gpu_library in ["torch_cuda", "torch_hip"] {
        if lib.join(format!("lib{gpu_library}.so")).exists() {
            println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-l{gpu_library},-ltorch,--as-needed");
        }
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
}

/// Writes `$OUT_DIR/shipped_hosts.rs`: every `scenarios/hosts/*.toml` as `(name, include_str!(path))`, so
/// the shipped host profiles are available by name to any user of the crate.
fn embed_shipped_hosts() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let hosts = Path::new(&manifest).join("scenarios").join("hosts");
    println!("cargo:rerun-if-changed={}", hosts.display());
    let mut files: Vec<_> = std::fs::read_dir(&hosts)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    let mut table = String::from("&[\n");
    for path in files {
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        table.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    table.push(']');
    let out = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into());
    if let Err(error) = std::fs::write(Path::new(&out).join("shipped_hosts.rs"), table) {
        println!("cargo:warning=could not write the shipped host table: {error}");
    }
}
