//! The per-thread timeline: one row per thread, coloured by thread-state category, with the
//! phases drawn as labelled bands across all rows. Drawn from the analysis's thread states (the
//! shares the report's `timeline` key gives, docs/STATES.md); without them (sampling off, or an
//! older profile) each thread's life span is drawn instead.
//!
//! Each column is coloured by its *dominant* category rather than stacked: a stacked column needs
//! one rectangle per category per slice (7 × threads × slices, hundreds of thousands for a long
//! run), while dominant colouring merges equal neighbours into one rectangle, so the SVG grows
//! with the number of state changes, not with the run's length. The minority categories are not
//! lost: each row's tooltip (and the thread table) gives the thread's full mix.

use crate::analysis::Analysis;
use crate::analysis::states::{PerCategory, sampling_note};
use crate::analysis::threads::ThreadId;
use crate::util::escape;
use crate::util::{fmt_ns, fmt_pct};
use std::fmt::Write;

/// The categories of docs/STATES.md, in legend order (the analysis's own list).
pub use crate::analysis::states::CATEGORY_KEYS as CATEGORIES;

/// When a thread ran, relative to the process's start: the fallback when there is no timeline.
pub struct Lifespan {
    /// The thread's label (`ThreadId::label`) and that label cut for the rows' labels.
    pub label: String,
    pub short: String,
    pub begin_ns: u64,
    pub end_ns: u64,
}

/// The most characters of a row's label.
const LABEL_CHARS: usize = 20;

impl Lifespan {
    pub fn new(id: ThreadId<'_>, begin_ns: u64, end_ns: u64) -> Lifespan {
        Lifespan {
            label: id.label(),
            short: id.short_label(LABEL_CHARS),
            begin_ns,
            end_ns,
        }
    }
}

const WIDTH: f64 = 1200.0;
const LABEL_WIDTH: f64 = 190.0;
const ROW: f64 = 16.0;
const ROW_GAP: f64 = 4.0;
const LANE: f64 = 15.0;
const AXIS: f64 = 16.0;
/// Slices beyond this many columns are averaged together: finer than a pixel is not visible.
const MAX_COLUMNS: usize = 1000;
/// Phases drawn at most (the longest), and lanes of phase labels.
const MAX_PHASES: usize = 300;
const MAX_LANES: usize = 6;

/// What the timeline draws: the run's length, the sampled states when there are some, the
/// phases, and why sampling was off when the run said.
#[derive(Default)]
pub struct Drawing {
    pub wall_ns: u64,
    pub states: Option<StateRows>,
    pub phases: Vec<Phase>,
    pub note: Option<String>,
}

/// Every thread's states, slice by slice from `start_ns`.
pub struct StateRows {
    pub slice_ns: u64,
    pub start_ns: u64,
    pub threads: Vec<StateRow>,
}

pub struct StateRow {
    /// The thread's label (`ThreadId::label`) and that label cut for the row's label.
    pub label: String,
    pub short: String,
    /// Per slice, each category's share of it (`ThreadStates::slice_shares`).
    pub slices: Vec<PerCategory<f64>>,
}

impl StateRow {
    pub fn new(id: ThreadId<'_>, slices: Vec<PerCategory<f64>>) -> StateRow {
        StateRow {
            label: id.label(),
            short: id.short_label(LABEL_CHARS),
            slices,
        }
    }
}

impl Drawing {
    pub fn of(a: &Analysis) -> Drawing {
        Drawing {
            wall_ns: a.summary.wall_ns,
            states: a.states.as_ref().map(|r| StateRows {
                slice_ns: r.slice_ns,
                start_ns: 0,
                threads: r
                    .threads
                    .iter()
                    .map(|t| StateRow::new(ThreadId::of_states(t), t.slice_shares(r.slice_ns)))
                    .collect(),
            }),
            phases: a
                .phases
                .phases
                .iter()
                .map(|p| Phase {
                    label: p.label.clone(),
                    thread: a.label_of_tid(p.tid),
                    begin_ns: p.begin_ns as f64,
                    end_ns: p.end_ns as f64,
                    region: false,
                })
                .chain(a.summary.omp_runs.iter().map(|r| Phase {
                    label: r.label(&a.summary.omp_regions),
                    thread: a.label_of_tid(r.tid),
                    begin_ns: r.begin_ns as f64,
                    end_ns: r.end_ns as f64,
                    region: true,
                }))
                .collect(),
            note: a.sampling().and_then(sampling_note),
        }
    }
}

/// One thread's row: spans of `[begin_ns, end_ns)` with the CSS class that colours them.
struct Row {
    label: String,
    tooltip: String,
    spans: Vec<(f64, f64, &'static str)>,
}

/// A band across the rows: a phase the program marked (include/stallscope.h), or a run of
/// parallel regions (`region`: an OpenMP team at work, its label naming the region).
pub struct Phase {
    pub label: String,
    /// Its thread's label (`ThreadId::label`).
    pub thread: String,
    pub begin_ns: f64,
    pub end_ns: f64,
    pub region: bool,
}

/// The timeline section's content: legend or note, and the SVG. `lifespans` are drawn only when
/// there are no sampled states.
pub fn section(d: &Drawing, lifespans: &[Lifespan]) -> String {
    let mut out = String::new();
    let rows = match &d.states {
        Some(t) => {
            out.push_str("<ul class=\"legend muted\" aria-label=\"categories\" style=\"list-style:none;padding:0\"><li>Each column is coloured by the state the thread spent most of that slice in; hover a row for its full mix.");
            for c in CATEGORIES {
                let _ = write!(
                    out,
                    "<span class=\"c-{c}\"></span>{}",
                    c.replace('_', "\u{a0}")
                );
            }
            out.push_str("</li></ul>");
            state_rows(t)
        }
        None => {
            out.push_str("<p class=\"muted\">Thread-state sampling was off for this run (or the profile predates it): each thread's life span is drawn, without states. The thread table below gives its CPU, allocator and lock shares.");
            // Why, when the run said (docs/STATES.md: `sampling.note`).
            if let Some(note) = &d.note {
                let _ = write!(out, " Sampling: {}.", escape(note.trim_end_matches('.')));
            }
            out.push_str("</p>");
            lifespan_rows(lifespans)
        }
    };
    if d.phases.iter().any(|p| p.region) {
        out.push_str("<p class=\"muted\">Orange bands: runs of OpenMP parallel regions (regions within a millisecond of one another), each named by its longest region; hover one for the team's share of its time at the closing barriers.</p>");
    }
    let phases = longest_phases(&d.phases);
    let end_ns = end_ns(d, lifespans, &phases);
    out.push_str(&svg(&rows, &phases, end_ns));
    out
}

/// The most slices any thread has.
fn longest_row(rows: &StateRows) -> usize {
    rows.threads
        .iter()
        .map(|t| t.slices.len())
        .max()
        .unwrap_or(0)
}

fn state_rows(rows: &StateRows) -> Vec<Row> {
    let slice_ns = (rows.slice_ns as f64).max(1.0);
    let start_ns = rows.start_ns as f64;
    let longest = longest_row(rows);
    let per_column = longest.div_ceil(MAX_COLUMNS).max(1);
    let column_ns = slice_ns * per_column as f64;
    rows.threads
        .iter()
        .map(|t| {
            let mut totals = [0.0f64; CATEGORIES.len()];
            let mut spans: Vec<(f64, f64, &'static str)> = Vec::new();
            for (column, chunk) in t.slices.chunks(per_column).enumerate() {
                let mut shares = [0.0f64; CATEGORIES.len()];
                for slice in chunk {
                    for (i, share) in slice.iter().enumerate() {
                        shares[i] += share;
                    }
                }
                for (total, share) in totals.iter_mut().zip(shares) {
                    *total += share;
                }
                let Some((dominant, _)) = shares
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| **s > 0.0)
                    .max_by(|a, b| a.1.total_cmp(b.1))
                else {
                    continue; // the thread did not exist or was not sampled
                };
                let class = CLASSES[dominant];
                let begin = start_ns + column as f64 * column_ns;
                match spans.last_mut() {
                    Some(last) if last.2 == class && last.1 == begin => last.1 += column_ns,
                    _ => spans.push((begin, begin + column_ns, class)),
                }
            }
            let sum: f64 = totals.iter().sum();
            let mix: Vec<String> = CATEGORIES
                .iter()
                .zip(totals)
                .filter(|(_, t)| *t > 0.0)
                .map(|(c, t)| format!("{} {}", c.replace('_', " "), fmt_pct(t / sum)))
                .collect();
            Row {
                label: t.short.clone(),
                tooltip: format!("{}: {}", t.label, mix.join(", ")),
                spans,
            }
        })
        .collect()
}

/// The CSS class of each category, in `CATEGORIES` order.
const CLASSES: [&str; crate::analysis::states::CATEGORY_COUNT] = [
    "c-compute",
    "c-allocator",
    "c-lock",
    "c-atomic",
    "c-io",
    "c-blocked",
    "c-kernel_memory",
    "c-spinning",
    "c-runnable",
    "c-profiler",
    "c-idle",
];

fn lifespan_rows(lifespans: &[Lifespan]) -> Vec<Row> {
    lifespans
        .iter()
        .map(|l| Row {
            label: l.short.clone(),
            tooltip: format!(
                "{}: from {} to {}",
                l.label,
                fmt_ns(l.begin_ns),
                fmt_ns(l.end_ns)
            ),
            spans: vec![(l.begin_ns as f64, l.end_ns as f64, "life")],
        })
        .collect()
}

/// The longest `MAX_PHASES` phases, in order of beginning.
fn longest_phases(all: &[Phase]) -> Vec<&Phase> {
    let mut phases: Vec<&Phase> = all.iter().filter(|p| p.end_ns >= p.begin_ns).collect();
    phases.sort_by(|a, b| (b.end_ns - b.begin_ns).total_cmp(&(a.end_ns - a.begin_ns)));
    phases.truncate(MAX_PHASES);
    phases.sort_by(|a, b| a.begin_ns.total_cmp(&b.begin_ns));
    phases
}

fn end_ns(d: &Drawing, spans: &[Lifespan], phases: &[&Phase]) -> f64 {
    let mut end = d.wall_ns as f64;
    if let Some(t) = &d.states {
        end = end.max(t.start_ns as f64 + longest_row(t) as f64 * t.slice_ns as f64);
    }
    for s in spans {
        end = end.max(s.end_ns as f64);
    }
    for p in phases {
        end = end.max(p.end_ns);
    }
    end.max(1.0)
}

/// Greedy lanes so that labels of overlapping phases do not overlap: each phase goes into the
/// first lane free at its beginning (phases sorted by beginning); `None` past `MAX_LANES`.
fn lanes(phases: &[&Phase]) -> (Vec<Option<usize>>, usize) {
    let mut lane_ends: Vec<f64> = Vec::new();
    let assigned = phases
        .iter()
        .map(|p| {
            if let Some(i) = lane_ends.iter().position(|&e| e <= p.begin_ns) {
                lane_ends[i] = p.end_ns;
                Some(i)
            } else if lane_ends.len() < MAX_LANES {
                lane_ends.push(p.end_ns);
                Some(lane_ends.len() - 1)
            } else {
                None
            }
        })
        .collect();
    (assigned, lane_ends.len())
}

fn svg(rows: &[Row], phases: &[&Phase], end_ns: f64) -> String {
    let (lane_of, lanes) = lanes(phases);
    let plot_width = WIDTH - LABEL_WIDTH - 10.0;
    let x = |ns: f64| LABEL_WIDTH + (ns / end_ns).clamp(0.0, 1.0) * plot_width;
    let rows_top = AXIS + lanes as f64 * LANE + 4.0;
    let rows_height = rows.len().max(1) as f64 * (ROW + ROW_GAP);
    let height = rows_top + rows_height;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0}" width="100%" role="img" aria-label="timeline of {} threads over {}">"#,
        rows.len(),
        fmt_ns(end_ns)
    );
    // Time axis.
    for i in 0..=4 {
        let t = end_ns * i as f64 / 4.0;
        let anchor = match i {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = write!(
            out,
            r#"<text class="axis" x="{:.1}" y="12" text-anchor="{anchor}">{}</text>"#,
            x(t),
            fmt_ns(t)
        );
    }
    // Phases: a band behind the rows (seen in the gaps between them and where a thread has no
    // state) with its label in its lane; its edges are drawn over the rows below, so that the
    // rows keep their exact category colours.
    for (p, lane) in phases.iter().zip(&lane_of) {
        let (x0, x1) = (x(p.begin_ns), x(p.end_ns));
        let w = (x1 - x0).max(0.5);
        let _ = write!(
            out,
            r#"<g><title>{} {} (thread {}): {} to {}</title><rect class="{}" x="{x0:.2}" y="{AXIS}" width="{w:.2}" height="{:.1}"/>"#,
            if p.region {
                "parallel regions"
            } else {
                "phase"
            },
            escape(&p.label),
            escape(&p.thread),
            fmt_ns(p.begin_ns),
            fmt_ns(p.end_ns),
            if p.region { "region" } else { "phase" },
            height - AXIS
        );
        let chars = ((w - 4.0) / 6.5).floor();
        if let (Some(lane), true) = (*lane, chars >= 2.0) {
            let label: String = p.label.chars().take(chars as usize).collect();
            let _ = write!(
                out,
                r#"<text x="{:.2}" y="{:.1}">{}</text>"#,
                x0 + 2.0,
                AXIS + lane as f64 * LANE + 11.0,
                escape(&label)
            );
        }
        out.push_str("</g>");
    }
    // Thread rows.
    for (i, row) in rows.iter().enumerate() {
        let y = rows_top + i as f64 * (ROW + ROW_GAP);
        let _ = write!(
            out,
            r#"<g><title>{}</title><text x="0" y="{:.1}">{}</text><rect class="plot" x="{LABEL_WIDTH}" y="{y:.1}" width="{plot_width:.1}" height="{ROW}"/>"#,
            escape(&row.tooltip),
            y + ROW - 4.0,
            escape(&row.label)
        );
        for &(begin, end, class) in &row.spans {
            let x0 = x(begin);
            let _ = write!(
                out,
                r#"<rect class="{class}" x="{x0:.2}" y="{y:.1}" width="{:.2}" height="{ROW}"/>"#,
                (x(end) - x0).max(0.3)
            );
        }
        out.push_str("</g>");
    }
    for p in phases {
        for edge in [p.begin_ns, p.end_ns] {
            let _ = write!(
                out,
                r#"<line class="phase-edge" x1="{0:.2}" x2="{0:.2}" y1="{AXIS}" y2="{height:.1}"/>"#,
                x(edge)
            );
        }
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A thread of a synthetic drawing.
    fn test_id(tid: u32, name: &'static str) -> ThreadId<'static> {
        ThreadId {
            serial: tid,
            tid,
            name,
            main: false,
            folded: None,
        }
    }

    /// One slice: `(category, share)` pairs, the others 0.
    fn slice(shares: &[(&str, f64)]) -> PerCategory<f64> {
        let mut out = [0.0; CATEGORIES.len()];
        for (c, share) in shares {
            out[CATEGORIES.iter().position(|k| k == c).expect("a category")] = *share;
        }
        out
    }

    fn phase(label: &str, tid: u32, begin_ns: f64, end_ns: f64) -> Phase {
        Phase {
            label: label.into(),
            thread: test_id(tid, "t").label(),
            begin_ns,
            end_ns,
            region: false,
        }
    }

    /// Three threads × 200 slices of 1 ms: `main` computes then blocks, `worker-1` runs through
    /// every category in turn (so each colour appears), `worker-2` starts late and waits on locks.
    pub fn synthetic_timeline() -> Drawing {
        let slices = |f: &dyn Fn(usize) -> PerCategory<f64>| (0..200).map(f).collect::<Vec<_>>();
        let row = |tid: u32, name: &'static str, slices: Vec<PerCategory<f64>>| {
            StateRow::new(test_id(tid, name), slices)
        };
        Drawing {
            wall_ns: 200_000_000,
            phases: vec![
                phase("load", 1, 0.0, 60e6),
                phase("solve", 1, 60e6, 190e6),
                phase("inner", 2, 80e6, 120e6),
            ],
            states: Some(StateRows {
                slice_ns: 1_000_000,
                start_ns: 0,
                threads: vec![
                    row(
                        1,
                        "main",
                        slices(&|i| {
                            if i < 100 {
                                slice(&[("compute", 0.9), ("io", 0.1)])
                            } else {
                                slice(&[("blocked", 0.95)])
                            }
                        }),
                    ),
                    row(
                        2,
                        "worker-1",
                        slices(&|i| {
                            let c = CATEGORIES[i * CATEGORIES.len() / 200];
                            let mut s = slice(&[("compute", 0.3)]);
                            s[CATEGORIES.iter().position(|k| *k == c).unwrap()] = 0.7;
                            s
                        }),
                    ),
                    row(
                        3,
                        "worker-2",
                        slices(&|i| {
                            if i < 50 {
                                slice(&[])
                            } else {
                                slice(&[("lock", 0.6), ("compute", 0.4)])
                            }
                        }),
                    ),
                ],
            }),
            note: None,
        }
    }

    #[test]
    fn synthetic_timeline_has_a_row_per_thread_and_merged_runs() {
        let html = section(&synthetic_timeline(), &[]);
        assert!(html.contains("<svg class=\"timeline\""));
        for name in ["main [1]", "worker-1 [2]", "worker-2 [3]"] {
            assert!(html.contains(name), "no row label {name}");
        }
        // main: compute then blocked, two runs; worker-1: one run per category (the 30% compute
        // never dominates); worker-2: one lock run, nothing before it started.
        let runs = |c: &str| html.matches(&format!("class=\"c-{c}\" x")).count();
        assert_eq!(runs("compute"), 2);
        assert_eq!(runs("blocked"), 2);
        assert_eq!(runs("lock"), 2);
        assert_eq!(runs("io"), 1, "main's 10% io never dominates");
        for c in CATEGORIES {
            assert!(html.contains(&format!("class=\"c-{c}\"")), "no {c}");
        }
        // worker-2's lock run starts at 50 ms of 200: a quarter into the plot.
        let plot = WIDTH - LABEL_WIDTH - 10.0;
        let lock_x = format!("x=\"{:.2}\"", LABEL_WIDTH + plot * 0.25);
        assert!(html.contains(&lock_x), "no run at {lock_x}");
        // Phases: three bands with their labels, the nested one in a second lane.
        assert_eq!(html.matches("class=\"phase\"").count(), 3);
        for label in [">load<", ">solve<", ">inner<"] {
            assert!(html.contains(label), "no phase label {label}");
        }
        assert!(
            html.contains("worker-2 [3]: compute 40.0%, lock 60.0%"),
            "row tooltip gives the mix"
        );
        assert!(!html.contains("sampling was off"));
    }

    #[test]
    fn many_slices_are_averaged_into_a_bounded_number_of_columns() {
        // 8 threads × 20 000 slices switching category every slice: drawn slice by slice, that
        // is 20 000 rectangles per thread; averaged, at most MAX_COLUMNS.
        let slices: Vec<PerCategory<f64>> = (0..20_000)
            .map(|i| {
                if i % 2 == 0 {
                    slice(&[("compute", 1.0)])
                } else {
                    slice(&[("lock", 0.9)])
                }
            })
            .collect();
        let threads: Vec<StateRow> = (0..8)
            .map(|t| StateRow::new(test_id(t, "w"), slices.clone()))
            .collect();
        let report = Drawing {
            states: Some(StateRows {
                slice_ns: 1000,
                start_ns: 0,
                threads,
            }),
            ..Drawing::default()
        };
        let html = section(&report, &[]);
        let rects = html.matches("<rect class=\"c-").count();
        assert!((8..=8 * MAX_COLUMNS).contains(&rects), "{rects} rectangles");
    }

    #[test]
    fn without_a_timeline_life_spans_are_drawn_and_sampling_is_said_off() {
        let report = Drawing {
            wall_ns: 1000,
            note: Some("no free <signal>".into()),
            ..Drawing::default()
        };
        let spans = [
            Lifespan::new(test_id(7, "main"), 0, 1000),
            Lifespan::new(test_id(8, "<w&>"), 500, 750),
        ];
        let html = section(&report, &spans);
        assert!(html.contains("sampling was off"));
        assert!(html.contains("Sampling: no free &lt;signal&gt;."));
        assert_eq!(html.matches("class=\"life\"").count(), 2);
        assert!(html.contains("&lt;w&amp;&gt; [8]"), "names are escaped");
        let half = format!(
            "x=\"{:.2}\"",
            LABEL_WIDTH + (WIDTH - LABEL_WIDTH - 10.0) * 0.5
        );
        assert!(html.contains(&half), "second thread starts half-way");
    }
}
