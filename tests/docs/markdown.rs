//! The fenced code blocks of the project's markdown, each with its file and line.

use std::path::{Path, PathBuf};

/// One fenced code block (```` ``` ```` or `~~~`).
#[derive(Debug, Clone)]
pub struct Block {
    /// The markdown file, relative to the repository root, with `/` separators.
    pub file: String,
    /// The 1-based line of the opening fence.
    pub line: usize,
    /// The info string's words: the language first, then any markers (```` ```toml fragment ````).
    pub info: Vec<String>,
    /// The lines between the fences, the fence's indentation removed.
    pub body: String,
}

impl Block {
    /// The language: the info string's first word, lower-cased ("" when none).
    pub fn language(&self) -> String {
        self.info
            .first()
            .map(|word| word.to_ascii_lowercase())
            .unwrap_or_default()
    }

    /// The words after the language.
    pub fn markers(&self) -> &[String] {
        self.info.get(1..).unwrap_or_default()
    }

    /// `file:line` of the opening fence.
    pub fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// The body preceded by blank lines, so that line N of the result is line N of the markdown file: a
    /// loader's `line:column` then points into the markdown.
    pub fn aligned(&self) -> String {
        format!("{}{}", "\n".repeat(self.line), self.body)
    }
}

/// The markdown files whose examples are checked: `README.md`, `AGENTS.md`, `docs/**/*.md` and
/// `.agents/skills/**/*.md`, sorted.
pub fn documentation_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = vec![root.join("README.md"), root.join("AGENTS.md")];
    for folder in ["docs", ".agents/skills"] {
        markdown_under(&root.join(folder), &mut files)?;
    }
    files.sort();
    Ok(files)
}

fn markdown_under(folder: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(folder).map_err(|e| format!("list {}: {e}", folder.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("list {}: {e}", folder.display()))?
            .path();
        if path.is_dir() {
            markdown_under(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// Every fenced code block of `text` (the markdown file `file`), in order. An unclosed fence is an error
/// naming its line: everything after it would otherwise escape the checks.
pub fn blocks(file: &str, text: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        let Some(fence_char) = rest.chars().next().filter(|c| *c == '`' || *c == '~') else {
            continue;
        };
        let fence_len = rest.chars().take_while(|c| *c == fence_char).count();
        if indent > 3 || fence_len < 3 {
            continue;
        }
        let info: Vec<String> = rest[fence_len..]
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let mut body = String::new();
        let mut closed = false;
        for (_, inner) in lines.by_ref() {
            let trimmed = inner.trim_start_matches(' ');
            let run = trimmed.chars().take_while(|c| *c == fence_char).count();
            if run >= fence_len && trimmed[run..].trim().is_empty() {
                closed = true;
                break;
            }
            let strip = (inner.len() - trimmed.len()).min(indent);
            body.push_str(&inner[strip..]);
            body.push('\n');
        }
        if !closed {
            return Err(format!(
                "{file}:{}: a code fence that is never closed",
                index + 1
            ));
        }
        blocks.push(Block {
            file: file.to_string(),
            line: index + 1,
            info,
            body,
        });
    }
    Ok(blocks)
}

/// Every block of every documentation file under `root`.
pub fn all_blocks(root: &Path) -> Result<Vec<Block>, String> {
    let mut all = Vec::new();
    for path in documentation_files(root)? {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("read {}: {e}", path.display()))?;
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        all.extend(blocks(&relative, &text)?);
    }
    Ok(all)
}
