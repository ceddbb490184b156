//! The seed-bug mutations as data: `mutants/seed-bugs.toml`, one `[[mutant]]` per bug class of the seed.
//!
//! Each mutation is one exact `find` snippet in one source file and its `replace`. A snippet must occur
//! exactly once in its file, so a mutation either applies where it was written or fails loudly naming the
//! file and the snippet; an edit elsewhere in the same file by someone else does not disturb it. The
//! runner (`src/main.rs`) applies them one at a time to a scratch copy; devsim's `tests/mutants.rs` checks
//! the anchors against the current sources without building anything.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

/// Where the mutation data lives, relative to the repository root.
pub const DATA_FILE: &str = "mutants/seed-bugs.toml";

/// The data format this crate reads.
pub const FORMAT: u32 = 1;

/// Everything that can be wrong with the mutation data or with applying it.
#[derive(Debug, Error)]
pub enum MutantError {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The data file is not valid TOML of the expected shape.
    #[error("{} is not valid seed-bug data", path.display())]
    Parse {
        /// The data file.
        path: PathBuf,
        /// The parser's diagnostic.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// The data file declares a format this crate does not read.
    #[error("unsupported seed-bug data format {found} (expected {FORMAT})")]
    Format {
        /// The format found.
        found: u32,
    },
    /// The data file lists no mutation.
    #[error("no [[mutant]] entries")]
    Empty,
    /// Two mutations share a name.
    #[error("duplicate mutant name {name}")]
    DuplicateName {
        /// The repeated name.
        name: String,
    },
    /// A mutation's `file` is absolute or climbs out of the repository.
    #[error("mutant {name}: file {file} must be a path inside the repository")]
    FileOutsideRepository {
        /// The mutation.
        name: String,
        /// Its `file`.
        file: String,
    },
    /// A mutation would change nothing.
    #[error("mutant {name}: find is empty or equal to replace")]
    NoChange {
        /// The mutation.
        name: String,
    },
    /// A `find` snippet does not occur exactly once in its file.
    #[error(
        "mutant {name}: find occurs {count} times in {file}, expected exactly once; the snippet:\n{find}"
    )]
    Anchor {
        /// The mutation.
        name: String,
        /// Its file, relative to the repository root.
        file: String,
        /// How often the snippet occurs.
        count: usize,
        /// The snippet.
        find: String,
    },
}

/// The whole data file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedBugs {
    /// The data format, [`FORMAT`].
    pub format: u32,
    /// One mutation per seed bug class, in file order.
    #[serde(rename = "mutant", default)]
    pub mutants: Vec<Mutation>,
}

/// One seed bug class as one source mutation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mutation {
    /// A short unique name, e.g. `RocmStoredAsCuda`.
    pub name: String,
    /// The bug class in one sentence.
    pub class: String,
    /// What the seed report says about it.
    pub seed: String,
    /// The file to mutate, relative to the repository root.
    pub file: String,
    /// The exact snippet to replace; it must occur exactly once in `file`.
    pub find: String,
    /// What replaces it.
    pub replace: String,
}

impl SeedBugs {
    /// Reads and checks the data file at `path` (names unique, files inside the repository, every
    /// mutation changing something). Anchors are checked separately, against a tree: [`Self::check_anchors`].
    pub fn load(path: &Path) -> Result<Self, MutantError> {
        let text = std::fs::read_to_string(path).map_err(|source| MutantError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|error| match error {
            ParseOrShape::Parse(source) => MutantError::Parse {
                path: path.to_path_buf(),
                source: Box::new(source),
            },
            ParseOrShape::Shape(error) => error,
        })
    }

    fn parse(text: &str) -> Result<Self, ParseOrShape> {
        let bugs: SeedBugs = toml::from_str(text).map_err(ParseOrShape::Parse)?;
        if bugs.format != FORMAT {
            return Err(ParseOrShape::Shape(MutantError::Format {
                found: bugs.format,
            }));
        }
        if bugs.mutants.is_empty() {
            return Err(ParseOrShape::Shape(MutantError::Empty));
        }
        let mut names = BTreeSet::new();
        for mutation in &bugs.mutants {
            if !names.insert(mutation.name.as_str()) {
                return Err(ParseOrShape::Shape(MutantError::DuplicateName {
                    name: mutation.name.clone(),
                }));
            }
            mutation.check_shape().map_err(ParseOrShape::Shape)?;
        }
        Ok(bugs)
    }

    /// Every anchor problem in the tree at `root`: a file that cannot be read, a `find` that does not occur
    /// exactly once. Empty when every mutation applies.
    pub fn check_anchors(&self, root: &Path) -> Vec<MutantError> {
        self.mutants
            .iter()
            .filter_map(|mutation| mutation.mutate_in(root).err())
            .collect()
    }
}

enum ParseOrShape {
    Parse(toml::de::Error),
    Shape(MutantError),
}

impl Mutation {
    fn check_shape(&self) -> Result<(), MutantError> {
        let path = Path::new(&self.file);
        let inside = path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside || self.file.is_empty() {
            return Err(MutantError::FileOutsideRepository {
                name: self.name.clone(),
                file: self.file.clone(),
            });
        }
        if self.find.is_empty() || self.find == self.replace {
            return Err(MutantError::NoChange {
                name: self.name.clone(),
            });
        }
        Ok(())
    }

    /// The mutated text of `source`, the contents of [`Self::file`]; an error unless `find` occurs exactly
    /// once.
    pub fn mutate(&self, source: &str) -> Result<String, MutantError> {
        let count = source.matches(self.find.as_str()).count();
        if count != 1 {
            return Err(MutantError::Anchor {
                name: self.name.clone(),
                file: self.file.clone(),
                count,
                find: self.find.clone(),
            });
        }
        Ok(source.replacen(self.find.as_str(), &self.replace, 1))
    }

    /// Reads [`Self::file`] under `root` and returns its original and mutated texts.
    pub fn mutate_in(&self, root: &Path) -> Result<(String, String), MutantError> {
        let path = root.join(&self.file);
        let original = std::fs::read_to_string(&path).map_err(|source| MutantError::Read {
            path: path.clone(),
            source,
        })?;
        let mutated = self.mutate(&original)?;
        Ok((original, mutated))
    }
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(find: &str, replace: &str) -> String {
        format!(
            "format = 1\n[[mutant]]\nname = \"m\"\nclass = \"c\"\nseed = \"s\"\nfile = \"src/a.rs\"\n\
             find = {find:?}\nreplace = {replace:?}\n"
        )
    }

    #[test]
    fn a_snippet_found_once_is_replaced() {
        let bugs = SeedBugs::parse(&one("b", "x")).ok().expect("parses");
        assert_eq!(bugs.mutants[0].mutate("abc").ok().as_deref(), Some("axc"));
    }

    #[test]
    fn a_snippet_found_twice_or_never_names_file_and_snippet() {
        let bugs = SeedBugs::parse(&one("b", "x")).ok().expect("parses");
        for source in ["abcb", "ac"] {
            let message = bugs.mutants[0].mutate(source).unwrap_err().to_string();
            assert!(message.contains("src/a.rs"), "{message}");
            assert!(message.ends_with("snippet:\nb"), "{message}");
        }
    }

    #[test]
    fn shape_errors_are_typed() {
        let same = SeedBugs::parse(&one("b", "b")).err();
        assert!(matches!(
            same,
            Some(ParseOrShape::Shape(MutantError::NoChange { .. }))
        ));
        let twice = format!(
            "{}{}",
            one("b", "x"),
            one("b", "x").replace("format = 1\n", "")
        );
        assert!(matches!(
            SeedBugs::parse(&twice).err(),
            Some(ParseOrShape::Shape(MutantError::DuplicateName { .. }))
        ));
        let outside = one("b", "x").replace("src/a.rs", "../a.rs");
        assert!(matches!(
            SeedBugs::parse(&outside).err(),
            Some(ParseOrShape::Shape(
                MutantError::FileOutsideRepository { .. }
            ))
        ));
    }
}
