//! `sampling`, `hot` and `timeline` in the report's JSON: the thread-state samples' settings, the
//! hot stacks and the states over time.

use super::*;

#[derive(Serialize)]
pub(super) struct Sampling {
    pub(super) enabled: bool,
    #[serde(flatten)]
    pub(super) details: Option<SamplingDetails>,
}

#[derive(Serialize)]
pub(super) struct SamplingDetails {
    pub(super) cpu_hz: u32,
    pub(super) wall_hz: u32,
    pub(super) signal: Option<String>,
    pub(super) moved_from: Option<String>,
    pub(super) note: Option<String>,
    pub(super) cpu_samples: u64,
    pub(super) wall_samples: u64,
    pub(super) dropped: u64,
}

impl Sampling {
    pub(super) fn of(sampling: Option<&SamplingInfo>) -> Sampling {
        match sampling {
            None => Sampling {
                enabled: false,
                details: None,
            },
            Some(s) => Sampling {
                enabled: s.cpu_hz > 0 || s.wall_hz > 0,
                details: Some(SamplingDetails {
                    cpu_hz: s.cpu_hz,
                    wall_hz: s.wall_hz,
                    signal: s.signal.map(signal_name),
                    moved_from: s.moved_from.map(signal_name),
                    note: sampling_note(s),
                    cpu_samples: s.cpu_samples,
                    wall_samples: s.wall_samples,
                    dropped: s.dropped,
                }),
            },
        }
    }
}

#[derive(Serialize)]
pub(super) struct Hot<'a> {
    pub(super) function: &'a str,
    pub(super) category: &'static str,
    pub(super) samples: u64,
    pub(super) ns: u64,
    pub(super) user_frame: Option<String>,
    pub(super) frames: Frames<'a>,
}

impl<'a> Hot<'a> {
    pub(super) fn of(h: &'a HotFunction) -> Hot<'a> {
        Hot {
            function: &h.function,
            category: h.category.key(),
            samples: h.samples,
            ns: h.ns,
            user_frame: h.frames.get(h.user).map(Frame::display),
            frames: Frames(&h.frames),
        }
    }
}

#[derive(Serialize)]
pub(super) struct Timeline<'a> {
    pub(super) slice_ns: u64,
    pub(super) start_ns: u64,
    pub(super) threads: Vec<TimelineThread<'a>>,
}

impl<'a> Timeline<'a> {
    pub(super) fn of(r: &'a StateReport) -> Timeline<'a> {
        Timeline {
            slice_ns: r.slice_ns,
            start_ns: 0,
            threads: r
                .threads
                .iter()
                .map(|t| TimelineThread {
                    tid: t.tid,
                    name: &t.name,
                    label: ThreadId::of_states(t).label(),
                    slices: t
                        .slices
                        .iter()
                        .map(|s| Slice {
                            ns: *s,
                            slice_ns: r.slice_ns,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub(super) struct TimelineThread<'a> {
    pub(super) tid: u32,
    pub(super) name: &'a str,
    /// Its label, as every view prints it (`ThreadId::label`).
    pub(super) label: String,
    pub(super) slices: Vec<Slice>,
}

/// One slice of a thread's timeline: `{category: share}` for the categories present, the shares
/// rounded to 1e-4 (`ThreadStates::slice_shares`, which the html timeline draws).
pub(super) struct Slice {
    pub(super) ns: crate::analysis::states::PerCategory<u64>,
    pub(super) slice_ns: u64,
}

impl Serialize for Slice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for c in CATEGORIES {
            let ns = self.ns[c.index()];
            if ns > 0 {
                let share = crate::analysis::states::rounded_share(ns, self.slice_ns);
                map.serialize_entry(c.key(), &share)?;
            }
        }
        map.end()
    }
}
