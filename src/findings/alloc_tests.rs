use super::*;
use crate::analysis::summary::{CrossFreeSummary, FnSummary, Summary, ThreadSummary};
use crate::findings::Severity;
use crate::findings::test_support::{check_levels, frame, rule, sized_hist};
use crate::symbols::Frame;

fn severity(findings: &[Finding]) -> Option<Severity> {
    assert!(findings.len() <= 1, "{findings:?}");
    findings.first().map(|f| f.severity)
}

/// An analysis whose allocator took `alloc_share` of the threads' lives (no CPU figures), with
/// `calls` allocator calls and `time_ns` in the allocator.
fn allocator(calls: u64, alloc_share: f64, time_ns: u64) -> Analysis {
    let wall_ns = (time_ns as f64 / alloc_share).round() as u64;
    Analysis {
        summary: Summary {
            command: vec!["./tokens".into(), "in.txt".into()],
            groups: vec![FnSummary {
                name: "malloc",
                calls,
                time_ns,
                ..FnSummary::default()
            }],
            threads: vec![ThreadSummary {
                wall_ns,
                alloc_ns: time_ns,
                ..ThreadSummary::default()
            }],
            ..Summary::default()
        },
        ..Analysis::default()
    }
}

fn site(frames: Vec<Frame>, user: usize, calls: u64, bytes: u64, samples: u64) -> SiteSummary {
    SiteSummary {
        frames,
        user,
        function: "malloc",
        calls,
        bytes,
        samples,
        ..SiteSummary::default()
    }
}

/// An analysis whose allocation requests are `small` of 1000 at 16 bytes or less, the rest 33-40.
fn sized(small: f64, calls: u64, alloc_share: f64) -> Analysis {
    let small_count = (small * 1000.0).round() as u64;
    let mut a = allocator(calls, alloc_share, 1_000_000_000);
    a.summary.size_hist = sized_hist(&[(16, small_count), (40, 1000 - small_count)]);
    a.summary.alloc_sites = vec![
        site(
            vec![frame(
                Some("make_token(char const*)"),
                Some(("/src/tok.c", 9)),
                "",
            )],
            0,
            small_count,
            small_count * 16,
            40,
        ),
        site(
            vec![frame(Some("big_buffer"), None, "/bin/tokens")],
            0,
            1000 - small_count,
            (1000 - small_count) * 64,
            9,
        ),
    ];
    a
}

#[test]
fn small_allocations_thresholds() {
    let r = rule("small-allocations");
    check_levels(r, |share| {
        severity(&small_allocations(r, &sized(share, 50_000, 0.2)))
    });
}

#[test]
fn small_allocations_name_the_site_and_the_bench_command() {
    let r = rule("small-allocations");
    let f = &small_allocations(r, &sized(0.95, 50_000, 0.2))[0];
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("make_token at tok.c:9")),
        "{f:?}"
    );
    assert!(
        !f.evidence.iter().any(|e| e.contains("big_buffer")),
        "{f:?}"
    );
    assert!(
        f.remedy
            .contains("stallscope bench --allocators glibc,jemalloc,mimalloc './tokens in.txt'"),
        "{}",
        f.remedy
    );
}

#[test]
fn small_allocations_stay_quiet_for_few_calls_or_little_allocator_time() {
    let r = rule("small-allocations");
    let min_calls = r.param("min_calls") as u64;
    assert!(small_allocations(r, &sized(1.0, min_calls - 1, 0.5)).is_empty());
    let min_share = r.param("min_alloc_cpu_share");
    assert!(small_allocations(r, &sized(1.0, 1_000_000, min_share * 0.99)).is_empty());
    assert!(!small_allocations(r, &sized(1.0, min_calls, min_share)).is_empty());
}

/// An analysis whose `share` of 10,000 allocation requests pass through `library` frames.
fn through_library(share: f64, library: &[&str], user_index: usize) -> Analysis {
    let calls = (share * 10_000.0).round() as u64;
    let mut frames = vec![frame(Some("operator new(unsigned long)"), None, "")];
    frames.extend(library.iter().map(|f| frame(Some(f), None, "")));
    frames.push(frame(
        Some("load_entities(std::istream&)"),
        Some(("/src/load.cpp", 31)),
        "",
    ));
    frames.push(frame(Some("main"), None, ""));
    let user = if user_index == usize::MAX {
        frames.len() - 2
    } else {
        user_index
    };
    let mut a = allocator(20_000, 0.25, 1_000_000_000);
    a.summary.command = vec!["./load".into()];
    a.summary.size_hist = sized_hist(&[(40, 10_000)]);
    a.summary.alloc_sites = vec![site(frames, user, calls, calls * 40, 30)];
    a
}

const EXTRACTION: [&str; 2] = [
    "std::__cxx11::basic_string<char>::_M_mutate(unsigned long)",
    "std::basic_istream<char>& std::operator>><char>(std::basic_istream<char>&, std::__cxx11::basic_string<char>&)",
];

#[test]
fn library_hotspot_thresholds() {
    let r = rule("library-allocation-hotspot");
    check_levels(r, |share| {
        severity(&library_hotspots(
            r,
            &through_library(share, &EXTRACTION, usize::MAX),
        ))
    });
}

#[test]
fn library_hotspot_names_the_outermost_library_call_and_the_user_frame() {
    let r = rule("library-allocation-hotspot");
    let f = &library_hotspots(r, &through_library(0.6, &EXTRACTION, usize::MAX))[0];
    assert!(f.title.contains("stream extraction"), "{}", f.title);
    assert!(f.title.contains("std::operator>>"), "{}", f.title);
    assert!(
        f.title.contains("load_entities at load.cpp:31"),
        "{}",
        f.title
    );
    let printf = ["__vfprintf_internal", "sprintf"];
    let f = &library_hotspots(r, &through_library(0.6, &printf, usize::MAX))[0];
    assert!(
        f.title.contains("printf-family") && f.title.contains("sprintf"),
        "{}",
        f.title
    );
}

#[test]
fn library_frames_beyond_the_user_frame_do_not_count() {
    let r = rule("library-allocation-hotspot");
    // The user frame is the allocator's direct caller: the library frames are its callers.
    assert!(library_hotspots(r, &through_library(0.9, &EXTRACTION, 0)).is_empty());
    assert!(library_hotspots(r, &through_library(0.9, &["my_parser"], usize::MAX)).is_empty());
}

fn allocator_busy(share: f64, calls: u64, time_ns: u64, threads: Vec<ThreadSummary>) -> Analysis {
    let mut a = allocator(calls, share, time_ns);
    a.summary.command = vec!["./a".into()];
    if !threads.is_empty() {
        a.summary.threads = threads;
    }
    a
}

#[test]
fn allocator_time_thresholds_and_gates() {
    let r = rule("allocator-time");
    check_levels(r, |share| {
        severity(&allocator_time(
            r,
            &allocator_busy(share, 100_000, 50_000_000, vec![]),
        ))
    });
    let min_calls = r.param("min_calls") as u64;
    let min_time = r.param("min_time_ns") as u64;
    assert!(allocator_time(r, &allocator_busy(0.9, min_calls - 1, min_time, vec![])).is_empty());
    assert!(allocator_time(r, &allocator_busy(0.9, min_calls, min_time - 1, vec![])).is_empty());
}

#[test]
fn allocator_time_of_one_busy_thread_counts() {
    let r = rule("allocator-time");
    let thread = |tid, cpu_ns, alloc_ns: u64, alloc_calls| ThreadSummary {
        tid,
        cpu_ns,
        alloc_ns,
        alloc_cpu_ns: alloc_ns.min(cpu_ns),
        alloc_calls,
        ..ThreadSummary::default()
    };
    let threads = vec![
        thread(7, 300_000_000, 180_000_000, 500_000),
        thread(8, 900_000_000, 0, 0),
    ];
    let f = allocator_time(r, &allocator_busy(0.15, 500_000, 180_000_000, threads));
    assert_eq!(severity(&f), Some(Severity::High));
    assert!(f[0].title.contains("thread unnamed [7]"), "{}", f[0].title);
    // A thread that ran little (a main thread waiting for its workers, node's main thread with
    // 31.8 ms in the allocator) is no cause, whatever its own share: the program's share counts.
    let threads = vec![
        thread(7, 100_000_000, 60_000_000, 500_000),
        thread(8, 900_000_000, 0, 0),
    ];
    let f = allocator_time(r, &allocator_busy(0.06, 500_000, 60_000_000, threads));
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn allocator_time_is_net_of_waiting_for_a_cpu() {
    // Timed calls that lasted twice the threads' CPU time (they waited for a CPU inside them):
    // the share is of the allocator's time on a CPU, never above 100%.
    let r = rule("allocator-time");
    let threads = vec![ThreadSummary {
        tid: 9,
        cpu_ns: 1_000_000_000,
        wall_ns: 8_000_000_000,
        alloc_ns: 2_000_000_000,
        alloc_cpu_ns: 120_000_000,
        alloc_calls: 500_000,
        ..ThreadSummary::default()
    }];
    let f = allocator_time(r, &allocator_busy(0.25, 500_000, 2_000_000_000, threads));
    assert_eq!(severity(&f), Some(Severity::Low), "{f:?}");
    assert!(f[0].title.contains("12.0%"), "{}", f[0].title);
    assert!(
        f[0].evidence.iter().any(|e| e.contains("lasted 2.000 s")),
        "{:?}",
        f[0].evidence
    );
}

#[test]
fn short_calls_timed_longer_than_on_a_cpu_are_the_clock_not_waiting() {
    // bignum_pell alone on an idle CPU: 34.5 million calls timed at 13 ns each on average, 448 ms
    // in a 448 ms life, of which 310 ms on a CPU by the samples. Nothing waited inside them: two
    // clock reads cost about as much as such a call.
    let r = rule("allocator-time");
    let threads = vec![ThreadSummary {
        tid: 9,
        cpu_ns: 447_000_000,
        wall_ns: 448_000_000,
        alloc_ns: 447_880_000,
        alloc_cpu_ns: 310_430_000,
        alloc_calls: 34_531_201,
        ..ThreadSummary::default()
    }];
    let f = allocator_time(r, &allocator_busy(0.69, 34_531_201, 447_880_000, threads));
    let evidence = f[0].evidence.join("\n");
    assert!(evidence.contains("two clock reads"), "{evidence}");
    assert!(!evidence.contains("waited for a CPU"), "{evidence}");
}

#[test]
fn cross_thread_frees_thresholds() {
    let r = rule("cross-thread-frees");
    // The allocator takes `cost` of the threads' CPU time.
    let at_cost = |share: f64, calls: u64, cost: f64| Analysis {
        summary: Summary {
            cross_frees: Some(CrossFreeSummary {
                sampled: 0,
                sampled_cross: 0,
                share,
                calls,
            }),
            threads: vec![ThreadSummary {
                cpu_ns: 1_000_000_000,
                alloc_cpu_ns: (cost * 1e9) as u64,
                ..ThreadSummary::default()
            }],
            ..Summary::default()
        },
        ..Analysis::default()
    };
    let at = |share: f64, calls: u64| at_cost(share, calls, 0.5);
    check_levels(r, |share| {
        severity(&cross_thread_frees(r, &at(share, 100_000)))
    });
    // What the frees cost caps the severity: the allocator at 3% of CPU time is no more than INFO.
    assert_eq!(
        severity(&cross_thread_frees(r, &at_cost(0.98, 100_000, 0.03))),
        Some(Severity::Info)
    );
    assert!(cross_thread_frees(r, &at(0.9, r.param("min_calls") as u64 - 1)).is_empty());
    assert!(cross_thread_frees(r, &Analysis::default()).is_empty());
}

#[test]
fn the_allocators_share_is_worded_with_its_samples_and_what_the_severity_follows() {
    let few = SampledShare::new(0.107, 20);
    assert_eq!(
        cpu_share_words(few, true),
        "10.7% of the threads' CPU time (from 20 CPU samples, so possibly as little as 0.0%: the severity follows that)"
    );
    assert_eq!(
        cpu_share_words(few, false),
        "10.7% of the threads' CPU time (from 20 CPU samples, so possibly as little as 0.0%)"
    );
    let timed = SampledShare::new(0.171, 0);
    assert_eq!(
        cpu_share_words(timed, true),
        "17.1% of the threads' CPU time (the severity follows it)"
    );
    assert_eq!(
        cpu_share_words(timed, false),
        "17.1% of the threads' CPU time"
    );
}

/// A share from few CPU samples that reaches a level only by its estimate makes an uncertain
/// finding (make -j2's cc1 beside other load: 12.3% from 25 samples, possibly 0.0%); from many
/// samples, or with the bound at a level, a sure one.
#[test]
fn allocator_time_from_few_samples_is_uncertain() {
    let r = rule("allocator-time");
    let at = |share: f64, samples: u64| {
        let cpu_ns = 100_000_000;
        let alloc_ns = (share * cpu_ns as f64) as u64;
        let mut a = allocator_busy(
            share,
            100_000,
            alloc_ns,
            vec![ThreadSummary {
                cpu_ns,
                alloc_ns,
                alloc_cpu_ns: alloc_ns,
                alloc_cpu_samples: samples,
                ..ThreadSummary::default()
            }],
        );
        a.summary.groups[0].calls = 100_000;
        allocator_time(r, &a)
    };
    let few = at(0.123, 25);
    assert_eq!(severity(&few), Some(Severity::Low), "{few:?}");
    assert!(few[0].uncertain, "{few:?}");
    let many = at(0.123, 40_000);
    assert_eq!(severity(&many), Some(Severity::Low), "{many:?}");
    assert!(!many[0].uncertain, "{many:?}");
}

/// A share from a handful of CPU samples of a process that used a sliver of the run's CPUs is no
/// evidence: a cargo build's cargo process, 5 CPU samples of 54 ms of CPU in a 10.7 s build, had
/// LOW allocator-time and small-allocations ("possibly as little as 0.0%"). The same few samples
/// of a process that kept a CPU busy stay an uncertain finding, and many samples a sure one.
#[test]
fn few_samples_of_a_process_that_hardly_ran_make_no_allocator_finding() {
    let process = |cpu_ns: u64, samples: u64| {
        let alloc_ns = (0.4 * cpu_ns as f64) as u64;
        let mut a = allocator_busy(
            0.4,
            100_000,
            alloc_ns,
            vec![ThreadSummary {
                cpu_ns,
                wall_ns: 10_700_000_000,
                alloc_ns,
                alloc_cpu_ns: alloc_ns,
                alloc_cpu_samples: samples,
                ..ThreadSummary::default()
            }],
        );
        a.summary.groups[0].calls = 100_000;
        a.summary.wall_ns = 10_700_000_000;
        a.summary.ncpus = 2;
        a.summary.size_hist = sized_hist(&[(16, 900), (40, 100)]);
        // The thread's own CPU samples, as many as the share rests on.
        a.states = Some(crate::analysis::states::StateReport {
            threads: vec![crate::analysis::states::ThreadStates {
                cpu_marks: vec![(0, 0, 0); samples as usize],
                ..Default::default()
            }],
            ..Default::default()
        });
        a
    };
    let time = rule("allocator-time");
    let small = rule("small-allocations");
    let cargo = process(54_000_000, 5);
    assert!(allocator_time(time, &cargo).is_empty());
    assert!(small_allocations(small, &cargo).is_empty());
    // The same figures from many samples are what they say.
    let measured = process(54_000_000, 5_000);
    assert!(!allocator_time(time, &measured).is_empty());
    assert!(!small_allocations(small, &measured).is_empty());
    // A process busy for the run keeps its uncertain finding.
    let busy = process(10_000_000_000, 5);
    let f = allocator_time(time, &busy);
    assert!(f.first().is_some_and(|f| f.uncertain), "{f:?}");
}
