//! Parametrized scenarios: a `[matrix]` table expands one file into one case per combination of its
//! parameters, each a scenario of its own named `file.toml[kernel=…,host=…]`.
//!
//! ```toml
//! [matrix]
//! kernel = "*"                          # every kernel of the catalog; or a list; or a filter table
//! host = ["h200x2", "r9700x2"]          # any list of strings or integers
//!
//! [host]
//! profile = "{host}"
//!
//! [[step]]
//! action = "warmup"
//! kernel = "{kernel}"
//! ```
//!
//! Expansion keeps every line where it was: the `[matrix]` table is blanked, and each `{name}`
//! placeholder is replaced by the case's value as data (escaped inside a string or comment, an integer
//! only outside one; a whole `"{name}"` string whose value is an integer becomes that integer). `kernel` accepts `"*"`, a list of names, or a filter table over the
//! kernel inventory (`{ rocm = "refused" }`, `{ family = "rocm" }`, `{ method = "gptq" }`,
//! `{ alternative = true }`, `{ repacks = true }`); a kernel case
//! also offers `{kernel.method}`, `{kernel.alternative}` and `{kernel.extension}`. `host = "*"` is every
//! host profile the loader can see, and a host case offers `{host.family}` (the family its build runs). A placeholder with no parameter, an empty expansion and one larger than
//! [`MAX_CASES`] are load errors; a derived placeholder a kernel lacks (`{kernel.alternative}` of a kernel
//! with no alternative) fails that case alone, naming its parameters.

use std::collections::BTreeMap;

use crate::kernel::Catalog;
use crate::kernel::audit::Inventory;

/// The most cases one file may expand to.
pub const MAX_CASES: usize = 10_000;

/// What a matrix may draw on: the subject's kernels and the host profiles the loader can see.
pub struct MatrixContext<'a> {
    /// The catalog `kernel = "*"` expands over.
    pub catalog: &'a Catalog,
    /// The inventory kernel filters read (the reference one for devsim's catalog).
    pub inventory: Option<&'a Inventory>,
    /// Every profile `host = "*"` expands over: its name and the family its build runs (`{host.family}`).
    pub profiles: Vec<(String, Option<String>)>,
}

/// One expanded case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The parameters, sorted by name.
    pub params: Vec<(String, String)>,
    /// The scenario text for this case, or why this case alone cannot be built.
    pub text: Result<String, String>,
}

impl Case {
    /// The case's name: `file.toml[host=h200x2,kernel=gptq_torch]`.
    pub fn name(&self, base: &str) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{base}[{}]", params.join(","))
    }
}

/// Why a matrix cannot be expanded, located at a byte offset of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixError {
    /// Where in the file.
    pub offset: usize,
    /// What is wrong and what was expected.
    pub message: String,
    /// A suggestion.
    pub help: Option<String>,
}

impl MatrixError {
    fn at(offset: usize, message: impl Into<String>) -> Self {
        Self {
            offset,
            message: message.into(),
            help: None,
        }
    }
}

/// A parameter value: its text, and whether it is an integer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Value {
    text: String,
    integer: bool,
    /// Derived placeholders (`kernel.method` ...): `None` when the value has no such field.
    derived: BTreeMap<String, Option<String>>,
}

impl Value {
    fn plain(text: String, integer: bool) -> Self {
        Self {
            text,
            integer,
            derived: BTreeMap::new(),
        }
    }
}

/// Whether `text` declares a `[matrix]` table.
pub fn has_matrix(text: &str) -> bool {
    find_section(text).is_some()
}

/// Expands `text`; `None` when the file has no `[matrix]` table (a plain scenario).
pub fn expand(text: &str, context: &MatrixContext) -> Result<Option<Vec<Case>>, MatrixError> {
    let Some(section) = find_section(text) else {
        return Ok(None);
    };
    let table: toml::Table = toml::from_str(&text[section.body.clone()]).map_err(|error| {
        MatrixError::at(
            section.body.start + error.span().map_or(0, |span| span.start),
            format!("read [matrix]: {}", error.message()),
        )
    })?;
    let mut params: Vec<(String, Vec<Value>)> = Vec::new();
    for (name, value) in &table {
        let at = section.body.start + text[section.body.clone()].find(name.as_str()).unwrap_or(0);
        if !is_identifier(name) {
            return Err(MatrixError::at(
                at,
                format!(
                    "read matrix parameter `{name}`: expected a name of lowercase letters, digits and _"
                ),
            ));
        }
        let values = values_of(name, value, context).map_err(|message| MatrixError {
            offset: at,
            message,
            help: None,
        })?;
        if values.is_empty() {
            return Err(MatrixError::at(
                at,
                format!(
                    "expand matrix parameter `{name}`: it has no value, so the file has no case"
                ),
            ));
        }
        params.push((name.clone(), values));
    }
    if params.is_empty() {
        return Err(MatrixError::at(
            section.header,
            "expand [matrix]: it declares no parameter",
        ));
    }
    let total = params
        .iter()
        .try_fold(1usize, |acc, (_, values)| acc.checked_mul(values.len()))
        .unwrap_or(usize::MAX);
    if total > MAX_CASES {
        return Err(MatrixError::at(
            section.header,
            format!("expand [matrix]: it makes {total} cases, more than the limit of {MAX_CASES}"),
        ));
    }
    let mut blanked = text.to_string();
    blank(&mut blanked, section.header..section.body.end);
    let per_case = executions_per_case(&blanked);
    let executions = (total as u64).saturating_mul(per_case);
    if executions > crate::scenario::model::Step::MAX_MATRIX_EXECUTIONS {
        return Err(MatrixError::at(
            section.header,
            format!(
                "expand [matrix]: its {total} cases ask for {executions} step executions (about {per_case} each, repeat included), more than the limit of {}",
                crate::scenario::model::Step::MAX_MATRIX_EXECUTIONS
            ),
        ));
    }
    check_placeholders(&blanked, &params)?;
    let mut cases = Vec::with_capacity(total);
    let mut index = vec![0usize; params.len()];
    loop {
        let chosen: Vec<(&str, &Value)> = params
            .iter()
            .zip(&index)
            .map(|((name, values), at)| (name.as_str(), &values[*at]))
            .collect();
        cases.push(Case {
            params: chosen
                .iter()
                .map(|(name, value)| (name.to_string(), value.text.clone()))
                .collect(),
            text: substitute(&blanked, &chosen),
        });
        // The next combination, last parameter fastest.
        let mut position = params.len();
        loop {
            if position == 0 {
                return Ok(Some(cases));
            }
            position -= 1;
            index[position] += 1;
            if index[position] < params[position].1.len() {
                break;
            }
            index[position] = 0;
        }
    }
}

/// Where the `[matrix]` table stands: its header's offset and its body (up to the next table header).
struct Section {
    header: usize,
    body: std::ops::Range<usize>,
}

fn find_section(text: &str) -> Option<Section> {
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
fn blank(text: &mut String, range: std::ops::Range<usize>) {
    let replaced: String = text[range.clone()]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    text.replace_range(range, &replaced);
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Every `{name}` or `{name.field}` placeholder in `text`, with its byte offset.
fn placeholders(text: &str) -> Vec<(usize, &str)> {
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

fn check_placeholders(text: &str, params: &[(String, Vec<Value>)]) -> Result<(), MatrixError> {
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
fn executions_per_case(text: &str) -> u64 {
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
enum StringKind {
    None,
    Basic,
    Literal,
    Comment,
}

fn string_at(text: &str, offset: usize) -> StringKind {
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
fn escape_basic(value: &str) -> String {
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

fn substitute(text: &str, chosen: &[(&str, &Value)]) -> Result<String, String> {
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

fn values_of(
    name: &str,
    value: &toml::Value,
    context: &MatrixContext,
) -> Result<Vec<Value>, String> {
    match (name, value) {
        ("kernel", toml::Value::String(star)) if star == "*" => Ok(context
            .catalog
            .iter()
            .map(|k| kernel_value(k.spec()))
            .collect()),
        ("kernel", toml::Value::Table(filter)) => kernel_filter(filter, context),
        ("kernel", toml::Value::Array(names)) => names
            .iter()
            .map(|name| {
                let name = name.as_str().ok_or_else(|| {
                    format!("read matrix parameter `kernel`: expected kernel names, found {name}")
                })?;
                let kernel = context
                    .catalog
                    .get(name)
                    .map_err(|error| error.to_string())?;
                Ok(kernel_value(kernel.spec()))
            })
            .collect(),
        ("host", toml::Value::String(star)) if star == "*" => Ok(context
            .profiles
            .iter()
            .map(|(name, family)| host_value(name, family))
            .collect()),
        ("host", toml::Value::Array(names)) => names
            .iter()
            .map(|name| {
                let name = name.as_str().ok_or_else(|| {
                    format!("read matrix parameter `host`: expected profile names, found {name}")
                })?;
                let Some((_, family)) = context.profiles.iter().find(|(p, _)| p == name) else {
                    let names: Vec<&str> =
                        context.profiles.iter().map(|(p, _)| p.as_str()).collect();
                    let suggestion = crate::kernel::catalog::closest(name, names.iter().copied())
                        .map(|s| format!(" (did you mean {s}?)"))
                        .unwrap_or_default();
                    return Err(format!(
                        "find host profile `{name}`{suggestion}: expected one of {}",
                        names.join(", ")
                    ));
                };
                Ok(host_value(name, family))
            })
            .collect(),
        (_, toml::Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                toml::Value::String(text) => Ok(Value::plain(text.clone(), false)),
                toml::Value::Integer(n) => Ok(Value::plain(n.to_string(), true)),
                other => Err(format!(
                    "read matrix parameter `{name}`: expected strings or integers, found {}",
                    other.type_str()
                )),
            })
            .collect(),
        (_, other) => Err(format!(
            "read matrix parameter `{name}`: expected a list{}, found {}",
            if matches!(name, "kernel" | "host") {
                ", \"*\" or a filter table"
            } else {
                ""
            },
            other.type_str()
        )),
    }
}

fn host_value(name: &str, family: &Option<String>) -> Value {
    let mut derived = BTreeMap::new();
    derived.insert("family".to_string(), family.clone());
    Value {
        text: name.to_string(),
        integer: false,
        derived,
    }
}

fn kernel_value(spec: &crate::kernel::KernelSpec) -> Value {
    let mut derived = BTreeMap::new();
    derived.insert("method".to_string(), Some(spec.method.to_string()));
    derived.insert(
        "alternative".to_string(),
        spec.alternative.as_ref().map(ToString::to_string),
    );
    derived.insert(
        "extension".to_string(),
        spec.extension.as_ref().map(ToString::to_string),
    );
    Value {
        text: spec.name.to_string(),
        integer: false,
        derived,
    }
}

fn kernel_filter(filter: &toml::Table, context: &MatrixContext) -> Result<Vec<Value>, String> {
    let mut kernels: Vec<&dyn crate::kernel::Kernel> = context.catalog.iter().collect();
    for (key, wanted) in filter {
        if key == "alternative" || key == "repacks" {
            let wanted = wanted
                .as_bool()
                .ok_or_else(|| format!("read kernel filter `{key}`: expected true or false"))?;
            kernels.retain(|k| {
                let has = match key.as_str() {
                    "alternative" => k.spec().alternative.is_some(),
                    _ => k.spec().repacks,
                };
                has == wanted
            });
            continue;
        }
        let wanted = wanted
            .as_str()
            .ok_or_else(|| format!("read kernel filter `{key}`: expected a string"))?;
        match key.as_str() {
            "method" => kernels.retain(|k| k.spec().method.as_str() == wanted),
            "family" => {
                let family = crate::vocab::Family::EVERY
                    .into_iter()
                    .find(|f| f.as_str() == wanted)
                    .ok_or_else(|| {
                        format!("read kernel filter `family`: `{wanted}` is not a family")
                    })?;
                kernels.retain(|k| k.spec().families.contains(&family));
            }
            "rocm" => {
                let inventory = context.inventory.ok_or_else(|| {
                    "read kernel filter `rocm`: this catalog has no kernel inventory".to_string()
                })?;
                kernels.retain(|k| {
                    inventory
                        .row(&k.spec().name)
                        .is_some_and(|row| row.rocm.as_str() == wanted)
                });
            }
            other => {
                return Err(format!(
                    "read kernel filter `{other}`: expected method, family, rocm, alternative or repacks"
                ));
            }
        }
    }
    Ok(kernels
        .into_iter()
        .map(|k| kernel_value(k.spec()))
        .collect())
}

#[cfg(test)]
mod tests {
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
        let file = "[matrix]\nkernel = { rocm = \"restricted-by-arch\" }\n[[step]]\nkernel = \"{kernel}\"\n";
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
        let error =
            expand("[matrix]\nhost = [\"h200x3\"]\n", &context(&catalog)).expect_err("refused");
        assert!(
            error.message.contains("did you mean h200x2?"),
            "{}",
            error.message
        );
        let error = expand("[matrix]\nkernel = [\"gptq_trch\"]\n", &context(&catalog))
            .expect_err("refused");
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
}
