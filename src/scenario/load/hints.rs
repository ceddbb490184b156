//! Hints for the mistakes a new user makes: a vendor written where devsim wants a family or a build, an
//! ordinal without its colon, a mistyped arch, a misspelled top-level key.

use crate::kernel::catalog::closest;

/// A family written as a vendor or a runtime's name: `amd` is `rocm`.
pub(crate) fn family(word: &str) -> Option<String> {
    let lower = word.to_ascii_lowercase();
    let (family, why) = match lower.as_str() {
        "amd" | "hip" | "radeon" | "instinct" => ("rocm", "AMD GPUs are family `rocm`"),
        "nvidia" | "nv" => ("cuda", "NVIDIA GPUs are family `cuda`"),
        "intel" => ("xpu", "Intel GPUs are family `xpu`"),
        "apple" | "metal" => ("mps", "Apple GPUs are family `mps`"),
        known @ ("cpu" | "cuda" | "rocm" | "xpu" | "mps" | "all") if word != known => {
            (known, "families are written in lowercase")
        }
        _ => return None,
    };
    Some(format!("{why}: write `{family}`"))
}

/// A torch build written as a family or vendor: a ROCm build of torch is `hip`.
pub(crate) fn build(word: &str) -> Option<String> {
    match word.to_ascii_lowercase().as_str() {
        "rocm" | "amd" => Some("a ROCm (AMD) build of torch is `hip`".into()),
        "nvidia" => Some("an NVIDIA build of torch is `cuda`".into()),
        "none" | "cpu-only" => Some("a CPU-only build of torch is `cpu`".into()),
        _ => None,
    }
}

/// A selector with its ordinal glued on: `cuda1` is `cuda:1`.
pub(crate) fn selector(text: &str) -> Option<String> {
    let digits = text.find(|c: char| c.is_ascii_digit())?;
    let (kind, index) = text.split_at(digits);
    let known = ["cuda", "rocm", "hip", "xpu", "cpu", "mps"];
    (known.contains(&kind.to_ascii_lowercase().as_str())
        && index.bytes().all(|b| b.is_ascii_digit()))
    .then(|| format!("did you mean `{kind}:{index}`?"))
}

/// The closest known arch: `gfx1210` is probably `gfx1201`.
pub(crate) fn arch(text: &str) -> Option<String> {
    let sm: Vec<String> = crate::vocab::KNOWN_SM
        .iter()
        .map(|d| format!("sm_{d}"))
        .collect();
    let candidates = crate::vocab::KNOWN_GFX
        .iter()
        .copied()
        .chain(sm.iter().map(String::as_str));
    closest(text, candidates).map(|close| format!("did you mean `{close}`?"))
}

/// serde's `missing field `format``: the one key every scenario starts with.
pub(crate) fn missing_field(message: &str) -> Option<String> {
    (message == "missing field `format`").then(|| {
        format!(
            "start the file with `format = {}`, the scenario format this devsim reads",
            crate::scenario::format::FORMAT_VERSION
        )
    })
}

/// serde's `unknown variant `rocm`, expected one of ...` for a torch build.
pub(crate) fn unknown_variant(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown variant `")?;
    let (word, expected) = rest.split_once('`')?;
    if expected.contains("`hip`") {
        return build(word);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendors_point_at_families_and_builds() {
        assert!(family("amd").is_some_and(|h| h.contains("`rocm`")));
        assert!(family("NVIDIA").is_some_and(|h| h.contains("`cuda`")));
        assert_eq!(family("rocm"), None);
        assert_eq!(
            family("ROCm").as_deref(),
            Some("families are written in lowercase: write `rocm`")
        );
        assert!(build("rocm").is_some_and(|h| h.contains("`hip`")));
        assert_eq!(selector("cuda1").as_deref(), Some("did you mean `cuda:1`?"));
        assert_eq!(selector("gpu1"), None);
        assert_eq!(arch("gfx1210").as_deref(), Some("did you mean `gfx1201`?"));
    }
}
