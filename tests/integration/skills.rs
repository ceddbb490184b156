//! The agent skills' SKILL.md front matter: `name` matches the folder, `description` is present.

use std::path::Path;

fn front_matter(text: &str) -> Option<Vec<(String, String)>> {
    let rest = text.strip_prefix("---\n")?;
    let (block, _) = rest.split_once("\n---\n")?;
    Some(
        block
            .lines()
            .filter_map(|line| line.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect(),
    )
}

#[test]
fn every_skill_declares_a_matching_name_and_a_description() {
    let skills = Path::new(env!("CARGO_MANIFEST_DIR")).join(".agents/skills");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&skills).expect("skills folder").flatten() {
        let folder = entry.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(entry.path().join("SKILL.md"))
            .unwrap_or_else(|e| panic!("{folder}/SKILL.md: {e}"));
        let fields =
            front_matter(&text).unwrap_or_else(|| panic!("{folder}: no --- front matter ---"));
        let get = |key: &str| {
            fields
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            get("name").as_deref(),
            Some(folder.as_str()),
            "{folder}: name must match the folder"
        );
        let description = get("description").unwrap_or_default();
        assert!(
            description.len() >= 20,
            "{folder}: description too short: {description:?}"
        );
        seen.push(folder);
    }
    seen.sort();
    assert_eq!(seen, ["device-families", "scenario-authoring"]);
}

#[test]
fn agents_md_points_at_both_skills() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("AGENTS.md"))
        .expect("AGENTS.md");
    assert!(text.contains("skills/device-families/SKILL.md"));
    assert!(text.contains("skills/scenario-authoring/SKILL.md"));
}
