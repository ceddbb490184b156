use super::*;

fn context(catalog: &Catalog) -> MatrixContext<'_> {
    MatrixContext {
        catalog,
        inventory: Some(Inventory::reference()),
        profiles: vec![
            ("h200x2".into(), Some("cuda".into())),
            ("r9700x2".into(), Some("rocm".into())),
        ],
    }
}

const FILE: &str = "format = 1\n[matrix]\nhost = [\"h200x2\", \"r9700x2\"]\ncurrent = [0, 1]\n\n[host]\nprofile = \"{host}\"\ncurrent = \"{current}\"\n";

#[test]
fn a_matrix_expands_every_combination_keeping_lines() {
    let catalog = Catalog::reference();
    let cases = expand(FILE, &context(&catalog))
        .expect("expands")
        .expect("a matrix");
    let names: Vec<String> = cases.iter().map(|c| c.name("f.toml")).collect();
    assert_eq!(
        names,
        [
            "f.toml[current=0,host=h200x2]",
            "f.toml[current=0,host=r9700x2]",
            "f.toml[current=1,host=h200x2]",
            "f.toml[current=1,host=r9700x2]"
        ]
    );
    let text = cases[3].text.clone().expect("builds");
    assert_eq!(text.lines().count(), FILE.lines().count());
    assert!(
        text.contains("profile = \"r9700x2\"\ncurrent = 1\n"),
        "{text}"
    );
    assert!(!text.contains("[matrix]"));
}

#[test]
fn a_placeholder_without_a_parameter_is_located() {
    let catalog = Catalog::reference();
    let file = FILE.replace("{current}", "{curent}");
    let error = expand(&file, &context(&catalog)).expect_err("refused");
    assert_eq!(&file[error.offset..error.offset + 8], "{curent}");
    assert_eq!(error.help.as_deref(), Some("did you mean `{current}`?"));
}

#[test]
fn kernel_filters_read_the_inventory() {
    let catalog = Catalog::reference();
    let file =
        "[matrix]\nkernel = { rocm = \"restricted-by-arch\" }\n[[step]]\nkernel = \"{kernel}\"\n";
    let cases = expand(file, &context(&catalog))
        .expect("expands")
        .expect("a matrix");
    let names: Vec<String> = cases.iter().map(|c| c.params[0].1.clone()).collect();
    // Derived from the inventory, so adding a kernel never edits this test.
    let restricted: Vec<String> = Inventory::reference()
        .rows
        .iter()
        .filter(|row| row.rocm == crate::kernel::audit::RocmDecision::RestrictedByArch)
        .map(|row| row.name.clone())
        .collect();
    assert!(!restricted.is_empty());
    assert_eq!(names, restricted);
}

#[test]
fn a_value_is_data_never_toml() {
    let catalog = Catalog::reference();
    // A quote in a value must not close the string and inject keys (an `env` table, say).
    let file = "[matrix]\nwho = [\"a\\\" env = { X = \\\"1\\\" } #\"]\n[[step]]\ndescription = \"{who}\"\n# about {who}\n";
    let cases = expand(file, &context(&catalog))
        .expect("expands")
        .expect("a matrix");
    let text = cases[0].text.as_ref().expect("filled");
    let parsed: toml::Table = toml::from_str(text).expect("still one TOML string");
    let step = &parsed["step"][0];
    assert_eq!(
        step["description"].as_str(),
        Some("a\" env = { X = \"1\" } #")
    );
    assert!(step.get("env").is_none());
    // Outside a string only an integer may stand.
    let bare = "[matrix]\nwho = [\"x = 1\"]\n[[step]]\nordinal = {who}\n";
    let cases = expand(bare, &context(&catalog))
        .expect("expands")
        .expect("a matrix");
    assert!(
        cases[0]
            .text
            .as_ref()
            .is_err_and(|e| e.contains("must stand inside a quoted string"))
    );
}

#[test]
fn cases_together_stay_within_the_execution_budget() {
    let catalog = Catalog::reference();
    let values: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let values = values.join(", ");
    let steps = "[[step]]\naction = \"discover\"\n".repeat(26);
    let file = format!("[matrix]\na = [{values}]\nb = [{values}]\n{steps}");
    let error = expand(&file, &context(&catalog)).expect_err("10000 cases x 26 steps");
    assert!(
        error.message.contains("260000 step executions"),
        "{}",
        error.message
    );
    let repeated = "[matrix]\na = [1, 2]\n[[step]]\nrepeat = 10000\n".to_string()
        + &"[[step]]\nrepeat = 10000\n".repeat(12);
    let error = expand(&repeated, &context(&catalog)).expect_err("repeat counts");
    assert!(
        error.message.contains("repeat included"),
        "{}",
        error.message
    );
}

#[test]
fn a_missing_derived_field_fails_that_case_alone() {
    let catalog = Catalog::reference();
    let file = "[matrix]\nkernel = [\"gptq_marlin\", \"gptq_torch\"]\n[[step]]\nmessage = \"use {kernel.alternative} instead\"\n";
    let cases = expand(file, &context(&catalog))
        .expect("expands")
        .expect("a matrix");
    assert!(
        cases[0]
            .text
            .as_ref()
            .is_ok_and(|t| t.contains("use gptq_torch instead"))
    );
    assert_eq!(
        cases[1].text,
        Err(
            "fill placeholder `{kernel.alternative}`: kernel `gptq_torch` has no alternative"
                .into()
        )
    );
}

#[test]
fn empty_and_oversized_expansions_are_refused() {
    let catalog = Catalog::reference();
    let empty = expand("[matrix]\nx = []\n", &context(&catalog)).expect_err("refused");
    assert!(empty.message.contains("has no value"), "{}", empty.message);
    let big: Vec<String> = (0..101).map(|n| n.to_string()).collect();
    let file = format!("[matrix]\na = [{0}]\nb = [{0}]\n", big.join(","));
    let huge = expand(&file, &context(&catalog)).expect_err("refused");
    assert!(huge.message.contains("10201 cases"), "{}", huge.message);
}

#[test]
fn unknown_kernels_and_profiles_are_named() {
    let catalog = Catalog::reference();
    let error = expand("[matrix]\nhost = [\"h200x3\"]\n", &context(&catalog)).expect_err("refused");
    assert!(
        error.message.contains("did you mean h200x2?"),
        "{}",
        error.message
    );
    let error =
        expand("[matrix]\nkernel = [\"gptq_trch\"]\n", &context(&catalog)).expect_err("refused");
    assert!(
        error.message.contains("did you mean gptq_torch?"),
        "{}",
        error.message
    );
}

#[test]
fn files_without_a_matrix_are_plain_scenarios() {
    let catalog = Catalog::reference();
    assert_eq!(expand("format = 1\n", &context(&catalog)), Ok(None));
}
