//! Thread-state sample records (SS_REC_SAMPLING and SS_REC_SAMPLES of preload/ss_format.h): how
//! sampling ran, and the samples.

use super::format::{
    LockKind, NOTIFY_BROADCAST, NOTIFY_REWAIT, NOTIFY_SEQ_MASK, SAMPLES_SIZE, SAMPLING_KNOWN,
    SAMPLING_NO_SIGNAL, SAMPLING_NO_TIMERS, SAMPLING_SIZE, SCHED_POINT_SIZE, SCHED_SIZE, WAIT_SIZE,
    WAITS_SIZE,
};
use super::reader::{Fields, ProfileError, err};

/// Cpu: the thread's CPU-time timer fired while it ran `pc`; Wall: the thread was found not
/// running (its state and system call read from /proc); Kernel: the thread ran (by its kernel
/// CPU clock) but blocks the sampling signal: a weight only, no instruction or stack.
pub use super::format::SampleKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The serial of the thread record it belongs to.
    pub serial: u32,
    pub mono_ns: u64,
    pub pc: u64,
    /// The callers' stack id (cpu: unwound; wall: words of the stack that point into code).
    pub stack: Option<u32>,
    /// The thread time it stands for.
    pub weight_ns: u64,
    pub kind: SampleKind,
    /// Wall samples: the /proc state letter (S sleeping, D uninterruptible, T stopped, ...).
    pub state: Option<char>,
    /// Wall samples: the system call the thread is in.
    pub syscall: Option<u32>,
    /// Wall samples: the low 32 bits of the system call's second argument (a futex's op).
    pub arg: u32,
    /// Wall samples: the system call's first argument (a futex's word); CPU samples: the
    /// interrupted RDI, that argument only where the pc is at or right after a `syscall`
    /// instruction. 0: none (and in files of format version 2).
    pub object: u64,
}

impl Sample {
    /// A sample off a CPU whose system call the sampler could not read (`/proc` refused it: the
    /// process made itself non-dumpable, as a privilege drop does): what it waited in is unknown.
    pub fn blind(&self) -> bool {
        self.kind == SampleKind::Wall
            && self.syscall == Some(u32::from(super::format::SYSCALL_UNKNOWN) - 1)
    }
}

/// What a thread waited for: a lock (the other end is its owner when the wait began), a
/// condition variable or a semaphore (the thread that woke it), a join (the joined thread).
pub use super::format::WaitKind;

/// One blocking wait of a thread (SS_REC_WAITS), with the other end of its wait-for edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// The serial of the waiting thread's record.
    pub serial: u32,
    pub start_mono_ns: u64,
    pub end_mono_ns: u64,
    /// The lock's, condition variable's or semaphore's address (join: 0).
    pub object: u64,
    /// The tid at the other end (None: unknown).
    pub other_tid: Option<u32>,
    pub kind: WaitKind,
    /// Lock waits: the kind of lock.
    pub lock_kind: Option<LockKind>,
    /// Condition and semaphore waits: the notification that woke it (waits woken by one
    /// notification share it), None when unknown or in profiles written before 2026-11-25.
    pub notification: Option<Notification>,
    /// Condition waits: the thread began it without having released the mutex since its previous
    /// wait on the same condition variable returned: that wake-up found no work.
    pub rewait: bool,
    /// Futex and mutex waits: how long before the wait's end its waker's wake began (the wait's
    /// tail after the release, while the waiter woke), to the microsecond; None when unknown or in
    /// profiles written before 2026-11-26 (mutex waits: before that day's 19:00 UTC).
    pub woken_before_end_ns: Option<u64>,
}

impl Wait {
    /// The end of the part of the wait before its waker's wake: where what the other thread did
    /// stops being what the waiter waited for.
    pub fn woken_at_ns(&self) -> u64 {
        self.end_mono_ns
            .saturating_sub(self.woken_before_end_ns.unwrap_or(0))
            .max(self.start_mono_ns)
    }
}

/// A run of parallel regions one thread started (an OpenMP region entered again and again within
/// a millisecond is one run): not a wait, read from the same record for the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionRun {
    /// The serial of the thread that started the regions (the team's master).
    pub serial: u32,
    pub start_mono_ns: u64,
    pub end_mono_ns: u64,
    /// A run of TBB algorithms (reported through ITT) rather than OpenMP regions.
    pub tbb: bool,
    /// The region's outlined body: the address the lock table names the region by; TBB: the
    /// id of the caller's stack at the algorithm's begin (0: none).
    pub body: u64,
    /// Regions in the run.
    pub regions: u32,
    /// The team's share of its time in the run spent at the regions' closing barriers.
    pub barrier_share: f64,
}

/// The notification that ended a condition or semaphore wait: its sequence number (the low 15
/// bits of the waker's) and whether it was a broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Notification {
    pub seq: u16,
    pub broadcast: bool,
}

impl Notification {
    fn from_field(v: u16) -> Option<Notification> {
        let seq = v & NOTIFY_SEQ_MASK;
        (seq != 0).then_some(Notification {
            seq,
            broadcast: v & NOTIFY_BROADCAST != 0,
        })
    }
}

/// Appends the waits of one WAITS record to `out`, its runs of parallel regions to `runs`, and
/// adds its dropped count to `dropped`.
pub fn parse_waits(
    payload: &[u8],
    pos: usize,
    out: &mut Vec<Wait>,
    runs: &mut Vec<RegionRun>,
    dropped: &mut u64,
) -> Result<(), ProfileError> {
    if payload.len() < WAITS_SIZE {
        return err(pos, "waits record is too short");
    }
    let mut f = Fields::new(payload);
    let serial = f.u32();
    let count = f.u32() as usize;
    let lost = f.u64();
    if (count == 0 && lost == 0) || payload.len() != WAITS_SIZE + count * WAIT_SIZE {
        return err(
            pos,
            format!(
                "waits record of {} bytes cannot hold {count} waits",
                payload.len()
            ),
        );
    }
    *dropped = dropped.saturating_add(lost);
    for _ in 0..count {
        let start_mono_ns = f.u64();
        let end_mono_ns = f.u64();
        let object = f.u64();
        let other_tid = f.u32();
        let rest = f.take(4);
        let (kind, lock_kind, notification) =
            (rest[0], rest[1], u16::from_le_bytes([rest[2], rest[3]]));
        let kind = WaitKind::from_u32(kind.into());
        let lock_kind = (lock_kind != 0)
            .then(|| LockKind::from_u32(lock_kind.into()))
            .flatten();
        // Only a woken wait names a notification, a broadcast only with its sequence number, and
        // only a condition wait can follow a wake-up that found no work.
        let broadcast_alone =
            notification & NOTIFY_BROADCAST != 0 && notification & NOTIFY_SEQ_MASK == 0;
        let consistent = match kind {
            // A mutex wait's field is the microseconds from the wake of the release that let it
            // in to its end, as a futex wait's is from its waker's wake; other locks' is 0.
            Some(WaitKind::Lock) => {
                lock_kind.is_some_and(|k| k != LockKind::Futex)
                    && (notification == 0 || lock_kind == Some(LockKind::Mutex))
            }
            Some(WaitKind::Futex) => lock_kind == Some(LockKind::Futex),
            Some(WaitKind::Join) => rest[1] == 0 && notification == 0,
            Some(WaitKind::Semaphore) => {
                rest[1] == 0 && notification & (NOTIFY_BROADCAST | NOTIFY_REWAIT) == 0
            }
            Some(WaitKind::Condition) => rest[1] == 0 && !broadcast_alone,
            Some(WaitKind::Region) => {
                notification <= 10000
                    && other_tid > 0
                    && match lock_kind {
                        Some(LockKind::OmpRegion) => true,
                        // TBB's algorithms (preload/itt.c): by the caller's stack, with no
                        // barrier share.
                        Some(LockKind::IttSync) => {
                            object <= u64::from(u32::MAX) && notification == 0
                        }
                        _ => false,
                    }
            }
            None => false,
        };
        if !consistent || end_mono_ns < start_mono_ns {
            return err(pos, "a wait of an unknown kind or with inconsistent fields");
        }
        if kind == Some(WaitKind::Region) {
            runs.push(RegionRun {
                serial,
                start_mono_ns,
                end_mono_ns,
                tbb: lock_kind == Some(LockKind::IttSync),
                body: object,
                regions: other_tid,
                barrier_share: f64::from(notification) / 10000.0,
            });
            continue;
        }
        out.push(Wait {
            serial,
            start_mono_ns,
            end_mono_ns,
            object,
            other_tid: (other_tid != 0).then_some(other_tid),
            kind: kind.expect("checked"),
            lock_kind,
            notification: matches!(kind, Some(WaitKind::Condition | WaitKind::Semaphore))
                .then(|| Notification::from_field(notification))
                .flatten(),
            rewait: kind == Some(WaitKind::Condition) && notification & NOTIFY_REWAIT != 0,
            woken_before_end_ns: (matches!(kind, Some(WaitKind::Futex | WaitKind::Lock))
                && notification != 0)
                .then(|| u64::from(notification) * 1000),
        });
    }
    Ok(())
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SamplingInfo {
    pub cpu_hz: u32,
    pub wall_hz: u32,
    /// The signal the CPU timers deliver (None: no CPU samples).
    pub signal: Option<i32>,
    /// The signal sampling gave up because the program handles it.
    pub moved_from: Option<i32>,
    pub no_timers: bool,
    pub no_signal: bool,
    pub cpu_samples: u64,
    pub wall_samples: u64,
    pub dropped: u64,
}

pub fn parse_sampling(payload: &[u8], pos: usize) -> Result<SamplingInfo, ProfileError> {
    if payload.len() != SAMPLING_SIZE {
        return err(pos, "sampling record has the wrong size");
    }
    let mut f = Fields::new(payload);
    let cpu_hz = f.u32();
    let wall_hz = f.u32();
    let signal = f.u32() as i32;
    let moved_from = f.u32() as i32;
    let flags = f.u32();
    let reserved = f.u32();
    if reserved != 0 || flags & !SAMPLING_KNOWN != 0 || !(0..=64).contains(&signal) {
        return err(pos, "inconsistent sampling record");
    }
    if !(0..=64).contains(&moved_from) || cpu_hz > 10_000 || wall_hz > 1000 {
        return err(pos, "inconsistent sampling record");
    }
    Ok(SamplingInfo {
        cpu_hz,
        wall_hz,
        signal: (signal != 0).then_some(signal),
        moved_from: (moved_from != 0).then_some(moved_from),
        no_timers: flags & SAMPLING_NO_TIMERS != 0,
        no_signal: flags & SAMPLING_NO_SIGNAL != 0,
        cpu_samples: f.u64(),
        wall_samples: f.u64(),
        dropped: f.u64(),
    })
}

/// Appends the samples of one SAMPLES record, each `sample_size` bytes (format::sample_size), to
/// `out`. Stack ids and thread serials are checked once the whole file is read (the writer may
/// describe them later in the same flush).
pub fn parse_samples(
    payload: &[u8],
    pos: usize,
    sample_size: usize,
    out: &mut Vec<Sample>,
) -> Result<(), ProfileError> {
    if payload.len() < SAMPLES_SIZE {
        return err(pos, "samples record is too short");
    }
    let mut f = Fields::new(payload);
    let serial = f.u32();
    let count = f.u32() as usize;
    if count == 0 || payload.len() != SAMPLES_SIZE + count * sample_size {
        return err(
            pos,
            format!(
                "samples record of {} bytes cannot hold {count} samples",
                payload.len()
            ),
        );
    }
    for _ in 0..count {
        let mono_ns = f.u64();
        let pc = f.u64();
        let stack = f.u32();
        let weight_us = f.u32();
        let rest = f.take(8);
        let (kind, state, syscall) = (rest[0], rest[1], u16::from_le_bytes([rest[2], rest[3]]));
        let arg = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        let object = if sample_size > 32 { f.u64() } else { 0 };
        let kind = match SampleKind::from_u32(kind.into()) {
            Some(SampleKind::Cpu) if state == 0 && syscall == 0 && arg == 0 => SampleKind::Cpu,
            Some(SampleKind::Wall) if state.is_ascii_alphabetic() => SampleKind::Wall,
            Some(SampleKind::Kernel)
                if state == 0
                    && syscall == 0
                    && arg == 0
                    && pc == 0
                    && stack == 0
                    && object == 0 =>
            {
                SampleKind::Kernel
            }
            _ => {
                return err(
                    pos,
                    "a sample of an unknown kind or with inconsistent fields",
                );
            }
        };
        out.push(Sample {
            serial,
            mono_ns,
            pc,
            stack: stack.checked_sub(1),
            weight_ns: weight_us as u64 * 1000,
            kind,
            state: (kind == SampleKind::Wall).then_some(state as char),
            syscall: (syscall != 0).then(|| syscall as u32 - 1),
            arg,
            object,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::format::SAMPLE_SIZE;
    use super::*;

    fn sample_bytes(kind: u8, state: u8, syscall: u16, arg: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&1234u64.to_le_bytes());
        b.extend_from_slice(&0x4000u64.to_le_bytes());
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&1000u32.to_le_bytes());
        b.extend_from_slice(&[kind, state]);
        b.extend_from_slice(&syscall.to_le_bytes());
        b.extend_from_slice(&arg.to_le_bytes());
        b.extend_from_slice(&0x7f00_0000_1000u64.to_le_bytes());
        b
    }

    fn record(serial: u32, samples: &[Vec<u8>]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&serial.to_le_bytes());
        b.extend_from_slice(&(samples.len() as u32).to_le_bytes());
        for s in samples {
            b.extend_from_slice(s);
        }
        b
    }

    /// A WAITS payload of one wait of `kind` (lock kind `lock_kind`) with `notification`.
    fn wait_record(kind: u8, lock_kind: u8, notification: u16) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        for x in [100u64, 200, 0x5000] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.extend_from_slice(&42u32.to_le_bytes());
        b.extend_from_slice(&[kind, lock_kind]);
        b.extend_from_slice(&notification.to_le_bytes());
        b
    }

    fn parse_one(kind: u8, lock_kind: u8, notification: u16) -> Option<Wait> {
        let mut out = Vec::new();
        let mut dropped = 0;
        parse_waits(
            &wait_record(kind, lock_kind, notification),
            0,
            &mut out,
            &mut Vec::new(),
            &mut dropped,
        )
        .ok()?;
        out.pop()
    }

    #[test]
    fn a_futex_wait_carries_how_long_before_its_end_its_waker_woke_it() {
        let (futex, lock_kind) = (5, LockKind::Futex as u8);
        // The wait of wait_record runs from 100 to 200 ns: the tail is cut at its start at most.
        let w = parse_one(futex, lock_kind, 22).unwrap();
        assert_eq!(w.woken_before_end_ns, Some(22_000));
        assert_eq!((w.notification, w.rewait), (None, false));
        assert_eq!(w.woken_at_ns(), 100);
        // Profiles before the field, or a wake not known: the whole wait.
        let w = parse_one(futex, lock_kind, 0).unwrap();
        assert_eq!((w.woken_before_end_ns, w.woken_at_ns()), (None, 200));
        // Any value is one: the flags' bits mean nothing here.
        let most = crate::profile::format::WOKEN_US_MAX;
        let w = parse_one(futex, lock_kind, most).unwrap();
        assert_eq!(
            (w.woken_before_end_ns, w.rewait),
            (Some(u64::from(most) * 1000), false)
        );
        // Other waits have no such field.
        assert_eq!(parse_one(2, 0, 5).unwrap().woken_before_end_ns, None);
    }

    #[test]
    fn a_mutex_wait_carries_how_long_before_its_end_the_release_woke_it() {
        let (lock, mutex, rwlock) = (1, LockKind::Mutex as u8, LockKind::RwlockWrite as u8);
        let w = parse_one(lock, mutex, 30).unwrap();
        assert_eq!(
            (w.woken_before_end_ns, w.notification, w.woken_at_ns()),
            (Some(30_000), None, 100)
        );
        assert_eq!(parse_one(lock, mutex, 0).unwrap().woken_before_end_ns, None);
        // Only a mutex's waits have it: another lock's field is still 0 or the record is damaged.
        assert!(parse_one(lock, rwlock, 0).is_some());
        assert!(parse_one(lock, rwlock, 30).is_none());
    }

    #[test]
    fn waits_carry_the_notification_that_woke_them() {
        let (condition, semaphore, lock, join) = (2, 3, 1, 4);
        // Profiles before the field: 0, nothing known.
        let w = parse_one(condition, 0, 0).unwrap();
        assert_eq!((w.notification, w.rewait), (None, false));
        let w = parse_one(condition, 0, 5 | NOTIFY_BROADCAST | NOTIFY_REWAIT).unwrap();
        assert_eq!(
            w.notification,
            Some(Notification {
                seq: 5,
                broadcast: true
            })
        );
        assert!(w.rewait);
        // A wait after a futile wake-up whose own waker is not known.
        let w = parse_one(condition, 0, NOTIFY_REWAIT).unwrap();
        assert_eq!((w.notification, w.rewait), (None, true));
        let w = parse_one(semaphore, 0, 9).unwrap();
        assert_eq!(
            w.notification.map(|n| (n.seq, n.broadcast)),
            Some((9, false))
        );
        // Inconsistent: a broadcast without its sequence, a semaphore broadcast or re-wait, a
        // join or a lock other than a mutex with any notification (a mutex's field is its
        // wake-up tail).
        assert!(parse_one(condition, 0, NOTIFY_BROADCAST).is_none());
        assert!(parse_one(semaphore, 0, 9 | NOTIFY_BROADCAST).is_none());
        assert!(parse_one(semaphore, 0, NOTIFY_REWAIT).is_none());
        assert!(parse_one(lock, LockKind::RwlockWrite as u8, 3).is_none());
        assert_eq!(parse_one(lock, 1, 3).unwrap().notification, None);
        assert!(parse_one(join, 0, 3).is_none());
        assert!(parse_one(lock, 1, 0).is_some());
    }

    #[test]
    fn samples_parse_with_their_fields() {
        let payload = record(
            7,
            &[sample_bytes(1, 0, 0, 0), sample_bytes(2, b'S', 203, 128)],
        );
        let mut out = Vec::new();
        parse_samples(&payload, 0, SAMPLE_SIZE, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].kind, SampleKind::Cpu);
        assert_eq!(out[0].stack, Some(2));
        assert_eq!(out[0].weight_ns, 1_000_000);
        assert_eq!(out[1].kind, SampleKind::Wall);
        assert_eq!(out[1].state, Some('S'));
        assert_eq!(out[1].syscall, Some(202));
        assert_eq!(out[1].arg, 128);
        assert_eq!(out[1].object, 0x7f00_0000_1000);
        assert!(out.iter().all(|s| s.serial == 7));
    }

    #[test]
    fn version_2_samples_have_no_object() {
        let mut v2 = sample_bytes(2, b'S', 203, 128);
        v2.truncate(32);
        let mut out = Vec::new();
        parse_samples(&record(7, &[v2.clone(), v2]), 0, 32, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[1].syscall, out[1].arg, out[1].object),
            (Some(202), 128, 0)
        );
        // A version 3 record is not a version 2 one.
        let v3 = record(7, &[sample_bytes(1, 0, 0, 0)]);
        assert!(parse_samples(&v3, 0, 32, &mut Vec::new()).is_err());
    }

    #[test]
    fn inconsistent_samples_are_errors() {
        let mut out = Vec::new();
        for bad in [
            sample_bytes(3, 0, 0, 0),      // unknown kind
            sample_bytes(1, b'S', 0, 0),   // a CPU sample with a state
            sample_bytes(1, 0, 1, 0),      // a CPU sample in a system call
            sample_bytes(2, 0, 203, 0),    // a wall sample without a state
            sample_bytes(2, b'%', 203, 0), // not a state letter
        ] {
            assert!(parse_samples(&record(1, &[bad]), 0, SAMPLE_SIZE, &mut out).is_err());
        }
        let mut short = record(1, &[sample_bytes(1, 0, 0, 0)]);
        short.pop();
        assert!(parse_samples(&short, 0, SAMPLE_SIZE, &mut out).is_err());
        assert!(parse_samples(&record(1, &[]), 0, SAMPLE_SIZE, &mut out).is_err());
        assert!(parse_samples(&[0u8; 4], 0, SAMPLE_SIZE, &mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn the_sampling_record_is_checked() {
        let mut b = Vec::new();
        for v in [1000u32, 100, 27, 0, 0, 0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for v in [5u64, 6, 0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let s = parse_sampling(&b, 0).unwrap();
        assert_eq!(s.signal, Some(27));
        assert_eq!((s.cpu_samples, s.wall_samples), (5, 6));
        let mut bad = b.clone();
        bad[16] = 8; // an unknown flag
        assert!(parse_sampling(&bad, 0).is_err());
        let mut bad = b.clone();
        bad[20] = 1; // reserved
        assert!(parse_sampling(&bad, 0).is_err());
        assert!(parse_sampling(&b[..40], 0).is_err());
    }
}

/// What the kernel says one thread did between two looks of the sampler (SS_REC_SCHED): each
/// figure is the difference since the thread's previous point (its first: since it began).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchedPoint {
    /// The serial of the thread record it belongs to.
    pub serial: u32,
    pub mono_ns: u64,
    /// Time on a CPU.
    pub exec_ns: u64,
    /// Time runnable, waiting on a run queue for a CPU.
    pub run_delay_ns: u64,
    pub minflt: u32,
    pub majflt: u32,
    /// System CPU time (clock-tick resolution: exact only summed over many points).
    pub stime_ns: u64,
    /// Times put on a CPU.
    pub switches: u32,
}

/// Appends the points of one SCHED record to `out`; thread serials are checked once the whole
/// file is read.
pub fn parse_sched(
    payload: &[u8],
    pos: usize,
    out: &mut Vec<SchedPoint>,
) -> Result<(), ProfileError> {
    if payload.len() < SCHED_SIZE {
        return err(pos, "sched record is too short");
    }
    let mut f = Fields::new(payload);
    let serial = f.u32();
    let count = f.u32() as usize;
    if count == 0 || payload.len() != SCHED_SIZE + count * SCHED_POINT_SIZE {
        return err(
            pos,
            format!(
                "sched record of {} bytes cannot hold {count} points",
                payload.len()
            ),
        );
    }
    for _ in 0..count {
        let point = SchedPoint {
            serial,
            mono_ns: f.u64(),
            exec_ns: f.u64(),
            run_delay_ns: f.u64(),
            minflt: f.u32(),
            majflt: f.u32(),
            stime_ns: u64::from(f.u32()) * 1000,
            switches: f.u32(),
        };
        // A look covers at most the time since the previous one: figures beyond a day are damage.
        const DAY_NS: u64 = 86_400 * 1_000_000_000;
        if point.exec_ns > DAY_NS || point.run_delay_ns > DAY_NS {
            return err(pos, "a sched point with impossible times");
        }
        out.push(point);
    }
    Ok(())
}
