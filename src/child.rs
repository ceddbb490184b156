//! One child process spoken to in lines: lines in on stdin, lines out of stdout read on a thread (so every wait has
//! a timeout), the tail of stderr collected on another; killed when dropped.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest line a subject may print (the protocol's limit).
pub const MAX_LINE: usize = 1 << 20;
/// How much of stderr is kept for failure reports.
pub const STDERR_TAIL: usize = 4096;

/// What reading stdout produced.
#[derive(Debug)]
pub enum Incoming {
    /// A line, without its newline.
    Line(String),
    /// A line longer than [`MAX_LINE`] (its first bytes).
    TooLong(String),
    /// Stdout closed: the subject exited or closed it.
    Closed,
}

/// Why no line came.
#[derive(Debug)]
pub enum Silence {
    /// Nothing within the timeout.
    Timeout(Duration),
    /// Stdout is closed.
    Closed,
}

/// A started subject process.
pub struct Connection {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Incoming>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    stderr_done: Arc<AtomicBool>,
    closed: bool,
}

impl Connection {
    /// Starts `command` with piped stdin, stdout and stderr.
    pub fn spawn(mut command: Command) -> std::io::Result<Self> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let stdin = child.stdin.take();
        let (sender, lines) = channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stdout);
                loop {
                    let mut buffer = Vec::new();
                    let read = (&mut reader)
                        .take(MAX_LINE as u64 + 1)
                        .read_until(b'\n', &mut buffer);
                    let message = match read {
                        Ok(0) | Err(_) => Incoming::Closed,
                        Ok(_) if buffer.len() > MAX_LINE && !buffer.ends_with(b"\n") => {
                            buffer.truncate(200);
                            Incoming::TooLong(String::from_utf8_lossy(&buffer).into_owned())
                        }
                        Ok(_) => {
                            while buffer.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                                buffer.pop();
                            }
                            Incoming::Line(String::from_utf8_lossy(&buffer).into_owned())
                        }
                    };
                    let last = !matches!(message, Incoming::Line(_));
                    if sender.send(message).is_err() || last {
                        return;
                    }
                }
            });
        }
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_done = Arc::new(AtomicBool::new(false));
        if let Some(mut pipe) = child.stderr.take() {
            let tail = Arc::clone(&stderr);
            let done = Arc::clone(&stderr_done);
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                    tail.extend(&chunk[..n]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..excess);
                }
                done.store(true, Ordering::SeqCst);
            });
        } else {
            stderr_done.store(true, Ordering::SeqCst);
        }
        Ok(Self {
            child,
            stdin,
            lines,
            stderr,
            stderr_done,
            closed: false,
        })
    }

    /// Writes one line; an error means the subject no longer reads (it exited or closed stdin).
    pub fn send(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        stdin.write_all(line.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()
    }

    /// The next non-empty line, waiting at most `timeout`.
    pub fn receive(&mut self, timeout: Duration) -> Result<Incoming, Silence> {
        if self.closed {
            return Err(Silence::Closed);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Incoming::Line(line)) if line.trim().is_empty() => continue,
                Ok(Incoming::Closed) | Err(RecvTimeoutError::Disconnected) => {
                    self.closed = true;
                    return Err(Silence::Closed);
                }
                Ok(other) => return Ok(other),
                Err(RecvTimeoutError::Timeout) => return Err(Silence::Timeout(timeout)),
            }
        }
    }

    /// How the process ended, if it has (waits briefly for an exit already under way).
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => return None,
            }
        }
    }

    /// Kills the process (if still running) and returns the last [`STDERR_TAIL`] bytes of its stderr.
    pub fn kill(&mut self) -> String {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The stderr thread finishes once the pipe closes; a grandchild holding it open is not waited for.
        let deadline = Instant::now() + Duration::from_millis(500);
        while !self.stderr_done.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stderr_tail()
    }

    /// The last bytes of stderr so far, as text.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let bytes: Vec<u8> = tail.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Closes stdin (the subject's signal to exit) and waits up to `grace` before killing it.
    pub fn close(mut self, grace: Duration) {
        self.stdin = None;
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.stdin = None;
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
