//! A catalog in this process as a subject: the simulated runtime of each scenario's host, or the real
//! machine through live replay.

use crate::kernel::Catalog;
use crate::replay::LiveContext;
use crate::runner::ScenarioReport;
use crate::runner::run_simulated;
use crate::scenario::Scenario;
use crate::subject::{Subject, SubjectKind};

/// A [`Catalog`] judged in this process.
pub struct CatalogSubject {
    name: String,
    version: String,
    catalog: Catalog,
    live: Option<LiveContext>,
}

impl CatalogSubject {
    /// devsim's own reference catalog, named `reference`.
    pub fn reference() -> Self {
        Self::new("reference", env!("CARGO_PKG_VERSION"), Catalog::reference())
    }

    /// A catalog named `name` at `version`, run on the simulated runtime.
    pub fn new(name: impl Into<String>, version: impl Into<String>, catalog: Catalog) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            catalog,
            live: None,
        }
    }

    /// Runs scenarios live on the real machine instead (those it does not satisfy are skipped).
    pub fn live(mut self, live: LiveContext) -> Self {
        self.live = Some(live);
        self
    }

    /// The live context, when running live.
    pub fn live_context(&self) -> Option<&LiveContext> {
        self.live.as_ref()
    }

    /// The catalog judged.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }
}

impl Subject for CatalogSubject {
    fn name(&self) -> &str {
        &self.name
    }

    fn version(&self) -> &str {
        &self.version
    }

    fn kind(&self) -> SubjectKind {
        SubjectKind::Catalog
    }

    fn run(&mut self, scenario: &Scenario) -> ScenarioReport {
        let mut report = match &self.live {
            Some(live) => live.run(scenario, &self.catalog),
            None => run_simulated(scenario, &self.catalog),
        };
        report.subject = self.name.clone();
        report
    }
}
