//! Running one command as a fresh process and measuring it.
//!
//! The runner only sees the `Executor` trait, so its scheduling logic is tested with
//! `MockExecutor` and never depends on the machine's timing.

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

/// One process to start: argv (no shell) plus extra environment variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandSpec {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl CommandSpec {
    pub fn new(argv: Vec<String>) -> Self {
        CommandSpec {
            argv,
            env: Vec::new(),
        }
    }

    /// The command as a shell would need it typed, for messages and reports.
    pub fn display(&self) -> String {
        shell_words::join(&self.argv)
    }
}

/// What happened to the stdout of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Discard,
    Capture,
    Inherit,
}

/// How the process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exit code {code}"),
            Exit::Signal(signal) => write!(f, "signal {signal}"),
        }
    }
}

/// Measurements of one finished process, from the wall clock and `wait4`'s rusage.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    pub wall_ns: u64,
    pub user_ns: u64,
    pub system_ns: u64,
    pub max_rss_bytes: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub exit: Exit,
    /// Captured stdout; empty unless `Output::Capture` was asked for.
    pub stdout: Vec<u8>,
}

pub trait Executor {
    fn run(&mut self, command: &CommandSpec, output: Output) -> Result<Measurement>;
}

/// Starts real processes: spawn, then `wait4` for the child's own resource usage.
pub struct ProcessExecutor;

impl Executor for ProcessExecutor {
    fn run(&mut self, command: &CommandSpec, output: Output) -> Result<Measurement> {
        let (program, arguments) = command.argv.split_first().context("empty command")?;
        let mut process = Command::new(program);
        process
            .args(arguments)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        match output {
            Output::Discard => process.stdout(Stdio::null()).stderr(Stdio::null()),
            Output::Capture => process.stdout(Stdio::piped()).stderr(Stdio::null()),
            Output::Inherit => process.stdout(Stdio::inherit()).stderr(Stdio::inherit()),
        };

        let start = Instant::now();
        let mut child = process
            .spawn()
            .with_context(|| format!("cannot start `{}`", command.display()))?;
        let mut stdout = Vec::new();
        if let Some(mut pipe) = child.stdout.take() {
            // Drain before waiting: a child blocked on a full pipe would never exit.
            pipe.read_to_end(&mut stdout)
                .with_context(|| format!("reading the output of `{}`", command.display()))?;
        }
        let (status, usage) = wait4(child.id() as libc::pid_t)?;
        let wall_ns = start.elapsed().as_nanos() as u64;
        // The child is reaped; dropping `child` does not wait again.
        drop(child);

        let exit = if libc::WIFEXITED(status) {
            Exit::Code(libc::WEXITSTATUS(status))
        } else {
            Exit::Signal(libc::WTERMSIG(status))
        };
        Ok(Measurement {
            wall_ns,
            user_ns: timeval_ns(usage.ru_utime),
            system_ns: timeval_ns(usage.ru_stime),
            // Linux reports ru_maxrss in KiB.
            max_rss_bytes: usage.ru_maxrss.max(0) as u64 * 1024,
            minor_faults: usage.ru_minflt.max(0) as u64,
            major_faults: usage.ru_majflt.max(0) as u64,
            exit,
            stdout,
        })
    }
}

fn wait4(pid: libc::pid_t) -> Result<(libc::c_int, libc::rusage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data, so all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our own unreaped child; both pointers are valid for the call.
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped == pid {
            return Ok((status, usage));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            bail!("wait4 on process {pid} failed: {error}");
        }
    }
}

fn timeval_ns(time: libc::timeval) -> u64 {
    time.tv_sec.max(0) as u64 * 1_000_000_000 + time.tv_usec.max(0) as u64 * 1_000
}

/// Test double: answers from a function of (command, how many times it ran before),
/// and records the order of the calls.
#[cfg(test)]
pub struct MockExecutor<F: FnMut(&CommandSpec, usize) -> Measurement> {
    pub respond: F,
    pub calls: Vec<CommandSpec>,
}

#[cfg(test)]
impl<F: FnMut(&CommandSpec, usize) -> Measurement> MockExecutor<F> {
    pub fn new(respond: F) -> Self {
        MockExecutor {
            respond,
            calls: Vec::new(),
        }
    }
}

#[cfg(test)]
impl<F: FnMut(&CommandSpec, usize) -> Measurement> Executor for MockExecutor<F> {
    fn run(&mut self, command: &CommandSpec, _output: Output) -> Result<Measurement> {
        let previous = self.calls.iter().filter(|c| *c == command).count();
        self.calls.push(command.clone());
        Ok((self.respond)(command, previous))
    }
}

/// A successful measurement with the given wall time, for tests.
#[cfg(test)]
pub fn measurement_with_wall(wall_ns: u64) -> Measurement {
    Measurement {
        wall_ns,
        user_ns: wall_ns / 2,
        system_ns: wall_ns / 10,
        max_rss_bytes: 4 << 20,
        minor_faults: 100,
        major_faults: 0,
        exit: Exit::Code(0),
        stdout: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(words: &[&str]) -> CommandSpec {
        CommandSpec::new(words.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn process_executor_reports_exit_and_captures_output() {
        let mut executor = ProcessExecutor;
        let m = executor
            .run(&spec(&["sh", "-c", "echo hello; exit 3"]), Output::Capture)
            .unwrap();
        assert_eq!(m.exit, Exit::Code(3));
        assert_eq!(m.stdout, b"hello\n");
        let m = executor
            .run(&spec(&["sh", "-c", "kill -9 $$"]), Output::Discard)
            .unwrap();
        assert_eq!(m.exit, Exit::Signal(9));
    }

    #[test]
    fn process_executor_measures_the_child_not_the_parent() {
        let mut executor = ProcessExecutor;
        // The shell holds a 32 MB string: its peak RSS and fault count must show it.
        let script = "x=$(head -c 32000000 /dev/zero | tr '\\0' a); sleep 0.05";
        let m = executor
            .run(&spec(&["sh", "-c", script]), Output::Discard)
            .unwrap();
        assert!(m.exit.success(), "{m:?}");
        assert!(m.wall_ns >= 50_000_000, "{m:?}");
        assert!(m.max_rss_bytes >= 32_000_000, "{m:?}");
        assert!(m.minor_faults >= 32_000_000 / 4096, "{m:?}");
        assert!(m.user_ns + m.system_ns > 0, "{m:?}");
        let mut command = spec(&["sh", "-c", "echo \"$STALLSCOPE_TEST_VAR\""]);
        command
            .env
            .push(("STALLSCOPE_TEST_VAR".into(), "from-env".into()));
        let m = executor.run(&command, Output::Capture).unwrap();
        assert_eq!(m.stdout, b"from-env\n");
    }

    #[test]
    fn missing_program_is_an_error_naming_it() {
        let error = ProcessExecutor
            .run(&spec(&["/nonexistent/program", "x"]), Output::Discard)
            .unwrap_err();
        assert!(format!("{error:#}").contains("/nonexistent/program"));
    }
}
