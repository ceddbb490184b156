//! Loading scenario and host-profile files into checked [`Scenario`]s, with located diagnostics.
//!
//! Every error names `path:line:column`, what was expected and, for names, the closest valid one.
//! Scenario files are untrusted: no key can name a library path, a command or a real environment change
//! (`env` only sets the three visible-device variables, inside the simulated host or a child process).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

use crate::dispatch::DispatchError;
use crate::dispatch::selector::{Selector, check_spelling};
use crate::host::HostError;
use crate::host::{Fault, Gpu, HostSpec};
use crate::kernel::catalog::closest;
use crate::kernel::{Catalog, Method};
use crate::pool::LockMode;
use crate::scenario::error::{LoadError, Snippet};
use crate::scenario::format::{
    FORMAT_VERSION, HostFields, IntOrWord, ScenarioFile, SelectorValue, StepExpectFields,
    StepFields, TraceRuleFields,
};
use crate::scenario::model::{Action, Expectations, ExpectedOrdinal, Scenario, Step, TraceRules};
use crate::trace::{Call, event_names, is_event_name};
use crate::vocab::TorchBuild;
use crate::vocab::{Arch, Family};

/// The folder under a scenario root that holds host profiles.
pub const HOSTS_DIR: &str = "hosts";

/// One file's text plus where it lives, to turn byte spans into `line:column`.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn error(&self, span: Range<usize>, message: impl Into<String>) -> LoadError {
        let offset = span.start.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit('\n')
            .next()
            .map(|l| l.chars().count())
            .unwrap_or(0)
            + 1;
        let length = span
            .end
            .saturating_sub(offset)
            .max(1)
            .min(self.text.len() - offset);
        LoadError {
            snippet: Some(Box::new(Snippet {
                source: miette::NamedSource::new(
                    self.path.display().to_string(),
                    self.text.to_string(),
                ),
                span: (offset, length).into(),
            })),
            ..LoadError::new(self.path, line, column, message)
        }
    }

    fn error_with_help(
        &self,
        span: Range<usize>,
        message: impl Into<String>,
        help: Option<String>,
    ) -> LoadError {
        LoadError {
            help,
            ..self.error(span, message)
        }
    }

    fn line_of(&self, span: &Range<usize>) -> usize {
        self.error(span.clone(), "").line
    }

    /// Parses TOML into `T`, turning syntax and unknown-key errors into located diagnostics.
    fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, LoadError> {
        toml::from_str(self.text).map_err(|error| {
            let span = error.span().unwrap_or(0..0);
            let message = error.message().trim().to_string();
            let help = unknown_field_hint(&message);
            self.error_with_help(span, message, help)
        })
    }
}

/// "did you mean …?" for serde's `unknown field `x`, expected one of `a`, `b`` messages.
fn unknown_field_hint(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, expected) = rest.split_once('`')?;
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    closest(field, names).map(|name| format!("did you mean `{name}`?"))
}

fn did_you_mean<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    closest(input, candidates).map(|name| format!("did you mean {name}?"))
}

/// The scenario root for a file: the nearest ancestor folder holding `hosts/`, else the file's folder.
pub fn root_of(path: &Path) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new("."));
    parent
        .ancestors()
        .find(|dir| dir.join(HOSTS_DIR).is_dir())
        .unwrap_or(parent)
        .to_path_buf()
}

/// A scenario's name in reports and test lists: its path relative to its scenario root, `/`-separated.
pub fn scenario_name(path: &Path) -> String {
    path.strip_prefix(root_of(path))
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Every scenario file under `paths` (files are taken as given; folders are walked), sorted, host
/// profiles excluded.
pub fn find_scenarios(paths: &[PathBuf]) -> Result<Vec<PathBuf>, std::io::Error> {
    let mut found = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut found)?;
        } else if path.exists() {
            found.push(path.clone());
        } else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} does not exist", path.display()),
            ));
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), std::io::Error> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name == HOSTS_DIR) {
                continue;
            }
            walk(&path, found)?;
        } else if path.extension().is_some_and(|ext| ext == "toml") {
            found.push(path);
        }
    }
    Ok(())
}

/// The host profiles under a root, by name.
pub fn profile_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(HOSTS_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .filter_map(|path| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}

fn read(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path)
        .map_err(|error| LoadError::new(path, 1, 1, format!("read the file: {error}")))
}

/// Loads a host profile file into a checked host.
pub fn load_profile(path: &Path) -> Result<HostSpec, LoadError> {
    let text = read(path)?;
    let source = Source { path, text: &text };
    let fields: HostFields = source.parse()?;
    if let Some(profile) = &fields.profile {
        return Err(source.error(
            profile.span(),
            "use `profile` in a host profile: profiles do not nest",
        ));
    }
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parts = host_parts(&source, &fields, 0..0)?;
    let torch = parts.torch.ok_or_else(|| {
        source.error(
            0..0,
            "describe the host: expected `torch = \"cuda\" | \"hip\" | \"cpu\"`",
        )
    })?;
    let host = HostSpec {
        name,
        torch,
        gpus: parts.gpus.unwrap_or_default(),
        foreign_gpus: parts.foreign_gpus.unwrap_or_default(),
        current: parts.current.unwrap_or(0),
        env: parts.env.unwrap_or_default(),
        faults: parts.faults.unwrap_or_default(),
    };
    host.validate()
        .map_err(|error| host_error(&source, &fields, 0..0, error))?;
    Ok(host)
}

/// Loads and checks one scenario file against the catalog.
pub fn load_scenario(path: &Path, catalog: &Catalog) -> Result<Scenario, LoadError> {
    let text = read(path)?;
    let source = Source { path, text: &text };
    let file: ScenarioFile = source.parse()?;
    if *file.format.get_ref() != FORMAT_VERSION {
        return Err(source.error(
            file.format.span(),
            format!(
                "read format {}: this devsim reads format = {FORMAT_VERSION}",
                file.format.get_ref()
            ),
        ));
    }
    if file.description.trim().is_empty() {
        return Err(source.error(
            0..0,
            "load the scenario: `description` must be one sentence, not empty",
        ));
    }
    let root = root_of(path);
    let host = merged_host(&source, &file.host, &root)?;
    let trace_rules = match file.expect.and_then(|e| e.trace) {
        Some(rules) => trace_rules(&source, &rules)?,
        None => TraceRules::default(),
    };
    let steps = file
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| load_step(&source, catalog, i + 1, step))
        .collect::<Result<Vec<_>, _>>()?;
    if steps.is_empty() {
        return Err(source.error(
            text.len()..text.len(),
            "load the scenario: expected at least one [[step]]",
        ));
    }
    let name = scenario_name(path);
    Ok(Scenario {
        path: path.to_path_buf(),
        name,
        description: file.description,
        tags: file.tags,
        host,
        trace_rules,
        steps,
    })
}

/// The host fields a file gave, parsed but not yet merged or validated.
#[derive(Default)]
struct HostParts {
    torch: Option<TorchBuild>,
    gpus: Option<Vec<Gpu>>,
    foreign_gpus: Option<Vec<Gpu>>,
    current: Option<u32>,
    env: Option<BTreeMap<String, String>>,
    faults: Option<Vec<Fault>>,
}

fn merged_host(
    source: &Source,
    inline: &Spanned<HostFields>,
    root: &Path,
) -> Result<HostSpec, LoadError> {
    let fields = inline.get_ref();
    let parts = host_parts(source, fields, inline.span())?;
    let (base, name) = match &fields.profile {
        None => (None, "inline".to_string()),
        Some(profile) => {
            let name = profile.get_ref();
            let available = profile_names(root);
            let valid_name = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid_name || !available.contains(name) {
                let error = HostError::UnknownProfile {
                    name: name.clone(),
                    available: available.join(", "),
                };
                return Err(source.error_with_help(
                    profile.span(),
                    error.to_string(),
                    did_you_mean(name, available.iter().map(String::as_str)),
                ));
            }
            let path = root.join(HOSTS_DIR).join(format!("{name}.toml"));
            (Some(load_profile(&path)?), name.clone())
        }
    };
    let torch = parts
        .torch
        .or(base.as_ref().map(|b| b.torch))
        .ok_or_else(|| {
            source.error(
                inline.span(),
                "describe the host: expected `torch = \"cuda\" | \"hip\" | \"cpu\"` inline or from its profile",
            )
        })?;
    let base = base.unwrap_or_else(|| HostSpec::new(torch, &[]));
    let host = HostSpec {
        name,
        torch,
        gpus: parts.gpus.unwrap_or(base.gpus),
        foreign_gpus: parts.foreign_gpus.unwrap_or(base.foreign_gpus),
        current: parts.current.unwrap_or(base.current),
        env: parts.env.unwrap_or(base.env),
        faults: parts.faults.unwrap_or(base.faults),
    };
    host.validate()
        .map_err(|error| host_error(source, fields, inline.span(), error))?;
    Ok(host)
}

/// Places a host validation error on the key that caused it, or on the host table.
fn host_error(
    source: &Source,
    fields: &HostFields,
    span: Range<usize>,
    error: HostError,
) -> LoadError {
    let at = match &error {
        HostError::CurrentOutOfRange { .. } => fields.current.as_ref().map(|c| c.span()),
        HostError::Visible(_) => fields.env.as_ref().map(|e| e.span()),
        HostError::WrongVendor { index, .. } => fields
            .gpus
            .as_ref()
            .and_then(|g| g.get(*index).map(|a| a.span()))
            .or_else(|| {
                fields
                    .gpu
                    .as_ref()
                    .and_then(|g| g.get(*index).map(|d| d.arch.span()))
            })
            .or_else(|| fields.torch.as_ref().map(|t| t.span())),
        _ => None,
    };
    source.error(at.unwrap_or(span), error.to_string())
}

fn parse_archs(source: &Source, archs: &[Spanned<String>]) -> Result<Vec<Arch>, LoadError> {
    archs
        .iter()
        .map(|arch| {
            arch.get_ref()
                .parse::<Arch>()
                .map_err(|error| source.error(arch.span(), error.to_string()))
        })
        .collect()
}

fn host_parts(
    source: &Source,
    fields: &HostFields,
    span: Range<usize>,
) -> Result<HostParts, LoadError> {
    let gpus = match (&fields.gpus, &fields.gpu) {
        (Some(_), Some(_)) => {
            return Err(source.error(
                span,
                "describe the host's GPUs: give `gpus = [...]` or [[host.gpu]] tables, not both",
            ));
        }
        (Some(archs), None) => Some(
            parse_archs(source, archs)?
                .into_iter()
                .enumerate()
                .map(|(i, arch)| Gpu::new(arch, i))
                .collect(),
        ),
        (None, Some(detailed)) => Some(
            detailed
                .iter()
                .enumerate()
                .map(|(i, gpu)| {
                    let arch = parse_archs(source, std::slice::from_ref(&gpu.arch))?.remove(0);
                    let mut built = Gpu::new(arch, i);
                    if let Some(name) = &gpu.name {
                        built.name = name.clone();
                    }
                    if let Some(bytes) = gpu.smem_optin {
                        built.smem_optin = bytes;
                    }
                    if let Some(uuid) = &gpu.uuid {
                        built.uuid = uuid.clone();
                    }
                    Ok(built)
                })
                .collect::<Result<_, LoadError>>()?,
        ),
        (None, None) => None,
    };
    let foreign_gpus = match &fields.foreign_gpus {
        Some(archs) => Some(
            parse_archs(source, archs)?
                .into_iter()
                .enumerate()
                .map(|(i, arch)| Gpu::new(arch, 100 + i))
                .collect(),
        ),
        None => None,
    };
    let faults = match &fields.fault {
        None => None,
        Some(faults) => Some(
            faults
                .iter()
                .map(|fault| {
                    let call = match &fault.call {
                        None => None,
                        Some(call) => Some(call.get_ref().parse::<Call>().map_err(|_| {
                            let names: Vec<&str> = Call::EVERY.iter().map(|c| c.as_str()).collect();
                            let error = HostError::UnknownCall {
                                call: call.get_ref().clone(),
                                expected: names.join(", "),
                            };
                            source.error_with_help(
                                call.span(),
                                error.to_string(),
                                did_you_mean(call.get_ref(), names),
                            )
                        })?),
                    };
                    Ok(Fault {
                        call,
                        device: fault.device,
                        after: fault.after,
                        code: fault.code.unwrap_or(999),
                        message: fault.message.clone().unwrap_or_default(),
                    })
                })
                .collect::<Result<Vec<_>, LoadError>>()?,
        ),
    };
    Ok(HostParts {
        torch: fields.torch.as_ref().map(|t| *t.get_ref()),
        gpus,
        foreign_gpus,
        current: fields.current.as_ref().map(|c| *c.get_ref()),
        env: fields.env.as_ref().map(|e| e.get_ref().clone()),
        faults,
    })
}

fn trace_names(source: &Source, names: &[Spanned<String>]) -> Result<Vec<String>, LoadError> {
    names
        .iter()
        .map(|name| {
            if is_event_name(name.get_ref()) {
                Ok(name.get_ref().clone())
            } else {
                Err(unknown_event(source, name.span(), name.get_ref()))
            }
        })
        .collect()
}

fn unknown_event(source: &Source, span: Range<usize>, name: &str) -> LoadError {
    let names = event_names();
    source.error_with_help(
        span,
        format!(
            "match trace event `{name}`: expected one of {}",
            names.join(", ")
        ),
        did_you_mean(name, names.iter().copied()),
    )
}

fn trace_rules(source: &Source, fields: &TraceRuleFields) -> Result<TraceRules, LoadError> {
    let count = match &fields.count {
        None => Vec::new(),
        Some(table) => table
            .get_ref()
            .iter()
            .map(|(name, n)| {
                if is_event_name(name) {
                    Ok((name.clone(), *n))
                } else {
                    Err(unknown_event(source, table.span(), name))
                }
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(TraceRules {
        never: trace_names(source, &fields.never)?,
        once: trace_names(source, &fields.once)?,
        count,
        order: trace_names(source, &fields.order)?,
    })
}

fn selector_of(value: &SelectorValue) -> Selector {
    match value {
        SelectorValue::Int(n) => Selector::Ordinal(*n),
        SelectorValue::Text(text) => Selector::Text(text.clone()),
    }
}

/// Which optional step keys each action takes.
fn uses(action: &str) -> &'static [&'static str] {
    match action {
        "normalize" | "resolve" => &["device"],
        "validate" | "warmup" | "move" => &["kernel", "device"],
        "select" => &["method", "bits", "device"],
        "lock" => &["scope", "mode"],
        "set_device" => &["ordinal"],
        _ => &[],
    }
}

fn load_step(
    source: &Source,
    catalog: &Catalog,
    number: usize,
    step: &Spanned<StepFields>,
) -> Result<Step, LoadError> {
    let fields = step.get_ref();
    let action_name = fields.action.get_ref().as_str();
    if !Action::NAMES.contains(&action_name) {
        return Err(source.error_with_help(
            fields.action.span(),
            format!(
                "run step {number}: unknown action `{action_name}`, expected one of {}",
                Action::NAMES.join(", ")
            ),
            did_you_mean(action_name, Action::NAMES),
        ));
    }
    let given: [(&str, bool); 7] = [
        ("kernel", fields.kernel.is_some()),
        ("device", fields.device.is_some()),
        ("method", fields.method.is_some()),
        ("bits", fields.bits.is_some()),
        ("scope", fields.scope.is_some()),
        ("mode", fields.mode.is_some()),
        ("ordinal", fields.ordinal.is_some()),
    ];
    let wanted = uses(action_name);
    for (key, present) in given {
        let optional = key == "mode";
        if present && !wanted.contains(&key) {
            return Err(source.error(
                step.span(),
                format!(
                    "run step {number} ({action_name}): it does not use `{key}`; it takes {}",
                    list_or_nothing(wanted)
                ),
            ));
        }
        if !present && wanted.contains(&key) && !optional {
            return Err(source.error(
                step.span(),
                format!("run step {number} ({action_name}): expected `{key}`"),
            ));
        }
    }
    let expect = expectations(source, catalog, &fields.expect)?;
    let expected_error = expect.error.as_deref();
    let device = |value: &Spanned<SelectorValue>| -> Result<Selector, LoadError> {
        let selector = selector_of(value.get_ref());
        if expected_error != Some("unknown-selector") {
            check_spelling(&selector).map_err(|e| source.error(value.span(), e.to_string()))?;
        }
        Ok(selector)
    };
    let kernel = |value: &Spanned<String>| -> Result<String, LoadError> {
        let name = value.get_ref();
        if expected_error != Some("unknown-kernel") {
            if let Err(error) = catalog.get(name) {
                let help = match &error {
                    DispatchError::UnknownKernel { suggestion, .. } => {
                        suggestion.as_ref().map(|s| format!("did you mean {s}?"))
                    }
                    _ => None,
                };
                return Err(source.error_with_help(value.span(), error.to_string(), help));
            }
        }
        Ok(name.clone())
    };
    // The presence checks above make these `expect`s unreachable; keep them as typed errors anyway.
    let missing = |key: &str| {
        source.error(
            step.span(),
            format!("run step {number} ({action_name}): expected `{key}`"),
        )
    };
    let action = match action_name {
        "normalize" => Action::Normalize(device(
            fields.device.as_ref().ok_or_else(|| missing("device"))?,
        )?),
        "resolve" => Action::Resolve(device(
            fields.device.as_ref().ok_or_else(|| missing("device"))?,
        )?),
        "validate" | "warmup" | "move" => {
            let kernel = kernel(fields.kernel.as_ref().ok_or_else(|| missing("kernel"))?)?;
            let device = device(fields.device.as_ref().ok_or_else(|| missing("device"))?)?;
            match action_name {
                "validate" => Action::Validate { kernel, device },
                "warmup" => Action::Warmup { kernel, device },
                _ => Action::Move { kernel, device },
            }
        }
        "select" => {
            let method_field = fields.method.as_ref().ok_or_else(|| missing("method"))?;
            let method = method_field.get_ref().parse::<Method>().map_err(|name| {
                let names: Vec<&str> = Method::EVERY.iter().map(|m| m.as_str()).collect();
                source.error_with_help(
                    method_field.span(),
                    format!(
                        "select by method `{name}`: expected one of {}",
                        names.join(", ")
                    ),
                    did_you_mean(&name, names),
                )
            })?;
            Action::Select {
                method,
                bits: fields.bits.ok_or_else(|| missing("bits"))?,
                device: device(fields.device.as_ref().ok_or_else(|| missing("device"))?)?,
            }
        }
        "lock" => {
            let mode = match fields
                .mode
                .as_ref()
                .map(|m| (m.get_ref().as_str(), m.span()))
            {
                None | Some(("read", _)) => LockMode::Read,
                Some(("write", _)) => LockMode::Write,
                Some((other, span)) => {
                    return Err(source.error(
                        span,
                        format!("take a lock in mode `{other}`: expected `read` or `write`"),
                    ));
                }
            };
            Action::Lock {
                scope: device(fields.scope.as_ref().ok_or_else(|| missing("scope"))?)?,
                mode,
            }
        }
        "set_device" => Action::SetDevice(fields.ordinal.ok_or_else(|| missing("ordinal"))?),
        _ => Action::Discover,
    };
    Ok(Step {
        number,
        line: source.line_of(&step.span()),
        description: fields.description.clone(),
        action,
        expect,
    })
}

fn list_or_nothing(keys: &[&str]) -> String {
    if keys.is_empty() {
        "no other key".into()
    } else {
        keys.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn place_word(source: &Source, value: &Spanned<IntOrWord>, key: &str) -> Result<String, LoadError> {
    match value.get_ref() {
        IntOrWord::Int(n) if *n >= 0 => Ok(n.to_string()),
        IntOrWord::Word(word) if word == "cpu" => Ok(word.clone()),
        _ => Err(source.error(
            value.span(),
            format!("expect `{key}`: expected a device ordinal (0, 1 ...) or \"cpu\""),
        )),
    }
}

fn expectations(
    source: &Source,
    catalog: &Catalog,
    fields: &StepExpectFields,
) -> Result<Expectations, LoadError> {
    if let Some(error) = &fields.error {
        if !DispatchError::KINDS.contains(&error.get_ref().as_str()) {
            return Err(source.error_with_help(
                error.span(),
                format!(
                    "expect error kind `{}`: expected one of {}",
                    error.get_ref(),
                    DispatchError::KINDS.join(", ")
                ),
                did_you_mean(error.get_ref(), DispatchError::KINDS),
            ));
        }
        if fields.ok == Some(true) {
            return Err(source.error(
                error.span(),
                "expect an error with `ok = true`: set `ok = false` or drop `error`",
            ));
        }
    }
    if let Some(family) = &fields.family {
        let names: Vec<&str> = Family::EVERY.iter().map(|f| f.as_str()).collect();
        if !names.contains(&family.get_ref().as_str()) {
            return Err(source.error_with_help(
                family.span(),
                format!(
                    "expect family `{}`: expected one of {}",
                    family.get_ref(),
                    names.join(", ")
                ),
                did_you_mean(family.get_ref(), names),
            ));
        }
    }
    let ordinal = match &fields.ordinal {
        None => None,
        Some(value) => Some(match value.get_ref() {
            IntOrWord::Int(n) => ExpectedOrdinal::Some(u32::try_from(*n).map_err(|_| {
                source.error(
                    value.span(),
                    "expect `ordinal`: expected a non-negative ordinal or \"none\"",
                )
            })?),
            IntOrWord::Word(word) if word == "none" => ExpectedOrdinal::None,
            IntOrWord::Word(_) => {
                return Err(source.error(
                    value.span(),
                    "expect `ordinal`: expected a non-negative ordinal or \"none\"",
                ));
            }
        }),
    };
    if let Some(device) = &fields.torch_device {
        device
            .get_ref()
            .parse::<crate::vocab::TorchDevice>()
            .map_err(|_| {
                source.error(
                    device.span(),
                    format!(
                        "expect torch device `{}`: expected torch's spelling (cpu, cuda, cuda:1, xpu:0, mps)",
                        device.get_ref()
                    ),
                )
            })?;
    }
    if let Some(selected) = &fields.selected {
        if catalog.get(selected.get_ref()).is_err() {
            return Err(source.error_with_help(
                selected.span(),
                format!(
                    "expect selected kernel `{}`: it is not in the catalog",
                    selected.get_ref()
                ),
                did_you_mean(selected.get_ref(), catalog.names()),
            ));
        }
    }
    if let Some(vendor) = &fields.vendor {
        const VENDORS: [&str; 5] = ["nvidia", "amd", "intel", "apple", "none"];
        if !VENDORS.contains(&vendor.get_ref().as_str()) {
            return Err(source.error_with_help(
                vendor.span(),
                format!(
                    "expect vendor `{}`: expected one of {}",
                    vendor.get_ref(),
                    VENDORS.join(", ")
                ),
                did_you_mean(vendor.get_ref(), VENDORS),
            ));
        }
    }
    Ok(Expectations {
        ok: fields.ok.unwrap_or(fields.error.is_none()),
        error: fields.error.as_ref().map(|e| e.get_ref().clone()),
        message: fields.message.clone(),
        family: fields.family.as_ref().map(|f| f.get_ref().clone()),
        ordinal,
        torch_device: fields.torch_device.as_ref().map(|d| d.get_ref().clone()),
        ran_on: fields
            .ran_on
            .as_ref()
            .map(|v| place_word(source, v, "ran_on"))
            .transpose()?,
        lands_on: fields
            .lands_on
            .as_ref()
            .map(|v| place_word(source, v, "lands_on"))
            .transpose()?,
        current_after: fields.current_after,
        selected: fields.selected.as_ref().map(|s| s.get_ref().clone()),
        covers: fields.covers.clone(),
        vendor: fields.vendor.as_ref().map(|v| v.get_ref().clone()),
        archs: fields.archs.clone(),
        torch_device_count: fields.torch_device_count,
        runtime_devices: fields.runtime_devices.clone(),
        trace: match &fields.trace {
            Some(rules) => trace_rules(source, rules)?,
            None => TraceRules::default(),
        },
    })
}
