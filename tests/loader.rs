//! Malformed scenario files: each gives a typed error at `path:line:column` saying what was expected.

use std::path::PathBuf;

use devsim::kernel::Catalog;
use devsim::scenario::load_scenario;
use rstest::rstest;

const HEADER: &str = "format = 1\ndescription = \"a malformed scenario\"\n";

/// Writes `body` as a scenario inside a fresh root that has the repository's host profiles.
fn write(name: &str, body: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("devsim-loader-{}-{name}", std::process::id()));
    let hosts = root.join("hosts");
    std::fs::create_dir_all(&hosts).expect("temp dir");
    let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/hosts");
    for entry in std::fs::read_dir(shipped).expect("hosts").flatten() {
        std::fs::copy(entry.path(), hosts.join(entry.file_name())).expect("copy profile");
    }
    let path = root.join(format!("{name}.toml"));
    std::fs::write(&path, body).expect("write scenario");
    path
}

#[rstest]
#[case::syntax("syntax", "format = \n", 1, "", None)]
#[case::format_two(
    "format_two",
    "format = 2\ndescription = \"x\"\n[host]\ntorch = \"cpu\"\n[[step]]\naction = \"discover\"\n",
    1,
    "format = 1",
    None
)]
#[case::unknown_top_key(
    "unknown_top_key",
    "format = 1\ndescripton = \"x\"\n",
    2,
    "unknown field `descripton`",
    Some("description")
)]
#[case::unknown_step_key("unknown_step_key", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n[[step]]\naction = \"validate\"\nkernl = \"gptq_marlin\"\ndevice = \"cuda\"\n"), 7, "unknown field `kernl`", Some("kernel"))]
#[case::unknown_kernel("unknown_kernel", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n[[step]]\naction = \"validate\"\nkernel = \"gptq_marlinn\"\ndevice = \"cuda\"\n"), 7, "find kernel `gptq_marlinn`", Some("gptq_marlin"))]
#[case::bad_arch("bad_arch", concat!("format = 1\ndescription = \"x\"\n", "[host]\ntorch = \"hip\"\ngpus = [\"gfx942\", \"gfx9999\"]\n[[step]]\naction = \"discover\"\n"), 5, "parse arch `gfx9999`: expected sm_50", None)]
#[case::bad_selector("bad_selector", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n[[step]]\naction = \"normalize\"\ndevice = \"cdua\"\n"), 7, "parse device selector `cdua`", None)]
#[case::missing_kernel("missing_kernel", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n[[step]]\naction = \"validate\"\ndevice = \"cuda\"\n"), 5, "expected `kernel`", None)]
#[case::key_the_action_ignores("key_the_action_ignores", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n[[step]]\naction = \"normalize\"\nkernel = \"gptq_torch\"\ndevice = \"cuda\"\n"), 5, "does not use `kernel`", None)]
#[case::current_out_of_range("current_out_of_range", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\ncurrent = 3\n[[step]]\naction = \"discover\"\n"), 5, "make device 3 current", None)]
#[case::unknown_profile("unknown_profile", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"r9700\"\n[[step]]\naction = \"discover\"\n"), 4, "find host profile `r9700`", Some("r9700x2"))]
#[case::profile_path_escape("profile_path_escape", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"../../etc/passwd\"\n[[step]]\naction = \"discover\"\n"), 4, "find host profile", None)]
#[case::real_environment("real_environment", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\nenv = { LD_LIBRARY_PATH = \"/tmp/evil\" }\n[[step]]\naction = \"discover\"\n"), 5, "LD_LIBRARY_PATH", None)]
#[case::library_path_key("library_path_key", concat!("format = 1\ndescription = \"x\"\n", "[host]\ntorch = \"cuda\"\nlibrary = \"/tmp/libcuda.so.1\"\n[[step]]\naction = \"discover\"\n"), 5, "unknown field `library`", None)]
#[case::unknown_action("unknown_action", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n[[step]]\naction = \"warmpu\"\n"), 6, "unknown action `warmpu`", Some("warmup"))]
#[case::unknown_event("unknown_event", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n[expect.trace]\nnever = [\"nvidia_cap\"]\n[[step]]\naction = \"discover\"\n"), 6, "match trace event `nvidia_cap`", Some("nvidia_capability"))]
#[case::unknown_error_kind("unknown_error_kind", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n[[step]]\naction = \"validate\"\nkernel = \"gptq_triton\"\ndevice = \"cuda\"\n[step.expect]\nerror = \"unsupported_arch\"\n"), 10, "expect error kind `unsupported_arch`", Some("unsupported-arch"))]
#[case::wrong_vendor("wrong_vendor", concat!("format = 1\ndescription = \"x\"\n", "[host]\ntorch = \"hip\"\ngpus = [\"sm_90\"]\n[[step]]\naction = \"discover\"\n"), 5, "put other GPUs under `foreign_gpus`", None)]
#[case::no_steps("no_steps", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n"), 5, "at least one [[step]]", None)]
#[case::unknown_fault_call("unknown_fault_call", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200\"\n[[host.fault]]\ncall = \"lanch\"\n[[step]]\naction = \"discover\"\n"), 6, "inject a fault into `lanch`", Some("launch"))]
#[case::hip_wider_than_rocr("hip_wider_than_rocr", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"r9700x2\"\nenv = { ROCR_VISIBLE_DEVICES = \"0\", HIP_VISIBLE_DEVICES = \"0,1\" }\n[[step]]\naction = \"discover\"\n"), 5, "HIP_VISIBLE_DEVICES contains more devices than ROCR_VISIBLE_DEVICES", None)]
#[case::torch_int_refuses_entry("torch_int_refuses_entry", concat!("format = 1\ndescription = \"x\"\n", "[host]\nprofile = \"h200x2\"\nenv = { CUDA_VISIBLE_DEVICES = \"0,+\" }\n[[step]]\naction = \"discover\"\n"), 5, "parse CUDA_VISIBLE_DEVICES entry `+`", None)]
fn malformed_scenarios_are_located_and_explained(
    #[case] name: &str,
    #[case] body: &str,
    #[case] line: usize,
    #[case] fragment: &str,
    #[case] help: Option<&str>,
) {
    let path = write(name, body);
    let error = load_scenario(&path, &Catalog::reference()).expect_err("must not load");
    let shown = error.to_string();
    assert!(
        shown.starts_with(&format!("{}:{line}:", path.display())),
        "{shown}"
    );
    assert!(error.column >= 1);
    assert!(shown.contains(fragment), "{shown}");
    if let Some(help) = help {
        let got = error.help.clone().unwrap_or_default();
        assert!(got.contains(help), "help {got:?} should mention {help}");
    }
}

#[test]
fn a_step_that_expects_an_unknown_kernel_may_name_one() {
    let path = write(
        "expects_unknown_kernel",
        &format!(
            "{HEADER}[host]\nprofile = \"h200\"\n[[step]]\naction = \"validate\"\nkernel = \"no_such\"\ndevice = \"cuda\"\n[step.expect]\nok = false\nerror = \"unknown-kernel\"\n"
        ),
    );
    let scenario = load_scenario(&path, &Catalog::reference()).expect("loads");
    assert_eq!(scenario.steps.len(), 1);
}

#[test]
fn inline_host_fields_override_the_profile() {
    let path = write(
        "inline_overrides",
        &format!(
            "{HEADER}[host]\nprofile = \"amd_mixed\"\ncurrent = 1\nenv = {{ HIP_VISIBLE_DEVICES = \"1,0\" }}\n[[step]]\naction = \"discover\"\n"
        ),
    );
    let scenario = load_scenario(&path, &Catalog::reference()).expect("loads");
    assert_eq!(scenario.host.current, 1);
    assert_eq!(scenario.host.gpus.len(), 2);
    assert_eq!(scenario.host.visible().expect("mask"), [1, 0]);
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let error = load_scenario(
        std::path::Path::new("/nonexistent/devsim.toml"),
        &Catalog::reference(),
    )
    .expect_err("missing");
    assert!(
        error.to_string().contains("/nonexistent/devsim.toml:1:1"),
        "{error}"
    );
}
