//! `perftools.profiles.Profile` (profile.proto), gzipped, for `go tool pprof`. The protobuf is
//! written by hand: a few varint and length-delimited fields. The sample types are [`TYPES`],
//! named as Go and Pyroscope name them, so that tools comparing profiles of several programs
//! line them up: `samples/count` and `cpu/nanoseconds` (a CPU profile), `wall/nanoseconds`
//! (all sampled time, on and off the CPU), `contentions/count` and `delay/nanoseconds` (a
//! contention profile: the lock waits), `alloc_objects/count` and `alloc_space/bytes` (an
//! allocation profile), and `alloc_time/nanoseconds` (time in the allocator). Each sample has
//! values of one source only, the others zero. Thread-state samples carry the labels `thread`,
//! `state` and (when a phase was open) `phase`, so that `-tagfocus=state=lock` and
//! `-tagfocus=phase=build` select them; identical (stack, thread, phase) samples are merged.
//! Every location has a function name (`module+0xoffset` when unknown) and a mapping (one per
//! module) that says so, so pprof needs no symbolization and servers that want a mapping for
//! every location (Pyroscope) take it. Lock waits carry the label `lock` (the lock's kind and
//! name). [`encode_selected`] writes some of the types only (one kind of figure, for the
//! profile servers: `push/`).

use super::{Exporter, Options, frame_name, lock_leaf};
use crate::analysis::Analysis;
use crate::analysis::sampled;
use crate::analysis::threads::ThreadId;
use crate::model::Model;
use crate::symbols::Frame;
use anyhow::Result;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::collections::HashMap;
use std::io::Write;

pub struct Pprof;

/// Protobuf wire encoding of one message.
#[derive(Default)]
pub(super) struct Msg(pub(super) Vec<u8>);

impl Msg {
    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    pub(super) fn key(&mut self, field: u32, wire: u8) {
        self.varint(((field as u64) << 3) | wire as u64);
    }
    /// An integer field (int64/uint64 as varint); zero is the default and left out.
    pub(super) fn int(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, 0);
            self.varint(v as u64);
        }
    }
    pub(super) fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    pub(super) fn msg(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }
    /// A packed repeated integer field.
    pub(super) fn packed(&mut self, field: u32, vs: &[i64]) {
        let mut inner = Msg::default();
        for &v in vs {
            inner.varint(v as u64);
        }
        self.bytes(field, &inner.0);
    }
}

#[derive(Default)]
struct Builder {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    functions: Vec<Msg>,
    function_ids: HashMap<(String, String), u64>,
    locations: Vec<Msg>,
    location_ids: HashMap<(String, u64, String), u64>,
    /// One mapping per module (the synthetic leaves' is the module ""): id and highest address.
    mappings: Vec<(String, u64)>,
    mapping_ids: HashMap<String, u64>,
    samples: Vec<Msg>,
    /// Which of [`TYPES`] are written, in order, and the state key a thread-state sample must
    /// have (None: every sample).
    selected: Vec<usize>,
    state: Option<&'static str>,
}

impl Builder {
    fn new(selected: Vec<usize>, state: Option<&'static str>) -> Builder {
        let mut b = Builder {
            selected,
            state,
            ..Builder::default()
        };
        b.string("");
        b
    }

    /// The mapping of a module: pyroscope and Parca want one for every location. Its functions,
    /// files, lines and inlined frames are all given, so no tool tries to symbolize it.
    fn mapping(&mut self, module: &str, address: u64) -> u64 {
        let id = match self.mapping_ids.get(module) {
            Some(&id) => id,
            None => {
                self.mappings.push((module.to_string(), 0));
                let id = self.mappings.len() as u64;
                self.mapping_ids.insert(module.to_string(), id);
                id
            }
        };
        let top = &mut self.mappings[id as usize - 1].1;
        *top = (*top).max(address.saturating_add(1));
        id
    }

    fn mapping_msgs(&mut self) -> Vec<Msg> {
        let mappings = std::mem::take(&mut self.mappings);
        mappings
            .iter()
            .enumerate()
            .map(|(i, (module, top))| {
                let name = if module.is_empty() {
                    "[stallscope]"
                } else {
                    module
                };
                let mut m = Msg::default();
                m.int(1, i as i64 + 1);
                m.int(3, *top as i64);
                m.int(5, self.string(name));
                for field in 7..=10 {
                    m.int(field, 1);
                }
                m
            })
            .collect()
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    fn function(&mut self, name: &str, file: &str) -> u64 {
        let key = (name.to_string(), file.to_string());
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let (n, f) = (self.string(name), self.string(file));
        let mut m = Msg::default();
        m.int(1, id as i64);
        m.int(2, n);
        m.int(3, n);
        m.int(4, f);
        self.functions.push(m);
        self.function_ids.insert(key, id);
        id
    }

    /// A location: one address with its frames (inlined ones first, as in profile.proto).
    fn location(&mut self, module: &str, address: u64, frames: &[&Frame], synthetic: &str) -> u64 {
        let key = (module.to_string(), address, synthetic.to_string());
        if let Some(&id) = self.location_ids.get(&key) {
            return id;
        }
        let id = self.locations.len() as u64 + 1;
        let mapping = self.mapping(module, address);
        let mut m = Msg::default();
        m.int(1, id as i64);
        m.int(2, mapping as i64);
        m.int(3, address as i64);
        if frames.is_empty() {
            let f = self.function(synthetic, "");
            let mut line = Msg::default();
            line.int(1, f as i64);
            m.msg(4, line);
        }
        for frame in frames {
            let f = self.function(&frame_name(frame), frame.file.as_deref().unwrap_or(""));
            let mut line = Msg::default();
            line.int(1, f as i64);
            line.int(2, frame.line.unwrap_or(0) as i64);
            m.msg(4, line);
        }
        self.locations.push(m);
        self.location_ids.insert(key, id);
        id
    }

    /// A sample: `leaf` (the allocator function or lock wait), then the stack, innermost first,
    /// with string labels (key, value).
    fn sample(
        &mut self,
        frames: &[Frame],
        leaf: Option<&str>,
        values: [u64; TYPE_COUNT],
        labels: &[(&str, &str)],
    ) {
        let kept: Vec<i64> = self.selected.iter().map(|&i| values[i] as i64).collect();
        if kept.iter().all(|&v| v == 0) {
            return;
        }
        let mut ids = Vec::new();
        if let Some(leaf) = leaf {
            ids.push(self.location("", 0, &[], leaf) as i64);
        }
        let mut group: Vec<&Frame> = Vec::new();
        for f in crate::analysis::collapsed::shown_frames(frames) {
            group.push(f);
            if !f.inlined {
                let id = self.location(&f.module, f.offset, &group, "");
                ids.push(id as i64);
                group.clear();
            }
        }
        if !group.is_empty() {
            let last = group[group.len() - 1];
            let id = self.location(&last.module, last.offset, &group, "");
            ids.push(id as i64);
        }
        let mut m = Msg::default();
        m.packed(1, &ids);
        m.packed(2, &kept);
        for (key, value) in labels {
            let mut label = Msg::default();
            label.int(1, self.string(key));
            label.int(2, self.string(value));
            m.msg(3, label);
        }
        self.samples.push(m);
    }
}

fn value_type(b: &mut Builder, kind: &str, unit: &str) -> Msg {
    let mut m = Msg::default();
    m.int(1, b.string(kind));
    m.int(2, b.string(unit));
    m
}

const TYPE_COUNT: usize = 8;

/// The sample types (type, unit), in the order of every sample's values.
pub const TYPES: [(&str, &str); TYPE_COUNT] = [
    ("samples", "count"),
    ("cpu", "nanoseconds"),
    ("wall", "nanoseconds"),
    ("contentions", "count"),
    ("delay", "nanoseconds"),
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("alloc_time", "nanoseconds"),
];

/// The values of one sample: `(type, value)` pairs, the other types zero.
fn values(pairs: &[(&str, u64)]) -> [u64; TYPE_COUNT] {
    let mut out = [0; TYPE_COUNT];
    for &(name, v) in pairs {
        if let Some(i) = TYPES.iter().position(|t| t.0 == name) {
            out[i] = v;
        }
    }
    out
}

/// What one pprof profile holds: some of [`TYPES`], the thread-state samples of one state only
/// where `state` is given, and comments (free text that profile servers keep with it).
pub struct Selection<'a> {
    pub types: &'a [&'a str],
    pub state: Option<&'static str>,
    pub comments: &'a [String],
    /// The time covered, Unix nanoseconds and length (None: the profile's own).
    pub time: Option<(u64, u64)>,
}

/// The uncompressed protobuf with every sample type.
pub fn encode(a: &Analysis) -> Vec<u8> {
    let all: Vec<&str> = TYPES.iter().map(|t| t.0).collect();
    encode_selected(
        a,
        &Selection {
            types: &all,
            state: None,
            comments: &[],
            time: None,
        },
    )
    .0
}

/// The uncompressed protobuf of a selection, and how many samples it holds (a sample whose
/// selected values are all zero is left out).
pub fn encode_selected(a: &Analysis, sel: &Selection<'_>) -> (Vec<u8>, usize) {
    let selected: Vec<usize> = sel
        .types
        .iter()
        .filter_map(|name| TYPES.iter().position(|t| t.0 == *name))
        .collect();
    let mut b = Builder::new(selected.clone(), sel.state);
    let sample_types: Vec<Msg> = selected
        .iter()
        .map(|&i| value_type(&mut b, TYPES[i].0, TYPES[i].1))
        .collect();
    sampled_stacks(a, &mut b);
    if sel.state.is_none() {
        for lock in &a.summary.locks {
            let name = lock_name(a, lock);
            for site in &lock.sites {
                b.sample(
                    &site.frames,
                    Some(&lock_leaf(lock.kind)),
                    values(&[("contentions", site.contended), ("delay", site.wait_ns)]),
                    &[("lock", name.as_str())],
                );
            }
        }
        for site in &a.summary.alloc_sites {
            b.sample(
                &site.frames,
                Some(site.function),
                values(&[
                    ("alloc_objects", site.calls),
                    ("alloc_space", site.bytes),
                    ("alloc_time", site.time_ns),
                ]),
                &[],
            );
        }
    }
    let count = b.samples.len();
    let has = |name: &str| selected.iter().any(|&i| TYPES[i].0 == name);
    // A CPU profile's period, as Go writes it: nanoseconds of CPU time per sample.
    let cpu_hz = a.sampling().map_or(0, |s| s.cpu_hz);
    let has_cpu = a
        .states
        .as_ref()
        .is_some_and(|r| r.stacks.iter().any(|s| s.on_cpu));
    let (period_type, period, default_type) = if cpu_hz > 0 && has_cpu && has("cpu") {
        (
            value_type(&mut b, "cpu", "nanoseconds"),
            1_000_000_000 / cpu_hz as i64,
            "cpu",
        )
    } else if selected.len() == TYPES.len() {
        (
            value_type(&mut b, "alloc_objects", "count"),
            1,
            "alloc_time",
        )
    } else {
        let first = TYPES[selected.first().copied().unwrap_or(0)];
        let last = TYPES[selected.last().copied().unwrap_or(0)];
        (value_type(&mut b, first.0, first.1), 1, last.0)
    };
    let default_type = b.string(default_type);
    let comments: Vec<i64> = sel.comments.iter().map(|c| b.string(c)).collect();
    let mappings = b.mapping_msgs();
    let mut m = Msg::default();
    for t in sample_types {
        m.msg(1, t);
    }
    for s in std::mem::take(&mut b.samples) {
        m.msg(2, s);
    }
    for mapping in mappings {
        m.msg(3, mapping);
    }
    for l in std::mem::take(&mut b.locations) {
        m.msg(4, l);
    }
    for f in std::mem::take(&mut b.functions) {
        m.msg(5, f);
    }
    for s in &b.strings {
        m.bytes(6, s.as_bytes());
    }
    let (start, length) = sel
        .time
        .unwrap_or((a.summary.start_time_unix_ns, a.summary.wall_ns));
    m.int(9, start as i64);
    m.int(10, length as i64);
    m.msg(11, period_type);
    m.int(12, period);
    if !comments.is_empty() {
        m.packed(13, &comments);
    }
    m.int(14, default_type);
    (m.0, count)
}

/// A lock as the findings name it: its kind (`pthread mutex`, `std::sync::Mutex`) and its
/// symbol, where it was initialised, or where a runtime that parks threads on their own words
/// took it.
fn lock_name(a: &Analysis, lock: &crate::analysis::summary::LockSummary) -> String {
    let kind = match &lock.runtime {
        Some(r) => r.object.clone(),
        None => format!("pthread {}", lock.kind),
    };
    let name = match lock.runtime.as_ref().and_then(|r| r.taken_at.as_ref()) {
        Some(f) => format!("taken in {}", f.short_text()),
        None => a.object_name(lock.address),
    };
    format!("{kind} {name}")
}

/// The thread-state samples, merged by (stack, thread, phase), in a fixed order (stack index,
/// then thread serial, then phase label) so that the output is the same every time.
fn sampled_stacks(a: &Analysis, b: &mut Builder) {
    let Some(r) = &a.states else {
        return;
    };
    type Key<'a> = (u32, u32, Option<&'a str>);
    let mut merged: std::collections::BTreeMap<Key<'_>, (u64, u64, u64, String)> =
        std::collections::BTreeMap::new();
    for v in sampled::samples(a) {
        let key = (
            v.stack_index,
            v.thread.serial,
            v.phase.map(|p| p.label.as_str()),
        );
        let e = merged
            .entry(key)
            .or_insert_with(|| (0, 0, 0, ThreadId::of_states(v.thread).label()));
        e.0 += 1;
        if v.stack.on_cpu {
            e.1 = e.1.saturating_add(v.sample.weight_ns);
        }
        e.2 = e.2.saturating_add(v.sample.weight_ns);
    }
    for ((stack, _, phase), (count, cpu_ns, wall_ns, thread)) in merged {
        let s = &r.stacks[stack as usize];
        if b.state.is_some_and(|k| k != s.category.key()) {
            continue;
        }
        let mut labels = vec![("thread", thread.as_str()), ("state", s.category.key())];
        if let Some(phase) = phase {
            labels.push(("phase", phase));
        }
        b.sample(
            &s.frames,
            None,
            values(&[("samples", count), ("cpu", cpu_ns), ("wall", wall_ns)]),
            &labels,
        );
    }
}

impl Exporter for Pprof {
    fn name(&self) -> &'static str {
        "pprof"
    }

    fn write(&self, a: &Model, _opts: &Options, out: &mut dyn Write) -> Result<()> {
        let mut gz = GzEncoder::new(out, Compression::default());
        gz.write_all(&encode(a))?;
        gz.finish()?;
        Ok(())
    }
}
