//! The profile reader: every byte is validated (magic, version, byte order, checksums, sizes,
//! reserved fields, padding, record order), and damage is answered with an error that says what
//! and where — never a panic.

use super::format::*;
use super::*;
use std::fmt;
use std::path::Path;

mod checksum;
mod sites;
mod threads;
pub use checksum::{fix_checksums, record_crc};
use sites::*;
use threads::*;

#[derive(Debug)]
pub struct ProfileError {
    /// Byte offset in the file where the problem is, when it is at one place.
    pub offset: Option<usize>,
    pub message: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(off) => write!(f, "at byte {off}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ProfileError {}

pub(super) fn err<T>(offset: usize, message: impl Into<String>) -> Result<T, ProfileError> {
    Err(ProfileError {
        offset: Some(offset),
        message: message.into(),
    })
}

/// Little-endian fields of one validated payload. Bounds were checked against the record size
/// before a payload reaches here, so reading past the end is a bug in this file, caught by tests.
pub(super) struct Fields<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Fields { bytes, pos: 0 }
    }
    pub(super) fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        s
    }
    pub(super) fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
    }
    pub(super) fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes"))
    }
    fn text(&mut self, n: usize) -> String {
        let raw = self.take(n);
        let end = raw.iter().position(|&b| b == 0).unwrap_or(n);
        String::from_utf8_lossy(&raw[..end]).into_owned()
    }
}

/// Reads and validates a profile file.
pub fn read(path: &Path) -> anyhow::Result<Profile> {
    let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    parse(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: not a valid stallscope profile: {e}", path.display()))
}

/// Parses a profile. A file cut short (the process was killed while writing, the disk filled) is
/// read as far as it is whole: up to its last whole batch (ended by a flush or end record), and
/// marked partial; damage (a checksum, a size no layout allows) is an error.
pub fn parse(bytes: &[u8]) -> Result<Profile, ProfileError> {
    let version = check_file_header(bytes)?;
    let extent = whole_extent(bytes, version)?;
    let mut profile = parse_whole(&bytes[..extent.end], version)?;
    if let Some(cut) = extent.cut_at {
        profile.complete = false;
        profile.cut_at = Some(cut as u64);
    }
    Ok(profile)
}

/// How much of a file is whole: the end of its last whole batch, and where the file was cut
/// (None: it ends where its last batch does).
struct Extent {
    end: usize,
    cut_at: Option<usize>,
}

/// Frames every record (checksums included) up to the end or to a cut, and finds the end of the
/// last whole batch: after a flush or end record, or after the supervisor's record that follows.
fn whole_extent(bytes: &[u8], version: u32) -> Result<Extent, ProfileError> {
    let mut pos = FILE_HEADER_SIZE;
    let mut batch_end = None;
    while pos < bytes.len() {
        match frame(bytes, pos, version)? {
            Framed::Record(rtype, _, next) => {
                let appended = rtype == REC_SUPERVISOR && batch_end == Some(pos);
                if rtype == REC_FLUSH || rtype == REC_END || appended {
                    batch_end = Some(next);
                }
                pos = next;
            }
            Framed::Cut => break,
        }
    }
    match batch_end {
        Some(end) => Ok(Extent {
            end,
            cut_at: (end < bytes.len() || pos < bytes.len()).then_some(bytes.len()),
        }),
        None => err(
            pos,
            format!(
                "truncated: the file ends at byte {} before its first flush (nothing in it is whole)",
                bytes.len()
            ),
        ),
    }
}

/// Parses a file that ends with a whole batch.
fn parse_whole(bytes: &[u8], version: u32) -> Result<Profile, ProfileError> {
    let mut pos = FILE_HEADER_SIZE;
    let mut process: Option<ProcessInfo> = None;
    let mut threads: Vec<ThreadStats> = Vec::new();
    let mut thread_index: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    let mut end = None;
    let mut supervisor = None;
    let mut attach: Option<AttachInfo> = None;
    let mut last_type = 0;
    let mut last_mono_ns = 0;
    let mut last_ticks_pair = None;
    let mut flushes = 0;
    let mut ended_after = false; // records followed an END (an exec that failed)
    let mut modules: Vec<Module> = Vec::new();
    let mut stacks: std::collections::HashMap<u32, Stack> = std::collections::HashMap::new();
    let mut python: Option<super::python::Python> = None;
    let mut title = Vec::new();
    let mut py_names: Vec<(u32, String)> = Vec::new();
    let mut alloc_sites = Vec::new();
    let mut stack_sampling = None;
    let mut lock_sites = Vec::new();
    let mut phases = Vec::new();
    let mut heap_snapshots = Vec::new();
    let mut sampling = None;
    let mut samples = Vec::new();
    let mut waits = Vec::new();
    let mut region_runs = Vec::new();
    let mut waits_dropped = 0u64;
    let mut sched = Vec::new();
    let mut cross_frees = Vec::new();

    while pos < bytes.len() {
        let Framed::Record(rtype, payload, next) = frame(bytes, pos, version)? else {
            return err(pos, "truncated record inside the whole part of the file");
        };
        if process.is_none() && rtype != REC_PROCESS {
            return err(
                pos,
                format!("the first record must describe the process, found type {rtype}"),
            );
        }
        match rtype {
            REC_PROCESS => {
                if process.is_some() {
                    return err(pos, "a second process record");
                }
                let p = parse_process(payload, pos)?;
                last_mono_ns = p.start_mono_ns;
                process = Some(p);
            }
            REC_THREAD | REC_FOLDED => {
                let t = if rtype == REC_FOLDED {
                    parse_folded(payload, pos)?
                } else {
                    parse_thread(payload, pos, None)?
                };
                match thread_index.get(&t.serial) {
                    Some(&i) if threads[i].folded.is_some() != t.folded.is_some() => {
                        return err(pos, format!("thread {} is both folded and not", t.serial));
                    }
                    Some(&i) => threads[i] = t,
                    None => {
                        thread_index.insert(t.serial, threads.len());
                        threads.push(t);
                    }
                }
                ended_after = end.is_some();
            }
            REC_FLUSH => {
                expect_size(payload, FLUSH_SIZE, "flush", pos)?;
                let mut f = Fields::new(payload);
                let _seq = f.u64();
                let mono = f.u64();
                let ticks = f.u64();
                if f.u64() != 0 {
                    return err(pos, "reserved field of a flush record is not zero");
                }
                last_mono_ns = last_mono_ns.max(mono);
                last_ticks_pair = Some((ticks, mono));
                flushes += 1;
                ended_after = end.is_some();
            }
            REC_END => {
                expect_size(payload, END_SIZE, "end", pos)?;
                let mut f = Fields::new(payload);
                let how = f.u32();
                let Some(how) = EndHow::from_u32(how) else {
                    return err(pos, format!("unknown way of ending: {how}"));
                };
                let status = f.i32();
                let mono = f.u64();
                let ticks = f.u64();
                last_mono_ns = last_mono_ns.max(mono);
                last_ticks_pair = Some((ticks, mono));
                end = Some(EndInfo {
                    how,
                    status,
                    mono_ns: mono,
                });
                ended_after = false;
            }
            REC_ATTACH => {
                expect_size(payload, ATTACH_SIZE, "attach", pos)?;
                let attached = process.as_ref().is_some_and(|p| p.attached);
                if attach.is_some() || !attached || last_type != REC_PROCESS {
                    return err(
                        pos,
                        "an attach record must follow the process record of an attached process, once",
                    );
                }
                let mut f = Fields::new(payload);
                let process_start_mono_ns = f.u64();
                let window_start_mono_ns = f.u64();
                let how = f.u32();
                let window = f.u32();
                let Some(how) = AttachHow::from_u32(how) else {
                    return err(pos, format!("unknown way of attaching: {how}"));
                };
                let start = process.as_ref().map_or(0, |p| p.start_mono_ns);
                if window == 0
                    || process_start_mono_ns > window_start_mono_ns
                    || window_start_mono_ns != start
                {
                    return err(pos, "inconsistent attach record");
                }
                attach = Some(AttachInfo {
                    how,
                    process_start_mono_ns,
                    window_start_mono_ns,
                    window,
                });
            }
            REC_SUPERVISOR => {
                expect_size(payload, SUPERVISOR_SIZE, "supervisor", pos)?;
                let mut f = Fields::new(payload);
                let code = f.i32();
                let signal = f.i32();
                let core = f.u32();
                if f.u32() != 0 || core > 1 || (code < 0 && signal == 0) {
                    return err(pos, "inconsistent supervisor record");
                }
                let wall_ns = f.u64();
                supervisor = Some(SupervisorInfo {
                    exit_code: (code >= 0).then_some(code),
                    signal: (signal != 0).then_some(signal),
                    core_dumped: core == 1,
                    wall_ns,
                });
            }
            REC_MODULE => {
                modules.push(parse_module(payload, pos)?);
                ended_after = end.is_some();
            }
            REC_STACK => {
                let (id, stack) = parse_stack(payload, pos)?;
                match stacks.get(&id) {
                    Some(old)
                        if old.pcs != stack.pcs || old.first_mono_ns != stack.first_mono_ns =>
                    {
                        return err(pos, format!("stack {id} is described twice, differently"));
                    }
                    Some(_) => {}
                    None => {
                        stacks.insert(id, stack);
                    }
                }
                ended_after = end.is_some();
            }
            REC_PYTHON => {
                let p = super::python::parse_python(payload, pos)?;
                if python
                    .as_ref()
                    .is_some_and(|old| (old.version, old.flags) != (p.version, p.flags))
                {
                    return err(pos, "the python record is given twice, differently");
                }
                python.get_or_insert(p);
                ended_after = end.is_some();
            }
            REC_PY_CODE => {
                let (id, code) = super::python::parse_py_code(payload, pos)?;
                let Some(py) = python.as_mut() else {
                    return err(pos, "a python code record before the python record");
                };
                if py.codes.get(&id).is_some_and(|old| *old != code) {
                    return err(
                        pos,
                        format!("python code {id} is described twice, differently"),
                    );
                }
                py.codes.insert(id, code);
                ended_after = end.is_some();
            }
            REC_PY_THREAD => {
                let (serial, name) = super::python::parse_py_thread(payload, pos)?;
                if !thread_index.contains_key(&serial) {
                    return err(
                        pos,
                        format!(
                            "a python name of thread {serial}, which the file does not describe"
                        ),
                    );
                }
                py_names.push((serial, name));
                ended_after = end.is_some();
            }
            REC_PY_STACK => {
                let Some(py) = python.as_ref() else {
                    return err(pos, "a python stack record before the python record");
                };
                let (id, frames) = super::python::parse_py_stack(payload, pos, &py.codes)?;
                match stacks.get_mut(&id) {
                    Some(s) if s.python.is_empty() || s.python == frames => s.python = frames,
                    Some(_) => {
                        return err(
                            pos,
                            format!("stack {id}'s python frames are given twice, differently"),
                        );
                    }
                    None => {
                        return err(
                            pos,
                            format!(
                                "python frames of stack {id}, which the file does not describe"
                            ),
                        );
                    }
                }
                ended_after = end.is_some();
            }
            REC_ALLOC_SITES => {
                let (sampling, sites) = parse_alloc_sites(payload, pos, &stacks)?;
                stack_sampling = Some(sampling);
                alloc_sites = sites;
                ended_after = end.is_some();
            }
            REC_MODULE_GONE => {
                expect_size(payload, MODULE_GONE_SIZE, "module gone", pos)?;
                let mut f = Fields::new(payload);
                let index = f.u32() as usize;
                let reserved = f.u32();
                let mono = f.u64();
                match modules.get_mut(index) {
                    Some(m) if reserved == 0 && m.gone_mono_ns.is_none() => {
                        m.gone_mono_ns = Some(mono);
                    }
                    _ => return err(pos, format!("module {index} cannot be unloaded here")),
                }
                ended_after = end.is_some();
            }
            REC_LOCK_SITES => {
                lock_sites = parse_lock_sites(payload, pos, &stacks)?;
                ended_after = end.is_some();
            }
            REC_PHASE => {
                phases.push(super::phases::parse_phase(payload, pos)?);
                ended_after = end.is_some();
            }
            REC_HEAP => {
                heap_snapshots.push(super::phases::parse_heap(payload, pos)?);
                ended_after = end.is_some();
            }
            REC_CROSS_FREES => {
                cross_frees = parse_cross_frees(payload, pos)?;
                ended_after = end.is_some();
            }
            REC_SAMPLING => {
                sampling = Some(super::samples::parse_sampling(payload, pos)?);
                ended_after = end.is_some();
            }
            REC_SAMPLES => {
                super::samples::parse_samples(payload, pos, sample_size(version), &mut samples)?;
                ended_after = end.is_some();
            }
            REC_WAITS => {
                super::samples::parse_waits(
                    payload,
                    pos,
                    &mut waits,
                    &mut region_runs,
                    &mut waits_dropped,
                )?;
                ended_after = end.is_some();
            }
            REC_SCHED => {
                super::samples::parse_sched(payload, pos, &mut sched)?;
                ended_after = end.is_some();
            }
            REC_TITLE => {
                title = super::title::parse_title(payload, pos)?;
                ended_after = end.is_some();
            }
            other => return err(pos, format!("unknown record type {other}")),
        }
        if rtype != REC_SUPERVISOR {
            last_type = rtype;
        }
        pos = next;
    }

    let Some(process) = process else {
        return err(bytes.len(), "the file has no process record");
    };
    if process.attached && attach.is_none() {
        return err(
            bytes.len(),
            "the process record says the profile is a window, but no attach record says which",
        );
    }
    // A file cut at a record boundary would otherwise look whole: the writer ends every batch
    // (the first one too) with a flush or end record; only the supervisor adds one after it.
    if !matches!(last_type, REC_FLUSH | REC_END) {
        return err(
            bytes.len(),
            "truncated: the file ends in the middle of a flush (its last record is not a flush or end record)",
        );
    }

    if let Some(s) = samples.iter().find(|s| {
        s.stack.is_some_and(|id| !stacks.contains_key(&id)) || !thread_index.contains_key(&s.serial)
    }) {
        return err(
            bytes.len(),
            format!(
                "a sample refers to a stack or thread the file does not describe (thread {}, stack {:?})",
                s.serial, s.stack
            ),
        );
    }

    if let Some(r) = region_runs
        .iter()
        .find(|r| !thread_index.contains_key(&r.serial))
    {
        return err(
            bytes.len(),
            format!(
                "a run of parallel regions refers to a thread the file does not describe (thread {})",
                r.serial
            ),
        );
    }
    if let Some(w) = waits.iter().find(|w| !thread_index.contains_key(&w.serial)) {
        return err(
            bytes.len(),
            format!(
                "a wait refers to a thread the file does not describe (thread {})",
                w.serial
            ),
        );
    }
    if let Some(p) = sched.iter().find(|p| !thread_index.contains_key(&p.serial)) {
        return err(
            bytes.len(),
            format!(
                "a sched point refers to a thread the file does not describe (thread {})",
                p.serial
            ),
        );
    }

    let mut ticks_per_sec = process.ticks_per_sec as f64;
    if let Some((ticks, mono)) = last_ticks_pair {
        let dt = mono.saturating_sub(process.start_mono_ns);
        let dticks = ticks.saturating_sub(process.start_ticks);
        if dt > 100_000_000 && dticks > 0 {
            ticks_per_sec = dticks as f64 * 1e9 / dt as f64;
        }
    }
    if ticks_per_sec <= 0.0 || !ticks_per_sec.is_finite() {
        return err(
            FILE_HEADER_SIZE,
            "the tick rate in the process record is zero",
        );
    }
    // The name Python gives a thread replaces the kernel's, which before 3.14 is the process's.
    for (serial, name) in py_names {
        if let Some(&i) = thread_index.get(&serial) {
            threads[i].name = name;
        }
    }
    if let Some(s) = stack_sampling.as_mut().filter(|_| process.small_by_count) {
        s.bytes_from = STACK_BYTES_FROM;
    }
    Ok(Profile {
        complete: end.is_some() && !ended_after,
        cut_at: None,
        process,
        threads,
        end,
        supervisor,
        attach,
        last_mono_ns,
        ticks_per_sec,
        flushes,
        modules,
        stacks,
        python,
        title,
        alloc_sites,
        stack_sampling,
        lock_sites,
        phases,
        heap_snapshots,
        cross_frees,
        sampling,
        samples,
        waits,
        region_runs,
        waits_dropped,
        sched,
    })
}

/// Checks the file header; returns the format version (one this reader reads).
fn check_file_header(bytes: &[u8]) -> Result<u32, ProfileError> {
    if bytes.len() < FILE_HEADER_SIZE {
        return err(
            0,
            format!(
                "truncated: {} bytes, shorter than the file header",
                bytes.len()
            ),
        );
    }
    if &bytes[..8] != MAGIC {
        return err(0, "not a stallscope profile (wrong magic)");
    }
    let mut f = Fields::new(&bytes[8..FILE_HEADER_SIZE]);
    let version = f.u32();
    let header_size = f.u32();
    let order = f.u32();
    let crc = f.u32();
    if crc != crc32fast::hash(&bytes[..20]) {
        return err(0, "the file header is damaged (checksum mismatch)");
    }
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return err(
            8,
            format!(
                "format version {version} is not supported (this stallscope reads versions {OLDEST_VERSION} to {VERSION})"
            ),
        );
    }
    if order != BYTE_ORDER_MARK {
        return err(16, "written with another byte order");
    }
    if header_size as usize != FILE_HEADER_SIZE {
        return err(12, format!("unexpected header size {header_size}"));
    }
    Ok(version)
}

/// A record at some offset: whole, or the file's cut tail.
enum Framed<'a> {
    /// Its type, payload and the offset of the next record.
    Record(u32, &'a [u8], usize),
    /// The file ends inside it, and what is there is the start of a well-formed record.
    Cut,
}

/// Validates the record at `pos`. A record the file ends inside is a cut when its header is one
/// the writer could have written (known type, reserved zero, a size its layout allows given the
/// counts and lengths at the start of its payload); otherwise the header is damaged.
fn frame(bytes: &[u8], pos: usize, version: u32) -> Result<Framed<'_>, ProfileError> {
    let available = &bytes[pos..];
    let field = |at: usize| {
        available
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    };
    let (rtype, size) = (field(0), field(4).map(|s| s as usize));
    if available.len() < RECORD_HEADER_SIZE {
        let plausible = rtype.is_none_or(record_type_known)
            && size.is_none_or(|s| size_fits_layout(rtype.unwrap_or(0), s, &[], version))
            && field(12).is_none_or(|r| r == 0);
        return if plausible {
            Ok(Framed::Cut)
        } else {
            err(pos, "damaged record header at the end of the file")
        };
    }
    let (rtype, size) = (rtype.expect("header"), size.expect("header"));
    let crc = field(8).expect("header");
    if field(12) != Some(0) {
        return err(pos, "reserved field of a record header is not zero");
    }
    let padded = size.div_ceil(8) * 8;
    let start = pos + RECORD_HEADER_SIZE;
    let present = &bytes[start..];
    if present.len() < padded {
        let whole_payload = present.len() >= size;
        let damaged = !record_type_known(rtype)
            || !size_fits_layout(rtype, size, present, version)
            || (whole_payload && record_crc(&bytes[pos..pos + 8], &present[..size]) != crc);
        if damaged {
            return err(
                pos,
                format!(
                    "record of type {rtype} is damaged: it claims {size} bytes, {} remain, and its \
                     header is not one a cut file could end with",
                    present.len()
                ),
            );
        }
        return Ok(Framed::Cut);
    }
    let payload = &present[..size];
    if record_crc(&bytes[pos..pos + 8], payload) != crc {
        return err(
            pos,
            format!("record of type {rtype} is damaged (checksum mismatch)"),
        );
    }
    if present[size..padded].iter().any(|&b| b != 0) {
        return err(start + size, "padding after a record is not zero");
    }
    Ok(Framed::Record(rtype, payload, start + padded))
}

/// The per-function counters of a thread or phase record.
pub(super) fn read_fn_stats(
    f: &mut Fields,
    pos: usize,
) -> Result<[FnStats; FN_COUNT], ProfileError> {
    let mut fns = [FnStats::default(); FN_COUNT];
    for s in fns.iter_mut() {
        *s = FnStats {
            calls: f.u64(),
            bytes: f.u64(),
            timed_calls: f.u64(),
            timed_ticks: f.u64(),
            exact_calls: f.u64(),
            exact_ticks: f.u64(),
        };
        match s.timed_calls.checked_add(s.exact_calls) {
            Some(measured) if measured <= s.calls => {}
            _ => return err(pos, "a record times more calls than it counts"),
        }
    }
    Ok(fns)
}
