//! Live records: what a live run (`devsim run --live --write-live-record FILE`) showed on which device, so a
//! later simulated run (`devsim run --live-record FILE`) can tell each of its findings *confirmed on a real
//! GPU* from *simulated* (docs/live-record.md).
//!
//! A finding is confirmed when at least one of its scenarios failed live with the same signature (its
//! [`Signature`](crate::findings::Signature) as text, the key baselines use too); otherwise it is simulated.
//! A finding of a live run is confirmed on that run's device by the run's own record.
//!
//! A record says what it was taken on: devsim's version, the subject and its version, the device, and the
//! corpus (each scenario file's hash and one fingerprint of them all, [`CorpusFiles`]). It confirms only
//! findings of the same corpus and subject version: an older record is stale ([`LiveRecord::staleness`]:
//! which scenario files it lacks, which changed) and confirms nothing. A format 1 record, which recorded no
//! corpus, still loads, as stale.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use thiserror::Error;

mod corpus;

pub use corpus::{CorpusFiles, digest};

use crate::findings::Finding;
pub use crate::findings::Mark;
use crate::runner::{ScenarioReport, Status};

/// The record format this devsim writes; it reads this one and format 1 (without the corpus, devsim's
/// version and the file hashes: such a record loads as stale).
pub const FORMAT: u32 = 2;

/// The oldest record format this devsim reads.
pub const OLDEST_FORMAT: u32 = 1;

/// The variable that, when set, is the date a live record is written with (`YYYY-MM-DD`), instead of the
/// system clock's UTC date: for deterministic tests and reproducible records.
pub const DATE_VARIABLE: &str = "DEVSIM_LIVE_RECORD_DATE";

/// What one live run showed: the device, the date, the subject and each scenario that ran live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveRecord {
    /// The record format, [`FORMAT`].
    pub format: u32,
    /// The subject's name.
    pub subject: String,
    /// The subject's version.
    pub version: String,
    /// The GPU name(s) the driver showed, distinct, in ordinal order; empty on a machine without GPUs.
    pub devices: Vec<String>,
    /// The live run went through one of devsim's fake drivers: nothing in it is a real GPU.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fake_driver: bool,
    /// The UTC date of the run, `YYYY-MM-DD`.
    pub date: String,
    /// The devsim version that took it (absent in format 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devsim: Option<String>,
    /// The fingerprint of the corpus it ran ([`CorpusFiles::fingerprint`]; absent in format 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus: Option<String>,
    /// Each scenario file of that corpus → its content's hash ([`CorpusFiles`]; empty in format 1).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// How many scenarios ended each way live (absent in format 1, which kept only those that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<LiveCounts>,
    /// Each scenario that ran live (passed or failed) → its outcome.
    #[serde(default)]
    pub scenarios: BTreeMap<String, LiveOutcome>,
}

/// Why a record confirms nothing for a run: it was taken on another corpus or subject version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// Each reason, in words.
    pub reasons: Vec<String>,
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reasons.join("; "))
    }
}

/// How many scenarios of a live run ended each way: what a README's live figures are generated from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveCounts {
    /// Passed.
    pub passed: usize,
    /// Failed.
    pub failed: usize,
    /// Not applicable to the subject.
    pub not_applicable: usize,
    /// Skipped: they could not run on the machine.
    pub skipped: usize,
    /// Set aside: something applicable could not be observed or judged.
    pub set_aside: usize,
    /// Errored: devsim could not run or judge them.
    pub errored: usize,
}

impl LiveCounts {
    /// The counts of `reports`.
    pub fn of(reports: &[ScenarioReport]) -> Self {
        let mut counts = Self::default();
        for report in reports {
            let count = match report.status {
                Status::Passed => &mut counts.passed,
                Status::Failed => &mut counts.failed,
                Status::NotApplicable(_) => &mut counts.not_applicable,
                Status::Skipped(_) => &mut counts.skipped,
                Status::SetAside(_) => &mut counts.set_aside,
                Status::Errored(_) => &mut counts.errored,
            };
            *count += 1;
        }
        counts
    }
}

/// How one scenario ended live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveOutcome {
    /// `passed` or `failed`.
    pub outcome: LiveStatus,
    /// For a failed scenario, the signature of each finding it shows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

/// A live scenario's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveStatus {
    /// Every expectation held on the device.
    Passed,
    /// At least one expectation failed on the device.
    Failed,
}

/// The mark of each finding, in order: [`LiveRecord::mark`], or every one simulated without a record.
pub fn marks(findings: &[Finding], record: Option<&LiveRecord>) -> Vec<Mark> {
    findings
        .iter()
        .map(|finding| record.map_or(Mark::Simulated, |record| record.mark(finding)))
        .collect()
}

/// A live record that cannot be read, written or used.
#[derive(Debug, Error)]
pub enum LiveRecordError {
    /// Reading or writing failed.
    #[error("{action} live record {path}: {source}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file would be written through a link or could not be written
    /// ([`crate::contain::write_file`]).
    #[error(transparent)]
    Write(#[from] crate::contain::WriteError),
    /// The file cannot be read: not a regular file inside its folder, too large, not UTF-8.
    #[error("read live record {path}: {message}")]
    Refused {
        /// The file.
        path: PathBuf,
        /// Why, without any of its content.
        message: String,
    },
    /// The file is not a live record.
    #[error("parse live record {}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The 1-based line the error is on.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// The record is of a format this devsim does not read.
    #[error("read live record {}: format {found} is not one this devsim reads (it reads formats {OLDEST_FORMAT} to {FORMAT})", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// The format it says.
        found: u32,
    },
    /// The record is of another subject.
    #[error(
        "use live record {}: it records subject `{recorded}`, this run judges `{judged}`",
        path.display()
    )]
    OtherSubject {
        /// The file.
        path: PathBuf,
        /// The subject it records.
        recorded: String,
        /// The subject judged now.
        judged: String,
    },
    /// The date override is not a date.
    #[error("read {DATE_VARIABLE}: `{value}` is not a date (YYYY-MM-DD)")]
    Date {
        /// What the variable held.
        value: String,
    },
}

impl LiveRecord {
    /// The record of a live run of `subject` (`version`) on `devices`, dated `date`: every scenario that
    /// passed or failed (the others did not run live), each failed one with its findings' signatures.
    pub fn of(
        subject: &str,
        version: &str,
        devices: Vec<String>,
        date: String,
        reports: &[ScenarioReport],
        findings: &[Finding],
    ) -> Self {
        let mut shown: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for finding in findings {
            for scenario in &finding.scenarios {
                shown
                    .entry(scenario.as_str())
                    .or_default()
                    .push(finding.signature.to_string());
            }
        }
        let scenarios = reports
            .iter()
            .filter_map(|report| {
                let outcome = match report.status {
                    Status::Passed => LiveStatus::Passed,
                    Status::Failed => LiveStatus::Failed,
                    _ => return None,
                };
                let mut findings = match outcome {
                    LiveStatus::Failed => shown.remove(report.name.as_str()).unwrap_or_default(),
                    LiveStatus::Passed => Vec::new(),
                };
                findings.sort();
                Some((report.name.clone(), LiveOutcome { outcome, findings }))
            })
            .collect();
        let mut distinct: Vec<String> = Vec::new();
        for device in devices {
            if !distinct.contains(&device) {
                distinct.push(device);
            }
        }
        Self {
            format: FORMAT,
            subject: subject.to_string(),
            version: version.to_string(),
            devices: distinct,
            fake_driver: false,
            date,
            devsim: Some(env!("CARGO_PKG_VERSION").to_string()),
            corpus: None,
            files: BTreeMap::new(),
            counts: Some(LiveCounts::of(reports)),
            scenarios,
        }
    }

    /// The record, saying it was taken on `corpus`.
    pub fn on_corpus(self, corpus: &CorpusFiles) -> Self {
        Self {
            corpus: Some(corpus.fingerprint()),
            files: corpus.0.clone(),
            ..self
        }
    }

    /// Why the record confirms nothing for a run of subject version `version` on `corpus`, or `None` when it was
    /// taken on the same corpus and subject version.
    pub fn staleness(&self, corpus: &CorpusFiles, version: &str) -> Option<Stale> {
        let mut reasons = Vec::new();
        if self.version != version {
            reasons.push(format!(
                "it was taken on {} {}, this run judges {version}",
                self.subject, self.version
            ));
        }
        match &self.corpus {
            None => reasons.push(format!(
                "it records no corpus fingerprint (a format {} record: before records said what they were taken on)",
                self.format
            )),
            Some(fingerprint) if *fingerprint != corpus.fingerprint() => {
                let names = |names: Vec<&String>| {
                    let count = names.len();
                    let listed: Vec<&str> = names.iter().take(5).map(|n| n.as_str()).collect();
                    let more = match count > listed.len() {
                        true => format!(", {} more", count - listed.len()),
                        false => String::new(),
                    };
                    (count, format!("{}{more}", listed.join(", ")))
                };
                let lacks = names(corpus.0.keys().filter(|n| !self.files.contains_key(*n)).collect());
                let changed = names(
                    corpus
                        .0
                        .iter()
                        .filter(|(n, hash)| self.files.get(*n).is_some_and(|h| h != *hash))
                        .map(|(n, _)| n)
                        .collect(),
                );
                let gone = names(self.files.keys().filter(|n| !corpus.0.contains_key(*n)).collect());
                let mut parts = Vec::new();
                for (label, (count, listed)) in [
                    ("it lacks", lacks),
                    ("changed since", changed),
                    ("no longer in the corpus", gone),
                ] {
                    if count > 0 {
                        parts.push(format!("{label}: {count} scenario files ({listed})"));
                    }
                }
                reasons.push(format!(
                    "the corpus changed since it was taken ({})",
                    parts.join("; ")
                ));
            }
            Some(_) => {}
        }
        (!reasons.is_empty()).then_some(Stale { reasons })
    }

    /// Where `finding` stands: confirmed when at least one of its scenarios failed live with its signature.
    pub fn mark(&self, finding: &Finding) -> Mark {
        let signature = finding.signature.to_string();
        let shown_live = finding.scenarios.iter().any(|name| {
            self.scenarios.get(name).is_some_and(|live| {
                live.outcome == LiveStatus::Failed && live.findings.contains(&signature)
            })
        });
        match shown_live {
            true => Mark::Confirmed {
                devices: self.devices.clone(),
                date: self.date.clone(),
                fake_driver: self.fake_driver,
            },
            false => Mark::Simulated,
        }
    }

    /// The record, refused unless it is of `subject`.
    pub fn for_subject(self, path: &Path, subject: &str) -> Result<Self, LiveRecordError> {
        match self.subject == subject {
            true => Ok(self),
            false => Err(LiveRecordError::OtherSubject {
                path: path.to_path_buf(),
                recorded: self.subject,
                judged: subject.to_string(),
            }),
        }
    }

    /// Reads a live record file (TOML).
    pub fn read(path: &Path) -> Result<Self, LiveRecordError> {
        // Contained like every file devsim reads from a user's tree.
        let text = crate::scenario::load::corpus::read_in_folder(path).map_err(|error| {
            LiveRecordError::Refused {
                path: path.to_path_buf(),
                message: error.message,
            }
        })?;
        Self::parse(path, &text)
    }

    /// Parses a live record's text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, LiveRecordError> {
        let line_of = |span: Option<std::ops::Range<usize>>| {
            span.map_or(1, |span| {
                let before = &text.as_bytes()[..span.start.min(text.len())];
                before.iter().filter(|b| **b == b'\n').count() + 1
            })
        };
        // The format first, so a newer record says so instead of failing on a field it added.
        #[derive(Deserialize)]
        struct Versioned {
            format: Option<toml::Spanned<u32>>,
        }
        let parse_error = |error: toml::de::Error| LiveRecordError::Parse {
            path: path.to_path_buf(),
            line: line_of(error.span()),
            message: error.message().trim().replace('\n', " "),
        };
        let versioned: Versioned = toml::from_str(text).map_err(parse_error)?;
        match versioned.format {
            Some(format) if !(OLDEST_FORMAT..=FORMAT).contains(format.get_ref()) => {
                return Err(LiveRecordError::Format {
                    path: path.to_path_buf(),
                    found: *format.get_ref(),
                });
            }
            _ => {}
        }
        let record: LiveRecord = toml::from_str(text).map_err(parse_error)?;
        if !is_date(&record.date) {
            let line = text
                .lines()
                .position(|line| line.trim_start().starts_with("date"))
                .map_or(1, |n| n + 1);
            return Err(LiveRecordError::Parse {
                path: path.to_path_buf(),
                line,
                message: format!("`{}` is not a date (YYYY-MM-DD)", record.date),
            });
        }
        Ok(record)
    }

    /// Writes the record as TOML.
    pub fn write(&self, path: &Path) -> Result<(), LiveRecordError> {
        let text = toml::to_string(self).map_err(|error| LiveRecordError::Io {
            action: "write",
            path: path.to_path_buf(),
            source: std::io::Error::other(error),
        })?;
        let header = "# devsim live record (docs/live-record.md): what a live run showed on which device\n# (devsim run --live … --write-live-record); a simulated run marks its findings with it (--live-record).\n";
        // Never through a link, written whole (a temporary file renamed into place).
        crate::contain::write_beside(
            path,
            format!("{header}{text}").as_bytes(),
            crate::contain::Permissions::Kept,
        )?;
        Ok(())
    }
}

/// Today's UTC date, `YYYY-MM-DD`, or [`DATE_VARIABLE`]'s value when it is set.
pub fn today() -> Result<String, LiveRecordError> {
    if let Ok(value) = std::env::var(DATE_VARIABLE) {
        return match is_date(&value) {
            true => Ok(value),
            false => Err(LiveRecordError::Date { value }),
        };
    }
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(civil_date(seconds / 86_400))
}

/// `YYYY-MM-DD` of the day `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Whether `text` is `YYYY-MM-DD` with a month 01–12 and a day 01–31.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let number = |part: &str, len: usize| {
        (part.len() == len && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse::<u32>().ok())
            .flatten()
    };
    match parts.as_slice() {
        [year, month, day] => {
            number(year, 4).is_some()
                && number(month, 2).is_some_and(|m| (1..=12).contains(&m))
                && number(day, 2).is_some_and(|d| (1..=31).contains(&d))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
