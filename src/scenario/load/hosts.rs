//! Host profiles: where they come from ([`ProfileSources`]), loading one, and merging a scenario's inline
//! `[host]` fields over its profile.
//!
//! Profiles are looked up by name in an explicit, ordered list of folders, then among the profiles shipped
//! with devsim (`scenarios/hosts/*.toml`, embedded in the crate). A name defined in two configured folders
//! is an error naming both files; a configured folder shadows a built-in profile of the same name. No other
//! folder is ever consulted (not an ancestor's `hosts/`).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

use crate::host::HostError;
use crate::host::{Fault, Gpu, HostSpec};
use crate::scenario::error::{LoadError, ProfileError};
use crate::scenario::format::HostFields;
use crate::scenario::load::corpus::read_in_folder;
use crate::scenario::load::hints;
use crate::scenario::load::source::{Source, did_you_mean, shown};
use crate::trace::Call;
use crate::vocab::{Arch, TorchBuild};

mod memo;
mod names;

use names::{listed, valid_name};

/// The folder under a scenario root that holds host profiles.
pub const HOSTS_DIR: &str = "hosts";

/// The profiles shipped with devsim, by name: `scenarios/hosts/*.toml`, embedded at build time.
pub const SHIPPED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/shipped_hosts.rs"));

/// How built-in profiles are named in messages.
const SHIPPED_PREFIX: &str = "<devsim built-in>/hosts";

/// Where host profiles come from, in lookup order: configured folders, then the built-in profiles.
#[derive(Debug, Clone, Default)]
pub struct ProfileSources {
    folders: Vec<PathBuf>,
    /// The profiles loaded so far by one corpus load ([`ProfileSources::for_one_load`]); `None` otherwise.
    loaded: Option<memo::Memo>,
}

/// One profile's text and where it came from.
struct ProfileText {
    path: PathBuf,
    /// The built-in text; `None` for a file in a folder.
    text: Option<&'static str>,
}

impl ProfileText {
    fn load(&self) -> Result<HostSpec, LoadError> {
        match self.text {
            Some(text) => parse_profile(&self.path, text),
            None => load_profile(&self.path),
        }
    }
}

impl ProfileSources {
    /// The built-in profiles only.
    pub fn shipped() -> Self {
        Self::default()
    }

    /// These folders, in order, then the built-in profiles; every folder must exist, and a folder that is
    /// a link must resolve inside the folder it was given under.
    pub fn folders(folders: Vec<PathBuf>) -> Result<Self, ProfileError> {
        for folder in &folders {
            if !folder.is_dir() {
                return Err(ProfileError::MissingFolder {
                    path: folder.clone(),
                });
            }
            contained(folder)?;
        }
        Ok(Self {
            folders,
            loaded: None,
        })
    }

    /// The default for scenario folders: `<folder>/hosts` for each folder argument that has one, then the
    /// built-in profiles. File arguments add no folder. A `hosts` link out of its folder is kept here and
    /// refused when it is consulted ([`Self::names`], [`Self::load`]), never read.
    pub fn for_paths(paths: &[PathBuf]) -> Self {
        let mut folders: Vec<PathBuf> = Vec::new();
        for path in paths.iter().filter(|p| p.is_dir()) {
            let hosts = path.join(HOSTS_DIR);
            if hosts.is_dir() && !folders.contains(&hosts) {
                folders.push(hosts);
            }
        }
        Self {
            folders,
            loaded: None,
        }
    }

    /// The configured folders, in lookup order.
    pub fn configured(&self) -> &[PathBuf] {
        &self.folders
    }

    /// The profile files of one folder, by name.
    fn folder_files(folder: &Path) -> Result<Vec<(String, PathBuf)>, ProfileError> {
        let io = |source| ProfileError::Io {
            path: folder.to_path_buf(),
            source,
        };
        contained(folder)?;
        let mut files = Vec::new();
        for entry in std::fs::read_dir(folder).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.extension().is_some_and(|ext| ext == "toml") {
                // Only a stem a scenario can name is a profile: `my host.toml` is never offered as a
                // choice that `profile = "my host"` would then refuse.
                if let Some(stem) = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .filter(|s| valid_name(s))
                {
                    files.push((stem.to_string(), path));
                }
            }
        }
        files.sort();
        Ok(files)
    }

    /// Every profile name available, sorted, without duplicates, listed again (see [`Self::names`]).
    fn list_names(&self) -> Result<Vec<String>, ProfileError> {
        let mut names: Vec<String> = SHIPPED.iter().map(|(n, _)| n.to_string()).collect();
        for folder in &self.folders {
            names.extend(Self::folder_files(folder)?.into_iter().map(|(n, _)| n));
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Where a name resolves: the one configured folder defining it, else the built-in profile.
    fn locate(&self, name: &str) -> Result<ProfileText, ProfileError> {
        let mut found: Option<PathBuf> = None;
        for folder in &self.folders {
            contained(folder)?;
            let path = folder.join(format!("{name}.toml"));
            if !valid_name(name) || !path.exists() {
                continue;
            }
            if let Some(first) = found {
                return Err(ProfileError::Ambiguous {
                    name: name.to_string(),
                    first,
                    second: path,
                });
            }
            found = Some(path);
        }
        if let Some(path) = found {
            return Ok(ProfileText { text: None, path });
        }
        match SHIPPED.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => Ok(ProfileText {
                path: PathBuf::from(format!("{SHIPPED_PREFIX}/{n}.toml")),
                text: Some(text),
            }),
            None => {
                let mut searched: Vec<String> = self
                    .folders
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect();
                searched.push("the built-in profiles".into());
                Err(ProfileError::NotFound {
                    name: shown(name),
                    searched: searched.join(", "),
                    available: listed(&self.shared_names()?),
                })
            }
        }
    }

    /// Loads the profile called `name`.
    pub fn load(&self, name: &str) -> Result<HostSpec, LoadError> {
        let at = |error: ProfileError| LoadError::new(PathBuf::from(name), 1, 1, error.to_string());
        self.load_with(name, at)
    }

    /// Every available profile, loaded; profiles that fail come back as errors.
    pub fn load_all(&self) -> Result<(Vec<HostSpec>, Vec<LoadError>), ProfileError> {
        let mut hosts = Vec::new();
        let mut errors = Vec::new();
        for name in self.names()? {
            match self.load(&name) {
                Ok(host) => hosts.push(host),
                Err(error) => errors.push(error),
            }
        }
        Ok((hosts, errors))
    }
}

/// Refuses a profile folder that is a link resolving outside the folder it was given under (`--hosts L`,
/// `<root>/hosts`), before anything in it is listed or read.
fn contained(folder: &Path) -> Result<(), ProfileError> {
    match crate::contain::escapes_its_folder(folder) {
        Ok(None) => Ok(()),
        Ok(Some(outside)) => Err(ProfileError::Escapes {
            path: folder.to_path_buf(),
            folder: outside,
        }),
        Err(source) => Err(ProfileError::Io {
            path: folder.to_path_buf(),
            source,
        }),
    }
}

/// The host profiles in `root/hosts`, by name.
pub fn profile_names(root: &Path) -> Vec<String> {
    ProfileSources::folder_files(&root.join(HOSTS_DIR))
        .map(|files| files.into_iter().map(|(name, _)| name).collect())
        .unwrap_or_default()
}

/// Loads a host profile file into a checked host.
pub fn load_profile(path: &Path) -> Result<HostSpec, LoadError> {
    // A profile is given under its folder (`hosts/`, a `--hosts` folder): a link that leaves it is refused
    // before it is read, so nothing of the file it names can be printed.
    let text = read_in_folder(path)?;
    parse_profile(path, &text)
}

/// Profiles [`parse_profile`] keeps once checked, at most: a corpus names a handful of profiles, each
/// hundreds of times.
const PARSED_PROFILES: usize = 64;

/// Checks a host profile's text; `path` names it in errors and its stem names the host.
///
/// The result is a function of `path` and `text` alone, so a profile checked once is kept (by path and
/// whole text, up to [`PARSED_PROFILES`] of them) and handed out again instead of parsed again. Only the
/// parse is kept: reading the file, and every containment check before it, happens on each load.
pub fn parse_profile(path: &Path, text: &str) -> Result<HostSpec, LoadError> {
    type Parsed = Vec<(PathBuf, String, HostSpec)>;
    static PARSED: std::sync::Mutex<Parsed> = std::sync::Mutex::new(Vec::new());
    let parsed = || PARSED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, host)) = parsed()
        .iter()
        .find(|(p, t, _)| p.as_path() == path && t.as_str() == text)
    {
        return Ok(host.clone());
    }
    let host = check_profile(path, text)?;
    let mut kept = parsed();
    if kept.len() < PARSED_PROFILES {
        kept.push((path.to_path_buf(), text.to_string(), host.clone()));
    }
    Ok(host)
}

/// [`parse_profile`] without the kept results.
fn check_profile(path: &Path, text: &str) -> Result<HostSpec, LoadError> {
    let source = Source::new(path, text);
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
        runtime_version: parts.runtime_version,
        arch_list: parts.arch_list,
        faults: parts.faults.unwrap_or_default(),
    };
    host.validate()
        .map_err(|error| host_error(&source, &fields, 0..0, error))?;
    Ok(host)
}

/// The host fields a file gave, parsed but not yet merged or validated.
#[derive(Default)]
struct HostParts {
    torch: Option<TorchBuild>,
    gpus: Option<Vec<Gpu>>,
    foreign_gpus: Option<Vec<Gpu>>,
    current: Option<u32>,
    env: Option<BTreeMap<String, String>>,
    runtime_version: Option<String>,
    arch_list: Option<Vec<String>>,
    faults: Option<Vec<Fault>>,
}

/// A scenario's host: its profile (if any) with the inline fields laid over it, validated.
pub(crate) fn merged_host(
    source: &Source,
    inline: &Spanned<HostFields>,
    profiles: &ProfileSources,
) -> Result<HostSpec, LoadError> {
    let fields = inline.get_ref();
    let parts = host_parts(source, fields, inline.span())?;
    let (base, name) = match &fields.profile {
        None => (None, "inline".to_string()),
        Some(profile) => {
            let name = profile.get_ref();
            let host = profiles.load_with(name, |error| {
                let help = match &error {
                    ProfileError::NotFound { .. } => profiles.suggestion(name),
                    _ => None,
                };
                source.error_with_help(profile.span(), error.to_string(), help)
            })?;
            (Some(host), name.clone())
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
        runtime_version: parts.runtime_version.or(base.runtime_version),
        arch_list: parts.arch_list.or(base.arch_list),
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
        HostError::RuntimeVersion { .. } => fields.runtime_version.as_ref().map(|v| v.span()),
        HostError::ArchList { .. } => fields.arch_list.as_ref().map(|v| v.span()),
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
            arch.get_ref().parse::<Arch>().map_err(|error| {
                source.error_with_help(arch.span(), error.to_string(), hints::arch(arch.get_ref()))
            })
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
                    built.memory_mib = gpu.memory_mib;
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
                                call: shown(call.get_ref()),
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
        runtime_version: fields.runtime_version.as_ref().map(|v| v.get_ref().clone()),
        arch_list: fields.arch_list.as_ref().map(|v| v.get_ref().clone()),
        faults,
    })
}
