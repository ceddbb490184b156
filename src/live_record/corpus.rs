//! What corpus a live record was taken on: each scenario file's content hash, by the file's name in the
//! corpus, and one fingerprint of them all (64-bit FNV-1a, fixed by its definition; `findings.py` computes
//! the same).

use std::collections::BTreeMap;

use crate::scenario::Scenario;

/// Each scenario file of a corpus → the hash of its content (16 hex digits).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorpusFiles(pub BTreeMap<String, String>);

impl CorpusFiles {
    /// The files `scenarios` came from, each read again and hashed (a matrix's cases share their file); a file
    /// that cannot be read again is hashed as `unreadable`, so it differs from any content.
    pub fn of(scenarios: &[Scenario]) -> Self {
        let mut files = BTreeMap::new();
        for scenario in scenarios {
            files
                .entry(scenario.file_name().to_string())
                .or_insert_with(|| {
                    crate::scenario::load::corpus::read_in_folder(&scenario.path)
                        .map_or_else(|_| "unreadable".to_string(), |text| digest(text.as_bytes()))
                });
        }
        Self(files)
    }

    /// One hash of every file's name and hash, in name order.
    pub fn fingerprint(&self) -> String {
        let mut listing = Vec::new();
        for (name, hash) in &self.0 {
            listing.extend_from_slice(name.as_bytes());
            listing.push(0);
            listing.extend_from_slice(hash.as_bytes());
            listing.push(b'\n');
        }
        digest(&listing)
    }
}

/// The 64-bit FNV-1a hash of `bytes`, as 16 hex digits.
pub fn digest(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}
