//! The scenario text a matrix expands: finding and blanking the `[matrix]` table, the `{name}` placeholders,
//! and substituting a case's values as data (escaped inside strings and comments).

use super::MatrixError;
use super::values::Value;

/// Where the `[matrix]` table stands: its header's offset and its body (up to the next table header).
pub(super) struct Section {
    pub(super) header: usize,
    pub(super) body: std::ops::Range<usize>,
}

pub(super) fn find_section(text: &str) -> Option<Section> {
    let mut offset = 0;
    let mut header = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if let Some(start) = header {
            if trimmed.starts_with('[') {
                return Some(Section {
                    header: start,
                    body: start + "[matrix]".len()..offset,
                });
            }
        } else if trimmed == "[matrix]"
            || trimmed.starts_with("[matrix]") && trimmed[8..].trim_start().starts_with('#')
        {
            header = Some(offset + line.find('[').unwrap_or(0));
        }
        offset += line.len();
    }
    header.map(|start| Section {
        header: start,
        body: start + "[matrix]".len()..text.len(),
    })
}

/// Replaces every character of `range` but newlines with spaces, so lines and columns elsewhere stay put.
pub(super) fn blank(text: &mut String, range: std::ops::Range<usize>) {
    let replaced: String = text[range.clone()]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    text.replace_range(range, &replaced);
}

pub(super) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Every `{name}` or `{name.field}` placeholder in `text`, with its byte offset.
pub(super) fn placeholders(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(open) = text[at..].find('{').map(|i| at + i) {
        let Some(close) = text[open + 1..].find('}').map(|i| open + 1 + i) else {
            break;
        };
        let inner = &text[open + 1..close];
        let (head, field) = inner.split_once('.').unwrap_or((inner, ""));
        if is_identifier(head) && (field.is_empty() || is_identifier(field)) && bytes[open] == b'{'
        {
            found.push((open, inner));
            at = close + 1;
        } else {
            at = open + 1;
        }
    }
    found
}

pub(super) fn check_placeholders(
    text: &str,
    params: &[(String, Vec<Value>)],
) -> Result<(), MatrixError> {
    for (offset, name) in placeholders(text) {
        let (head, field) = name.split_once('.').unwrap_or((name, ""));
        let Some((_, values)) = params.iter().find(|(param, _)| param == head) else {
            let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
            return Err(MatrixError {
                offset,
                message: format!(
                    "fill placeholder `{{{name}}}`: the matrix has no parameter `{head}` (it has {})",
                    names.join(", ")
                ),
                help: crate::kernel::catalog::closest(head, names.iter().copied())
                    .map(|s| format!("did you mean `{{{s}}}`?")),
            });
        };
        if !field.is_empty() && values.iter().all(|v| !v.derived.contains_key(field)) {
            let known: Vec<String> = values
                .first()
                .map(|v| {
                    v.derived
                        .keys()
                        .map(|k| format!("{{{head}.{k}}}"))
                        .collect()
                })
                .unwrap_or_default();
            return Err(MatrixError::at(
                offset,
                format!(
                    "fill placeholder `{{{name}}}`: parameter `{head}` has no field `{field}`{}",
                    if known.is_empty() {
                        String::new()
                    } else {
                        format!(" (it has {})", known.join(", "))
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// An upper bound of one case's step executions, read from the text before any case is made: one per
/// `[[step]]`, plus each literal `repeat = N` beyond the first run (a placeholder counts as the most a step
/// may repeat).
pub(super) fn executions_per_case(text: &str) -> u64 {
    let mut total = 0u64;
    for line in text.lines().map(str::trim) {
        if line.starts_with("[[step]]") {
            total += 1;
        } else if let Some(value) = line.strip_prefix("repeat").map(str::trim_start) {
            if let Some(value) = value.strip_prefix('=') {
                let value = value.split('#').next().unwrap_or_default().trim();
                let repeat = value
                    .parse::<u64>()
                    .unwrap_or(u64::from(crate::scenario::model::Step::MAX_REPEAT));
                total += repeat.saturating_sub(1);
            }
        }
    }
    total.max(1)
}

/// Which kind of TOML string, if any, the byte at `offset` stands in (single-line strings, as matrix
/// placeholders are written; a `#` outside a string ends the line's scan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StringKind {
    None,
    Basic,
    Literal,
    Comment,
}

pub(super) fn string_at(text: &str, offset: usize) -> StringKind {
    let line_start = text[..offset].rfind('\n').map_or(0, |at| at + 1);
    let mut kind = StringKind::None;
    let mut escaped = false;
    for byte in text[line_start..offset].bytes() {
        kind = match (kind, byte) {
            (StringKind::None, b'"') => StringKind::Basic,
            (StringKind::None, b'\'') => StringKind::Literal,
            (StringKind::None, b'#') => return StringKind::Comment,
            (StringKind::Basic, b'\\') if !escaped => {
                escaped = true;
                continue;
            }
            (StringKind::Basic, b'"') if !escaped => StringKind::None,
            (StringKind::Literal, b'\'') => StringKind::None,
            (kind, _) => kind,
        };
        escaped = false;
    }
    kind
}

/// `value` as the inside of a TOML basic string.
pub(super) fn escape_basic(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

pub(super) fn substitute(text: &str, chosen: &[(&str, &Value)]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (offset, name) in placeholders(text) {
        let (head, field) = name.split_once('.').unwrap_or((name, ""));
        let Some((_, value)) = chosen.iter().find(|(param, _)| *param == head) else {
            continue;
        };
        let (replacement, integer) = if field.is_empty() {
            (value.text.clone(), value.integer)
        } else {
            match value.derived.get(field) {
                Some(Some(derived)) => (derived.clone(), false),
                _ => {
                    return Err(format!(
                        "fill placeholder `{{{name}}}`: {head} `{}` has no {field}",
                        value.text
                    ));
                }
            }
        };
        let end = offset + name.len() + 2;
        let quoted = offset > 0
            && text.as_bytes()[offset - 1] == b'"'
            && text.as_bytes().get(end) == Some(&b'"');
        if quoted && integer {
            out.push_str(&text[last..offset - 1]);
            out.push_str(&replacement);
            last = end + 1;
            continue;
        }
        // A value is data, never TOML: escaped inside a string, and only an integer outside one.
        let replacement = match string_at(text, offset) {
            // In a comment only a line break could escape it.
            StringKind::Basic | StringKind::Comment => escape_basic(&replacement),
            StringKind::Literal if replacement.contains(['\'', '\n', '\r']) => {
                return Err(format!(
                    "fill placeholder `{{{name}}}`: value {replacement:?} cannot stand in a '…' string; use \"…\""
                ));
            }
            StringKind::Literal => replacement,
            StringKind::None if integer => replacement,
            StringKind::None => {
                return Err(format!(
                    "fill placeholder `{{{name}}}`: value {replacement:?} is not an integer, so it must stand inside a quoted string"
                ));
            }
        };
        out.push_str(&text[last..offset]);
        out.push_str(&replacement);
        last = end;
    }
    out.push_str(&text[last..]);
    Ok(out)
}
