//! Which file stems are profile names, and how many names a message lists.

/// Names a message lists at most: a folder of thousands of profiles is not spelled out in every error.
const LISTED_NAMES: usize = 50;

/// Profile names for a message: the first [`LISTED_NAMES`], then how many more there are.
pub(super) fn listed(names: &[String]) -> String {
    let shown: Vec<&str> = names
        .iter()
        .take(LISTED_NAMES)
        .map(String::as_str)
        .collect();
    match names
        .len()
        .checked_sub(LISTED_NAMES)
        .filter(|more| *more > 0)
    {
        Some(more) => format!(
            "{} and {more} more (`devsim hosts` lists them)",
            shown.join(", ")
        ),
        None => shown.join(", "),
    }
}

/// Profile names are file stems: ASCII letters, digits, `_` and `-`; a `*.toml` file named otherwise in a
/// profile folder is not a profile (never listed, never loaded).
pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_of_names_is_cut_with_a_count() {
        let few: Vec<String> = ["a", "b"].map(String::from).to_vec();
        assert_eq!(listed(&few), "a, b");
        let many: Vec<String> = (0..LISTED_NAMES + 7).map(|i| format!("box{i}")).collect();
        let shown = listed(&many);
        assert!(
            shown.ends_with("and 7 more (`devsim hosts` lists them)"),
            "{shown}"
        );
        assert!(!shown.contains(&format!("box{LISTED_NAMES},")), "{shown}");
        assert!(valid_name("r9700x2") && !valid_name("my host") && !valid_name(""));
    }
}
