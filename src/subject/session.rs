//! The conversation with a subject process: starting it and saying hello, one question and its answer at a
//! time with a timeout, and every way that fails described with the subject's stderr.

use std::process::Command;
use std::time::Duration;

use crate::child::{Connection, Incoming, Silence};
use crate::subject::protocol::{FromSubject, PROTOCOL, ToSubject};
use crate::subject::{SubjectError, SubjectSpec};

use super::handshake::{Capabilities, handshake};

/// Why one scenario's exchange broke down.
pub(super) struct ExchangeFault {
    pub(super) expected: String,
    pub(super) problem: String,
}

/// One scenario's conversation with a running subject.
pub(super) struct Session<'a> {
    pub(super) connection: &'a mut Connection,
    pub(super) timeout: Duration,
}

impl Session<'_> {
    /// Sends `message` and reads one answer; every way that fails is an [`ExchangeFault`].
    pub(super) fn ask(
        &mut self,
        message: &ToSubject,
        expected: &str,
    ) -> Result<(FromSubject, String), ExchangeFault> {
        let fault = |problem: String| ExchangeFault {
            expected: expected.to_string(),
            problem,
        };
        let line = serde_json::to_string(message).map_err(|e| fault(e.to_string()))?;
        if self.connection.send(&line).is_err() {
            return Err(fault(self.exited("stopped reading its input")));
        }
        receive(self.connection, self.timeout).map_err(fault)
    }

    pub(super) fn exited(&mut self, what: &str) -> String {
        exited(self.connection, what)
    }
}

pub(super) fn exited(connection: &mut Connection, what: &str) -> String {
    match connection.exit_status() {
        Some(status) => format!("the subject {what}: it exited ({status})"),
        None => format!("the subject {what}"),
    }
}

/// Reads and parses one answer.
pub(super) fn receive(
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

pub(super) fn out_of_order(expected: String, line: &str) -> ExchangeFault {
    ExchangeFault {
        expected,
        problem: format!("an answer out of order: `{}`", clip(line)),
    }
}

/// The first 300 characters of a line, for messages.
pub(super) fn clip(line: &str) -> String {
    let mut clipped: String = line.chars().take(300).collect();
    if clipped.len() < line.len() {
        clipped.push('…');
    }
    clipped
}

/// The stderr tail as an indented block after a newline, or nothing.
pub(super) fn stderr_block(tail: &str) -> String {
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
pub(super) fn connect(
    spec: &SubjectSpec,
    live: bool,
) -> Result<(Connection, Capabilities), SubjectError> {
    let Some((program, args)) = spec.command.split_first() else {
        return Err(SubjectError::EmptyCommand {
            subject: spec.name.clone(),
        });
    };
    if let Some(source) = &spec.source {
        if !source.is_dir() {
            return Err(SubjectError::Source {
                path: source.clone(),
                message: "expected a folder, found none (the subject file's `source`)".into(),
            });
        }
    }
    let mut command = Command::new(program);
    command.args(args).envs(spec.environment());
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
