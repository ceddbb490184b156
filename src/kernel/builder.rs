//! Building a catalog of your own: from nothing or from the reference, add, replace and remove kernels,
//! name it, and build (which checks every rule a catalog keeps).

use super::catalog::{Catalog, CatalogError, UNNAMED_CATALOG, check};
use super::{Kernel, KernelSpec, SpecKernel};

/// One change a [`CatalogBuilder`] applies, in order, when it builds.
enum Edit {
    Add(Box<dyn Kernel>),
    Replace(Box<dyn Kernel>),
    Remove(String),
}

/// Builds a [`Catalog`]: add, replace and remove kernels, then [`CatalogBuilder::build`] checks the result.
#[derive(Default)]
pub struct CatalogBuilder {
    name: Option<String>,
    kernels: Vec<Box<dyn Kernel>>,
    edits: Vec<Edit>,
}

impl CatalogBuilder {
    /// A builder starting from `kernels`.
    pub(super) fn from_kernels(kernels: Vec<Box<dyn Kernel>>) -> Self {
        Self {
            kernels,
            ..Self::default()
        }
    }

    /// Names the catalog (default [`UNNAMED_CATALOG`]): the subject name its reports and baselines carry.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Adds a kernel (a name already present is an error at build time).
    pub fn with(mut self, kernel: impl Kernel + 'static) -> Self {
        self.edits.push(Edit::Add(Box::new(kernel)));
        self
    }

    /// Adds a kernel that is nothing but its contract.
    pub fn with_spec(self, spec: KernelSpec) -> Self {
        self.with(SpecKernel(spec))
    }

    /// Replaces the kernel of the same name, keeping its place (a name not present is an error).
    pub fn replace(mut self, kernel: impl Kernel + 'static) -> Self {
        self.edits.push(Edit::Replace(Box::new(kernel)));
        self
    }

    /// Removes the kernel called `name` (a name not present is an error).
    pub fn remove(mut self, name: impl Into<String>) -> Self {
        self.edits.push(Edit::Remove(name.into()));
        self
    }

    /// Applies every edit in order and checks the result.
    pub fn build(self) -> Result<Catalog, CatalogError> {
        let mut kernels = self.kernels;
        let position = |kernels: &[Box<dyn Kernel>], name: &str| {
            kernels.iter().position(|k| k.spec().name == name)
        };
        for edit in self.edits {
            match edit {
                Edit::Add(kernel) => {
                    if position(&kernels, &kernel.spec().name).is_some() {
                        return Err(CatalogError::Duplicate {
                            kernel: kernel.spec().name.to_string(),
                        });
                    }
                    kernels.push(kernel);
                }
                Edit::Replace(kernel) => match position(&kernels, &kernel.spec().name) {
                    Some(at) => kernels[at] = kernel,
                    None => {
                        return Err(CatalogError::NotPresent {
                            kernel: kernel.spec().name.to_string(),
                            edit: "replace",
                        });
                    }
                },
                Edit::Remove(name) => match position(&kernels, &name) {
                    Some(at) => {
                        kernels.remove(at);
                    }
                    None => {
                        return Err(CatalogError::NotPresent {
                            kernel: name,
                            edit: "remove",
                        });
                    }
                },
            }
        }
        check(&kernels)?;
        Ok(Catalog {
            name: self.name.unwrap_or_else(|| UNNAMED_CATALOG.into()),
            kernels,
        })
    }
}
