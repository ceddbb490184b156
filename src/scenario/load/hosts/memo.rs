//! The profiles one corpus load has already loaded: a corpus names a handful of profiles, each from hundreds
//! of scenarios (matrix cases included), and looking one up resolves its folder and file and reads it again.
//!
//! The folders' profile names are listed once per load too, and the suggestion for a name no profile has is
//! worked out once: thousands of scenarios naming one unknown profile beside thousands of profiles would
//! otherwise list the folders and search every name again for each of them.
//!
//! Kept only for the length of one load ([`ProfileSources::for_one_load`]): a later load looks every
//! profile up and reads it again, and sees any change made to the files in between.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::host::HostSpec;
use crate::scenario::error::{LoadError, ProfileError};
use crate::scenario::load::hosts::ProfileSources;
use crate::scenario::load::source::did_you_mean;

/// What one load has found so far.
#[derive(Debug, Default)]
pub(super) struct Kept {
    /// Each profile loaded, by name.
    hosts: HashMap<String, HostSpec>,
    /// Every profile name available ([`ProfileSources::names`]), once listed.
    names: Option<Arc<Vec<String>>>,
    /// The suggestion for each name no profile has, once searched.
    suggestions: HashMap<String, Option<String>>,
}

/// What one load has found so far, shared by the threads of the load.
pub(super) type Memo = Arc<Mutex<Kept>>;

impl ProfileSources {
    /// These sources, keeping each profile once loaded until the copy returned is dropped: for one corpus
    /// load, so that its scenarios share the lookup and read of each profile they name.
    pub(crate) fn for_one_load(&self) -> Self {
        Self {
            loaded: Some(Memo::default()),
            ..self.clone()
        }
    }

    /// Loads the profile called `name` (once per corpus load, see [`ProfileSources::for_one_load`]), a
    /// lookup error turned into a load error by `at`.
    pub(super) fn load_with(
        &self,
        name: &str,
        at: impl FnOnce(ProfileError) -> LoadError,
    ) -> Result<HostSpec, LoadError> {
        if let Some(host) = self.remembered(name) {
            return Ok(host);
        }
        let host = self.locate(name).map_err(at)?.load()?;
        self.remember(name, &host);
        Ok(host)
    }

    fn kept(&self) -> Option<MutexGuard<'_, Kept>> {
        // A panic while holding the lock cannot leave a half-inserted map, so the data is still good.
        let loaded = self.loaded.as_ref()?;
        Some(loaded.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The profile called `name`, if this load has already loaded it.
    fn remembered(&self, name: &str) -> Option<HostSpec> {
        self.kept()?.hosts.get(name).cloned()
    }

    /// Keeps a profile this load has loaded.
    fn remember(&self, name: &str, host: &HostSpec) {
        if let Some(mut kept) = self.kept() {
            kept.hosts.insert(name.to_string(), host.clone());
        }
    }

    /// Every profile name available, sorted, without duplicates: listed once per load.
    pub fn names(&self) -> Result<Vec<String>, ProfileError> {
        self.shared_names().map(|names| names.to_vec())
    }

    /// [`Self::names`], shared rather than copied: thousands of names are not copied for each lookup.
    pub(super) fn shared_names(&self) -> Result<Arc<Vec<String>>, ProfileError> {
        if let Some(names) = self.kept().and_then(|kept| kept.names.clone()) {
            return Ok(names);
        }
        let names = Arc::new(self.list_names()?);
        if let Some(mut kept) = self.kept() {
            kept.names = Some(Arc::clone(&names));
        }
        Ok(names)
    }

    /// "did you mean …?" for a profile name no source has: searched once per load and name.
    pub(super) fn suggestion(&self, name: &str) -> Option<String> {
        if let Some(known) = self
            .kept()
            .and_then(|kept| kept.suggestions.get(name).cloned())
        {
            return known;
        }
        let names = self.shared_names().ok()?;
        let suggestion = did_you_mean(name, names.iter().map(String::as_str));
        if let Some(mut kept) = self.kept() {
            kept.suggestions
                .insert(name.to_string(), suggestion.clone());
        }
        suggestion
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_kept_for_one_load_only() {
        let scratch = tempfile::tempdir().expect("scratch");
        let write = |gpus: &str| {
            std::fs::write(
                scratch.path().join("box.toml"),
                format!("torch = \"cuda\"\ngpus = [{gpus}]\n"),
            )
            .expect("profile")
        };
        write("\"sm_90\"");
        let sources = ProfileSources::folders(vec![scratch.path().to_path_buf()]).expect("folder");
        let one_load = sources.for_one_load();
        assert_eq!(one_load.load("box").expect("loads").gpus.len(), 1);
        write("\"sm_90\", \"sm_80\"");
        assert_eq!(
            one_load.load("box").expect("kept").gpus.len(),
            1,
            "the same load keeps what it read"
        );
        assert_eq!(
            sources.load("box").expect("read again").gpus.len(),
            2,
            "outside that load the file is read again"
        );
        assert_eq!(
            sources
                .for_one_load()
                .load("box")
                .expect("loads")
                .gpus
                .len(),
            2
        );
        assert!(
            one_load.load("nope").is_err(),
            "an unknown name still fails"
        );
    }

    #[test]
    fn names_are_listed_once_per_load_and_suggestions_kept() {
        let scratch = tempfile::tempdir().expect("scratch");
        let profile = |name: &str| {
            std::fs::write(
                scratch.path().join(format!("{name}.toml")),
                "torch = \"cuda\"\n",
            )
            .expect("profile")
        };
        profile("box");
        let sources = ProfileSources::folders(vec![scratch.path().to_path_buf()]).expect("folder");
        let one_load = sources.for_one_load();
        assert!(
            one_load
                .names()
                .expect("lists")
                .contains(&"box".to_string())
        );
        assert_eq!(
            one_load.suggestion("boxe").as_deref(),
            Some("did you mean box?")
        );
        profile("crate");
        assert!(
            !one_load
                .names()
                .expect("kept")
                .contains(&"crate".to_string()),
            "the same load keeps the list it made"
        );
        assert!(
            sources
                .names()
                .expect("lists")
                .contains(&"crate".to_string())
        );
        assert_eq!(
            sources.for_one_load().suggestion("crat").as_deref(),
            Some("did you mean crate?")
        );
    }

    #[test]
    fn a_file_whose_stem_no_scenario_can_name_is_not_listed() {
        let scratch = tempfile::tempdir().expect("scratch");
        for name in ["box", "my host"] {
            std::fs::write(
                scratch.path().join(format!("{name}.toml")),
                "torch = \"cuda\"\n",
            )
            .expect("profile");
        }
        let sources = ProfileSources::folders(vec![scratch.path().to_path_buf()]).expect("folder");
        let names = sources.names().expect("lists");
        assert!(names.contains(&"box".to_string()));
        assert!(!names.contains(&"my host".to_string()), "{names:?}");
        assert!(sources.load("my host").is_err(), "and never loaded");
    }
}
