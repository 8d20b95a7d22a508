//! Decoding the process's and threads' records: PROCESS, THREAD and FOLDED.

use super::*;

pub(super) fn expect_size(
    payload: &[u8],
    size: usize,
    what: &str,
    pos: usize,
) -> Result<(), ProfileError> {
    if payload.len() != size {
        return err(
            pos,
            format!("{what} record has {} bytes, expected {size}", payload.len()),
        );
    }
    Ok(())
}

pub(super) fn parse_process(payload: &[u8], pos: usize) -> Result<ProcessInfo, ProfileError> {
    if payload.len() < PROCESS_SIZE {
        return err(
            pos,
            format!(
                "process record has {} bytes, expected at least {PROCESS_SIZE}",
                payload.len()
            ),
        );
    }
    let mut f = Fields::new(payload);
    let pid = f.u32();
    let ppid = f.u32();
    let start_realtime_ns = f.u64();
    let start_mono_ns = f.u64();
    let start_ticks = f.u64();
    let ticks_per_sec = f.u64();
    let ncpus = f.u32();
    let timing = f.u32();
    let timing_period = f.u32();
    let flags = f.u32();
    let libc_version = f.text(32);
    let allocator = f.text(64);
    let cmdline_len = f.u32() as usize;
    let exe_len = f.u32() as usize;
    let Some(timing) = Timing::from_u32(timing) else {
        return err(pos, "process record has an unknown timing mode");
    };
    if flags & !PROCESS_KNOWN != 0 || ticks_per_sec == 0 {
        return err(pos, "process record has impossible values");
    }
    if PROCESS_SIZE + cmdline_len + exe_len != payload.len() {
        return err(pos, "process record's string lengths do not match its size");
    }
    let cmdline = f.take(cmdline_len);
    let exe = String::from_utf8_lossy(f.take(exe_len)).into_owned();
    const TITLE_PADDING_ARGS: usize = 3;
    let mut command: Vec<String> = if cmdline.is_empty() {
        Vec::new()
    } else {
        cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    };
    // A program that rewrote its title (PostgreSQL's backends) leaves the rest of the argument
    // area zeroed: dozens of empty arguments after it. A command may end with one or two empty
    // words of its own (`--save ''`), rarely with more.
    let empty_tail = command.iter().rev().take_while(|a| a.is_empty()).count();
    if empty_tail >= TITLE_PADDING_ARGS {
        command.truncate(command.len() - empty_tail);
    }
    Ok(ProcessInfo {
        pid,
        ppid,
        start_realtime_ns,
        start_mono_ns,
        start_ticks,
        ticks_per_sec,
        ncpus,
        timing_exact: timing == Timing::Exact,
        timing_period,
        lock_timing_period: if flags & PROCESS_LOCK_PERIOD != 0 && timing_period > 1 {
            timing_period
                .saturating_mul(LOCK_TIMING_FACTOR)
                .min(LOCK_PERIOD_MAX)
        } else {
            timing_period
        },
        forked: flags & PROCESS_FORKED != 0,
        rwlock_steps: flags & PROCESS_RWLOCK_STEPS != 0,
        mutex_steps: flags & PROCESS_MUTEX_STEPS != 0,
        no_unwinder: flags & PROCESS_NO_UNWINDER != 0,
        heap_unchecked: flags & PROCESS_HEAP_UNCHECKED != 0,
        arenas_unread: flags & PROCESS_ARENAS_UNREAD != 0,
        small_by_count: flags & PROCESS_SMALL_BY_COUNT != 0,
        timing_longer: flags & PROCESS_TIMING_LONGER != 0,
        attached: flags & PROCESS_ATTACHED != 0,
        libc_version,
        allocator,
        command,
        exe,
    })
}

/// A FOLDED record: its header, then a thread record holding the group's sums.
pub(super) fn parse_folded(payload: &[u8], pos: usize) -> Result<ThreadStats, ProfileError> {
    if payload.len() < FOLDED_SIZE {
        return err(pos, format!("folded record has {} bytes", payload.len()));
    }
    let mut f = Fields::new(payload);
    let threads = f.u32();
    let allocating = f.u32();
    let life_ns = f.u64();
    if threads == 0 || allocating > threads {
        return err(pos, "inconsistent folded record");
    }
    let mut t = parse_thread(&payload[FOLDED_SIZE..], pos, Some(threads))?;
    if t.flags & THREAD_ENDED == 0 || t.flags & THREAD_MAIN != 0 {
        return err(
            pos,
            "a folded record holds threads that did not end, or the main thread",
        );
    }
    t.folded = Some(Folded {
        threads,
        allocating,
        life_ns,
    });
    Ok(t)
}

/// `folded`: the threads of the FOLDED record this thread record belongs to (its lock entries
/// say how many of them took each lock: at most that many; 0 in profiles written before the
/// count, read as 1); None: a thread's own record, whose entries hold 0 there.
pub(super) fn parse_thread(
    payload: &[u8],
    pos: usize,
    folded: Option<u32>,
) -> Result<ThreadStats, ProfileError> {
    if payload.len() < THREAD_SIZE {
        return err(
            pos,
            format!(
                "thread record has {} bytes, expected at least {THREAD_SIZE}",
                payload.len()
            ),
        );
    }
    let mut f = Fields::new(payload);
    let serial = f.u32();
    let tid = f.u32();
    let flags = f.u32();
    let nlocks = f.u32() as usize;
    if THREAD_SIZE.checked_add(nlocks.saturating_mul(LOCK_STATS_SIZE)) != Some(payload.len()) {
        return err(
            pos,
            format!("thread record's size does not match its {nlocks} locks"),
        );
    }
    if flags & !THREAD_KNOWN != 0 {
        return err(pos, format!("thread record has unknown flags {flags:#x}"));
    }
    let name = f.text(16);
    let start_mono_ns = f.u64();
    let end_mono_ns = f.u64();
    let cpu_ns = f.u64();
    let lock_wait_ticks = f.u64();
    let fns = read_fn_stats(&mut f, pos)?;
    let mut size_hist = [0u64; SIZE_BUCKETS];
    for v in size_hist.iter_mut() {
        *v = f.u64();
    }
    let mut lat_hist = [[0u64; LAT_BUCKETS]; GROUP_COUNT];
    for group in lat_hist.iter_mut() {
        for v in group.iter_mut() {
            *v = f.u64();
        }
    }
    let mut locks = Vec::with_capacity(nlocks);
    for _ in 0..nlocks {
        let address = f.u64();
        let kind = LockKind::from_u32(f.u32());
        let took = f.u32();
        let threads = match folded {
            None if took == 0 => 1,
            Some(n) if took <= n => took.max(1),
            // The overflow entry (address 0) of a group: interposers before 2026-11-26 counted a
            // thread there once per lock that overflowed; at most every thread of the group.
            Some(n) if address == 0 => n.max(1),
            _ => return err(pos, format!("thread {tid} has a damaged lock entry")),
        };
        let Some(kind) = kind else {
            return err(pos, format!("thread {tid} has a damaged lock entry"));
        };
        let l = LockStats {
            address,
            kind,
            threads,
            acquisitions: f.u64(),
            contended: f.u64(),
            wait_ticks: f.u64(),
            max_wait_ticks: f.u64(),
            timed_holds: f.u64(),
            hold_ticks: f.u64(),
        };
        locks.push(l);
    }
    Ok(ThreadStats {
        serial,
        tid,
        flags,
        name,
        start_mono_ns,
        end_mono_ns,
        cpu_ns,
        lock_wait_ticks,
        fns,
        size_hist,
        lat_hist,
        locks,
        folded: None,
    })
}
