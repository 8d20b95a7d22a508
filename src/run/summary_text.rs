//! The summary `stallscope run` prints after the program ends: the profile's headline figures
//! and where the profile is.

use super::*;

pub(super) fn print_summary(
    root: Option<&Path>,
    expected: &Path,
    run_dir: &Path,
    others: usize,
    status: &std::process::ExitStatus,
) {
    let style = Style::for_stderr();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", style.bold("── stallscope ──"));
    if let Some(sig) = status.signal() {
        let _ = writeln!(
            err,
            "the program was killed by signal {sig}{}",
            if status.core_dumped() {
                " (core dumped)"
            } else {
                ""
            }
        );
    }
    match root.map(|p| (p, crate::model::Model::read(p))) {
        None => {
            let _ = writeln!(
                err,
                "no profile was written to {}: the program ended before the interposer started, or could not create the file",
                expected.display()
            );
        }
        Some((path, Err(e))) => {
            let _ = writeln!(
                err,
                "the profile {} could not be read: {e:#}",
                path.display()
            );
        }
        Some((path, Ok(a))) => summary_lines(&mut err, &a, path),
    }
    if others > 0 {
        let _ = writeln!(
            err,
            "other processes: {others} profiles in {}/",
            run_dir.display()
        );
    }
}

/// The closing summary: the report's own figures (the same analysis), in a few lines.
pub(super) fn summary_lines(err: &mut impl Write, a: &crate::model::Model, path: &Path) {
    let s = &a.summary;
    let _ = writeln!(
        err,
        "wall time:    {}   threads: {}",
        fmt_ns(s.wall_ns),
        fmt_count(s.thread_count())
    );
    if let Some(b) = s.sandbox {
        let _ = writeln!(err, "sandboxed:    {}", b.describe());
    }
    // The allocator's share as the report's header gives it: of the threads' CPU time where CPU
    // samples measured it (`alloc_on_cpu`; its calls' timed length includes waits inside them,
    // and for calls of a few nanoseconds mostly the clock that times them: bignum_pell read
    // "100.0% of thread time inside" beside a finding of 69.4% of its CPU time), else of their
    // life inside the calls.
    let (share, of) = if s.alloc_on_cpu {
        (s.alloc_share_of_cpu(), "of the threads' CPU time")
    } else {
        (s.alloc_share_of_life(), "of thread time inside")
    };
    let aside = s
        .alloc_sampled_aside()
        .map_or(String::new(), |(share, samples)| {
            format!(
                " ({} of their CPU time by only {} CPU samples, the figure the findings take)",
                fmt_pct(share),
                fmt_count(samples)
            )
        });
    let _ = writeln!(
        err,
        "allocator:    {} calls, {} {of}{aside}",
        fmt_count(s.alloc_calls()),
        fmt_pct(share)
    );
    // Futex words are only named by the report (it reads the waiters' stacks to tell a runtime's
    // lock from a condition or an idle worker): here they are counted, not ranked with the locks.
    let futex: Vec<_> = s.locks.iter().filter(|l| l.kind == "futex").collect();
    if !futex.is_empty() {
        let _ = writeln!(
            err,
            "futex waits:  {} waits on {} words, {} waiting (report names them: locks, conditions, idle workers)",
            fmt_count(summary::sum(futex.iter().map(|l| l.contended))),
            futex.len(),
            fmt_ns(summary::sum(futex.iter().map(|l| l.wait_ns)))
        );
    }
    match s
        .locks
        .iter()
        .find(|l| l.contended > 0 && !matches!(l.kind, "futex" | "omp-region" | "omp-region-site"))
    {
        Some(l) if l.runtime.is_some() => {
            let _ = writeln!(
                err,
                "top lock:     {} {}: {} waits, {} waiting",
                l.kind_text(),
                l.runtime
                    .as_ref()
                    .and_then(|r| r.taken_at.as_ref())
                    .map_or_else(
                        || format!("{:#x}", l.address),
                        |f| format!("taken in {}", f.short_text())
                    ),
                fmt_count(l.contended),
                fmt_ns(l.wait_ns)
            );
        }
        Some(l) => {
            let _ = writeln!(
                err,
                "top lock:     {} {:#x}: {} of {} acquisitions contended, {} waiting",
                l.kind_text(),
                l.address,
                fmt_count(l.contended),
                fmt_count(l.acquisitions),
                fmt_ns(l.wait_ns)
            );
        }
        None if s.lock_wait_ns() > 0 => {
            let _ = writeln!(
                err,
                "locks:        {} waiting ({} of thread time), in locks taken inside libraries (the report names them)",
                fmt_ns(s.lock_wait_ns()),
                fmt_pct(s.lock_wait_share_of_life())
            );
        }
        None => {
            let _ = writeln!(err, "locks:        no thread waited for a lock");
        }
    }
    // The report's findings, most severe first: what the figures above mean.
    let shown: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.severity != crate::findings::Severity::Info)
        .take(3)
        .collect();
    for (i, f) in shown.iter().enumerate() {
        let _ = writeln!(
            err,
            "{}{:<6} {}",
            if i == 0 {
                "findings:     "
            } else {
                "              "
            },
            f.severity.label(),
            f.title
        );
    }
    if let Some(note) = s.python.as_ref().and_then(|p| p.note.as_deref()) {
        let _ = writeln!(err, "python:       {note}");
    }
    if s.no_unwinder {
        let _ = writeln!(
            err,
            "stacks:       NONE: libgcc_s.so.1 (the unwinder) could not be loaded beside the program's C library; see `stallscope report`"
        );
    }
    if !s.complete && s.signal.is_none() && !s.ended_by_exec {
        let why = match s.exit_code {
            Some(code) => format!(
                "the program exited with status {code}, but its last data was not written; data up to its last flush"
            ),
            None => "the program did not exit cleanly; data up to its last flush".to_string(),
        };
        let _ = writeln!(err, "partial:      {why}");
    }
    let _ = writeln!(
        err,
        "profile:      {}   (stallscope report {})",
        path.display(),
        path.display()
    );
}
