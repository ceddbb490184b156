//! The default level of each expectation key (the table in `docs/conformance.md`).

use crate::conformance::Conformance;
use crate::vocab::TorchBuild;

/// What a default depends on: the step's action, the host's build and the selector's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepContext {
    /// The action's name; `None` for scenario-level rules.
    pub action: Option<&'static str>,
    /// The host's torch build.
    pub build: TorchBuild,
    /// Whether the step's selector names an ordinal (`cuda:1`, `1`, `torch.device("cuda", 1)`).
    pub explicit_ordinal: bool,
    /// What the step's `ok` expects, if anything.
    pub expects_ok: Option<bool>,
    /// Whether the selector is spelled as the policy speaks about it ([`crate::conformance::policy_spelling`]);
    /// expectations about what another spelling means are reference details.
    pub policy_spelling: bool,
}

/// A key's default level, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefaultLevel {
    /// This level.
    Level(Conformance),
    /// The author must say: the reason.
    Ambiguous(&'static str),
}

/// Why an `extension_load` rule has no default.
const EXTENSION_LOAD: &str = "the seed requires refusal before an extension loads only of some kernels (native EXL3 on HIP); say `policy:extensions-after-gates` where the policy requires it and `reference` where devsim's model does";

/// The default level of the expectation `key` in `context`.
pub fn default_for(key: &str, context: &StepContext) -> DefaultLevel {
    use DefaultLevel::Level as L;
    let policy = |rule: &str| L(Conformance::policy(rule));
    let kernel_action = matches!(
        context.action,
        Some("validate" | "warmup" | "move" | "select")
    );
    let ordinal_rule = if context.explicit_ordinal {
        "explicit-ordinal-kept"
    } else {
        "resolve-late"
    };
    if let Some(rest) = key.strip_prefix("trace.") {
        let (rule, event) = rest.split_once('.').unwrap_or((rest, ""));
        return match (rule, event) {
            (_, "extension_load") => DefaultLevel::Ambiguous(EXTENSION_LOAD),
            ("never", "nvidia_capability") if context.build != TorchBuild::Cuda => {
                policy("no-cross-vendor-probe")
            }
            ("never", "amd_arch") if context.build == TorchBuild::Cuda => {
                policy("no-cross-vendor-probe")
            }
            _ => L(Conformance::reference()),
        };
    }
    if !context.policy_spelling && context.action.is_some() {
        return L(Conformance::reference());
    }
    match key {
        "ok" => match context.action {
            _ if kernel_action => L(Conformance::contract()),
            Some("normalize" | "resolve") if context.expects_ok == Some(true) => {
                policy("normalize-aliases")
            }
            Some("lock") if context.expects_ok == Some(true) => policy("family-wide-locks"),
            _ => L(Conformance::reference()),
        },
        "error" if kernel_action => L(Conformance::contract()),
        "family" => policy("normalize-aliases"),
        "ordinal" | "torch_device" => policy(ordinal_rule),
        "lands_on" if context.explicit_ordinal => policy("explicit-ordinal-kept"),
        "lands_on" => policy("family-move-current"),
        "ran_on" | "current_after" => policy("target-context"),
        "selected" => L(Conformance::contract()),
        "covers" => policy("family-wide-locks"),
        "vendor" | "archs" => policy("vendor-from-build"),
        "torch_device_count" | "runtime_devices" => policy("visible-devices"),
        _ => L(Conformance::reference()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::{Level, rule};

    fn on(action: &'static str, build: TorchBuild) -> StepContext {
        StepContext {
            action: Some(action),
            build,
            explicit_ordinal: false,
            expects_ok: Some(true),
            policy_spelling: true,
        }
    }

    fn level(key: &str, context: &StepContext) -> Conformance {
        match default_for(key, context) {
            DefaultLevel::Level(c) => c,
            DefaultLevel::Ambiguous(why) => panic!("{key} is ambiguous: {why}"),
        }
    }

    #[test]
    fn a_cross_vendor_probe_is_policy_only_across_vendors() {
        let hip = on("validate", TorchBuild::Hip);
        let cuda = on("validate", TorchBuild::Cuda);
        let probe = "trace.never.nvidia_capability";
        assert_eq!(
            level(probe, &hip),
            Conformance::policy("no-cross-vendor-probe")
        );
        assert_eq!(level(probe, &cuda).level, Level::Reference);
        let arch = "trace.never.amd_arch";
        assert_eq!(
            level(arch, &cuda),
            Conformance::policy("no-cross-vendor-probe")
        );
        assert_eq!(level(arch, &hip).level, Level::Reference);
        assert_eq!(level("trace.count.amd_arch", &hip).level, Level::Reference);
    }

    #[test]
    fn kernel_verdicts_are_contract_and_wording_is_reference() {
        let hip = on("validate", TorchBuild::Hip);
        assert_eq!(level("ok", &hip).level, Level::Contract);
        assert_eq!(level("error", &hip).level, Level::Contract);
        assert_eq!(
            level("selected", &on("select", TorchBuild::Hip)).level,
            Level::Contract
        );
        assert_eq!(level("message", &hip).level, Level::Reference);
        let refused = StepContext {
            expects_ok: Some(false),
            ..on("normalize", TorchBuild::Hip)
        };
        assert_eq!(level("ok", &refused).level, Level::Reference);
        assert_eq!(
            level("ok", &on("normalize", TorchBuild::Hip)),
            Conformance::policy("normalize-aliases")
        );
    }

    #[test]
    fn ordinals_follow_the_selector_and_extension_loads_need_a_word() {
        let family = on("move", TorchBuild::Hip);
        let explicit = StepContext {
            explicit_ordinal: true,
            ..family
        };
        assert_eq!(
            level("lands_on", &family),
            Conformance::policy("family-move-current")
        );
        assert_eq!(
            level("lands_on", &explicit),
            Conformance::policy("explicit-ordinal-kept")
        );
        assert_eq!(
            level("torch_device", &family),
            Conformance::policy("resolve-late")
        );
        assert!(matches!(
            default_for("trace.never.extension_load", &family),
            DefaultLevel::Ambiguous(_)
        ));
    }

    #[test]
    fn what_a_non_policy_spelling_means_is_a_reference_detail_but_probes_stay_policy() {
        let hip = StepContext {
            policy_spelling: false,
            ..on("resolve", TorchBuild::Hip)
        };
        assert_eq!(level("family", &hip).level, Level::Reference);
        assert_eq!(level("ok", &hip).level, Level::Reference);
        assert_eq!(
            level("trace.never.nvidia_capability", &hip),
            Conformance::policy("no-cross-vendor-probe")
        );
    }

    #[test]
    fn every_default_rule_is_in_the_table() {
        let keys = [
            "ok",
            "error",
            "message",
            "family",
            "ordinal",
            "torch_device",
            "ran_on",
            "lands_on",
            "current_after",
            "selected",
            "covers",
            "vendor",
            "archs",
            "torch_device_count",
            "runtime_devices",
            "retained_bytes",
            "trace.never.nvidia_capability",
            "trace.never.amd_arch",
        ];
        for action in [
            "normalize",
            "resolve",
            "validate",
            "warmup",
            "move",
            "select",
            "lock",
            "discover",
        ] {
            for build in [TorchBuild::Cuda, TorchBuild::Hip, TorchBuild::Cpu] {
                for explicit_ordinal in [false, true] {
                    let context = StepContext {
                        explicit_ordinal,
                        ..on(action, build)
                    };
                    for key in keys {
                        if let Some(id) = level(key, &context).rule {
                            assert!(
                                rule(&id).is_some(),
                                "{key}: rule {id} is not in inventory/rules.toml"
                            );
                        }
                    }
                }
            }
        }
    }
}
