//! The protocol client: dispatch code in another process, judged scenario by scenario.
//!
//! A subject that crashes, hangs, prints garbage or answers out of order fails the scenario it was running,
//! with the offending line and the tail of its stderr; it is killed and a fresh process starts for the
//! next scenario. A scenario that needs what the subject cannot do or record is skipped, never passed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::child::Connection;
use crate::replay::LiveContext;
use crate::runner::expect::Mismatch;
use crate::runner::run::StepReport;
use crate::runner::{ScenarioReport, Skip, Status};
use crate::scenario::Scenario;
use crate::subject::decode;
use crate::subject::judge::Judge;
use crate::subject::protocol::{FromSubject, ToSubject};
use crate::subject::{Subject, SubjectError, SubjectKind, SubjectSpec, applicable, encode};

use super::handshake::Capabilities;
use super::session::{ExchangeFault, Session, clip, connect, out_of_order, stderr_block};

/// Dispatch code in another process, speaking the subject protocol.
pub struct ProcessSubject {
    spec: SubjectSpec,
    capabilities: Capabilities,
    connection: Option<Connection>,
    start_time: Duration,
    /// The real machine, in a live run.
    live: Option<LiveContext>,
    /// Breakdowns seen so far, shared by every process of the subject ([`super::Lanes`]).
    breakdowns: Arc<Mutex<Breakdowns>>,
}

/// After this many breakdowns with one signature (the same error at the same point of the exchange), a run
/// sends the subject no more scenarios: the rest are skipped naming the breakdown, and the findings hold one.
pub const STOP_AFTER_IDENTICAL_BREAKDOWNS: usize = 3;

/// How often each breakdown happened, and the one that stopped the subject, if any.
#[derive(Debug, Default)]
pub struct Breakdowns {
    seen: BTreeMap<String, usize>,
    stopped: Option<String>,
}

impl Breakdowns {
    /// Counts one breakdown; the first to happen [`STOP_AFTER_IDENTICAL_BREAKDOWNS`] times stops the subject.
    fn count(&mut self, signature: String) {
        let times = self.seen.entry(signature.clone()).or_default();
        *times += 1;
        if *times >= STOP_AFTER_IDENTICAL_BREAKDOWNS && self.stopped.is_none() {
            self.stopped = Some(signature);
        }
    }
}

/// A breakdown as the same for every scenario it happens in: what was expected and the first line of what
/// happened, the scenario's name taken out (an answer out of order quotes it).
pub(crate) fn breakdown_signature(scenario: &str, expected: &str, actual: &str) -> String {
    let first = actual.lines().next().unwrap_or_default();
    let text = format!("expected {expected}, got {first}");
    if scenario.is_empty() {
        text
    } else {
        text.replace(scenario, "<scenario>")
    }
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
            breakdowns: Arc::default(),
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
            breakdowns: Arc::default(),
        })
    }

    /// In a live run, why `scenario` cannot be sent to the subject on this machine (a skip), if it cannot.
    fn not_here(&self, scenario: &Scenario) -> Option<Skip> {
        let live = self.live.as_ref()?;
        if let Some(reason) = scenario.host.views_differ() {
            return Some(Skip::ViewsDiffer(reason));
        }
        if !scenario.host.env.is_empty() {
            // The subject process runs under devsim's own environment; a mask would have to be set before
            // its torch starts, which one long-lived subject process cannot do per scenario.
            return Some(Skip::LiveSubject(
                "the live subject runs without visible-device variables (host.env needs a subject started under them)"
                    .into(),
            ));
        }
        if let Some(version) = &scenario.host.runtime_version {
            // The subject's real torch reports this machine's runtime version; changing it would be faking.
            return Some(Skip::LiveSubject(format!(
                "the live subject runs on this machine's own GPU runtime (host.runtime_version {version} needs a machine with that runtime)"
            )));
        }
        if scenario.host.torch == crate::vocab::TorchBuild::Cpu && !live.machine.gpus.is_empty() {
            // devsim's own live runtime can run a CPU build anywhere; a subject's real torch is this
            // machine's GPU build, which nothing short of faking could turn into a CPU-only one.
            return Some(Skip::LiveSubject(format!(
                "a CPU-build scenario: this machine's torch is a {} build driving {} GPU(s), which the live subject does not hide",
                live.machine.build,
                live.machine.gpus.len()
            )));
        }
        if live.machine.restrict_to(&scenario.host).is_some() {
            return Some(Skip::LiveSubject(format!(
                "this machine has {} GPU(s), more than the scenario's {}, and the live subject sees them all",
                live.machine.gpus.len(),
                scenario.host.gpus.len()
            )));
        }
        live.runnable_here(scenario).err()
    }

    /// Makes this process count its breakdowns with `other`'s, so that processes of one subject stop together.
    pub fn share_breakdowns(&mut self, other: &ProcessSubject) {
        self.breakdowns = Arc::clone(&other.breakdowns);
    }

    /// The breakdown that stopped the subject, if one happened three times (`STOP_AFTER_IDENTICAL_BREAKDOWNS`).
    pub fn stopped(&self) -> Option<String> {
        self.breakdowns.lock().map_or_else(
            |poisoned| poisoned.into_inner().stopped.clone(),
            |b| b.stopped.clone(),
        )
    }

    /// A breakdown of the subject's process: the scenario fails, and the breakdown is counted.
    fn broke_down(
        &self,
        scenario: &Scenario,
        steps: Vec<StepReport>,
        expected: String,
        actual: String,
    ) -> ScenarioReport {
        let signature = breakdown_signature(&scenario.name, &expected, &actual);
        match self.breakdowns.lock() {
            Ok(mut breakdowns) => breakdowns.count(signature),
            Err(poisoned) => poisoned.into_inner().count(signature),
        }
        self.failed(scenario, steps, expected, actual)
    }

    /// What the subject said it can do.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// How long the first start took (spawn, imports, handshake).
    pub fn start_time(&self) -> Duration {
        self.start_time
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
        lacking: &BTreeMap<usize, String>,
        steps: &mut Vec<StepReport>,
    ) -> Result<ScenarioReport, ExchangeFault> {
        let name = scenario.name.clone();
        let events = self.capabilities.events.clone();
        let packages = self.capabilities.packages.clone();
        let timeout = self.spec.step_timeout;
        let host = encode::host(&scenario.host).map_err(|error| ExchangeFault {
            expected: "a host devsim can describe".into(),
            problem: error.to_string(),
        })?;
        let Some(connection) = self.connection.as_mut() else {
            return Err(ExchangeFault {
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
                ..
            } if s == name && live => refused_live = Some(reason),
            FromSubject::Unsupported {
                scenario: s,
                number: None,
                reason,
                ..
            } if s == name => skipped = Some(reason),
            _ => return Err(out_of_order(expected, &line)),
        }
        let mut judge = Judge::for_host(&self.capabilities, &scenario.host);
        let mut entries = Vec::new();
        let mut stopped_mismatches = Vec::new();
        let mut stopped_decided_by = BTreeMap::new();
        if skipped.is_none() && refused_live.is_none() {
            for step in &scenario.steps {
                if let Some(why) = lacking.get(&step.number) {
                    judge.lacking(step, why);
                    continue;
                }
                let expected = format!("`observed` or `unsupported` for step {}", step.number);
                let started = Instant::now();
                let mut message = encode::step(&name, step);
                if live && step.repeat > 1 {
                    message.set_repeat(Some(step.repeat));
                }
                let (answer, line) = session.ask(&ToSubject::Step(message), &expected)?;
                let elapsed = started.elapsed();
                match answer {
                    FromSubject::Observed(message)
                        if message.scenario == name && message.number == step.number =>
                    {
                        let (observed, trace) = decode::observed(&message, &events, &packages)
                            .and_then(|(observed, trace)| {
                                decode::numerics(
                                    observed.numerics.as_ref(),
                                    step.action.kernel(),
                                    &self.capabilities.declared,
                                )
                                .map(|()| (observed, trace))
                            })
                            .map_err(|why| ExchangeFault {
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
                        trace,
                        decided_by,
                    } if s == name && n == step.number => {
                        let stopped = decode::trace(&trace, &events)
                            .and_then(|stopped| {
                                decode::stopped_decided_by(&decided_by, &trace, &packages)
                                    .map(|()| stopped)
                            })
                            .map_err(|why| ExchangeFault {
                                expected: expected.clone(),
                                problem: format!("{why} in `{}`", clip(&line)),
                            })?;
                        stopped_decided_by = decided_by;
                        stopped_mismatches = judge.stopped(
                            step,
                            (&scenario.trace_rules, &scenario.trace_levels),
                            &entries,
                            &stopped,
                        );
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
        let trace_mismatches = if skipped.is_some() {
            // a step it could not finish: only what its events so far already break
            stopped_mismatches
        } else if let Some(why) = lacking.values().next() {
            judge.scenario_in_part(
                &scenario.trace_rules,
                &scenario.trace_levels,
                &entries,
                &format!("{why}: a step was left out"),
            )
        } else {
            judge.scenario(&scenario.trace_rules, &scenario.trace_levels, &entries)
        };
        let failed = !trace_mismatches.is_empty() || steps.iter().any(|s| !s.mismatches.is_empty());
        let status = if failed {
            Status::Failed
        } else if let Some(reason) = skipped {
            Status::Skipped(Skip::Subject(reason))
        } else {
            judge.verdict()
        };
        Ok(ScenarioReport {
            steps: std::mem::take(steps),
            trace_mismatches,
            stopped_decided_by,
            left_out: lacking.keys().copied().collect(),
            ..ScenarioReport::with_status(scenario, status)
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
            return ScenarioReport::skipped(scenario, Skip::Protocol("no step to judge".into()));
        }
        // What the subject lacks (a kernel, an action) is a fact about it, whatever else the scenario needs.
        let lacking = match applicable::lacking(&self.capabilities, scenario) {
            Ok(lacking) => lacking,
            Err(reason) => {
                return ScenarioReport::with_status(scenario, Status::NotApplicable(reason));
            }
        };
        if !scenario.host.faults.is_empty() {
            // Fault injection lives in devsim's runtime; a subject process runs its own code on its own
            // simulated host, so an injected driver error cannot reach it.
            return ScenarioReport::skipped(
                scenario,
                Skip::Protocol(
                    "the subject protocol carries no fault injection (host.fault)".into(),
                ),
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
                Skip::Protocol(
                    "the subject protocol carries no repeated steps or retained memory (repeat, retained_bytes)"
                        .into(),
                ),
            );
        }
        if let Some(breakdown) = self.stopped() {
            // The same breakdown again and again says nothing new about the code: one finding, not one per
            // scenario, and no process restarted for each.
            return ScenarioReport::skipped(
                scenario,
                Skip::SubjectStopped(format!(
                    "subject {} stopped after {STOP_AFTER_IDENTICAL_BREAKDOWNS} identical breakdowns: {breakdown}",
                    self.capabilities.name
                )),
            );
        }
        if self.connection.is_none() {
            match connect(&self.spec, self.live.is_some()) {
                Ok((connection, _)) => self.connection = Some(connection),
                Err(error) => {
                    return self.broke_down(
                        scenario,
                        Vec::new(),
                        "a fresh subject process".into(),
                        error.to_string(),
                    );
                }
            }
        }
        let mut steps = Vec::new();
        match self.exchange(scenario, &lacking, &mut steps) {
            Ok(report) => report,
            Err(fault) => {
                let tail = self
                    .connection
                    .take()
                    .map(|mut connection| connection.kill())
                    .unwrap_or_default();
                self.broke_down(
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
