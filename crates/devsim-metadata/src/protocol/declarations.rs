//! What a kernel declaration may carry beyond its families: the arch rules and tolerances the project under
//! test states for it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A kernel's arch rules as the project under test declares them. Each rule binds only GPUs of its vendor:
/// the capability bounds NVIDIA GPUs, `gfx` AMD ones; a GPU no rule speaks about is not judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchDeclaration {
    /// NVIDIA: the least compute capability it admits, as major·10 + minor (`80`: sm_80, `100`: sm_100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_capability: Option<u32>,
    /// NVIDIA: the greatest compute capability it admits, where the project caps it (same spelling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_capability: Option<u32>,
    /// AMD: the gfx targets it admits, each a base target (`gfx942`) or a prefix naming a family of them
    /// (`gfx11`, `gfx12`: RDNA3, RDNA4), without target features. Empty: no AMD rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gfx: Vec<String>,
    /// The least opt-in shared memory per block it needs, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_smem_optin: Option<u32>,
    /// Where the project declares the rules: `module:Class.get_min_capability`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A tolerance the project under test states for one kernel and dtype: a forward passes where every element
/// is within `atol + rtol * |reference|` of the reference's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToleranceDeclaration {
    /// The forward's dtype: `float16`, `bfloat16` or `float32`.
    pub dtype: String,
    /// The relative tolerance.
    pub rtol: f64,
    /// The absolute tolerance.
    pub atol: f64,
    /// What the output is compared with: a declared kernel's devsim name (the project's own reference
    /// kernel, run on the same weights and input), or `fp64_oracle`.
    pub reference: String,
    /// Where the project states it, read from the project's own files: `path::Test (revision)`. Required:
    /// a tolerance without a source is refused at the handshake.
    pub source: String,
}
