//! A scripted subject for the protocol tests: the test binary runs itself as this subject when
//! `DEVSIM_FIXTURE_SUBJECT` names a mode. `good` implements `normalize` and `resolve` (through devsim's
//! own normalization, so its answers are right by construction); every other mode breaks the protocol or
//! the answers in one deliberate way. `live` is `good` that also says `live` in its handshake (it answers
//! live scenarios as it answers simulated ones); `live-unreachable` says `live` too but answers every live
//! scenario `unsupported`, as a subject whose torch sees no GPU would.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

use devsim::vocab::TorchDevice;
use devsim::{Family, Selector, TorchBuild, normalize, to_torch_device};
use serde_json::{Value, json};

/// The variable naming the mode.
pub const MODE: &str = "DEVSIM_FIXTURE_SUBJECT";
/// A scratch folder shared by the processes of one test (for `crash-once`).
pub const STATE: &str = "DEVSIM_FIXTURE_STATE";

fn say(message: Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{message}");
    let _ = out.flush();
}

fn hang() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// Serves the protocol in `mode` until stdin closes; returns the exit code.
pub fn serve(mode: &str) -> i32 {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(Ok(hello)) = lines.next() else {
        return 1;
    };
    eprintln!("fixture subject: mode {mode}");
    let hello = serde_json::from_str::<Value>(&hello).unwrap_or(Value::Null);
    let offered = hello["protocol"].as_u64().unwrap_or(1);
    let live = matches!(mode, "live" | "live-unreachable");
    // A live session says so in `hello`, and only as `true`.
    let live_session = match hello.get("live") {
        None => false,
        Some(Value::Bool(true)) => true,
        Some(other) => {
            eprintln!("fixture subject: unexpected `live` in hello: {other}");
            return 1;
        }
    };
    let protocol = match mode {
        "wrong-version" => 3,
        "v1" => 1,
        _ => offered.min(2),
    };
    // Its own contract: Marlin declares NVIDIA only, the torch kernel every family.
    let declared = |name: &str, families: &[&str]| json!({"name": name, "families": families});
    let kernels: Vec<Value> = match mode {
        "unknown-kernel" => vec![
            declared("gptq_torch", &["all"]),
            declared("gptq_tourch", &["all"]),
        ],
        "declared-twice" => vec![
            declared("gptq_torch", &["all"]),
            declared("gptq_torch", &["cpu"]),
        ],
        "unknown-family" => vec![declared("gptq_torch", &["amd"])],
        "bare-name-v2" => vec![json!("gptq_torch")],
        "misspelled-declaration" => vec![json!({"name": "gptq_torch", "famillies": ["all"]})],
        "v1" => vec![],
        _ => vec![
            declared("gptq_marlin", &["cuda"]),
            declared("gptq_torch", &["all"]),
        ],
    };
    match mode {
        "silent" => hang(),
        "garbage-handshake" => {
            println!("Loading GPTQModel... done");
            return 0;
        }
        _ => {}
    }
    let mut handshake = json!({
        "type": "handshake",
        "protocol": protocol,
        "subject": {"name": "fixture", "version": "0.0.1"},
        "actions": ["normalize", "resolve"],
        "kernels": kernels,
        "events": ["device_count", "gate:normalize"],
        "messages": if mode == "own-wording" { "own" } else { "devsim" },
    });
    if protocol >= 2 {
        let target = [
            "ok",
            "error",
            "family",
            "ordinal",
            "torch_device",
            "current_after",
        ];
        handshake["actions"] = json!(["normalize", "resolve", "validate"]);
        // It reproduces devsim's reference model, wording included, unless it words errors its own way.
        handshake["levels"] = if mode == "own-wording" {
            json!(["contract"])
        } else {
            json!(["contract", "reference"])
        };
        handshake["observes"] =
            json!({"normalize": target, "resolve": target, "validate": ["ok", "error"]});
        if live {
            handshake["live"] = json!(true);
        }
        handshake["packages"] = json!(["fixture_project"]);
    }
    say(handshake);
    let crash_once = std::env::var_os(STATE).map(|dir| PathBuf::from(dir).join("crashed"));
    let mut host = Value::Null;
    let mut in_live = false;
    for line in lines {
        let Ok(line) = line else { return 1 };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            return 1;
        };
        let scenario = message["scenario"].clone();
        match message["type"].as_str() {
            Some("scenario") => {
                host = message["host"].clone();
                // devsim sends `live` only to a subject that declared it, only as `true`, and on every
                // scenario of a live session.
                in_live = match message.get("live") {
                    None => false,
                    Some(Value::Bool(true)) if live => true,
                    Some(other) => {
                        eprintln!("fixture subject: unexpected `live`: {other}");
                        return 1;
                    }
                };
                if in_live != live_session {
                    eprintln!(
                        "fixture subject: a scenario with live = {in_live} in a session whose hello said live = {live_session}"
                    );
                    return 1;
                }
                if mode == "live-unreachable" && in_live {
                    say(json!({"type": "unsupported", "scenario": message["name"],
                               "reason": "torch sees no GPU"}));
                } else if mode == "unsupported-host" {
                    say(json!({"type": "unsupported", "scenario": message["name"],
                               "reason": "fixture cannot simulate this host"}));
                } else {
                    say(json!({"type": "ready", "scenario": message["name"]}));
                }
            }
            Some("end") => say(json!({"type": "done", "scenario": scenario})),
            Some("step") => {
                let number = message["number"].as_u64().unwrap_or(0);
                // `repeat` comes only in a live scenario, and only above 1.
                if let Some(repeat) = message.get("repeat") {
                    if !in_live || repeat.as_u64().is_none_or(|n| n < 2) {
                        eprintln!("fixture subject: unexpected `repeat`: {repeat}");
                        return 1;
                    }
                }
                let mut answer = good(&host, &message);
                match mode {
                    "crash" => {
                        eprintln!("fixture subject: crashing on purpose at step {number}");
                        std::process::exit(3);
                    }
                    "crash-once" => {
                        if let Some(marker) = &crash_once {
                            if !marker.exists() {
                                let _ = std::fs::write(marker, "crashed");
                                eprintln!("fixture subject: crashing once");
                                std::process::exit(3);
                            }
                        }
                    }
                    "hang" => hang(),
                    "garbage" => {
                        println!("Traceback (most recent call last): oops");
                        continue;
                    }
                    "out-of-order" => answer["number"] = json!(number + 1),
                    "unknown-field" => answer["confidence"] = json!(0.9),
                    "wrong-type" => answer["ok"] = json!("yes"),
                    "exit-mid" if number >= 2 => {
                        eprintln!("fixture subject: leaving mid-scenario");
                        std::process::exit(0);
                    }
                    "wrong" => answer["family"] = json!("cuda"),
                    "admits-undeclared" if message["action"] == "validate" => {
                        answer = json!({"type": "observed", "scenario": scenario, "number": number,
                                        "ok": true, "trace": []});
                    }
                    "undeclared-event" => answer["trace"] = json!([{"event": "launch"}]),
                    // `decided_by` naming a frame outside the declared package, or a file that is not there
                    "decided-outside" => {
                        answer["decided_by"] = json!({"family": {"module": "torch.cuda",
                            "function": "device_count", "line": 1, "file": file!()}});
                    }
                    "decided-nowhere" => {
                        answer["decided_by"] = json!({"family": {"module": "fixture_project.devices",
                            "function": "normalize", "line": 1, "file": "/nonexistent/devices.py"}});
                    }
                    "unsupported-step" => {
                        answer = json!({"type": "unsupported", "scenario": scenario,
                                        "number": number, "reason": "fixture needs a real GPU here"});
                    }
                    _ => {}
                }
                say(answer);
            }
            _ => return 1,
        }
    }
    0
}

fn build_of(host: &Value) -> TorchBuild {
    match host["torch"].as_str() {
        Some("cuda") => TorchBuild::Cuda,
        Some("hip") => TorchBuild::Hip,
        _ => TorchBuild::Cpu,
    }
}

/// Validation by the fixture's own declarations: `gptq_marlin` runs on NVIDIA only, `gptq_torch` anywhere.
fn validate(host: &Value, step: &Value) -> Value {
    let visible = host["visible"].as_array().map_or(0, Vec::len) as u32;
    let family = normalize(&selector(&step["device"]), build_of(host), || Ok(visible))
        .map(|target| target.family);
    let declared = match step["kernel"].as_str() {
        Some("gptq_marlin") => vec![Family::Cuda],
        _ => Family::EVERY.to_vec(),
    };
    let mut answer = json!({"type": "observed", "scenario": step["scenario"],
                            "number": step["number"], "trace": []});
    match family {
        Ok(family) if declared.contains(&family) => answer["ok"] = json!(true),
        Ok(family) => {
            answer["ok"] = json!(false);
            answer["error"] = json!({"kind": "unsupported-family",
                                     "message": format!("the fixture's kernel refuses {family}")});
        }
        Err(error) => {
            answer["ok"] = json!(false);
            answer["error"] = json!({"kind": error.kind(), "message": error.to_string()});
        }
    }
    answer
}

/// A selector message as the value devsim's normalization takes.
fn selector(device: &Value) -> Selector {
    match device["form"].as_str() {
        Some("ordinal") => Selector::Ordinal(device["written"].as_i64().unwrap_or(-1)),
        Some("family_enum") => {
            let family = Family::EVERY
                .into_iter()
                .find(|f| Some(f.as_str()) == device["family"].as_str());
            family.map_or(Selector::Text("?".into()), Selector::Family)
        }
        Some("torch_device") => {
            let text = match device["index"].as_u64() {
                Some(index) => format!("{}:{index}", device["device_type"].as_str().unwrap_or("")),
                None => device["device_type"].as_str().unwrap_or("").to_string(),
            };
            text.parse::<TorchDevice>()
                .map_or(Selector::Text(text), Selector::Torch)
        }
        _ => Selector::Text(device["written"].as_str().unwrap_or("").to_string()),
    }
}

/// The right answer to a normalize, resolve or validate step.
fn good(host: &Value, step: &Value) -> Value {
    if step["action"] == "validate" {
        return validate(host, step);
    }
    let build = build_of(host);
    let visible = host["visible"].as_array().map_or(0, Vec::len) as u32;
    let mut trace = Vec::new();
    let asked = std::cell::Cell::new(false);
    let result = normalize(&selector(&step["device"]), build, || {
        asked.set(true);
        Ok(visible)
    });
    if asked.get() {
        trace.push(json!({"event": "device_count"}));
    }
    trace.push(json!({"event": "gate:normalize"}));
    let resolve = step["action"] == "resolve";
    let mut answer = json!({"type": "observed", "scenario": step["scenario"],
                            "number": step["number"], "trace": trace});
    let target = match &result {
        Ok(target) => Some(*target),
        Err(error) => error.target(),
    };
    if let Some(target) = target {
        answer["family"] = json!(target.family.as_str());
        answer["ordinal"] = json!(target.ordinal);
        if resolve || result.is_err() {
            answer["torch_device"] = json!(to_torch_device(&target).to_string());
        }
    }
    match result {
        Ok(_) => answer["ok"] = json!(true),
        Err(error) => {
            answer["ok"] = json!(false);
            answer["error"] = json!({"kind": error.kind(), "message": error.to_string()});
        }
    }
    if build != TorchBuild::Cpu && visible > 0 {
        answer["current_after"] = host["current"].clone();
    }
    answer
}
