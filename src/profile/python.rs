//! CPython's frames in a profile (records PYTHON, PY_CODE, PY_STACK and PY_THREAD,
//! preload/python.c): the interpreter's version, its code objects (name, qualified name, file,
//! first line and line table as the interpreter keeps it), each stack's Python frames and the
//! names Python gives threads; and the line an instruction offset is on, decoded from the table
//! of the version that wrote it.

use super::format::*;
use super::reader::{Fields, ProfileError, err};
use std::collections::HashMap;

/// The CPython interpreter the process ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Python {
    /// `PY_VERSION_HEX` (0x030b02f0 for 3.11.2); 0 when not known.
    pub version: u32,
    /// `PYTHON_*` flags: whether stacks carry its frames, and why not.
    pub flags: u32,
    /// Code objects by id.
    pub codes: HashMap<u32, PyCode>,
}

impl Python {
    /// `3.11` for 0x030b02f0.
    pub fn version_text(&self) -> String {
        if self.version == 0 {
            return "unknown".into();
        }
        format!("{}.{}", self.version >> 24, (self.version >> 16) & 0xff)
    }

    /// Whether the stacks carry Python frames.
    pub fn frames(&self) -> bool {
        self.flags & PYTHON_FRAMES != 0
    }

    /// Why the stacks carry no Python frames, or the threads not the names Python gives them, in
    /// words (None where both are there).
    pub fn why_no_frames(&self) -> Option<String> {
        if self.frames() {
            return (self.flags & PYTHON_THREAD_NAMES == 0).then(|| {
                format!(
                    "CPython {}'s threading module was not read: threads keep the kernel's names",
                    self.version_text()
                )
            });
        }
        let v = self.version_text();
        Some(if self.flags & PYTHON_FREE_THREADED != 0 {
            format!(
                "CPython {v} is a free-threaded build, whose structures stallscope does not read: stacks show native frames only, and threads the kernel's names"
            )
        } else if self.flags & PYTHON_NO_READ != 0 {
            format!(
                "CPython {v}'s memory could not be read (process_vm_readv was refused): stacks show native frames only, and threads the kernel's names"
            )
        } else {
            format!(
                "CPython {v} is a version whose structures stallscope does not know (it reads 3.8 to 3.13): stacks show native frames only, and threads the kernel's names"
            )
        })
    }

    /// The line of the instruction at byte `offset` of code `id`.
    pub fn line(&self, id: u32, offset: i32) -> Option<u32> {
        let code = self.codes.get(&id)?;
        code.line(self.version, offset)
    }
}

/// A Python code object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PyCode {
    pub name: String,
    /// The qualified name (`Worker.run`; 3.11 and later, else empty).
    pub qualname: String,
    pub file: String,
    pub first_line: i32,
    /// The line table, as the interpreter of the profile's version keeps it.
    pub table: Vec<u8>,
}

impl PyCode {
    /// The name the views show: the qualified name where the version has one.
    pub fn display_name(&self) -> &str {
        if self.qualname.is_empty() {
            &self.name
        } else {
            &self.qualname
        }
    }

    /// The line of the instruction at byte `offset` (-1: before the first, its first line), by
    /// the table of `version`.
    pub fn line(&self, version: u32, offset: i32) -> Option<u32> {
        let minor = (version >> 16) & 0xff;
        let first = self.first_line;
        let line = if offset < 0 {
            Some(first)
        } else if version >> 24 != 3 || minor < 10 {
            Some(lnotab_line(&self.table, first, offset as u64))
        } else if minor == 10 {
            linetable_line(&self.table, first, offset as u64)
        } else {
            location_line(&self.table, first, offset as u64 / 2)
        };
        line.and_then(|l| u32::try_from(l).ok()).filter(|&l| l > 0)
    }
}

/// 3.8/3.9 `co_lnotab`: pairs of (address increment, signed line increment), bytes.
fn lnotab_line(table: &[u8], first: i32, lasti: u64) -> i32 {
    let mut line = first;
    let mut addr = 0u64;
    for pair in table.chunks_exact(2) {
        addr += u64::from(pair[0]);
        if addr > lasti {
            break;
        }
        line = line.saturating_add(i32::from(pair[1] as i8));
    }
    line
}

/// 3.10 `co_linetable`: pairs of (byte length of a range, signed line delta; -128: no line).
fn linetable_line(table: &[u8], first: i32, lasti: u64) -> Option<i32> {
    let mut line = first;
    let mut addr = 0u64;
    for pair in table.chunks_exact(2) {
        let end = addr + u64::from(pair[0]);
        let delta = pair[1] as i8;
        if delta != -128 {
            line = line.saturating_add(i32::from(delta));
        }
        if addr <= lasti && lasti < end {
            return (delta != -128).then_some(line);
        }
        addr = end;
    }
    None
}

/// 3.11+ location table (`Objects/locations.md`): entries of `1|code(4)|length-1(3)`, lengths
/// in code units.
fn location_line(table: &[u8], first: i32, unit: u64) -> Option<i32> {
    let mut line = first;
    let mut addr = 0u64;
    let mut i = 0;
    let varint = |i: &mut usize| -> i64 {
        let mut v = 0i64;
        let mut shift = 0;
        while let Some(&b) = table.get(*i) {
            *i += 1;
            if shift < 60 {
                v |= i64::from(b & 63) << shift;
            }
            shift += 6;
            if b & 64 == 0 {
                break;
            }
        }
        v
    };
    let svarint = |i: &mut usize| -> i64 {
        let v = varint(i);
        if v & 1 != 0 { -(v >> 1) } else { v >> 1 }
    };
    while let Some(&b) = table.get(i) {
        i += 1;
        let code = (b >> 3) & 15;
        let len = u64::from(b & 7) + 1;
        let delta = match code {
            15 => 0,
            14 => {
                let d = svarint(&mut i);
                varint(&mut i);
                varint(&mut i);
                varint(&mut i);
                d
            }
            13 => svarint(&mut i),
            10..=12 => {
                i += 2;
                i64::from(code) - 10
            }
            _ => {
                i += 1;
                0
            }
        };
        line = line.saturating_add(delta.clamp(-(1 << 30), 1 << 30) as i32);
        if addr <= unit && unit < addr + len {
            return (code != 15).then_some(line);
        }
        addr += len;
    }
    None
}

/// One Python frame of a stack, innermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyFrame {
    /// The code object's id (None: it could not be read).
    pub code: Option<u32>,
    /// The byte offset of its instruction (-1: before the first).
    pub offset: i32,
    /// The oldest frame of those one run of the interpreter's evaluation loop runs.
    pub entry: bool,
}

pub(super) fn parse_python(payload: &[u8], pos: usize) -> Result<Python, ProfileError> {
    let mut f = Fields::new(payload);
    let version = f.u32();
    let flags = f.u32();
    if flags & !PYTHON_KNOWN != 0 || payload.len() != PYTHON_SIZE {
        return err(pos, "inconsistent python record");
    }
    Ok(Python {
        version,
        flags,
        codes: HashMap::new(),
    })
}

/// A PY_THREAD record: the thread's serial and the name Python gives it.
pub(super) fn parse_py_thread(payload: &[u8], pos: usize) -> Result<(u32, String), ProfileError> {
    if payload.len() < PY_THREAD_SIZE {
        return err(pos, "python thread record too short");
    }
    let mut f = Fields::new(payload);
    let serial = f.u32();
    let _tid = f.u32();
    let len = f.u32() as usize;
    if len == 0 || len > PY_THREAD_NAME_MAX || PY_THREAD_SIZE + len != payload.len() {
        return err(pos, "python thread record's length does not match its size");
    }
    let name = String::from_utf8_lossy(&payload[PY_THREAD_SIZE..]).into_owned();
    Ok((serial, name))
}

pub(super) fn parse_py_code(payload: &[u8], pos: usize) -> Result<(u32, PyCode), ProfileError> {
    if payload.len() < PY_CODE_SIZE {
        return err(pos, "python code record too short");
    }
    let mut f = Fields::new(payload);
    let id = f.u32();
    let first_line = f.u32() as i32;
    let lens = [f.u32(), f.u32(), f.u32(), f.u32()].map(|n| n as usize);
    if lens[..3].iter().any(|&n| n > PY_STRING_MAX)
        || lens[3] > PY_TABLE_MAX
        || PY_CODE_SIZE + lens.iter().sum::<usize>() != payload.len()
        || id == PY_CODE_UNKNOWN
    {
        return err(pos, "python code record's lengths do not match its size");
    }
    let mut at = PY_CODE_SIZE;
    let mut take = |n: usize| {
        let part = &payload[at..at + n];
        at += n;
        part
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let name = text(take(lens[0]));
    let qualname = text(take(lens[1]));
    let file = text(take(lens[2]));
    let table = take(lens[3]).to_vec();
    Ok((
        id,
        PyCode {
            name,
            qualname,
            file,
            first_line,
            table,
        },
    ))
}

pub(super) fn parse_py_stack(
    payload: &[u8],
    pos: usize,
    codes: &HashMap<u32, PyCode>,
) -> Result<(u32, Vec<PyFrame>), ProfileError> {
    if payload.len() < PY_STACK_SIZE {
        return err(pos, "python stack record too short");
    }
    let mut f = Fields::new(payload);
    let id = f.u32();
    let count = f.u32() as usize;
    if count == 0 || count > PY_MAX_FRAMES || PY_STACK_SIZE + count * PY_FRAME_SIZE != payload.len()
    {
        return err(pos, "python stack record's count does not match its size");
    }
    let mut frames = Vec::with_capacity(count);
    for _ in 0..count {
        let code = f.u32();
        let offset = f.u32() as i32;
        let flags = f.u32();
        let reserved = f.u32();
        if reserved != 0 || flags & !PY_FRAME_ENTRY != 0 || offset < -1 {
            return err(pos, "python stack record holds a damaged frame");
        }
        let code = (code != PY_CODE_UNKNOWN).then_some(code);
        if code.is_some_and(|c| !codes.contains_key(&c)) {
            return err(
                pos,
                "python stack record names a code object the file does not describe",
            );
        }
        frames.push(PyFrame {
            code,
            offset,
            entry: flags & PY_FRAME_ENTRY != 0,
        });
    }
    Ok((id, frames))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three table formats, on the tables CPython 3.9, 3.10 and 3.11 make for
    /// `def f():\n    a = 1\n    b = 2\n` (first line 1; `co_lines()` gives the lines).
    #[test]
    fn each_versions_table_gives_the_line_of_an_offset() {
        let lnotab = [0u8, 1, 4, 1];
        assert_eq!(lnotab_line(&lnotab, 1, 0), 2);
        assert_eq!(lnotab_line(&lnotab, 1, 2), 2);
        assert_eq!(lnotab_line(&lnotab, 1, 4), 3);
        // 3.10: [(0, 4, 2), (4, 12, 3)].
        let linetable = [4u8, 1, 8, 1];
        assert_eq!(linetable_line(&linetable, 1, 0), Some(2));
        assert_eq!(linetable_line(&linetable, 1, 6), Some(3));
        assert_eq!(linetable_line(&linetable, 1, 12), None);
        // 3.11 (units of 2 bytes): [(0, 2, 1), (2, 6, 2), (6, 14, 3)].
        let locations = [
            0x80u8, 0x00, 0xd8, 0x08, 0x09, 0x80, 0x41, 0xd8, 0x08, 0x09, 0x80, 0x41, 0x80, 0x41,
            0x80, 0x41,
        ];
        let lines: Vec<_> = (0..8).map(|u| location_line(&locations, 1, u)).collect();
        let want = [1, 2, 2, 3, 3, 3, 3].map(Some);
        assert_eq!(lines[..7], want);
        assert_eq!(lines[7], None);
    }
}
