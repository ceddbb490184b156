//! Which subject a run judges: a subject process (simulated, in lanes, or live on the real torch) or the
//! catalog in this process (simulated or live), chosen from what the run was asked. `devsim run` parses
//! its flags into a [`SubjectRequest`] and calls [`choose_subject`].

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use crate::kernel::Catalog;
use crate::replay::LiveContext;
use crate::scenario::Scenario;
use crate::subject::{
    CatalogSubject, Lanes, ProcessSubject, Subject, SubjectError, SubjectSpec, useful_lanes,
};

/// What a run asks of its subject.
#[derive(Debug, Clone, Copy)]
pub struct SubjectRequest<'a> {
    /// A subject file or command line (`--subject`); `None` judges the catalog in this process.
    pub subject: Option<&'a str>,
    /// The project's source tree (`--subject-src`), for a subject process.
    pub source: Option<&'a Path>,
    /// Run live, on this machine's GPUs, instead of on the simulated runtime.
    pub live: bool,
    /// The most subject processes to run side by side (simulated runs of a subject process only).
    pub jobs: NonZeroUsize,
}

/// The subject chosen, with what a run reports about it.
pub struct ChosenSubject {
    /// The subject to judge.
    pub subject: Box<dyn Subject>,
    /// Live: the machine, in one line.
    pub live_description: Option<String>,
    /// Live: the GPU driver is present but failing, and why.
    pub driver_failing: Option<String>,
    /// Live: the driver is one of devsim's fakes.
    pub fake_driver: bool,
    /// Live: the name of each visible GPU, in ordinal order.
    pub live_devices: Vec<String>,
    /// The subject file's `live_record`, if any (simulated runs of a subject process).
    pub live_record: Option<PathBuf>,
    /// Warnings to show before the run (a subject speaking a deprecated protocol).
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for ChosenSubject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChosenSubject")
            .field("subject", &self.subject.describe())
            .field("live_description", &self.live_description)
            .field("driver_failing", &self.driver_failing)
            .field("fake_driver", &self.fake_driver)
            .field("live_devices", &self.live_devices)
            .field("live_record", &self.live_record)
            .field("warnings", &self.warnings)
            .finish()
    }
}

/// The subject `request` asks for, to run `scenarios`: the subject process it names, or `catalog` in this
/// process under the catalog's own name (live or simulated).
pub fn choose_subject(
    catalog: Catalog,
    request: &SubjectRequest<'_>,
    scenarios: &[Scenario],
) -> Result<ChosenSubject, SubjectError> {
    if let Some(subject) = request.subject {
        let spec = SubjectSpec::parse_with_source(subject, request.source)?;
        if !request.live {
            let lanes = Lanes::start(&spec, useful_lanes(scenarios, request.jobs))?;
            let warnings = lanes.first().capabilities().deprecation();
            return Ok(ChosenSubject {
                subject: Box::new(lanes),
                live_description: None,
                driver_failing: None,
                fake_driver: false,
                live_devices: Vec::new(),
                live_record: spec.live_record.clone(),
                warnings: warnings.into_iter().collect(),
            });
        }
        // The subject runs the scenarios itself, on the real torch: one process, no workers of devsim's.
        let context = LiveContext::detect(None);
        let fake_driver = context.machine.fake;
        let driver_failing = driver_failing(&context);
        let description = context.describe();
        let live_devices = gpu_names(&context);
        let subject = ProcessSubject::start_live(spec, context)?;
        let live_description = Some(format!(
            "{description} (subject {} runs them on the real torch)",
            subject.capabilities().name
        ));
        let warnings = subject.capabilities().deprecation();
        return Ok(ChosenSubject {
            subject: Box::new(subject),
            live_description,
            driver_failing,
            fake_driver,
            live_devices,
            live_record: None,
            warnings: warnings.into_iter().collect(),
        });
    }
    let subject = catalog_subject(catalog);
    if !request.live {
        return Ok(ChosenSubject {
            subject: Box::new(subject),
            live_description: None,
            driver_failing: None,
            fake_driver: false,
            live_devices: Vec::new(),
            live_record: None,
            warnings: Vec::new(),
        });
    }
    let context = LiveContext::detect(std::env::current_exe().ok());
    Ok(ChosenSubject {
        fake_driver: context.machine.fake,
        live_devices: gpu_names(&context),
        live_description: Some(context.describe()),
        driver_failing: driver_failing(&context),
        subject: Box::new(subject.live(context)),
        live_record: None,
        warnings: Vec::new(),
    })
}

/// The catalog as a subject, under the catalog's own name and devsim's version.
pub fn catalog_subject(catalog: Catalog) -> CatalogSubject {
    CatalogSubject::new(
        catalog.name().to_string(),
        env!("CARGO_PKG_VERSION"),
        catalog,
    )
}

/// Why the live GPU driver is failing, where it is present but failing.
fn driver_failing(context: &LiveContext) -> Option<String> {
    context
        .driver_failing()
        .then(|| context.unavailable.join("; "))
}

/// The name of each GPU the live machine shows, in ordinal order.
fn gpu_names(context: &LiveContext) -> Vec<String> {
    context
        .machine
        .gpus
        .iter()
        .map(|gpu| gpu.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_subject_the_catalog_is_judged_simulated_under_its_own_name() {
        let request = SubjectRequest {
            subject: None,
            source: None,
            live: false,
            jobs: NonZeroUsize::MIN,
        };
        let chosen = choose_subject(Catalog::reference(), &request, &[]).expect("the catalog");
        assert_eq!(chosen.subject.name(), "reference");
        assert_eq!(chosen.live_description, None);
        assert_eq!(chosen.driver_failing, None);
        assert!(!chosen.fake_driver);
        assert!(chosen.warnings.is_empty());
    }

    #[test]
    fn a_subject_that_cannot_be_parsed_is_its_error() {
        let request = SubjectRequest {
            subject: Some(""),
            source: None,
            live: false,
            jobs: NonZeroUsize::MIN,
        };
        assert!(choose_subject(Catalog::reference(), &request, &[]).is_err());
    }
}
