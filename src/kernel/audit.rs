//! The kernel inventory: the ROCm audit as data (`inventory/kernels.toml`), one row per kernel with its
//! declared families, the audit's decision for AMD GPUs and why, and the hardware rule as audited.
//!
//! [`Inventory::check`] compares the rows with a catalog in both directions, naming the file to edit, so a
//! kernel added without a row (or a row whose contract drifted from the code) fails the test suite.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::kernel::{Catalog, KernelSpec, NvidiaRule};
use crate::vocab::Family;

/// Where the reference inventory lives in the repository.
pub const REFERENCE_INVENTORY: &str = "inventory/kernels.toml";

const REFERENCE_TEXT: &str = include_str!("../../inventory/kernels.toml");

/// What the audit decided about a kernel on AMD GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RocmDecision {
    /// Runs on every AMD GPU (declares ROCM or ALL, no AMD arch restriction).
    Admitted,
    /// Never runs on AMD GPUs.
    Refused,
    /// Runs on the listed AMD targets only.
    RestrictedByArch,
}

impl RocmDecision {
    /// The name used in the inventory file.
    pub fn as_str(self) -> &'static str {
        match self {
            RocmDecision::Admitted => "admitted",
            RocmDecision::Refused => "refused",
            RocmDecision::RestrictedByArch => "restricted-by-arch",
        }
    }
}

/// A kernel's hardware rule as audited.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditedArch {
    /// The NVIDIA compute-capability rule: `>= 7.5`, `>= 8.0, < 9.0`, `in 9.0` or `in 10.0, 10.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    /// The minimum opt-in shared memory per block on NVIDIA, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_smem: Option<u32>,
    /// The AMD targets accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rocm: Option<Vec<String>>,
}

impl AuditedArch {
    /// The rule a contract declares, in the inventory's words.
    pub fn of(spec: &KernelSpec) -> Self {
        let cuda = spec.nvidia.as_ref().map(|rule| match rule {
            NvidiaRule::AtLeast { min } => format!(">= {min}"),
            NvidiaRule::Range { min, below } => format!(">= {min}, < {below}"),
            NvidiaRule::OneOf { set } => {
                let set: Vec<String> = set.iter().map(ToString::to_string).collect();
                format!("in {}", set.join(", "))
            }
        });
        Self {
            cuda,
            cuda_smem: spec.smem_optin_min,
            rocm: spec
                .amd_targets
                .as_ref()
                .map(|targets| targets.iter().map(ToString::to_string).collect()),
        }
    }
}

/// One kernel's audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InventoryRow {
    /// The catalog name.
    pub name: String,
    /// The families it declares.
    pub families: Vec<Family>,
    /// The decision for AMD GPUs.
    pub rocm: RocmDecision,
    /// Why.
    pub reason: String,
    /// The hardware rule.
    #[serde(default)]
    pub arch: AuditedArch,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InventoryFile {
    kernel: Vec<InventoryRow>,
}

/// An inventory file that cannot be read.
#[derive(Debug, Error)]
pub enum InventoryError {
    /// The file cannot be read.
    #[error("read inventory {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid inventory.
    #[error("parse inventory {}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why, located.
        source: toml::de::Error,
    },
}

/// Every audit record, in file order, and the file they came from.
#[derive(Debug, Clone)]
pub struct Inventory {
    /// The file, for messages that say what to edit.
    pub path: PathBuf,
    /// The rows.
    pub rows: Vec<InventoryRow>,
}

static REFERENCE: LazyLock<Inventory> = LazyLock::new(|| {
    match Inventory::parse(Path::new(REFERENCE_INVENTORY), REFERENCE_TEXT) {
        Ok(inventory) => inventory,
        // The embedded file is checked by the test suite; a failure here is a bug in devsim itself.
        Err(error) => unreachable!("the embedded inventory is invalid: {error}"),
    }
});

impl Inventory {
    /// The reference catalog's inventory (embedded in the crate).
    pub fn reference() -> &'static Inventory {
        &REFERENCE
    }

    /// Parses inventory text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, InventoryError> {
        let file: InventoryFile = toml::from_str(text).map_err(|source| InventoryError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            rows: file.kernel,
        })
    }

    /// Reads and parses an inventory file.
    pub fn read(path: &Path) -> Result<Self, InventoryError> {
        let text = std::fs::read_to_string(path).map_err(|source| InventoryError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// The row for `name`.
    pub fn row(&self, name: &str) -> Option<&InventoryRow> {
        self.rows.iter().find(|row| row.name == name)
    }

    /// Every disagreement between the rows and `catalog`, each naming the kernel and the file to edit.
    pub fn check(&self, catalog: &Catalog) -> Vec<String> {
        let file = self.path.display();
        let mut problems = Vec::new();
        for kernel in catalog.iter() {
            let spec = kernel.spec();
            let Some(row) = self.row(&spec.name) else {
                problems.push(format!(
                    "{}: no row in {file}; add a [[kernel]] row with its families, its ROCm decision and why",
                    spec.name
                ));
                continue;
            };
            if row.families != *spec.families {
                problems.push(format!(
                    "{}: {file} records families {:?}, the contract declares {:?}",
                    spec.name, row.families, spec.families
                ));
            }
            let arch = AuditedArch::of(spec);
            if row.arch != arch {
                problems.push(format!(
                    "{}: {file} records arch {:?}, the contract declares {:?}",
                    spec.name, row.arch, arch
                ));
            }
            if let Some(why) = contradiction(spec, row.rocm) {
                problems.push(format!("{}: {why} ({file})", spec.name));
            }
        }
        for row in &self.rows {
            if catalog.get(&row.name).is_err() {
                problems.push(format!(
                    "{}: {file} has a row for a kernel the catalog does not register",
                    row.name
                ));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for row in &self.rows {
            if !seen.insert(row.name.as_str()) {
                problems.push(format!("{}: {file} has two rows for it", row.name));
            }
        }
        problems
    }
}

/// Why a decision disagrees with a contract, if it does.
pub fn contradiction(spec: &KernelSpec, decision: RocmDecision) -> Option<String> {
    let admits = spec.declares(Family::Rocm);
    let restricted = spec.amd_targets.is_some();
    match decision {
        RocmDecision::Admitted if !admits => {
            Some("audited as admitted but does not declare rocm or all".into())
        }
        RocmDecision::Admitted if restricted => {
            Some("audited as admitted but restricts AMD archs".into())
        }
        RocmDecision::Refused if admits => {
            Some("audited as refused but declares rocm or all".into())
        }
        RocmDecision::RestrictedByArch if !(admits && restricted) => {
            Some("audited as arch-restricted but declares no AMD target list".into())
        }
        _ => None,
    }
}
