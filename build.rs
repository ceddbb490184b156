//! With the `torch` feature: keep libtorch_cuda linked and findable.
//!
//! rustc links with `--as-needed`, which drops `libtorch_cuda.so` because no symbol of it is referenced,
//! and then torch reports CUDA as unavailable. Link it explicitly, and add an rpath to the libtorch folder
//! torch-sys found (a machine with torch elsewhere sets LD_LIBRARY_PATH instead).

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
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
