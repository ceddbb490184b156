//! A catalog in this process as a subject: the simulated runtime of each scenario's host, or the real
//! machine through live replay.

use std::sync::Arc;

use crate::kernel::Catalog;
use crate::replay::LiveContext;
use crate::runner::ScenarioReport;
use crate::runner::run_simulated;
use crate::scenario::Scenario;
use crate::subject::{Subject, SubjectKind};

/// A [`Catalog`] judged in this process. Cloning it is cheap (the catalog and the live context are shared), so
/// each test of a harness can hold its own.
#[derive(Clone)]
pub struct CatalogSubject {
    name: String,
    version: String,
    catalog: Arc<Catalog>,
    live: Option<Arc<LiveContext>>,
}

impl CatalogSubject {
    /// devsim's own reference catalog, named `reference`.
    pub fn reference() -> Self {
        Self::new("reference", env!("CARGO_PKG_VERSION"), Catalog::reference())
    }

    /// A catalog named `name` at `version`, run on the simulated runtime.
    pub fn new(name: impl Into<String>, version: impl Into<String>, catalog: Catalog) -> Self {
        Self::shared(name, version, Arc::new(catalog))
    }

    /// A shared catalog named `name` at `version`, run on the simulated runtime.
    pub fn shared(
        name: impl Into<String>,
        version: impl Into<String>,
        catalog: Arc<Catalog>,
    ) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            catalog,
            live: None,
        }
    }

    /// Runs scenarios live on the real machine instead (those it does not satisfy are skipped).
    pub fn live(self, live: LiveContext) -> Self {
        self.live_shared(Arc::new(live))
    }

    /// Runs scenarios live through a shared context.
    pub fn live_shared(mut self, live: Arc<LiveContext>) -> Self {
        self.live = Some(live);
        self
    }

    /// The live context, when running live.
    pub fn live_context(&self) -> Option<&LiveContext> {
        self.live.as_deref()
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
