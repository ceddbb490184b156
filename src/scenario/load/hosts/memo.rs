//! The profiles one corpus load has already loaded: a corpus names a handful of profiles, each from hundreds
//! of scenarios (matrix cases included), and looking one up resolves its folder and file and reads it again.
//!
//! Kept only for the length of one load ([`ProfileSources::for_one_load`]): a later load looks every
//! profile up and reads it again, and sees any change made to the files in between.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::host::HostSpec;
use crate::scenario::error::{LoadError, ProfileError};
use crate::scenario::load::hosts::ProfileSources;

/// Each profile loaded so far, by name.
pub(super) type Memo = Arc<Mutex<HashMap<String, HostSpec>>>;

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

    fn kept(&self) -> Option<MutexGuard<'_, HashMap<String, HostSpec>>> {
        // A panic while holding the lock cannot leave a half-inserted map, so the data is still good.
        let loaded = self.loaded.as_ref()?;
        Some(loaded.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The profile called `name`, if this load has already loaded it.
    fn remembered(&self, name: &str) -> Option<HostSpec> {
        self.kept()?.get(name).cloned()
    }

    /// Keeps a profile this load has loaded.
    fn remember(&self, name: &str, host: &HostSpec) {
        if let Some(mut kept) = self.kept() {
            kept.insert(name.to_string(), host.clone());
        }
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
}
