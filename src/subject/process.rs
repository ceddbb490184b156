//! The protocol client: dispatch code in another process, judged scenario by scenario.
//!
//! A subject that crashes, hangs, prints garbage or answers out of order fails the scenario it was running,
//! with the offending line and the tail of its stderr; it is killed and a fresh process starts for the
//! next scenario. A scenario that needs what the subject cannot do or record is skipped, never passed.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::child::{Connection, Incoming, Silence};
use crate::conformance::Level;
use crate::kernel::Catalog;
use crate::scenario::expect::Mismatch;
use crate::scenario::live::LiveContext;
use crate::scenario::model::Action;
use crate::scenario::run::StepReport;
use crate::scenario::{Scenario, ScenarioReport, Status};
use crate::subject::decode;
use crate::subject::judge::Judge;
use crate::subject::protocol::{
    ACCEPTED, FromSubject, KernelDeclaration, KernelEntry, PROTOCOL, ToSubject, Wording,
};
use crate::subject::{Subject, SubjectError, SubjectKind, SubjectSpec, encode};
use crate::trace::is_event_name;

/// What a subject said it can do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The protocol version it speaks.
    pub protocol: u32,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The actions it performs.
    pub actions: Vec<String>,
    /// The devsim kernels it maps.
    pub kernels: Vec<String>,
    /// The events it records.
    pub events: Vec<String>,
    /// Whose wording its error messages use.
    pub messages: Wording,
    /// Its kernels' own declared contracts (protocol 2; empty for protocol 1).
    pub declared: Vec<KernelDeclaration>,
    /// The levels it claims beyond `policy`.
    pub levels: BTreeSet<Level>,
    /// Per action, the fields it observes; `None`: every field (protocol 1).
    pub observes: Option<BTreeMap<String, BTreeSet<String>>>,
    /// Whether it can run scenarios live, on the real machine.
    pub live: bool,
}

impl Capabilities {
    /// Whether its error messages are devsim's, word for word.
    pub fn compares_messages(&self) -> bool {
        self.messages == Wording::Devsim
    }

    /// A warning for the run's output, if the subject speaks a deprecated protocol.
    pub fn deprecation(&self) -> Option<String> {
        (self.protocol < PROTOCOL).then(|| {
            format!(
                "warning: subject {} speaks protocol {}, which is deprecated: it declares no contract, so contract expectations are not applicable to it; protocol {PROTOCOL} adds declared kernels, levels and observed fields (docs/subject-protocol.md)",
                self.name, self.protocol
            )
        })
    }
}

/// Dispatch code in another process, speaking the subject protocol.
pub struct ProcessSubject {
    spec: SubjectSpec,
    capabilities: Capabilities,
    connection: Option<Connection>,
    start_time: Duration,
    /// The real machine, in a live run.
    live: Option<LiveContext>,
}

/// Why one scenario's exchange broke down.
struct Fault {
    expected: String,
    problem: String,
}

impl ProcessSubject {
    /// Starts the subject and completes the handshake; every error here means nothing can be judged.
    pub fn start(spec: SubjectSpec) -> Result<Self, SubjectError> {
        let started = Instant::now();
        let (connection, capabilities) = connect(&spec, false)?;
        Ok(Self {
            spec,
            capabilities,
            connection: Some(connection),
            start_time: started.elapsed(),
            live: None,
        })
    }

    /// Starts the subject for a live run: `hello` says `live`, and a handshake that does not say `live`
    /// back is refused. Scenarios the machine satisfies go to the subject to run on the real torch; the
    /// rest are skipped with the machine's reason.
    pub fn start_live(spec: SubjectSpec, live: LiveContext) -> Result<Self, SubjectError> {
        let started = Instant::now();
        let (connection, capabilities) = connect(&spec, true)?;
        if !capabilities.live {
            connection.close(Duration::from_secs(2));
            return Err(SubjectError::NotLive {
                subject: capabilities.name,
            });
        }
        Ok(Self {
            spec,
            capabilities,
            connection: Some(connection),
            start_time: started.elapsed(),
            live: Some(live),
        })
    }

    /// In a live run, why `scenario` cannot be sent to the subject on this machine (a skip), if it cannot.
    fn not_here(&self, scenario: &Scenario) -> Option<String> {
        let live = self.live.as_ref()?;
        if let Some(reason) = scenario.host.views_differ() {
            return Some(reason);
        }
        if !scenario.host.env.is_empty() {
            // The subject process runs under devsim's own environment; a mask would have to be set before
            // its torch starts, which one long-lived subject process cannot do per scenario.
            return Some(
                "the live subject runs without visible-device variables (host.env needs a subject started under them)"
                    .into(),
            );
        }
        if let Some(version) = &scenario.host.runtime_version {
            // The subject's real torch reports this machine's runtime version; changing it would be faking.
            return Some(format!(
                "the live subject runs on this machine's own GPU runtime (host.runtime_version {version} needs a machine with that runtime)"
            ));
        }
        if scenario.host.torch == crate::vocab::TorchBuild::Cpu && !live.machine.gpus.is_empty() {
            // devsim's own live runtime can run a CPU build anywhere; a subject's real torch is this
            // machine's GPU build, which nothing short of faking could turn into a CPU-only one.
            return Some(format!(
                "a CPU-build scenario: this machine's torch is a {} build driving {} GPU(s), which the live subject does not hide",
                live.machine.build,
                live.machine.gpus.len()
            ));
        }
        if live.machine.restrict_to(&scenario.host).is_some() {
            return Some(format!(
                "this machine has {} GPU(s), more than the scenario's {}, and the live subject sees them all",
                live.machine.gpus.len(),
                scenario.host.gpus.len()
            ));
        }
        live.runnable_here(scenario).err()
    }

    /// What the subject said it can do.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// How long the first start took (spawn, imports, handshake).
    pub fn start_time(&self) -> Duration {
        self.start_time
    }

    fn unsupported(&self, scenario: &Scenario) -> Option<String> {
        let name = &self.capabilities.name;
        for step in &scenario.steps {
            let action = step.action.name();
            if !self.capabilities.actions.iter().any(|a| a == action) {
                return Some(format!("subject {name} does not have action {action}"));
            }
            if let Some(kernel) = encode::kernel_of(step) {
                if !self.capabilities.kernels.iter().any(|k| k == kernel) {
                    return Some(format!("subject {name} does not have kernel {kernel}"));
                }
            }
        }
        None
    }

    fn failed(
        &self,
        scenario: &Scenario,
        steps: Vec<StepReport>,
        expected: String,
        actual: String,
    ) -> ScenarioReport {
        ScenarioReport {
            steps,
            ..ScenarioReport::failed(
                scenario,
                Mismatch::breakdown(
                    format!("subject {}", self.capabilities.name),
                    expected,
                    actual,
                ),
            )
        }
    }

    /// Runs the exchange for one scenario on the live connection.
    fn exchange(
        &mut self,
        scenario: &Scenario,
        steps: &mut Vec<StepReport>,
    ) -> Result<ScenarioReport, Fault> {
        let name = scenario.name.clone();
        let events = self.capabilities.events.clone();
        let timeout = self.spec.step_timeout;
        let host = encode::host(&scenario.host).map_err(|error| Fault {
            expected: "a host devsim can describe".into(),
            problem: error.to_string(),
        })?;
        let Some(connection) = self.connection.as_mut() else {
            return Err(Fault {
                expected: "a running subject".into(),
                problem: "no process".into(),
            });
        };
        let mut session = Session {
            connection,
            timeout,
        };
        let mut skipped = None;
        let live = self.live.is_some();
        let mut refused_live = None;
        let expected = format!("`ready` or `unsupported` for scenario {name}");
        let (answer, line) = session.ask(
            &ToSubject::Scenario {
                name: name.clone(),
                host,
                live,
            },
            &expected,
        )?;
        match answer {
            FromSubject::Ready { scenario: s } if s == name => {}
            // Live, there is no host to simulate: a subject that cannot take a scenario the machine
            // satisfies could not reach the machine, which fails the run (never a skip, never a pass).
            FromSubject::Unsupported {
                scenario: s,
                number: None,
                reason,
            } if s == name && live => refused_live = Some(reason),
            FromSubject::Unsupported {
                scenario: s,
                number: None,
                reason,
            } if s == name => skipped = Some(reason),
            _ => return Err(out_of_order(expected, &line)),
        }
        let mut judge = Judge::for_host(&self.capabilities, &scenario.host);
        let mut entries = Vec::new();
        if skipped.is_none() && refused_live.is_none() {
            for step in &scenario.steps {
                let expected = format!("`observed` or `unsupported` for step {}", step.number);
                let started = Instant::now();
                let mut message = encode::step(&name, step);
                if live && step.repeat > 1 {
                    message.repeat = Some(step.repeat);
                }
                let (answer, line) = session.ask(&ToSubject::Step(message), &expected)?;
                let elapsed = started.elapsed();
                match answer {
                    FromSubject::Observed(message)
                        if message.scenario == name && message.number == step.number =>
                    {
                        let (observed, trace) =
                            decode::observed(&message, &events).map_err(|why| Fault {
                                expected: expected.clone(),
                                problem: format!("{why} in `{}`", clip(&line)),
                            })?;
                        let mismatches = judge.step(step, &message, &observed, &trace);
                        entries.extend(trace.iter().cloned());
                        steps.push(StepReport::of(step, observed, mismatches, trace, elapsed));
                    }
                    FromSubject::Unsupported {
                        scenario: s,
                        number: Some(n),
                        reason,
                    } if s == name && n == step.number => {
                        skipped = Some(reason);
                        break;
                    }
                    _ => return Err(out_of_order(expected, &line)),
                }
            }
        }
        let expected = format!("`done` for scenario {name}");
        let (answer, line) = session.ask(
            &ToSubject::End {
                scenario: name.clone(),
            },
            &expected,
        )?;
        if !matches!(&answer, FromSubject::Done { scenario } if *scenario == name) {
            return Err(out_of_order(expected, &line));
        }
        if let Some(reason) = refused_live {
            return Ok(self.failed(
                scenario,
                std::mem::take(steps),
                "the subject to run the scenario on this machine, live".into(),
                format!("it answered `unsupported`: {reason}"),
            ));
        }
        let trace_mismatches = if skipped.is_none() {
            judge.scenario(&scenario.trace_rules, &scenario.trace_levels, &entries)
        } else {
            Vec::new()
        };
        let failed = !trace_mismatches.is_empty() || steps.iter().any(|s| !s.mismatches.is_empty());
        let status = if failed {
            Status::Failed
        } else if let Some(reason) = skipped {
            Status::Skipped(reason)
        } else {
            judge.verdict()
        };
        Ok(ScenarioReport {
            status,
            steps: std::mem::take(steps),
            trace_mismatches,
            ..ScenarioReport::skipped(scenario, "")
        })
    }
}

impl Subject for ProcessSubject {
    fn name(&self) -> &str {
        &self.capabilities.name
    }

    fn version(&self) -> &str {
        &self.capabilities.version
    }

    fn kind(&self) -> SubjectKind {
        SubjectKind::Process
    }

    fn run(&mut self, scenario: &Scenario) -> ScenarioReport {
        let mut report = self.run_one(scenario);
        report.subject = self.capabilities.name.clone();
        report
    }
}

impl ProcessSubject {
    fn run_one(&mut self, scenario: &Scenario) -> ScenarioReport {
        if scenario.steps.is_empty() {
            return ScenarioReport::skipped(scenario, "no step to judge");
        }
        if !scenario.host.faults.is_empty() {
            // Fault injection lives in devsim's runtime; a subject process runs its own code on its own
            // simulated host, so an injected driver error cannot reach it.
            return ScenarioReport::skipped(
                scenario,
                "the subject protocol carries no fault injection (host.fault)",
            );
        }
        if let Some(reason) = self.not_here(scenario) {
            return ScenarioReport::skipped(scenario, reason);
        }
        if self.live.is_none()
            && scenario
                .steps
                .iter()
                .any(|step| step.repeat > 1 || step.expect.retained_bytes.is_some())
        {
            // Simulated, repetitions and device memory are measured around devsim's runtime, which a
            // subject does not run on; live, the subject repeats the step and reads the real allocator.
            return ScenarioReport::skipped(
                scenario,
                "the subject protocol carries no repeated steps or retained memory (repeat, retained_bytes)",
            );
        }
        if let Some(reason) = self.unsupported(scenario) {
            return ScenarioReport {
                status: Status::NotApplicable(reason),
                ..ScenarioReport::skipped(scenario, "")
            };
        }
        if self.connection.is_none() {
            match connect(&self.spec, self.live.is_some()) {
                Ok((connection, _)) => self.connection = Some(connection),
                Err(error) => {
                    return self.failed(
                        scenario,
                        Vec::new(),
                        "a fresh subject process".into(),
                        error.to_string(),
                    );
                }
            }
        }
        let mut steps = Vec::new();
        match self.exchange(scenario, &mut steps) {
            Ok(report) => report,
            Err(fault) => {
                let tail = self
                    .connection
                    .take()
                    .map(|mut connection| connection.kill())
                    .unwrap_or_default();
                self.failed(
                    scenario,
                    steps,
                    fault.expected,
                    format!("{}{}", fault.problem, stderr_block(&tail)),
                )
            }
        }
    }
}

impl Drop for ProcessSubject {
    fn drop(&mut self) {
        // Closing stdin asks the subject to exit; the connection kills it if it does not.
        if let Some(connection) = self.connection.take() {
            connection.close(Duration::from_secs(2));
        }
    }
}

/// One scenario's conversation with a running subject.
struct Session<'a> {
    connection: &'a mut Connection,
    timeout: Duration,
}

impl Session<'_> {
    /// Sends `message` and reads one answer; every way that fails is a [`Fault`].
    fn ask(&mut self, message: &ToSubject, expected: &str) -> Result<(FromSubject, String), Fault> {
        let fault = |problem: String| Fault {
            expected: expected.to_string(),
            problem,
        };
        let line = serde_json::to_string(message).map_err(|e| fault(e.to_string()))?;
        if self.connection.send(&line).is_err() {
            return Err(fault(self.exited("stopped reading its input")));
        }
        receive(self.connection, self.timeout).map_err(fault)
    }

    fn exited(&mut self, what: &str) -> String {
        exited(self.connection, what)
    }
}

fn exited(connection: &mut Connection, what: &str) -> String {
    match connection.exit_status() {
        Some(status) => format!("the subject {what}: it exited ({status})"),
        None => format!("the subject {what}"),
    }
}

/// Reads and parses one answer.
fn receive(
    connection: &mut Connection,
    timeout: Duration,
) -> Result<(FromSubject, String), String> {
    match connection.receive(timeout) {
        Ok(Incoming::Line(line)) => match serde_json::from_str::<FromSubject>(&line) {
            Ok(message) => Ok((message, line)),
            Err(error) => Err(format!(
                "`{}` is not a protocol message: {error}",
                clip(&line)
            )),
        },
        Ok(Incoming::TooLong(start)) => Err(format!(
            "a line longer than 1 MiB, starting `{}`",
            clip(&start)
        )),
        Ok(Incoming::Closed) | Err(Silence::Closed) => {
            Err(exited(connection, "closed its output mid-scenario"))
        }
        Err(Silence::Timeout(waited)) => {
            Err(format!("no answer within {:.1} s", waited.as_secs_f64()))
        }
    }
}

fn out_of_order(expected: String, line: &str) -> Fault {
    Fault {
        expected,
        problem: format!("an answer out of order: `{}`", clip(line)),
    }
}

/// The first 300 characters of a line, for messages.
fn clip(line: &str) -> String {
    let mut clipped: String = line.chars().take(300).collect();
    if clipped.len() < line.len() {
        clipped.push('…');
    }
    clipped
}

/// The stderr tail as an indented block after a newline, or nothing.
fn stderr_block(tail: &str) -> String {
    let tail = tail.trim_end();
    if tail.is_empty() {
        return "; its stderr was empty".into();
    }
    let mut block = String::from("\n      stderr (last 4 KiB):");
    for line in tail.lines() {
        block.push_str("\n        ");
        block.push_str(line);
    }
    block
}

/// Starts the process, says hello (for a live session when `live`) and checks the handshake.
fn connect(spec: &SubjectSpec, live: bool) -> Result<(Connection, Capabilities), SubjectError> {
    let Some((program, args)) = spec.command.split_first() else {
        return Err(SubjectError::EmptyCommand {
            subject: spec.name.clone(),
        });
    };
    let mut command = Command::new(program);
    command.args(args).envs(&spec.env);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let mut connection = Connection::spawn(command).map_err(|source| SubjectError::Start {
        subject: spec.name.clone(),
        command: spec.command_line(),
        source,
    })?;
    let handshake_error = |connection: &mut Connection, problem: String| SubjectError::Handshake {
        subject: spec.name.clone(),
        problem,
        stderr: stderr_block(&connection.kill()),
    };
    let hello = ToSubject::Hello {
        protocol: PROTOCOL,
        devsim: env!("CARGO_PKG_VERSION").into(),
        live,
    };
    let hello = serde_json::to_string(&hello).unwrap_or_default();
    if connection.send(&hello).is_err() {
        let problem = exited(&mut connection, "stopped reading its input");
        return Err(handshake_error(&mut connection, problem));
    }
    let line = match connection.receive(spec.start_timeout) {
        Ok(Incoming::Line(line)) => line,
        Ok(Incoming::TooLong(start)) => {
            let problem = format!("a line longer than 1 MiB, starting `{}`", clip(&start));
            return Err(handshake_error(&mut connection, problem));
        }
        Ok(Incoming::Closed) | Err(Silence::Closed) => {
            let problem = exited(&mut connection, "closed its output before its handshake");
            return Err(handshake_error(&mut connection, problem));
        }
        Err(Silence::Timeout(waited)) => {
            let problem = format!("no handshake within {:.1} s", waited.as_secs_f64());
            return Err(handshake_error(&mut connection, problem));
        }
    };
    match handshake(&spec.name, &line) {
        Ok(capabilities) => Ok((connection, capabilities)),
        Err(SubjectError::Handshake {
            subject, problem, ..
        }) => Err(SubjectError::Handshake {
            subject,
            problem,
            stderr: stderr_block(&connection.kill()),
        }),
        Err(error) => {
            connection.kill();
            Err(error)
        }
    }
}

/// Reads a subject's handshake line as devsim does at start: the version first (another version may well
/// have other fields), then the message, its capabilities for that version, and every name in it. The
/// error of a [`SubjectError::Handshake`] carries no stderr here.
pub fn handshake(subject: &str, line: &str) -> Result<Capabilities, SubjectError> {
    let problem = |problem: String| SubjectError::Handshake {
        subject: subject.to_string(),
        problem,
        stderr: String::new(),
    };
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(line) {
        if value.get("type").and_then(|t| t.as_str()) == Some("handshake") {
            let protocol = value.get("protocol");
            let accepted = protocol
                .and_then(|p| p.as_u64())
                .is_some_and(|p| ACCEPTED.iter().any(|a| u64::from(*a) == p));
            if !accepted {
                return Err(SubjectError::ProtocolVersion {
                    subject: subject.to_string(),
                    got: protocol.map_or("(none)".into(), ToString::to_string),
                    expected: PROTOCOL,
                });
            }
        }
    }
    let capabilities = match serde_json::from_str::<FromSubject>(line) {
        Ok(FromSubject::Handshake {
            protocol,
            subject: info,
            actions,
            kernels,
            events,
            messages,
            levels,
            observes,
            live,
        }) => capabilities(
            protocol, info, actions, kernels, events, messages, levels, observes, live,
        )
        .map_err(|why| problem(format!("{why} in `{}`", clip(line))))?,
        Ok(_) => {
            return Err(problem(format!(
                "expected a handshake, got `{}`",
                clip(line)
            )));
        }
        Err(error) => {
            return Err(problem(format!(
                "`{}` is not a protocol message: {error}",
                clip(line)
            )));
        }
    };
    check_names(&capabilities)?;
    Ok(capabilities)
}

/// The capabilities a handshake states, checked against its protocol version: protocol 1 names kernels,
/// protocol 2 declares each once, with families devsim knows.
#[allow(clippy::too_many_arguments)]
fn capabilities(
    protocol: u32,
    subject: crate::subject::protocol::SubjectInfo,
    actions: Vec<String>,
    kernels: Vec<KernelEntry>,
    events: Vec<String>,
    messages: Wording,
    levels: Vec<Level>,
    observes: Option<BTreeMap<String, Vec<String>>>,
    live: bool,
) -> Result<Capabilities, String> {
    let mut names = Vec::with_capacity(kernels.len());
    let mut declared = Vec::new();
    for entry in kernels {
        if names.iter().any(|n: &String| n == entry.name()) {
            return Err(format!("kernel `{}` is declared twice", entry.name()));
        }
        names.push(entry.name().to_string());
        match entry {
            KernelEntry::Name(name) if protocol >= 2 => {
                return Err(format!(
                    "kernel `{name}` is a bare name: protocol 2 declares each kernel as an object with its `name` and `families`"
                ));
            }
            KernelEntry::Name(_) => {}
            KernelEntry::Declared(declaration) if protocol < 2 => {
                return Err(format!(
                    "kernel `{}` is declared as an object: protocol 1 lists names only",
                    declaration.name
                ));
            }
            KernelEntry::Declared(declaration) => {
                for family in &declaration.families {
                    let known = crate::vocab::Family::EVERY
                        .iter()
                        .any(|f| f.as_str() == family);
                    if !known {
                        return Err(format!(
                            "kernel `{}` declares family `{family}`, which does not exist (expected cpu, cuda, rocm, xpu, mps or all)",
                            declaration.name
                        ));
                    }
                }
                declared.push(declaration);
            }
        }
    }
    if protocol < 2 && (!levels.is_empty() || observes.is_some() || live) {
        return Err("`levels`, `observes` and `live` are protocol 2 fields".into());
    }
    let observes = observes.map(|map| {
        map.into_iter()
            .map(|(action, keys)| (action, keys.into_iter().collect()))
            .collect()
    });
    Ok(Capabilities {
        protocol,
        name: subject.name,
        version: subject.version,
        actions,
        kernels: names,
        events,
        messages,
        declared,
        levels: levels.into_iter().collect(),
        observes,
        live,
    })
}

/// Every kernel must be in devsim's reference catalog, every action and event one of devsim's.
fn check_names(capabilities: &Capabilities) -> Result<(), SubjectError> {
    let unknown = |what: &'static str, name: &str, expected: String| SubjectError::UnknownName {
        subject: capabilities.name.clone(),
        what,
        name: name.to_string(),
        expected,
    };
    let catalog = Catalog::reference();
    for kernel in &capabilities.kernels {
        if let Err(error) = catalog.get(kernel) {
            let expected = match crate::kernel::catalog::closest(
                kernel,
                catalog.iter().map(|k| k.spec().name.as_ref()),
            ) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!("see `devsim kernels`; {error}"),
            };
            return Err(unknown("kernel", kernel, expected));
        }
    }
    for action in &capabilities.actions {
        if !Action::NAMES.contains(&action.as_str()) {
            return Err(unknown("action", action, Action::NAMES.join(", ")));
        }
    }
    for event in &capabilities.events {
        if !is_event_name(event) {
            return Err(unknown(
                "event",
                event,
                crate::trace::event_names().join(", "),
            ));
        }
    }
    Ok(())
}
