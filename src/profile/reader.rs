//! The profile reader: every byte is validated (magic, version, byte order, checksums, sizes,
//! reserved fields, padding, record order), and damage is answered with an error that says what
//! and where — never a panic.

use super::format::*;
use super::*;
use std::fmt;
use std::path::Path;

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

fn parse_lock_sites(
    payload: &[u8],
    pos: usize,
    stacks: &std::collections::HashMap<u32, Stack>,
) -> Result<Vec<LockSite>, ProfileError> {
    if payload.len() < LOCK_SITES_SIZE {
        return err(
            pos,
            format!("lock sites record has {} bytes", payload.len()),
        );
    }
    let mut f = Fields::new(payload);
    let count = f.u32() as usize;
    let reserved = f.u32();
    let _min_interval_ns = f.u64();
    if reserved != 0
        || LOCK_SITES_SIZE.checked_add(count.saturating_mul(LOCK_SITE_SIZE)) != Some(payload.len())
    {
        return err(
            pos,
            format!("lock sites record's size does not match its {count} sites"),
        );
    }
    let mut sites = Vec::with_capacity(count);
    for _ in 0..count {
        let address = f.u64();
        let (kind, role) = (LockKind::from_u32(f.u32()), LockRole::from_u32(f.u32()));
        let stack = f.u32();
        let reserved = f.u32();
        let (events, wait_ticks) = (f.u64(), f.u64());
        let (Some(kind), Some(role), 0) = (kind, role, reserved) else {
            return err(pos, "damaged lock site");
        };
        if events == 0 {
            return err(pos, "damaged lock site");
        }
        let site = LockSite {
            address,
            kind,
            role,
            stack,
            events,
            wait_ticks,
        };
        if !stacks.contains_key(&stack) {
            return err(pos, format!("lock site refers to unknown stack {stack}"));
        }
        sites.push(site);
    }
    Ok(sites)
}

fn parse_cross_frees(payload: &[u8], pos: usize) -> Result<Vec<CrossFrees>, ProfileError> {
    if payload.is_empty() || !payload.len().is_multiple_of(CROSS_FREES_ENTRY_SIZE) {
        return err(
            pos,
            "cross-frees record of a size no whole number of entries makes",
        );
    }
    let mut f = Fields::new(payload);
    let mut out: Vec<CrossFrees> = Vec::new();
    for _ in 0..payload.len() / CROSS_FREES_ENTRY_SIZE {
        let serial = f.u32();
        let reserved = f.u32();
        let checked = f.u64();
        let cross = f.u64();
        if reserved != 0 || cross > checked || out.iter().any(|c| c.serial == serial) {
            return err(pos, "inconsistent cross-frees entry");
        }
        out.push(CrossFrees {
            serial,
            checked,
            cross,
        });
    }
    Ok(out)
}

fn parse_module(payload: &[u8], pos: usize) -> Result<Module, ProfileError> {
    if payload.len() < MODULE_SIZE {
        return err(pos, format!("module record has {} bytes", payload.len()));
    }
    let mut f = Fields::new(payload);
    let bias = f.u64();
    let lo = f.u64();
    let hi = f.u64();
    let seen_mono_ns = f.u64();
    let build_id_len = f.u32() as usize;
    let path_len = f.u32() as usize;
    if build_id_len > BUILD_ID_MAX || MODULE_SIZE + build_id_len + path_len != payload.len() {
        return err(pos, "module record's lengths do not match its size");
    }
    if lo >= hi || lo < bias {
        return err(pos, "module record has an impossible address range");
    }
    let build_id = f.take(build_id_len).to_vec();
    let path = String::from_utf8_lossy(f.take(path_len)).into_owned();
    Ok(Module {
        bias,
        lo,
        hi,
        seen_mono_ns,
        build_id,
        path,
        gone_mono_ns: None,
    })
}

fn parse_stack(payload: &[u8], pos: usize) -> Result<(u32, Stack), ProfileError> {
    if payload.len() < STACK_SIZE {
        return err(pos, format!("stack record has {} bytes", payload.len()));
    }
    let mut f = Fields::new(payload);
    let id = f.u32();
    let depth = f.u32() as usize;
    let first_mono_ns = f.u64();
    if depth == 0 || depth > STACK_MAX_FRAMES || STACK_SIZE + 8 * depth != payload.len() {
        return err(
            pos,
            format!("stack record's depth {depth} does not match its size"),
        );
    }
    let pcs: Vec<u64> = (0..depth).map(|_| f.u64()).collect();
    if pcs.contains(&0) {
        return err(pos, "stack record holds a null address");
    }
    Ok((
        id,
        Stack {
            pcs,
            first_mono_ns,
            python: Vec::new(),
        },
    ))
}

fn parse_alloc_sites(
    payload: &[u8],
    pos: usize,
    stacks: &std::collections::HashMap<u32, Stack>,
) -> Result<(StackSampling, Vec<AllocSite>), ProfileError> {
    if payload.len() < ALLOC_SITES_SIZE {
        return err(
            pos,
            format!("allocation sites record has {} bytes", payload.len()),
        );
    }
    let mut f = Fields::new(payload);
    let count = f.u32() as usize;
    let count_period = f.u32();
    let mean_bytes = f.u64();
    let dropped = f.u64();
    if ALLOC_SITES_SIZE.checked_add(count.saturating_mul(ALLOC_SITE_SIZE)) != Some(payload.len()) {
        return err(
            pos,
            format!("allocation sites record's size does not match its {count} sites"),
        );
    }
    let mut sites = Vec::with_capacity(count);
    for _ in 0..count {
        let stack = f.u32();
        let function = f.u32() as usize;
        let site = AllocSite {
            stack,
            function,
            samples: f.u64(),
            sampled_bytes: f.u64(),
            weight_q16: f.u64(),
            est_bytes: f.u64(),
            est_ticks: f.u64(),
        };
        if !stacks.contains_key(&stack) {
            return err(
                pos,
                format!("allocation site refers to unknown stack {stack}"),
            );
        }
        if function >= FN_COUNT || function == FN_FREE {
            return err(pos, format!("allocation site has function {function}"));
        }
        // Each sample weighs at least 1 call (p <= 1).
        if site.weight_q16
            < site
                .samples
                .saturating_mul(65536)
                .saturating_sub(site.samples)
        {
            return err(pos, "allocation site estimates fewer calls than it sampled");
        }
        sites.push(site);
    }
    Ok((
        StackSampling {
            count_period,
            mean_bytes,
            dropped,
            bytes_from: 0, // from the PROCESS record's flags, once the file is read
        },
        sites,
    ))
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

/// Rewrites the file header's and every whole record's checksum as the writer would compute
/// them, so that a file edited on purpose (a test's damaged counters, a fuzzer's mutations) is
/// judged on its contents rather than refused for its checksums.
pub fn fix_checksums(bytes: &mut [u8]) {
    if bytes.len() < FILE_HEADER_SIZE {
        return;
    }
    let crc = crc32fast::hash(&bytes[..20]);
    bytes[20..24].copy_from_slice(&crc.to_le_bytes());
    let mut pos = FILE_HEADER_SIZE;
    while let Some(head) = bytes.get(pos..pos + RECORD_HEADER_SIZE) {
        let size = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
        let start = pos + RECORD_HEADER_SIZE;
        let Some(payload) = bytes.get(start..start.saturating_add(size)) else {
            return;
        };
        let crc = record_crc(&bytes[pos..pos + 8], payload);
        bytes[pos + 8..pos + 12].copy_from_slice(&crc.to_le_bytes());
        pos = start.saturating_add(size.div_ceil(8) * 8);
    }
}

/// The checksum of a record: its type and size (`type_and_size`, 8 bytes) and its payload.
pub fn record_crc(type_and_size: &[u8], payload: &[u8]) -> u32 {
    if type_and_size.len() + payload.len() <= SMALL_CRC_BYTES {
        return !crc32_by_table(crc32_by_table(!0, type_and_size), payload);
    }
    let mut h = crc32fast::Hasher::new();
    h.update(type_and_size);
    h.update(payload);
    h.finalize()
}

/// Inputs up to this size are checksummed by `crc32_by_table`: crc32fast's first use detects the
/// CPU's features with `cpuid`, which traps to the hypervisor in a virtual machine, and the one
/// record `stallscope run` seals itself (40 bytes) would cost it 74 µs a run there. Larger inputs
/// take crc32fast's vector code.
const SMALL_CRC_BYTES: usize = 256;

/// CRC-32 (IEEE 802.3, reflected, as zlib and crc32fast compute it), a byte at a time.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// Continues the running (not yet inverted) CRC `crc` over `bytes`.
fn crc32_by_table(crc: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(crc, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

fn expect_size(payload: &[u8], size: usize, what: &str, pos: usize) -> Result<(), ProfileError> {
    if payload.len() != size {
        return err(
            pos,
            format!("{what} record has {} bytes, expected {size}", payload.len()),
        );
    }
    Ok(())
}

fn parse_process(payload: &[u8], pos: usize) -> Result<ProcessInfo, ProfileError> {
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
fn parse_folded(payload: &[u8], pos: usize) -> Result<ThreadStats, ProfileError> {
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
fn parse_thread(
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
