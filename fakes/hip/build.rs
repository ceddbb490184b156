//! Gives the library the SONAME the real one has, so the loader records it as `libamdhip64.so`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libamdhip64.so");
}
