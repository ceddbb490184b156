//! `--target answers`: hostile subject answers to devsim's protocol client. Seeds are the lines of
//! `fuzz/answers/seeds.jsonl`: handshakes, read as devsim reads one at start, and step answers, judged against
//! a step of a corpus scenario as the client judges one mid-scenario (`@S@`/`@N@` become that scenario's name
//! and the step's number after mutation, so most inputs reach the judge rather than the order check).

use devsim::scenario::Scenario;
use devsim::subject::{Capabilities, handshake, judge_answer};

/// Fragments that reach corners of the protocol's JSON.
pub const TOKENS: &[&str] = &[
    "\"ok\":true,",
    "\"ok\":false,",
    "\"error\":{\"kind\":\"no-such-device\",\"message\":\"x\"},",
    "\"ordinal\":null,",
    "\"ordinal\":4294967296,",
    "\"ran_on\":\"cpu\",",
    "\"ran_on\":-1,",
    "\"lands_on\":\"gpu\",",
    "\"current_after\":99,",
    "\"trace\":[{\"event\":\"launch\"}],",
    "{\"event\":\"set_device\",\"device\":4294967295}",
    "\"numerics\":{\"max_abs_error\":NaN,\"rtol\":0,\"atol\":0,\"within\":true},",
    "\"retained_bytes\":1e30,",
    "\"protocol\":3,",
    "\"protocol\":2,",
    "\"levels\":[\"reference\"],",
    "\"kernels\":[\"gptq_torch\",\"gptq_torch\"],",
    "{\"name\":\"x\",\"families\":[\"amd\"]}",
    "\"observes\":{\"warmup\":[\"ok\"]},",
    "\"\\u0000\\ud800\"",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "\"@S@\"",
    "@N@",
    "1e999",
    "-0",
];

/// What the answers target judges against: the seed handshake's capabilities and the corpus's scenarios.
pub struct Answers {
    capabilities: Capabilities,
    scenarios: Vec<Scenario>,
}

impl Answers {
    /// From the first seed (a valid handshake) and the scenarios that loaded.
    pub fn new(first_seed: &[u8], scenarios: Vec<Scenario>) -> Result<Self, String> {
        let line = String::from_utf8_lossy(first_seed);
        let capabilities = handshake("fuzz", line.trim()).map_err(|e| e.to_string())?;
        if scenarios.is_empty() {
            return Err("no scenario loaded to judge answers against".into());
        }
        Ok(Self {
            capabilities,
            scenarios,
        })
    }

    /// One input: a handshake, or an answer to step `pick` (modulo the corpus) of some scenario. `true` when
    /// devsim accepted the line.
    pub fn exercise(&self, bytes: &[u8], pick: usize) -> bool {
        let text = String::from_utf8_lossy(bytes);
        if text.contains("\"handshake\"") {
            return handshake("fuzz", &text).is_ok();
        }
        let scenario = &self.scenarios[pick % self.scenarios.len()];
        let number = 1 + (pick / self.scenarios.len()) % scenario.steps.len().max(1);
        let line = text
            .replace(
                "@S@",
                &scenario.name.replace('\\', "\\\\").replace('"', "\\\""),
            )
            .replace("@N@", &number.to_string());
        match judge_answer(&self.capabilities, scenario, number, &line) {
            Ok(judged) => {
                assert_eq!(judged.step.number, number);
                true
            }
            Err(why) => {
                assert!(!why.is_empty(), "a refusal says why");
                false
            }
        }
    }
}
