//! Which scenarios `devsim run` and `devsim check` take: by tag (`--tag`, any of them) and by name
//! (`--filter`, any of them: a glob when the pattern has `*`, `?` or `[`, else a substring). A glob also
//! takes the one name it spells exactly, so a matrix case's name as printed (`x.toml[host=h200x2]`, where
//! `[` would open a character class) selects that case. Both given: a scenario must pass both.

use thiserror::Error;

/// A `--filter` pattern that is not a valid glob.
#[derive(Debug, Error)]
#[error("read filter pattern `{pattern}`: {source}")]
pub struct PatternError {
    /// The pattern as written.
    pub pattern: String,
    /// What glob said.
    pub source: glob::PatternError,
}

enum NamePattern {
    /// The glob, and the pattern as written (a name equal to it is taken too).
    Glob(glob::Pattern, String),
    Substring(String),
}

impl NamePattern {
    fn matches(&self, name: &str) -> bool {
        match self {
            NamePattern::Glob(glob, written) => name == written || glob.matches(name),
            NamePattern::Substring(text) => name.contains(text.as_str()),
        }
    }
}

/// The selection: tags and name patterns; empty lists select everything.
pub struct Filter {
    tags: Vec<String>,
    names: Vec<NamePattern>,
}

impl Filter {
    /// A filter from `--tag` and `--filter` values.
    pub fn new(tags: Vec<String>, patterns: &[String]) -> Result<Self, PatternError> {
        let names = patterns
            .iter()
            .map(|pattern| {
                if pattern.contains(['*', '?', '[']) {
                    glob::Pattern::new(pattern)
                        .map(|glob| NamePattern::Glob(glob, pattern.clone()))
                        .map_err(|source| PatternError {
                            pattern: pattern.clone(),
                            source,
                        })
                } else {
                    Ok(NamePattern::Substring(pattern.clone()))
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { tags, names })
    }

    /// Whether a scenario named `name` (its path relative to the scenario root) is selected by name.
    pub fn takes_name(&self, name: &str) -> bool {
        self.names.is_empty() || self.names.iter().any(|pattern| pattern.matches(name))
    }

    /// Whether a scenario with these tags is selected by tag.
    pub fn takes_tags(&self, tags: &[String]) -> bool {
        self.tags.is_empty() || self.tags.iter().any(|tag| tags.contains(tag))
    }

    /// Whether a loaded scenario is selected.
    pub fn takes(&self, name: &str, tags: &[String]) -> bool {
        self.takes_name(name) && self.takes_tags(tags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn no_filter_takes_everything() {
        let filter = Filter::new(Vec::new(), &[]).expect("valid");
        assert!(filter.takes("placement/a.toml", &[]));
    }

    #[test]
    fn a_substring_matches_anywhere_in_the_name_and_a_glob_matches_the_whole_name() {
        let filter = Filter::new(Vec::new(), &tags(&["warmup"])).expect("valid");
        assert!(filter.takes("placement/warmup_gpu1.toml", &[]));
        assert!(!filter.takes("placement/move.toml", &[]));
        let glob = Filter::new(Vec::new(), &tags(&["seed/*.toml"])).expect("valid");
        assert!(glob.takes("seed/gptq.toml", &[]));
        assert!(!glob.takes("placement/seed.toml", &[]));
    }

    #[test]
    fn tags_are_any_of_and_combine_with_names_as_both() {
        let filter = Filter::new(tags(&["seed", "pool"]), &tags(&["a"])).expect("valid");
        assert!(filter.takes("x/a.toml", &tags(&["pool"])));
        assert!(!filter.takes("x/a.toml", &tags(&["placement"])));
        assert!(!filter.takes("x/b.toml", &tags(&["seed"])));
    }

    #[test]
    fn a_matrix_case_name_as_printed_selects_that_case() {
        let name = "matrix/x.toml[host=h200x2,kernel=gptq_torch]";
        let filter = Filter::new(Vec::new(), &tags(&[name])).expect("a valid glob");
        assert!(filter.takes(name, &[]));
        assert!(
            !filter.takes("matrix/x.toml[host=r9700x2,kernel=gptq_torch]", &[]),
            "only that case"
        );
        let glob =
            Filter::new(Vec::new(), &tags(&["matrix/x.toml[[]host=h200x2*"])).expect("valid");
        assert!(glob.takes(name, &[]), "a glob still matches as a glob");
    }

    #[test]
    fn a_broken_glob_is_a_typed_error_naming_the_pattern() {
        let error = Filter::new(Vec::new(), &tags(&["[seed"]))
            .err()
            .expect("refused");
        assert!(
            error.to_string().starts_with("read filter pattern `[seed`"),
            "{error}"
        );
    }
}
