//! A matrix parameter's values: lists, `"*"` over the catalog's kernels or the loader's host profiles, and
//! kernel filter tables over the inventory, with the derived `{kernel.*}` and `{host.*}` placeholders.

use std::collections::BTreeMap;

use super::MatrixContext;

/// A parameter value: its text, and whether it is an integer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Value {
    pub(super) text: String,
    pub(super) integer: bool,
    /// Derived placeholders (`kernel.method` ...): `None` when the value has no such field.
    pub(super) derived: BTreeMap<String, Option<String>>,
}

impl Value {
    pub(super) fn plain(text: String, integer: bool) -> Self {
        Self {
            text,
            integer,
            derived: BTreeMap::new(),
        }
    }
}

pub(super) fn values_of(
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

pub(super) fn host_value(name: &str, family: &Option<String>) -> Value {
    let mut derived = BTreeMap::new();
    derived.insert("family".to_string(), family.clone());
    Value {
        text: name.to_string(),
        integer: false,
        derived,
    }
}

pub(super) fn kernel_value(spec: &crate::kernel::KernelSpec) -> Value {
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

pub(super) fn kernel_filter(
    filter: &toml::Table,
    context: &MatrixContext,
) -> Result<Vec<Value>, String> {
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
