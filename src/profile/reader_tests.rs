//! The reader against damaged files: every truncation and every single-bit flip of a valid
//! profile must be answered with an error (or, for a cut exactly between two flushes, with a
//! profile marked partial), never a panic.

use super::format::*;
use super::{parse, record_crc};

/// Encodes records the way preload/writer.c does.
struct Writer {
    bytes: Vec<u8>,
    /// Offsets just after each batch (flush or end), where a cut leaves a valid partial file.
    batch_ends: Vec<usize>,
}

impl Writer {
    fn new() -> Self {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&(FILE_HEADER_SIZE as u32).to_le_bytes());
        bytes.extend_from_slice(&BYTE_ORDER_MARK.to_le_bytes());
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        Writer {
            bytes,
            batch_ends: Vec::new(),
        }
    }

    fn record(&mut self, rtype: u32, payload: &[u8]) {
        let mut head = Vec::new();
        head.extend_from_slice(&rtype.to_le_bytes());
        head.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        let crc = record_crc(&head, payload);
        self.bytes.extend_from_slice(&head);
        self.bytes.extend_from_slice(&crc.to_le_bytes());
        self.bytes.extend_from_slice(&0u32.to_le_bytes());
        self.bytes.extend_from_slice(payload);
        while !self.bytes.len().is_multiple_of(8) {
            self.bytes.push(0);
        }
        if rtype == REC_FLUSH || rtype == REC_END {
            self.batch_ends.push(self.bytes.len());
        }
    }
}

fn u32s(v: &mut Vec<u8>, xs: &[u32]) {
    for x in xs {
        v.extend_from_slice(&x.to_le_bytes());
    }
}

fn u64s(v: &mut Vec<u8>, xs: &[u64]) {
    for x in xs {
        v.extend_from_slice(&x.to_le_bytes());
    }
}

fn process_payload() -> Vec<u8> {
    process_payload_with(b"./prog\0--flag")
}

fn process_payload_with(cmd: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    u32s(&mut p, &[4242, 1]);
    u64s(
        &mut p,
        &[
            1_700_000_000_000_000_000,
            1_000_000_000,
            5_000_000,
            2_500_000_000,
        ],
    );
    u32s(&mut p, &[2, 0, 32, 0]);
    let mut libc = b"2.36".to_vec();
    libc.resize(32, 0);
    p.extend_from_slice(&libc);
    let mut alloc = b"/lib/x86_64-linux-gnu/libc.so.6".to_vec();
    alloc.resize(64, 0);
    p.extend_from_slice(&alloc);
    let exe = b"/tmp/prog";
    u32s(&mut p, &[cmd.len() as u32, exe.len() as u32]);
    assert_eq!(p.len(), PROCESS_SIZE);
    p.extend_from_slice(cmd);
    p.extend_from_slice(exe);
    p
}

fn thread_payload(serial: u32, mallocs: u64, with_lock: bool) -> Vec<u8> {
    let mut p = Vec::new();
    u32s(
        &mut p,
        &[
            serial,
            100 + serial,
            if serial == 0 { THREAD_MAIN } else { 0 },
            u32::from(with_lock),
        ],
    );
    let mut name = b"worker".to_vec();
    name.resize(16, 0);
    p.extend_from_slice(&name);
    u64s(&mut p, &[1_000_000_000, 0, 7_000_000, 3_000]);
    for f in 0..FN_COUNT {
        let calls = if f == 0 { mallocs } else { 0 };
        u64s(
            &mut p,
            &[
                calls,
                calls * 24,
                calls / 32,
                calls / 32 * 50,
                calls.min(1),
                calls.min(1) * 4000,
            ],
        );
    }
    let mut size_hist = [0u64; SIZE_BUCKETS];
    size_hist[2] = mallocs;
    u64s(&mut p, &size_hist);
    let mut lat = [0u64; GROUP_COUNT * LAT_BUCKETS];
    lat[4] = mallocs / 32;
    u64s(&mut p, &lat);
    assert_eq!(p.len(), THREAD_SIZE);
    if with_lock {
        u64s(&mut p, &[0x5555_0000]);
        u32s(&mut p, &[1, 0]);
        u64s(&mut p, &[1000, 10, 5000, 900, 30, 2000]);
    }
    p
}

fn flush_payload(seq: u64, mono: u64) -> Vec<u8> {
    let mut p = Vec::new();
    u64s(
        &mut p,
        &[seq, mono, 5_000_000 + (mono - 1_000_000_000) * 5 / 2, 0],
    );
    p
}

fn module_payload(bias: u64, path: &str) -> Vec<u8> {
    let mut p = Vec::new();
    let build_id = [0xabu8; 20];
    u64s(&mut p, &[bias, bias + 0x1000, bias + 0x9000, 1_000_000_500]);
    u32s(&mut p, &[build_id.len() as u32, path.len() as u32]);
    p.extend_from_slice(&build_id);
    p.extend_from_slice(path.as_bytes());
    p
}

fn stack_payload(id: u32, pcs: &[u64]) -> Vec<u8> {
    let mut p = Vec::new();
    u32s(&mut p, &[id, pcs.len() as u32]);
    u64s(&mut p, &[1_000_000_700]);
    u64s(&mut p, pcs);
    p
}

fn alloc_sites_payload(sites: &[(u32, u64)]) -> Vec<u8> {
    let mut p = Vec::new();
    u32s(&mut p, &[sites.len() as u32, 1024]);
    u64s(&mut p, &[512 * 1024, 0]);
    for &(stack, samples) in sites {
        u32s(&mut p, &[stack, 0]);
        u64s(
            &mut p,
            &[
                samples,
                samples * 64,
                samples * 1000 * 65536,
                samples * 64_000,
                samples * 90_000,
            ],
        );
    }
    p
}

fn lock_sites_payload() -> Vec<u8> {
    let mut p = Vec::new();
    u32s(&mut p, &[2, 0]);
    u64s(&mut p, &[10_000_000]);
    for (role, stack, wait) in [(LockRole::Waiter, 7u32, 5000u64), (LockRole::Holder, 9, 0)] {
        u64s(&mut p, &[0x5555_0000]);
        u32s(&mut p, &[LockKind::Mutex.value(), role.value(), stack, 0]);
        u64s(&mut p, &[4, wait]);
    }
    p
}

fn sample_profile() -> Writer {
    let mut w = Writer::new();
    w.record(REC_PROCESS, &process_payload());
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    w.record(REC_MODULE, &module_payload(0x5555_0000_0000, "/tmp/prog"));
    w.record(
        REC_MODULE,
        &module_payload(0x7f00_0000_0000, "/lib/libc.so.6"),
    );
    w.record(
        REC_STACK,
        &stack_payload(7, &[0x5555_0000_1234, 0x7f00_0000_2345]),
    );
    w.record(REC_ALLOC_SITES, &alloc_sites_payload(&[(7, 3)]));
    w.record(REC_THREAD, &thread_payload(0, 640, false));
    w.record(REC_THREAD, &thread_payload(1, 320, true));
    w.record(REC_FLUSH, &flush_payload(1, 2_000_000_000));
    w.record(REC_STACK, &stack_payload(9, &[0x5555_0000_1300]));
    let mut gone = Vec::new();
    u32s(&mut gone, &[1, 0]);
    u64s(&mut gone, &[1_500_000_000]);
    w.record(REC_MODULE_GONE, &gone);
    w.record(REC_ALLOC_SITES, &alloc_sites_payload(&[(7, 5), (9, 2)]));
    w.record(REC_LOCK_SITES, &lock_sites_payload());
    w.record(REC_THREAD, &thread_payload(0, 6400, false));
    let mut end = Vec::new();
    u32s(&mut end, &[EndHow::Exit.value(), 3]);
    u64s(
        &mut end,
        &[2_500_000_000, 5_000_000 + 1_500_000_000 * 5 / 2],
    );
    w.record(REC_END, &end);
    w
}

#[test]
fn a_rewritten_title_loses_its_padding_and_a_command_keeps_its_empty_words() {
    let read = |cmd: &[u8]| {
        let mut w = Writer::new();
        w.record(REC_PROCESS, &process_payload_with(cmd));
        w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
        parse(&w.bytes).expect("valid").process.command
    };
    // PostgreSQL's backend: its title, then the zeroed rest of the argument area.
    let mut title = b"postgres: checkpointer ".to_vec();
    title.extend_from_slice(&[0u8; 80]);
    assert_eq!(read(&title), vec!["postgres: checkpointer "]);
    assert_eq!(read(b"prog\0--save\0"), vec!["prog", "--save", ""]);
}

#[test]
fn a_valid_profile_reads_back() {
    let w = sample_profile();
    let p = parse(&w.bytes).expect("valid");
    assert!(p.complete);
    assert_eq!(p.process.pid, 4242);
    assert_eq!(p.process.command, vec!["./prog", "--flag"]);
    assert_eq!(p.process.exe, "/tmp/prog");
    assert_eq!(p.threads.len(), 2);
    assert_eq!(
        p.threads[0].fns[0].calls, 6400,
        "the last record of a thread wins"
    );
    assert_eq!(p.threads[1].locks.len(), 1);
    assert_eq!(p.threads[1].locks[0].contended, 10);
    assert_eq!(p.exit_code(), Some(3));
    assert_eq!(p.wall_ns(), 1_500_000_000);
    assert!(
        (p.ticks_per_sec - 2.5e9).abs() < 1e3,
        "tick rate from the longest baseline"
    );
    assert_eq!(p.modules.len(), 2);
    assert_eq!(p.modules[1].path, "/lib/libc.so.6");
    assert_eq!(p.modules[0].build_id, vec![0xab; 20]);
    assert_eq!(p.stacks[&7].pcs, vec![0x5555_0000_1234, 0x7f00_0000_2345]);
    assert_eq!(p.stacks[&7].first_mono_ns, 1_000_000_700);
    assert_eq!(p.modules[0].gone_mono_ns, None);
    assert_eq!(p.modules[1].gone_mono_ns, Some(1_500_000_000));
    assert_eq!(p.alloc_sites.len(), 2, "the last sites record wins");
    assert_eq!(p.alloc_sites[0].samples, 5);
    assert_eq!(p.stack_sampling.map(|s| s.count_period), Some(1024));
    assert_eq!(p.lock_sites.len(), 2);
    assert_eq!(p.lock_sites[0].role, LockRole::Waiter);
    assert_eq!(p.lock_sites[0].wait_ticks, 5000);
    assert_eq!(p.lock_sites[1].stack, 9);
}

#[test]
fn a_site_must_name_a_known_stack() {
    let mut w = Writer::new();
    w.record(REC_PROCESS, &process_payload());
    w.record(REC_ALLOC_SITES, &alloc_sites_payload(&[(3, 1)]));
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    let e = parse(&w.bytes).unwrap_err().to_string();
    assert!(e.contains("unknown stack 3"), "{e}");
}

/// What a profile read from a cut file must hold: the data of the last whole batch.
fn same_data(a: &super::Profile, b: &super::Profile) -> bool {
    a.threads.len() == b.threads.len()
        && a.threads
            .iter()
            .zip(&b.threads)
            .all(|(x, y)| x.fns == y.fns && x.locks == y.locks)
        && a.alloc_sites == b.alloc_sites
        && a.lock_sites == b.lock_sites
        && a.modules == b.modules
        && a.flushes == b.flushes
}

#[test]
fn every_truncation_is_an_error_or_a_partial_profile() {
    // A file cut anywhere (between records or inside one) is read up to its last whole batch
    // and marked partial; cut before its first flush, it is an error that says so.
    let w = sample_profile();
    let first = w.batch_ends[0];
    for len in 0..w.bytes.len() {
        match parse(&w.bytes[..len]) {
            Err(e) => {
                assert!(
                    len < first,
                    "a cut at {len}, after the first flush, was refused: {e}"
                );
                assert!(!e.to_string().is_empty());
            }
            Ok(p) => {
                assert!(len >= first, "a cut at {len} was taken as valid");
                assert!(!p.complete, "a cut at {len} must be partial");
                let whole = *w.batch_ends.iter().rev().find(|&&e| e <= len).unwrap();
                let expected = parse(&w.bytes[..whole]).unwrap();
                assert!(
                    same_data(&p, &expected),
                    "a cut at {len} reads the batch ending at {whole}"
                );
            }
        }
    }
}

#[test]
fn a_cut_inside_a_record_reads_up_to_the_last_flush() {
    let w = sample_profile();
    // Inside the thread record of the second batch: the first batch's data.
    let cut = w.batch_ends[1] + 100;
    let p = parse(&w.bytes[..cut]).expect("a cut file reads up to its last flush");
    assert!(!p.complete);
    assert_eq!(p.threads.len(), 2);
    assert_eq!(
        p.threads[0].fns[0].calls, 640,
        "the first batch's record of thread 0"
    );
    assert_eq!(p.cut_at, Some(cut as u64));
    // Three bytes short of its end record: everything but that batch's end.
    let p = parse(&w.bytes[..w.bytes.len() - 3]).expect("partial");
    assert!(!p.complete && p.end.is_none());
    assert_eq!(p.flushes, 2);
}

#[test]
fn every_single_bit_flip_is_an_error() {
    let w = sample_profile();
    for pos in 0..w.bytes.len() {
        for bit in [pos % 8, (pos + 3) % 8] {
            let mut damaged = w.bytes.clone();
            damaged[pos] ^= 1 << bit;
            assert!(
                parse(&damaged).is_err(),
                "flipping bit {bit} of byte {pos} went unnoticed"
            );
        }
    }
}

#[test]
fn errors_say_what_and_where() {
    let mut w = sample_profile();
    w.bytes[8] = 9; // version
    let e = parse(&w.bytes).unwrap_err().to_string();
    assert!(e.contains("checksum") || e.contains("version"), "{e}");

    let w = sample_profile();
    let e = parse(&w.bytes[..w.batch_ends[0] - 3])
        .unwrap_err()
        .to_string();
    assert!(e.contains("truncated") && e.contains("at byte"), "{e}");

    let e = parse(b"hello world, this is not a profile")
        .unwrap_err()
        .to_string();
    assert!(e.contains("magic"), "{e}");
}

/// A file of format version 2 (samples of 32 bytes, without the futex word) is still read.
#[test]
fn version_2_samples_are_read_without_their_object() {
    let sample = |w: &mut Writer, version: u32, size: usize| {
        w.bytes[8..12].copy_from_slice(&version.to_le_bytes());
        let crc = crc32fast::hash(&w.bytes[..20]);
        w.bytes[20..24].copy_from_slice(&crc.to_le_bytes());
        w.record(REC_PROCESS, &process_payload());
        w.record(REC_THREAD, &thread_payload(0, 10, false));
        let mut samples = Vec::new();
        u32s(&mut samples, &[0, 1]);
        u64s(&mut samples, &[1_000_000_500, 0x4000]);
        u32s(&mut samples, &[0, 100]);
        samples.extend_from_slice(&[2, b'S', 203, 0, 128, 0, 0, 0]);
        u64s(&mut samples, &[0x7f00_0000_1000]);
        samples.truncate(8 + size);
        w.record(REC_SAMPLES, &samples);
        w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    };
    let mut w = Writer::new();
    sample(&mut w, 2, 32);
    let p = parse(&w.bytes).expect("a version 2 file");
    assert_eq!(p.samples.len(), 1);
    assert_eq!((p.samples[0].syscall, p.samples[0].object), (Some(202), 0));
    let mut w = Writer::new();
    sample(&mut w, VERSION, SAMPLE_SIZE);
    let p = parse(&w.bytes).expect("a current file");
    assert_eq!(p.samples[0].object, 0x7f00_0000_1000);
    // A version 2 header with current samples: their size is not one the layout allows.
    let mut w = Writer::new();
    sample(&mut w, 2, SAMPLE_SIZE);
    assert!(parse(&w.bytes).is_err());
}

#[test]
fn another_version_is_refused_by_name() {
    let mut w = Writer::new();
    w.bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    let crc = crc32fast::hash(&w.bytes[..20]);
    w.bytes[20..24].copy_from_slice(&crc.to_le_bytes());
    w.record(REC_PROCESS, &process_payload());
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    let e = parse(&w.bytes).unwrap_err().to_string();
    assert!(e.contains("version 1 is not supported"), "{e}");
}

#[test]
fn random_bytes_never_panic() {
    let mut state = 0x1234_5678_9abc_def0u64;
    let valid = sample_profile().bytes;
    for round in 0..2000 {
        let mut bytes = valid.clone();
        for _ in 0..(1 + round % 16) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let pos = (state as usize) % bytes.len();
            bytes[pos] = (state >> 40) as u8;
        }
        let cut = (state as usize >> 3) % (bytes.len() + 1);
        let _ = parse(&bytes[..cut]);
        let _ = parse(&bytes);
    }
}

/// Found by the `reader_valid_crc` fuzz target (fuzz/regressions/measured-calls-overflow): a
/// thread record with valid checksums whose timed and always-timed call counts add up beyond
/// 2^64. Their sum overflowed (a panic with overflow checks, a silent wrap to a small number
/// without); it must be an error.
#[test]
fn counters_whose_sum_overflows_are_an_error() {
    let mut w = Writer::new();
    w.record(REC_PROCESS, &process_payload());
    let mut thread = thread_payload(0, 640, false);
    // fns[0] starts after serial, tid, flags, nlocks, name, 4 times and cpu: at 64; its
    // timed_calls and exact_calls are its third and fifth u64.
    let fns = 16 + 16 + 32;
    thread[fns + 16..fns + 24].copy_from_slice(&u64::MAX.to_le_bytes());
    thread[fns + 32..fns + 40].copy_from_slice(&2u64.to_le_bytes());
    w.record(REC_THREAD, &thread);
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    let e = parse(&w.bytes).unwrap_err().to_string();
    assert!(e.contains("times more calls than it counts"), "{e}");
}

#[test]
fn folded_groups_read_back_and_their_samples_are_valid() {
    let mut w = Writer::new();
    w.record(REC_PROCESS, &process_payload());
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    // A kernel-clock sample of the group (serial 5), and its FOLDED record.
    let mut samples = Vec::new();
    u32s(&mut samples, &[5, 1]);
    u64s(&mut samples, &[1_500_000_000, 0]);
    u32s(&mut samples, &[0, 2000]);
    samples.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0]);
    u64s(&mut samples, &[0]);
    w.record(REC_SAMPLES, &samples);
    let mut folded = Vec::new();
    u32s(&mut folded, &[19_990, 19_000]);
    u64s(&mut folded, &[4_000_000_000]);
    let mut group = thread_payload(5, 19_990, true);
    group[8..12].copy_from_slice(&(THREAD_ENDED | THREAD_SIGNAL_BLOCKED).to_le_bytes());
    // Its lock entry: 7,000 of the group's threads took the lock.
    group[THREAD_SIZE + 12..THREAD_SIZE + 16].copy_from_slice(&7_000u32.to_le_bytes());
    folded.extend_from_slice(&group);
    w.record(REC_FOLDED, &folded);
    w.record(REC_THREAD, &thread_payload(0, 10, false));
    w.record(REC_FLUSH, &flush_payload(1, 2_000_000_000));
    let p = parse(&w.bytes).expect("valid");
    assert_eq!(p.threads.len(), 2);
    let g = p.threads.iter().find(|t| t.serial == 5).unwrap();
    assert_eq!(
        g.folded,
        Some(super::Folded {
            threads: 19_990,
            allocating: 19_000,
            life_ns: 4_000_000_000
        })
    );
    assert_eq!(g.locks[0].threads, 7_000, "how many threads took the lock");
    assert_eq!(
        g.life_ns(0),
        4_000_000_000,
        "a group's life is its threads' lives"
    );
    assert_eq!(g.fns[0].calls, 19_990);
    assert_eq!(g.locks.len(), 1);
    assert_eq!(p.samples.len(), 1);
    assert_eq!(p.samples[0].kind, super::samples::SampleKind::Kernel);
    assert_eq!(p.samples[0].weight_ns, 2_000_000);

    // No more threads took a lock, or allocated, than the group holds; a thread's own record
    // holds 0 there.
    for (at, value) in [(16 + THREAD_SIZE + 12, 19_991u32), (4, 19_991)] {
        let mut bad = folded.clone();
        bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let mut w = Writer::new();
        w.record(REC_PROCESS, &process_payload());
        w.record(REC_FOLDED, &bad);
        w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
        assert!(parse(&w.bytes).is_err(), "{at}");
    }
    let mut own = thread_payload(3, 10, true);
    own[THREAD_SIZE + 12..THREAD_SIZE + 16].copy_from_slice(&1u32.to_le_bytes());
    let mut w = Writer::new();
    w.record(REC_PROCESS, &process_payload());
    w.record(REC_THREAD, &own);
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    assert!(
        parse(&w.bytes).is_err(),
        "a thread's own lock entry with a count"
    );

    // A folded group must hold ended threads, and a serial is a thread or a group, not both.
    let mut bad = folded.clone();
    bad[16 + 8..16 + 12].copy_from_slice(&0u32.to_le_bytes());
    let mut w2 = Writer::new();
    w2.record(REC_PROCESS, &process_payload());
    w2.record(REC_FOLDED, &bad);
    w2.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    assert!(parse(&w2.bytes).is_err());
    let mut w3 = Writer::new();
    w3.record(REC_PROCESS, &process_payload());
    w3.record(REC_FOLDED, &folded);
    w3.record(REC_THREAD, &thread_payload(5, 1, false));
    w3.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    let e = parse(&w3.bytes).unwrap_err().to_string();
    assert!(e.contains("both folded and not"), "{e}");
}

/// A window of a running process (`stallscope attach`): PROCESS flagged ATTACHED, then ATTACH.
fn attached_profile(attach_at_start: bool, flagged: bool) -> Writer {
    let mut process = process_payload();
    if flagged {
        process[52..56].copy_from_slice(&PROCESS_ATTACHED.to_le_bytes());
    }
    let mut attach = Vec::new();
    u64s(&mut attach, &[400_000_000, 1_000_000_000]);
    u32s(&mut attach, &[AttachHow::Paused.value(), 2]);
    let mut w = Writer::new();
    w.record(REC_PROCESS, &process);
    if attach_at_start {
        w.record(REC_ATTACH, &attach);
    }
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    if !attach_at_start {
        w.record(REC_ATTACH, &attach);
    }
    w.record(REC_THREAD, &thread_payload(0, 640, true));
    let mut end = Vec::new();
    u32s(&mut end, &[EndHow::Detach.value(), 0]);
    u64s(
        &mut end,
        &[2_500_000_000, 5_000_000 + 1_500_000_000 * 5 / 2],
    );
    w.record(REC_END, &end);
    w
}

#[test]
fn a_window_reads_back_and_is_checked() {
    let w = attached_profile(true, true);
    let p = parse(&w.bytes).expect("valid");
    assert!(p.complete && p.process.attached);
    let a = p.attach.expect("the window");
    assert_eq!(
        (
            a.how,
            a.process_start_mono_ns,
            a.window_start_mono_ns,
            a.window
        ),
        (AttachHow::Paused, 400_000_000, 1_000_000_000, 2)
    );
    assert_eq!(p.end.unwrap().how, EndHow::Detach);
    assert_eq!(p.exit_code(), None, "a detached process has not exited");
    // Every cut reads or is refused, never panics; every bit flip is noticed.
    for len in 0..w.bytes.len() {
        let _ = parse(&w.bytes[..len]);
    }
    for pos in 0..w.bytes.len() {
        let mut damaged = w.bytes.clone();
        damaged[pos] ^= 1 << (pos % 8);
        assert!(parse(&damaged).is_err(), "byte {pos} flipped unnoticed");
    }
    // The record only right after a flagged PROCESS, and a flagged file only with it.
    let late = parse(&attached_profile(false, true).bytes).unwrap_err();
    assert!(late.to_string().contains("attach record"), "{late}");
    let unflagged = parse(&attached_profile(true, false).bytes).unwrap_err();
    assert!(
        unflagged.to_string().contains("attach record"),
        "{unflagged}"
    );
    let missing = parse(&{
        let mut w = Writer::new();
        let mut process = process_payload();
        process[52..56].copy_from_slice(&PROCESS_ATTACHED.to_le_bytes());
        w.record(REC_PROCESS, &process);
        w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
        w.bytes
    })
    .unwrap_err();
    assert!(
        missing.to_string().contains("no attach record"),
        "{missing}"
    );
}

/// A record's checksum is the same CRC-32 whichever code computes it: the table for short
/// records (no CPU feature detection) and crc32fast's for the rest, at every size around the
/// bound and for every byte value, as the interposer's writer computes it.
#[test]
fn a_records_checksum_is_one_crc_at_every_size() {
    let bytes: Vec<u8> = (0..600u32).map(|i| (i * 151 + 7) as u8).collect();
    for len in 0..bytes.len() {
        let (head, payload) = (&bytes[..8.min(len)], &bytes[8.min(len)..len]);
        let mut whole = crc32fast::Hasher::new();
        whole.update(head);
        whole.update(payload);
        assert_eq!(record_crc(head, payload), whole.finalize(), "{len} bytes");
    }
    assert_eq!(record_crc(b"", b"123456789"), 0xCBF4_3926); // the CRC-32 check value
}

/// A profile with a CPython interpreter's records: PYTHON, a code object, the Python frames of a
/// stack.
fn python_profile(code_in_frame: u32) -> Writer {
    let mut w = Writer::new();
    w.record(REC_PROCESS, &process_payload());
    w.record(REC_MODULE, &module_payload(0x5555_0000_0000, "/tmp/prog"));
    w.record(REC_STACK, &stack_payload(3, &[0x5555_0000_1234]));
    let mut py = Vec::new();
    u32s(&mut py, &[0x030b02f0, PYTHON_FRAMES]);
    w.record(REC_PYTHON, &py);
    let mut code = Vec::new();
    u32s(&mut code, &[5, 10, 4, 6, 6, 4]);
    code.extend_from_slice(b"spinW.spinapp.py");
    code.extend_from_slice(&[0x80, 0x00, 0xd8, 0x08]);
    w.record(REC_PY_CODE, &code);
    let mut stack = Vec::new();
    u32s(&mut stack, &[3, 2, code_in_frame, 2, PY_FRAME_ENTRY, 0]);
    u32s(&mut stack, &[PY_CODE_UNKNOWN, u32::MAX, PY_FRAME_ENTRY, 0]);
    w.record(REC_PY_STACK, &stack);
    w.record(REC_THREAD, &thread_payload(0, 640, false));
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    w
}

#[test]
fn python_records_read_back_and_name_what_the_file_describes() {
    let p = parse(&python_profile(5).bytes).expect("a valid profile");
    let py = p.python.as_ref().expect("python");
    assert_eq!(py.version_text(), "3.11");
    assert_eq!(py.codes[&5].display_name(), "W.spin");
    assert_eq!(py.codes[&5].file, "app.py");
    // The instruction at byte 2 (unit 1) is on the line after the first (10).
    assert_eq!(py.line(5, 2), Some(11));
    let frames = &p.stacks[&3].python;
    assert_eq!(frames.len(), 2);
    assert_eq!((frames[0].code, frames[0].offset), (Some(5), 2));
    assert_eq!((frames[1].code, frames[1].offset), (None, -1));
    let err = parse(&python_profile(6).bytes).expect_err("an unknown code object");
    assert!(err.to_string().contains("code object"), "{err}");
    let w = python_profile(5);
    for pos in 0..w.bytes.len() {
        let mut damaged = w.bytes.clone();
        damaged[pos] ^= 1 << (pos % 8);
        assert!(
            parse(&damaged).is_err(),
            "flipping byte {pos} went unnoticed"
        );
    }
}

/// A thread's PY_THREAD record gives it the name Python gives it, in place of the kernel's; the
/// last one wins; a name for a thread the file does not describe, or one longer than the
/// record's bound, is an error.
#[test]
fn python_thread_names_replace_the_kernels() {
    let named = |serial: u32, name: &str| {
        let mut p = Vec::new();
        u32s(&mut p, &[serial, 100 + serial, name.len() as u32, 0]);
        p.extend_from_slice(name.as_bytes());
        p
    };
    let mut w = Writer::new();
    w.record(REC_PROCESS, &process_payload());
    w.record(REC_THREAD, &thread_payload(0, 640, false));
    w.record(REC_THREAD, &thread_payload(1, 64, false));
    w.record(REC_PY_THREAD, &named(1, "pool_0"));
    w.record(REC_PY_THREAD, &named(1, "fetcher-1"));
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    let p = parse(&w.bytes).expect("a valid profile");
    let names: Vec<&str> = p.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["worker", "fetcher-1"]);

    let mut w = Writer::new();
    w.record(REC_PROCESS, &process_payload());
    w.record(REC_PY_THREAD, &named(1, "fetcher-1"));
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    let err = parse(&w.bytes).expect_err("a name of no thread");
    assert!(err.to_string().contains("does not describe"), "{err}");

    let mut w = Writer::new();
    w.record(REC_PROCESS, &process_payload());
    w.record(REC_THREAD, &thread_payload(1, 64, false));
    w.record(
        REC_PY_THREAD,
        &named(1, &"x".repeat(PY_THREAD_NAME_MAX + 1)),
    );
    w.record(REC_FLUSH, &flush_payload(0, 1_000_001_000));
    assert!(parse(&w.bytes).is_err(), "a name over the bound");
}
