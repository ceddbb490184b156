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

use crate::kernel::Catalog;
use crate::kernel::audit::Inventory;
use crate::scenario::load::source::{DUPLICATE_KEY_HELP, duplicate_key};
use text::{
    blank, check_placeholders, executions_per_case, find_section, is_identifier, substitute,
};
use values::{Value, values_of};

mod text;
mod values;

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
        format!("{base}{}", case_suffix(&self.params))
    }
}

/// What a case's parameters add to its file's name: `[k=v,…]`.
pub(crate) fn case_suffix(params: &[(String, String)]) -> String {
    let params: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("[{}]", params.join(","))
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

/// Whether `text` declares a `[matrix]` table.
pub fn has_matrix(text: &str) -> bool {
    // Every `[matrix]` header line holds the word: one substring search spares a plain file (most files,
    // and every large one) the line-by-line scan.
    text.contains("[matrix]") && find_section(text).is_some()
}

/// Expands `text`; `None` when the file has no `[matrix]` table (a plain scenario).
#[cfg(test)]
pub fn expand(text: &str, context: &MatrixContext) -> Result<Option<Vec<Case>>, MatrixError> {
    Ok(plan(text, context)?.map(Plan::cases))
}

/// A matrix checked and counted but not yet expanded: what its cases will ask for is known before any
/// case's text is made ([`crate::scenario::load`]'s run-wide budget asks for it first).
pub struct Plan {
    params: Vec<(String, Vec<Value>)>,
    blanked: String,
    total: usize,
    executions: u64,
    header: usize,
}

impl Plan {
    /// The step executions all of its cases ask for together, repeat included.
    pub fn executions(&self) -> u64 {
        self.executions
    }

    /// The byte offset of the `[matrix]` header.
    pub fn header(&self) -> usize {
        self.header
    }

    /// Every case, last parameter fastest.
    pub fn cases(self) -> Vec<Case> {
        let Self {
            params,
            blanked,
            total,
            ..
        } = self;
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
                    return cases;
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
}

/// The step executions a file without a `[matrix]` asks for (each `[[step]]` once, times its `repeat`),
/// counted from its text without parsing it.
pub fn executions_of(text: &str) -> u64 {
    executions_per_case(text)
}

/// Checks and counts `text`'s matrix without expanding it; `None` when the file has no `[matrix]` table.
pub fn plan(text: &str, context: &MatrixContext) -> Result<Option<Plan>, MatrixError> {
    let Some(section) = find_section(text) else {
        return Ok(None);
    };
    let body = &text[section.body.clone()];
    let table: toml::Table = toml::from_str(body).map_err(|error| {
        let span = error.span().unwrap_or(0..0);
        let offset = section.body.start + span.start;
        // A key set twice is named, as in the rest of the file; the parser's message alone says not which.
        match duplicate_key(error.message().trim(), body, &span) {
            Some(message) => MatrixError {
                offset,
                message,
                help: Some(DUPLICATE_KEY_HELP.to_string()),
            },
            None => MatrixError::at(offset, format!("read [matrix]: {}", error.message())),
        }
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
    Ok(Some(Plan {
        params,
        blanked,
        total,
        executions,
        header: section.header,
    }))
}

#[cfg(test)]
mod tests;
