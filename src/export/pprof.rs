//! `perftools.profiles.Profile` (profile.proto), gzipped, for `go tool pprof`. The protobuf is
//! written by hand: a few varint and length-delimited fields. Four sample types, in this order:
//! `alloc_calls/count`, `alloc_space/bytes`, `alloc_time/nanoseconds`, `lock_wait/nanoseconds`;
//! an allocation site has zero lock wait, a lock site zero allocator figures. Every location has
//! a function name (`module+0xoffset` when unknown), so pprof needs no symbolization.

use super::{Exporter, Options, frame_name, lock_leaf};
use crate::analysis::Analysis;
use crate::symbols::Frame;
use anyhow::Result;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::collections::HashMap;
use std::io::Write;

pub struct Pprof;

/// Protobuf wire encoding of one message.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn key(&mut self, field: u32, wire: u8) {
        self.varint(((field as u64) << 3) | wire as u64);
    }
    /// An integer field (int64/uint64 as varint); zero is the default and left out.
    fn int(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, 0);
            self.varint(v as u64);
        }
    }
    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn msg(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }
    /// A packed repeated integer field.
    fn packed(&mut self, field: u32, vs: &[i64]) {
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
    samples: Vec<Msg>,
}

impl Builder {
    fn new() -> Builder {
        let mut b = Builder::default();
        b.string("");
        b
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
        let mut m = Msg::default();
        m.int(1, id as i64);
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

    /// A sample: `leaf` (the allocator function or lock wait), then the stack, innermost first.
    fn sample(&mut self, frames: &[Frame], leaf: &str, values: [u64; 4]) {
        let mut ids = vec![self.location("", 0, &[], leaf) as i64];
        let mut group: Vec<&Frame> = Vec::new();
        for f in frames {
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
        m.packed(2, &values.map(|v| v as i64));
        self.samples.push(m);
    }
}

fn value_type(b: &mut Builder, kind: &str, unit: &str) -> Msg {
    let mut m = Msg::default();
    m.int(1, b.string(kind));
    m.int(2, b.string(unit));
    m
}

/// The uncompressed protobuf.
pub fn encode(a: &Analysis) -> Vec<u8> {
    let mut b = Builder::new();
    let types = [
        ("alloc_calls", "count"),
        ("alloc_space", "bytes"),
        ("alloc_time", "nanoseconds"),
        ("lock_wait", "nanoseconds"),
    ];
    let sample_types: Vec<Msg> = types
        .iter()
        .map(|(t, u)| value_type(&mut b, t, u))
        .collect();
    for site in &a.summary.alloc_sites {
        b.sample(
            &site.frames,
            site.function,
            [site.calls, site.bytes, site.time_ns, 0],
        );
    }
    for lock in &a.summary.locks {
        for site in &lock.sites {
            b.sample(&site.frames, &lock_leaf(lock.kind), [0, 0, 0, site.wait_ns]);
        }
    }
    let period_type = value_type(&mut b, "alloc_calls", "count");
    let default_type = b.string("alloc_time");
    let mut m = Msg::default();
    for t in sample_types {
        m.msg(1, t);
    }
    for s in std::mem::take(&mut b.samples) {
        m.msg(2, s);
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
    m.int(9, a.summary.start_time_unix_ns as i64);
    m.int(10, a.summary.wall_ns as i64);
    m.msg(11, period_type);
    m.int(12, 1);
    m.int(14, default_type);
    m.0
}

impl Exporter for Pprof {
    fn name(&self) -> &'static str {
        "pprof"
    }

    fn write(&self, a: &Analysis, _opts: &Options, out: &mut dyn Write) -> Result<()> {
        let mut gz = GzEncoder::new(out, Compression::default());
        gz.write_all(&encode(a))?;
        gz.finish()?;
        Ok(())
    }
}
