//! Phase and heap-snapshot records (SS_REC_PHASE and SS_REC_HEAP of preload/ss_format.h), and
//! the parser of glibc's `malloc_info` XML they carry.

use super::FnStats;
use super::format::{
    FN_COUNT, GROUP_COUNT, HEAP_GLIBC, HEAP_KNOWN, HEAP_LABEL_SIZE, HEAP_SIZE, LAT_BUCKETS,
    PHASE_NAME_SIZE, PHASE_SIZE,
};
use super::reader::{Fields, ProfileError, err, read_fn_stats};

/// A phase of one thread, with that thread's allocator activity inside it.
#[derive(Debug, Clone)]
pub struct PhaseRecord {
    pub tid: u32,
    pub depth: u32,
    pub heap_before: Option<u32>,
    pub heap_after: Option<u32>,
    pub begin_mono_ns: u64,
    pub end_mono_ns: u64,
    pub name: String,
    pub fns: [FnStats; FN_COUNT],
    pub lat_hist: [[u64; LAT_BUCKETS]; GROUP_COUNT],
}

/// One bin class of free chunks, summed over arenas: `(min_bytes, max_bytes)`, count and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FreeBin {
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub count: u64,
    pub bytes: u64,
}

/// What malloc_info says beyond mallinfo2.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MallocInfo {
    pub arenas: u64,
    pub fastbin_chunks: u64,
    pub fastbin_bytes: u64,
    pub other_free_chunks: u64,
    pub other_free_bytes: u64,
    pub mmap_chunks: u64,
    pub mmap_bytes: u64,
    pub bins: Vec<FreeBin>,
}

#[derive(Debug, Clone, Default)]
pub struct HeapSnapshot {
    pub seq: u32,
    pub tid: u32,
    pub label: String,
    pub mono_ns: u64,
    pub duration_ns: u64,
    pub rss_bytes: u64,
    /// mallinfo2 and malloc_info describe the allocator in use (glibc's).
    pub glibc: bool,
    /// mallinfo2: bytes in use by allocations from the arenas (`uordblks`).
    pub arena_in_use_bytes: u64,
    /// mallinfo2: free bytes held in the arenas (`fordblks`, fast bins included).
    pub free_bytes: u64,
    /// mallinfo2: free bytes in fast bins (`fsmblks`).
    pub fastbin_bytes: u64,
    /// mallinfo2: the releasable top of the main arena (`keepcost`).
    pub top_bytes: u64,
    /// mallinfo2: bytes in mmapped chunks (`hblkhd`).
    pub mmap_bytes: u64,
    /// mallinfo2: bytes the arenas got from the system (`arena`).
    pub arena_bytes: u64,
    /// mallinfo2: number of free chunks outside fast bins (`ordblks`) and in fast bins (`smblks`).
    pub free_chunks: u64,
    pub fastbin_chunks: u64,
    pub info: Option<MallocInfo>,
}

impl HeapSnapshot {
    pub fn in_use_bytes(&self) -> u64 {
        self.arena_in_use_bytes.saturating_add(self.mmap_bytes)
    }
    /// Free chunks of every kind (fast bins included).
    pub fn all_free_chunks(&self) -> u64 {
        self.free_chunks.saturating_add(self.fastbin_chunks)
    }
    /// Free bytes held as a share of all bytes the arenas hold.
    pub fn fragmentation(&self) -> f64 {
        let held = self.arena_in_use_bytes.saturating_add(self.free_bytes);
        crate::util::ratio(self.free_bytes, held)
    }
}

fn text(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

pub fn parse_phase(payload: &[u8], pos: usize) -> Result<PhaseRecord, ProfileError> {
    if payload.len() != PHASE_SIZE {
        return err(
            pos,
            format!(
                "phase record has {} bytes, expected {PHASE_SIZE}",
                payload.len()
            ),
        );
    }
    let mut f = Fields::new(payload);
    let tid = f.u32();
    let depth = f.u32();
    let before = f.u32();
    let after = f.u32();
    let begin_mono_ns = f.u64();
    let end_mono_ns = f.u64();
    let name = text(f.take(PHASE_NAME_SIZE));
    if end_mono_ns < begin_mono_ns || depth > 1024 {
        return err(pos, "phase record ends before it begins");
    }
    let fns = read_fn_stats(&mut f, pos)?;
    let mut lat_hist = [[0u64; LAT_BUCKETS]; GROUP_COUNT];
    for group in lat_hist.iter_mut() {
        for v in group.iter_mut() {
            *v = f.u64();
        }
    }
    Ok(PhaseRecord {
        tid,
        depth,
        heap_before: (before != 0).then_some(before),
        heap_after: (after != 0).then_some(after),
        begin_mono_ns,
        end_mono_ns,
        name,
        fns,
        lat_hist,
    })
}

pub fn parse_heap(payload: &[u8], pos: usize) -> Result<HeapSnapshot, ProfileError> {
    if payload.len() < HEAP_SIZE {
        return err(
            pos,
            format!(
                "heap record has {} bytes, expected at least {HEAP_SIZE}",
                payload.len()
            ),
        );
    }
    let mut f = Fields::new(payload);
    let seq = f.u32();
    let tid = f.u32();
    let mono_ns = f.u64();
    let duration_ns = f.u64();
    let rss_bytes = f.u64();
    let mut mi = [0u64; 10];
    for v in mi.iter_mut() {
        *v = f.u64();
    }
    let [
        arena,
        ordblks,
        smblks,
        _hblks,
        hblkhd,
        _usmblks,
        fsmblks,
        uordblks,
        fordblks,
        keepcost,
    ] = mi;
    let label = text(f.take(HEAP_LABEL_SIZE));
    let flags = f.u32();
    let xml_len = f.u32() as usize;
    if flags & !HEAP_KNOWN != 0 || seq == 0 {
        return err(pos, "heap record has impossible values");
    }
    if HEAP_SIZE + xml_len != payload.len() {
        return err(pos, "heap record's XML length does not match its size");
    }
    let xml = String::from_utf8_lossy(f.take(xml_len));
    Ok(HeapSnapshot {
        seq,
        tid,
        label,
        mono_ns,
        duration_ns,
        rss_bytes,
        glibc: flags & HEAP_GLIBC != 0,
        arena_in_use_bytes: uordblks,
        free_bytes: fordblks,
        fastbin_bytes: fsmblks,
        top_bytes: keepcost,
        mmap_bytes: hblkhd,
        arena_bytes: arena,
        free_chunks: ordblks,
        fastbin_chunks: smblks,
        info: (xml_len > 0).then(|| parse_malloc_info(&xml)),
    })
}

/// The value of attribute `name` in one XML tag's text.
fn attr(tag: &str, name: &str) -> Option<u64> {
    let key = format!("{name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    tag[start..end].parse().ok()
}

/// Parses glibc's malloc_info XML: per arena (`<heap>`) the free chunks by size class
/// (`<size from to total count>`), then process-wide totals (`<total type="fast|rest|mmap">`).
/// Unknown elements are ignored; the figures that mallinfo2 also gives stay the reference.
pub fn parse_malloc_info(xml: &str) -> MallocInfo {
    let mut info = MallocInfo::default();
    let mut depth_in_heap = false;
    for raw in xml.split('<').skip(1) {
        let tag = raw.split('>').next().unwrap_or_default();
        let name = tag.split_whitespace().next().unwrap_or_default();
        match name {
            "heap" => {
                info.arenas = info.arenas.saturating_add(1);
                depth_in_heap = true;
            }
            "/heap" => depth_in_heap = false,
            "size" | "unsorted" if depth_in_heap => {
                let (Some(from), Some(to), Some(total), Some(count)) = (
                    attr(tag, "from"),
                    attr(tag, "to"),
                    attr(tag, "total"),
                    attr(tag, "count"),
                ) else {
                    continue;
                };
                if count == 0 {
                    continue;
                }
                match info
                    .bins
                    .iter_mut()
                    .find(|b| b.min_bytes == from && b.max_bytes == to)
                {
                    Some(b) => {
                        b.count = b.count.saturating_add(count);
                        b.bytes = b.bytes.saturating_add(total);
                    }
                    None => info.bins.push(FreeBin {
                        min_bytes: from,
                        max_bytes: to,
                        count,
                        bytes: total,
                    }),
                }
            }
            "total" if !depth_in_heap => {
                let count = attr(tag, "count").unwrap_or(0);
                let size = attr(tag, "size").unwrap_or(0);
                if tag.contains("type=\"fast\"") {
                    info.fastbin_chunks = count;
                    info.fastbin_bytes = size;
                } else if tag.contains("type=\"rest\"") {
                    info.other_free_chunks = count;
                    info.other_free_bytes = size;
                } else if tag.contains("type=\"mmap\"") {
                    info.mmap_chunks = count;
                    info.mmap_bytes = size;
                }
            }
            _ => {}
        }
    }
    info.bins.sort_by_key(|b| (b.min_bytes, b.max_bytes));
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    // The shape glibc 2.36 prints (abridged): two arenas, fast and regular bins, totals.
    const SAMPLE: &str = r#"<malloc version="1">
<heap nr="0">
<sizes>
<size from="33" to="48" total="480" count="10"/>
<size from="49" to="64" total="0" count="0"/>
<unsorted from="1040" to="1040" total="1040" count="1"/>
</sizes>
<total type="fast" count="10" size="480"/>
<total type="rest" count="1" size="1040"/>
<system type="current" size="135168"/>
</heap>
<heap nr="1">
<sizes>
<size from="33" to="48" total="96" count="2"/>
</sizes>
<total type="fast" count="2" size="96"/>
</heap>
<total type="fast" count="12" size="576"/>
<total type="rest" count="1" size="1040"/>
<total type="mmap" count="3" size="409600"/>
<system type="current" size="270336"/>
</malloc>
"#;

    #[test]
    fn malloc_info_sums_bins_over_arenas_and_reads_totals() {
        let info = parse_malloc_info(SAMPLE);
        assert_eq!(info.arenas, 2);
        assert_eq!(info.fastbin_chunks, 12);
        assert_eq!(info.fastbin_bytes, 576);
        assert_eq!(info.other_free_chunks, 1);
        assert_eq!(info.mmap_chunks, 3);
        assert_eq!(info.mmap_bytes, 409600);
        assert_eq!(
            info.bins,
            vec![
                FreeBin {
                    min_bytes: 33,
                    max_bytes: 48,
                    count: 12,
                    bytes: 576
                },
                FreeBin {
                    min_bytes: 1040,
                    max_bytes: 1040,
                    count: 1,
                    bytes: 1040
                },
            ]
        );
    }

    #[test]
    fn malloc_info_tolerates_garbage() {
        let info = parse_malloc_info("<<size from=\"x\"> <heap <total type=\"fast\" count=\"q\"/>");
        assert_eq!(info.fastbin_chunks, 0);
        assert!(info.bins.is_empty());
    }
}
