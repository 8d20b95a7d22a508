//! One classification for every view: a sample's category in the thread states is its
//! category in wait-for's activities and in `scale`'s costs. Here, above the analysis, because it
//! reads `scale` (a command), which the analysis may not (tests/layers.rs).

use crate::analysis::states::*;
use crate::profile::Profile;
use crate::profile::format::THREAD_MAIN;
use crate::profile::samples::{Sample, SampleKind, SamplingInfo};
use crate::symbols::Symbolizer;
use crate::symbols::code::CodeReader;

/// The futex system call's number (x86-64).
const FUTEX: u32 = 202;
use crate::analysis::futex::{Word, Words};
use crate::analysis::runtime::Role;
use crate::profile::ThreadStats;
use crate::profile::samples::{Wait, WaitKind};
use crate::scale::causes::{Cause, costs, wait_cause};

const START: u64 = 1_000_000;
const LOCK_WORD: u64 = 0x7f00_0000_1000;
const CONDITION_WORD: u64 = 0x7f00_0000_2000;

fn thread(serial: u32, flags: u32) -> ThreadStats {
    let name = format!("t{serial}");
    ThreadStats {
        flags,
        ..ThreadStats::quiet(serial, 100 + serial, &name, START, START + 1_000_000_000)
    }
}

fn sample(n: u64, kind: SampleKind, syscall: Option<u32>, arg: u32, object: u64) -> Sample {
    Sample {
        serial: 2,
        mono_ns: START + 10_000_000 * (n + 1),
        pc: 0x4000,
        stack: None,
        weight_ns: 10_000_000,
        kind,
        state: (kind == SampleKind::Wall).then_some('S'),
        syscall,
        arg,
        object,
    }
}

/// The worker (serial 2) computes, sleeps on a lock's futex word and on a condition's word
/// at the same instruction and stack, and reads; main waits for it most of the time.
fn profile() -> Profile {
    let mut p = Profile::default();
    p.process.start_mono_ns = START;
    p.process.ncpus = 2;
    p.last_mono_ns = START + 1_000_000_000;
    p.sampling = Some(SamplingInfo::default());
    p.threads = vec![thread(1, THREAD_MAIN), thread(2, 0)];
    let futex = Some(FUTEX);
    let shapes = [
        (SampleKind::Cpu, None, 0, 0),
        (SampleKind::Wall, futex, 137, LOCK_WORD),
        (SampleKind::Wall, futex, 137, CONDITION_WORD),
        (SampleKind::Wall, futex, 128, 0x7f00_0000_3000),
        (SampleKind::Wall, Some(0), 0, 0),
    ];
    p.samples = (0..20)
        .map(|n| {
            let (kind, syscall, arg, object) = shapes[n as usize % shapes.len()];
            sample(n, kind, syscall, arg, object)
        })
        .collect();
    p.waits = vec![Wait {
        serial: 1,
        start_mono_ns: START,
        end_mono_ns: START + 900_000_000,
        object: 0x5000,
        other_tid: Some(102),
        kind: WaitKind::Lock,
        lock_kind: None,
        notification: None,
        rewait: false,
        woken_before_end_ns: None,
    }];
    p
}

fn words() -> Words {
    let word = |role| Word {
        role,
        runtime: String::new(),
        object: "futex word".into(),
    };
    Words {
        by_address: [
            (LOCK_WORD, word(Role::Lock)),
            (CONDITION_WORD, word(Role::Wait)),
        ]
        .into(),
        itt_tbb_locks: false,
        lock_of: Default::default(),
    }
}

/// Time per category of the samples `keep` selects, by their classified stacks.
fn per_category(
    profile: &Profile,
    states: &StateReport,
    keep: impl Fn(&Sample) -> bool,
) -> PerCategory<u64> {
    let mut ns = [0u64; CATEGORY_COUNT];
    for (si, s) in profile.samples.iter().enumerate().filter(|(_, s)| keep(s)) {
        ns[states.sample_stack(si).unwrap().1.category.index()] += s.weight_ns;
    }
    ns
}

#[test]
fn a_sample_is_one_category_in_states_wait_for_and_scale() {
    let profile = profile();
    let mut sym = Symbolizer::offline(&profile);
    let mut code = CodeReader::offline();
    let states = build(&profile, &mut sym, &mut code, &words()).unwrap();
    let category = |si: usize| states.sample_stack(si).unwrap().1.category;
    // The futex word's role decides, at one stack: a lock's word is a lock wait, a
    // condition's word is blocked, whichever sample comes first.
    assert_eq!(category(0), Category::Compute);
    assert_eq!(category(1), Category::Lock);
    assert_eq!(category(2), Category::Blocked);
    assert_eq!(
        category(3),
        Category::Lock,
        "FUTEX_WAIT: glibc's lock waits"
    );
    assert_eq!(category(4), Category::Blocked, "read");
    let worker = &states.threads[1];
    assert_eq!(worker.ns, per_category(&profile, &states, |_| true));

    // Wait-for: main's edge to the worker sees the worker's samples in their categories.
    let summary = crate::analysis::summary::Summary::default();
    let waitfor = crate::analysis::waitfor::build(
        &profile,
        &mut sym,
        &summary,
        Some(&states),
        &Default::default(),
        false,
    )
    .unwrap();
    let edge = &waitfor.edges[0];
    assert_eq!(edge.other, Some(1));
    let mut seen = [0u64; CATEGORY_COUNT];
    for a in &edge.activities {
        seen[a.category.index()] += a.ns;
    }
    let inside = |s: &Sample| s.mono_ns <= START + 900_000_000;
    assert_eq!(seen, per_category(&profile, &states, inside));
    let futex_sleeps = edge.activities.iter().filter(|a| a.function == "futex");
    assert_eq!(futex_sleeps.count(), 2, "{:?}", edge.activities);

    // `scale` charges the same categories: its functions are the hot ones, its lock cause
    // the lock sites.
    let analysis = crate::analysis::Analysis {
        profile: profile.clone(),
        states: Some(states.clone()),
        waitfor: Some(waitfor),
        ..Default::default()
    };
    let costs = costs(&analysis, 2).unwrap();
    assert!(!costs.functions.is_empty());
    for f in &costs.functions {
        let hot = states.hot.iter().find(|h| h.function == f.function);
        assert_eq!(Some(f.category), hot.map(|h| h.category));
        assert_eq!(f.category, category(0));
    }
    for site in &worker.sites {
        let lock = wait_cause(site.category) == Some(Cause::Lock);
        assert_eq!(lock, site.category == Category::Lock);
    }
    assert!(costs.idle.iter().any(|c| c.cause == Cause::Lock));
}
