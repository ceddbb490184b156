//! The real machine as a host: what the drivers report, whether it satisfies a scenario's host, and
//! the profile `devsim probe` prints.

use std::fmt::{self, Write};

use serde::{Deserialize, Serialize};

use crate::host::HostSpec;
use crate::runtime::DriverError;
use crate::runtime::live::driver::GpuDriver;
use crate::vocab::Arch;
use crate::vocab::TorchBuild;

/// Why a scenario's host cannot be this machine ([`RealMachine::satisfies`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "unmet", rename_all = "kebab-case")]
pub enum Unmet {
    /// The scenario needs another build (another vendor's GPUs, or a GPU build on a machine without one).
    WrongBuild {
        /// The scenario's build.
        needed: TorchBuild,
        /// What this machine runs, in words (`cuda (libcuda.so.1)`, `no GPU driver`).
        here: String,
    },
    /// The scenario sees another number of GPUs than are visible here.
    GpuCount {
        /// The scenario's.
        needed: usize,
        /// This machine's.
        here: usize,
    },
    /// A GPU's base arch differs at one ordinal.
    ArchDiffers {
        /// The ordinal.
        ordinal: usize,
        /// The scenario's arch there.
        needed: String,
        /// This machine's.
        here: String,
    },
    /// A CUDA GPU's opt-in shared memory per block differs at one ordinal.
    SharedMemoryDiffers {
        /// The ordinal.
        ordinal: usize,
        /// The scenario's, in bytes.
        needed: u32,
        /// This machine's, in bytes.
        here: u32,
    },
    /// The scenario's own visible-device masks cannot be read.
    Visible(String),
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unmet::WrongBuild { needed, here } => write!(
                f,
                "wrong vendor: the scenario needs a {needed} build, this machine runs {here}"
            ),
            Unmet::GpuCount { needed, here } => {
                let relation = if needed > here { "too few" } else { "too many" };
                write!(
                    f,
                    "{relation} GPUs: the scenario sees {needed}, {here} visible here"
                )
            }
            Unmet::ArchDiffers {
                ordinal,
                needed,
                here,
            } => write!(
                f,
                "arch differs: ordinal {ordinal} is {here} here, the scenario needs {needed}"
            ),
            Unmet::SharedMemoryDiffers {
                ordinal,
                needed,
                here,
            } => write!(
                f,
                "shared memory differs: ordinal {ordinal} has {here} bytes opt-in here, the scenario needs {needed}"
            ),
            Unmet::Visible(why) => f.write_str(why),
        }
    }
}

/// One real GPU as the driver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealGpu {
    /// Its arch, read from the driver (`sm_90`, `gfx942:sramecc+:xnack-`).
    pub arch: Arch,
    /// Its name.
    pub name: String,
    /// Opt-in shared memory per block.
    pub smem_optin: u32,
    /// Its UUID as host profiles write it: `GPU-…` on NVIDIA, the 16-hex-digit serial on AMD.
    pub uuid: String,
}

/// The real machine: its build and its visible GPUs (after the process's own visible-device variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealMachine {
    /// The torch build the live runtime runs.
    pub build: TorchBuild,
    /// The driver library that opened, if any.
    pub library: Option<String>,
    /// Whether that library is one of devsim's fake drivers: then nothing here is a real GPU.
    pub fake: bool,
    /// The visible GPUs, in ordinal order.
    pub gpus: Vec<RealGpu>,
}

impl RealMachine {
    /// A machine with no GPU driver: only CPU scenarios can run live.
    pub fn cpu_only() -> Self {
        Self {
            build: TorchBuild::Cpu,
            library: None,
            fake: false,
            gpus: Vec::new(),
        }
    }

    /// A GPU build whose driver, loaded from `library`, shows no GPU devsim can use.
    pub fn without_gpus(build: TorchBuild, library: String) -> Self {
        Self {
            build,
            library: Some(library),
            fake: false,
            gpus: Vec::new(),
        }
    }

    /// Reads every visible GPU from a driver.
    pub fn read(driver: &dyn GpuDriver, build: TorchBuild) -> Result<Self, DriverError> {
        let mut gpus = Vec::new();
        for ordinal in 0..driver.device_count()? {
            let arch = match build {
                TorchBuild::Hip => driver.gcn_arch_name(ordinal)?,
                _ => {
                    let (major, minor) = driver.capability(ordinal)?;
                    format!("sm_{major}{minor}")
                }
            };
            let arch = arch.parse::<Arch>().map_err(|error| DriverError {
                call: "arch".into(),
                code: -1,
                message: error.to_string(),
            })?;
            gpus.push(RealGpu {
                arch,
                name: driver.name(ordinal)?,
                smem_optin: driver.smem_optin(ordinal)?,
                uuid: driver.uuid(ordinal)?,
            });
        }
        Ok(Self {
            build,
            library: Some(driver.path().to_string()),
            fake: driver.is_fake(),
            gpus,
        })
    }

    /// `Ok` when a scenario's host can run here, else why not (wrong vendor, GPU count, arch differs).
    ///
    /// A CPU-build scenario runs on any machine: it needs no GPU. Otherwise the build must match, the
    /// real machine must see exactly as many GPUs as the scenario (device counts, discovery and pool keys
    /// depend on it; [`RealMachine::restrict_to`] narrows a bigger machine), and at every ordinal a real
    /// GPU of the same base arch (and, for NVIDIA, the same opt-in shared memory). A host's faults are
    /// no obstacle: they are injected around the live runtime as around the simulated one.
    pub fn satisfies(&self, host: &HostSpec) -> Result<(), Unmet> {
        if host.torch == TorchBuild::Cpu {
            return Ok(());
        }
        if self.build != host.torch {
            return Err(Unmet::WrongBuild {
                needed: host.torch,
                here: match self.build {
                    TorchBuild::Cpu => "no GPU driver".to_string(),
                    build => format!("{build} ({})", self.library.as_deref().unwrap_or("?")),
                },
            });
        }
        let wanted = host.visible().map_err(|e| Unmet::Visible(e.to_string()))?;
        if wanted.len() != self.gpus.len() {
            return Err(Unmet::GpuCount {
                needed: wanted.len(),
                here: self.gpus.len(),
            });
        }
        for (ordinal, physical) in wanted.iter().enumerate() {
            let Some(gpu) = host.gpus.get(*physical) else {
                continue;
            };
            let real = &self.gpus[ordinal];
            if base(&gpu.arch) != base(&real.arch) {
                return Err(Unmet::ArchDiffers {
                    ordinal,
                    needed: gpu.arch.to_string(),
                    here: real.arch.to_string(),
                });
            }
            if host.torch == TorchBuild::Cuda && gpu.smem_optin != real.smem_optin {
                return Err(Unmet::SharedMemoryDiffers {
                    ordinal,
                    needed: gpu.smem_optin,
                    here: real.smem_optin,
                });
            }
        }
        Ok(())
    }

    /// The visible-device variable that shows only the first `count` GPUs of this machine, when it has
    /// more than a scenario needs and the scenario sets no variable of its own.
    pub fn restrict_to(&self, host: &HostSpec) -> Option<(&'static str, String)> {
        if !host.env.is_empty() || host.torch != self.build || host.torch == TorchBuild::Cpu {
            return None;
        }
        let wanted = host.visible().ok()?.len();
        if wanted == 0 || wanted >= self.gpus.len() {
            return None;
        }
        let variable = match self.build {
            TorchBuild::Hip => "HIP_VISIBLE_DEVICES",
            _ => "CUDA_VISIBLE_DEVICES",
        };
        let ordinals: Vec<String> = (0..wanted).map(|n| n.to_string()).collect();
        Some((variable, ordinals.join(",")))
    }

    /// The machine as a simulated host with these GPUs (archs, names, shared memory and UUIDs) in
    /// this order and no visible-device variable: what devsim's model predicts from.
    pub fn host(&self) -> HostSpec {
        let archs: Vec<Arch> = self.gpus.iter().map(|gpu| gpu.arch.clone()).collect();
        let mut host = HostSpec::new(self.build, &archs);
        for (gpu, real) in host.gpus.iter_mut().zip(&self.gpus) {
            gpu.name = real.name.clone();
            gpu.smem_optin = real.smem_optin;
            gpu.uuid = real.uuid.clone();
        }
        host
    }

    /// The machine as a host profile scenarios can use (`scenarios/hosts/<name>.toml`), headed by a comment
    /// naming the driver file this process really mapped.
    pub fn to_profile(&self) -> String {
        let mut out = String::new();
        let library = self.library.as_deref().unwrap_or("no GPU driver");
        if let Some(mapped) = self.library.as_deref().and_then(mapped_path) {
            let _ = writeln!(out, "# driver: {mapped}");
        }
        let _ = writeln!(
            out,
            "description = \"This machine, as probed by devsim through {library}\""
        );
        let _ = writeln!(out, "torch = \"{}\"", self.build);
        for gpu in &self.gpus {
            let _ = writeln!(out, "\n[[gpu]]");
            let _ = writeln!(out, "arch = \"{}\"", gpu.arch);
            let _ = writeln!(out, "name = \"{}\"", gpu.name.replace('"', "'"));
            let _ = writeln!(out, "smem_optin = {}", gpu.smem_optin);
            let _ = writeln!(out, "uuid = \"{}\"", gpu.uuid.replace('"', "'"));
        }
        out
    }
}

/// The part of an arch that rules compare: `sm_90`, or the gfx base target.
fn base(arch: &Arch) -> String {
    match arch.gfx() {
        Some(gfx) => gfx.base.clone(),
        None => arch.to_string(),
    }
}

/// The full path of the mapped object whose file name starts like `library` (`libcuda.so.1` matches
/// `/usr/lib/x86_64-linux-gnu/libcuda.so.580.1`), read from `/proc/self/maps`.
pub fn mapped_path(library: &str) -> Option<String> {
    let file = library.rsplit('/').next()?;
    let stem = file.split(".so").next()?;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            path.rsplit('/')
                .next()
                .is_some_and(|name| name.starts_with(&format!("{stem}.so")))
        })
        .map(str::to_string)
}
