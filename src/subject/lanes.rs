//! Several processes of one subject, run side by side: [`Lanes`].
//!
//! A simulated run of a process subject is one scenario at a time per process, and a real project's
//! process spends most of a corpus on one core (GPTQModel: import, then a fork per host). `Lanes` starts
//! the same subject several times at once and deals the scenarios out by host, so that each process keeps
//! reusing its children for the hosts it was given. Every scenario is still isolated inside its process
//! (the subject protocol's guarantee), so a report does not depend on which lane ran it or with whom;
//! reports come back in the order the scenarios were given.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::encode;
use super::{ProcessSubject, RunEvent, Subject, SubjectError, SubjectKind, SubjectSpec};
use crate::runner::ScenarioReport;
use crate::scenario::Scenario;

/// One subject started `n` times; scenarios of one host always go to the same process.
pub struct Lanes {
    lanes: Vec<ProcessSubject>,
    start_time: Duration,
}

impl Lanes {
    /// Starts `jobs` processes of `spec` at once (at most the spec's `max_jobs`); the first failure to start
    /// is the error.
    pub fn start(spec: &SubjectSpec, jobs: NonZeroUsize) -> Result<Self, SubjectError> {
        let count = spec
            .max_jobs
            .map_or(jobs.get(), |most| jobs.get().min(most.get()));
        let began = Instant::now();
        let started: Vec<Result<ProcessSubject, SubjectError>> = thread::scope(|scope| {
            let handles: Vec<_> = (0..count)
                .map(|_| scope.spawn(|| ProcessSubject::start(spec.clone())))
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|_| Err(SubjectError::StartPanicked))
                })
                .collect()
        });
        let mut lanes = started.into_iter().collect::<Result<Vec<_>, _>>()?;
        // One subject, one tally: a breakdown every lane meets stops them all after the same count.
        if let Some((first, rest)) = lanes.split_first_mut() {
            for lane in rest {
                lane.share_breakdowns(first);
            }
        }
        Ok(Self {
            lanes,
            start_time: began.elapsed(),
        })
    }

    /// How many processes run side by side.
    pub fn count(&self) -> usize {
        self.lanes.len()
    }

    /// How long starting them all took (they start at once).
    pub fn start_time(&self) -> Duration {
        self.start_time
    }

    /// The first process, whose handshake names the subject.
    pub fn first(&self) -> &ProcessSubject {
        &self.lanes[0]
    }
}

/// How many processes are worth starting for `scenarios`, at most `jobs`: no more than there are pieces of work
/// to deal out (one scenario, or one host, needs one process), and at least one.
pub fn useful_lanes(scenarios: &[Scenario], jobs: NonZeroUsize) -> NonZeroUsize {
    let pieces = by_host(scenarios, jobs.get()).len();
    NonZeroUsize::new(pieces.min(jobs.get())).unwrap_or(NonZeroUsize::MIN)
}

/// The scenarios' indexes grouped by host, heaviest group first (the longest work is dealt out first, so the
/// lanes finish close together). With several lanes, a host with more than its share of the work is cut into
/// pieces of at most a quarter of a lane's share: a piece costs its lane one more fork, a lane left idle while
/// another runs the last big host costs more.
fn by_host(scenarios: &[Scenario], lanes: usize) -> Vec<Vec<usize>> {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, scenario) in scenarios.iter().enumerate() {
        let key = encode::host(&scenario.host)
            .ok()
            .and_then(|host| serde_json::to_string(&host).ok())
            .unwrap_or_default();
        groups.entry(key).or_default().push(index);
    }
    let weight = |group: &Vec<usize>| -> usize {
        group
            .iter()
            .map(|&index| 1 + scenarios[index].steps.len())
            .sum()
    };
    let total: usize = groups.values().map(weight).sum();
    let most = if lanes > 1 {
        (total / (4 * lanes)).max(1)
    } else {
        usize::MAX
    };
    let mut pieces: Vec<Vec<usize>> = Vec::new();
    for group in groups.into_values() {
        let mut piece = Vec::new();
        let mut piece_weight = 0;
        for index in group {
            piece_weight += 1 + scenarios[index].steps.len();
            piece.push(index);
            if piece_weight >= most {
                pieces.push(std::mem::take(&mut piece));
                piece_weight = 0;
            }
        }
        if !piece.is_empty() {
            pieces.push(piece);
        }
    }
    pieces.sort_by_key(|piece| std::cmp::Reverse(weight(piece)));
    pieces
}

impl Subject for Lanes {
    fn name(&self) -> &str {
        self.first().name()
    }

    fn version(&self) -> &str {
        self.first().version()
    }

    fn kind(&self) -> SubjectKind {
        SubjectKind::Process
    }

    fn describe(&self) -> String {
        match self.lanes.len() {
            1 => self.first().describe(),
            count => format!(
                "{} {} ({}, {count} side by side)",
                self.name(),
                self.version(),
                self.kind()
            ),
        }
    }

    fn run(&mut self, scenario: &Scenario) -> ScenarioReport {
        self.lanes[0].run(scenario)
    }

    fn run_all(&mut self, scenarios: &[Scenario], event: &mut dyn FnMut(RunEvent)) {
        if self.lanes.len() == 1 {
            return self.lanes[0].run_all(scenarios, event);
        }
        let queue = Mutex::new(by_host(scenarios, self.lanes.len()).into_iter());
        let next_group = || queue.lock().ok().and_then(|mut groups| groups.next());
        thread::scope(|scope| {
            let (sender, receiver) = mpsc::channel();
            for lane in &mut self.lanes {
                let sender = sender.clone();
                let next_group = &next_group;
                scope.spawn(move || {
                    while let Some(group) = next_group() {
                        for index in group {
                            if sender.send(RunEvent::Started(index)).is_err() {
                                return;
                            }
                            let began = Instant::now();
                            let report = lane.run(&scenarios[index]);
                            let finished =
                                RunEvent::Finished(index, Box::new(report), began.elapsed());
                            if sender.send(finished).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
            drop(sender);
            for happened in receiver {
                event(happened);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::kernel::Catalog;
    use crate::scenario::load::{ProfileSources, parse_scenario};

    fn scenario(name: &str, gpus: &str) -> Scenario {
        let text = format!(
            "format = 1\ndescription = \"x\"\n[host]\ntorch = \"cuda\"\ngpus = [{gpus}]\n\
             [[step]]\naction = \"normalize\"\ndevice = \"cuda\"\n"
        );
        parse_scenario(
            Path::new(name),
            &text,
            &Catalog::reference(),
            &ProfileSources::shipped(),
        )
        .expect("a valid scenario")
    }

    #[test]
    fn scenarios_of_one_host_are_dealt_together_and_the_heaviest_host_first() {
        let scenarios = [
            scenario("a", "\"sm_90\""),
            scenario("b", "\"sm_90\", \"sm_90\""),
            scenario("c", "\"sm_90\""),
            scenario("d", "\"sm_90\""),
        ];
        assert_eq!(by_host(&scenarios, 1), vec![vec![0, 2, 3], vec![1]]);
    }

    #[test]
    fn no_more_processes_start_than_there_is_work_for() {
        let jobs = NonZeroUsize::new(8).expect("non-zero");
        let one = [scenario("a", "\"sm_90\"")];
        assert_eq!(useful_lanes(&one, jobs).get(), 1);
        assert_eq!(useful_lanes(&[], jobs).get(), 1);
        let two_hosts = [scenario("a", "\"sm_90\""), scenario("b", "\"sm_80\"")];
        assert_eq!(useful_lanes(&two_hosts, jobs).get(), 2);
        assert_eq!(useful_lanes(&two_hosts, NonZeroUsize::MIN).get(), 1);
    }

    #[test]
    fn a_host_with_more_than_its_share_is_cut_into_pieces() {
        let scenarios: Vec<Scenario> = (0..8)
            .map(|i| scenario(&format!("s{i}"), "\"sm_90\""))
            .collect();
        // 8 scenarios of 2 units each over 2 lanes: pieces of at most 16 / 8 = 2 units, one scenario each
        let pieces = by_host(&scenarios, 2);
        assert_eq!(pieces.len(), 8);
        assert!(pieces.iter().all(|piece| piece.len() == 1));
        assert_eq!(by_host(&scenarios, 1), vec![(0..8).collect::<Vec<_>>()]);
    }
}
