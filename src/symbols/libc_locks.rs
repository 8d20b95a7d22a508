//! glibc's internal locks named from the structure of libc itself, without its debug file (a
//! stripped libc has only its dynamic symbols: the exported functions and objects):
//!
//! - a function's private lock (random()'s, the timezone lock): the exported function's code,
//!   and the code it calls or jumps to directly, takes it with a `lock cmpxchg` on a
//!   RIP-relative address (glibc's inline `__libc_lock_lock`); function bounds come from
//!   `.eh_frame`, which stripping keeps;
//! - the lock of stdin, stdout, stderr: the exported `_IO_2_1_stdout_` (a FILE) holds its
//!   `_lock` pointer at the ABI's fixed offset, filled by a relocation;
//! - `main_arena`: the only malloc_state in libc's image, which points back at itself (its
//!   `next` field starts the ring of arenas), a few hundred bytes after its mutex.
//!
//! Addresses are link-time addresses of libc's file (a lock's runtime address less the module's
//! bias).

use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags};
use std::collections::HashMap;

/// `offsetof(FILE, _lock)` on 64-bit Linux (bits/types/struct_FILE.h, unchanged since 2.1).
const FILE_LOCK_OFFSET: u64 = 0x88;
const R_X86_64_RELATIVE: u32 = 8;
const SHF_WRITE: u64 = 1;
/// How far to follow direct calls and jumps from an exported function.
const DEPTH: usize = 2;
/// Where malloc_state's `next` may lie after its mutex (0x870 on 2.36; the bins come first).
const ARENA_NEXT: std::ops::Range<u64> = 0x100..0x1000;

/// What libc's file says about its locks (see the module's comment).
#[derive(Debug, Default)]
pub struct LibcLocks {
    /// Lock address -> the words of the group whose functions take it.
    locks: HashMap<u64, String>,
    /// Pointers stored in libc's data: where -> the address stored.
    pointers: HashMap<u64, u64>,
    /// Writable sections (address, size, bytes when in the file) for pointers stored in place.
    data: Vec<(u64, Vec<u8>)>,
}

impl LibcLocks {
    /// Reads libc's file (`path`; None when it cannot be read or its build id is not
    /// `build_id`). `groups`: (exported functions, the words for the lock they take).
    pub fn read(path: &str, build_id: &[u8], groups: &[(&[String], &str)]) -> Option<LibcLocks> {
        let bytes = std::fs::read(path).ok()?;
        let file = object::File::parse(&*bytes).ok()?;
        if file.architecture() != object::Architecture::X86_64 {
            return None;
        }
        if !build_id.is_empty()
            && file
                .build_id()
                .ok()
                .flatten()
                .is_some_and(|id| id != build_id)
        {
            return None;
        }
        let mut out = LibcLocks::default();
        for section in file.sections() {
            if let object::SectionFlags::Elf { sh_flags, .. } = section.flags()
                && sh_flags.0 & SHF_WRITE != 0
                && let Ok(data) = section.data()
            {
                out.data.push((section.address(), data.to_vec()));
            }
        }
        for (at, reloc) in file.dynamic_relocations().into_iter().flatten() {
            if let RelocationFlags::Elf { r_type } = reloc.flags()
                && r_type.0 == R_X86_64_RELATIVE
                && reloc.addend() > 0
            {
                out.pointers.insert(at, reloc.addend() as u64);
            }
        }
        let exported: HashMap<String, (u64, u64)> = file
            .dynamic_symbols()
            .filter_map(|s| Some((s.name().ok()?.to_string(), (s.address(), s.size()))))
            .collect();
        for (stream, words) in [
            ("_IO_2_1_stdin_", "the lock of stdin"),
            ("_IO_2_1_stdout_", "the lock of stdout"),
            ("_IO_2_1_stderr_", "the lock of stderr"),
        ] {
            if let Some(&(at, _)) = exported.get(stream)
                && let Some(lock) = out.pointer_at(at + FILE_LOCK_OFFSET)
            {
                out.locks.insert(lock, words.to_string());
            }
        }
        let code = Code::new(&file);
        let mut claimed: HashMap<u64, Option<&str>> = HashMap::new();
        for (functions, words) in groups {
            let mut taken = Vec::new();
            for f in functions.iter() {
                if let Some(&(at, size)) = exported.get(f.as_str()) {
                    code.locks_taken(at, size, DEPTH, &mut taken);
                }
            }
            taken.sort_unstable();
            taken.dedup();
            for lock in taken {
                let e = claimed.entry(lock).or_insert(Some(words));
                if *e != Some(*words) {
                    // Taken by two groups' code: it names neither.
                    *e = None;
                }
            }
        }
        for (lock, words) in claimed {
            if let Some(words) = words {
                out.locks.entry(lock).or_insert_with(|| words.to_string());
            }
        }
        Some(out)
    }

    /// The words for the lock at libc's link-time address `at`, if libc's structure names it.
    pub fn name(&self, at: u64) -> Option<&str> {
        self.locks.get(&at).map(String::as_str)
    }

    /// The link-time addresses of the locks named `words`.
    pub fn addresses_named(&self, words: &str) -> Vec<u64> {
        let mut at: Vec<u64> = self
            .locks
            .iter()
            .filter(|(_, w)| w.as_str() == words)
            .map(|(a, _)| *a)
            .collect();
        at.sort_unstable();
        at
    }

    /// Whether the lock at `at` is the mutex of main_arena: an object in libc's data that points
    /// back at `at` from where a malloc_state's `next` field lies.
    pub fn is_main_arena(&self, at: u64) -> bool {
        (ARENA_NEXT.start..ARENA_NEXT.end)
            .step_by(8)
            .any(|d| self.pointer_at(at + d) == Some(at))
    }

    /// The pointer libc's file stores at `at`: its relocation's value, else (RELR, or a
    /// pointer the linker resolved) the bytes in place.
    fn pointer_at(&self, at: u64) -> Option<u64> {
        if let Some(&p) = self.pointers.get(&at) {
            return Some(p);
        }
        let (start, bytes) = self
            .data
            .iter()
            .find(|(a, b)| *a <= at && at + 8 <= a + b.len() as u64)?;
        let i = (at - start) as usize;
        let p = u64::from_le_bytes(bytes[i..i + 8].try_into().ok()?);
        (p != 0).then_some(p)
    }
}

/// libc's executable code and its functions' bounds (`.eh_frame`).
struct Code {
    text: Vec<(u64, Vec<u8>)>,
    /// (start, end) of every function with unwind information, by start.
    functions: Vec<(u64, u64)>,
}

impl Code {
    fn new(file: &object::File) -> Code {
        let text = file
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
            .filter_map(|s| Some((s.address(), s.data().ok()?.to_vec())))
            .collect();
        let mut functions = Vec::new();
        if let Some(eh) = file.section_by_name(".eh_frame")
            && let Ok(data) = eh.data()
        {
            use addr2line::gimli::{BaseAddresses, CieOrFde, EhFrame, LittleEndian, UnwindSection};
            let eh_frame = EhFrame::new(data, LittleEndian);
            let mut bases = BaseAddresses::default().set_eh_frame(eh.address());
            if let Some(t) = file.section_by_name(".text") {
                bases = bases.set_text(t.address());
            }
            if let Some(g) = file.section_by_name(".got") {
                bases = bases.set_got(g.address());
            }
            let mut entries = eh_frame.entries(&bases);
            while let Ok(Some(entry)) = entries.next() {
                if let CieOrFde::Fde(partial) = entry
                    && let Ok(fde) = partial.parse(EhFrame::cie_from_offset)
                {
                    functions.push((fde.initial_address(), fde.end_address()));
                }
            }
        }
        functions.sort_unstable();
        Code { text, functions }
    }

    /// The end of the function starting at `at` (its unwind information's).
    fn end_of(&self, at: u64) -> Option<u64> {
        let i = self
            .functions
            .partition_point(|f| f.0 <= at)
            .checked_sub(1)?;
        let (start, end) = self.functions[i];
        (start <= at && at < end).then_some(end)
    }

    fn bytes(&self, from: u64, to: u64) -> Option<&[u8]> {
        let (start, b) = self
            .text
            .iter()
            .find(|(a, b)| *a <= from && from < a + b.len() as u64)?;
        let lo = (from - start) as usize;
        let hi = ((to - start) as usize).min(b.len());
        b.get(lo..hi)
    }

    /// The RIP-relative words the function at `at` (and those it calls or jumps to directly,
    /// `depth` deep) takes with `lock cmpxchg`.
    fn locks_taken(&self, at: u64, size: u64, depth: usize, out: &mut Vec<u64>) {
        use iced_x86::{Decoder, DecoderOptions, Mnemonic, OpKind};
        let mut seen = vec![at];
        let mut queue = vec![(at, size, 0)];
        while let Some((at, size, level)) = queue.pop() {
            let Some(end) = self.end_of(at).or_else(|| (size > 0).then_some(at + size)) else {
                continue;
            };
            let Some(bytes) = self.bytes(at, end) else {
                continue;
            };
            let mut decoder = Decoder::with_ip(64, bytes, at, DecoderOptions::NONE);
            for insn in &mut decoder {
                if insn.is_invalid() {
                    break;
                }
                if insn.has_lock_prefix()
                    && insn.mnemonic() == Mnemonic::Cmpxchg
                    && insn.is_ip_rel_memory_operand()
                {
                    out.push(insn.ip_rel_memory_address());
                }
                if level < depth
                    && matches!(insn.mnemonic(), Mnemonic::Call | Mnemonic::Jmp)
                    && insn.op_kind(0) == OpKind::NearBranch64
                {
                    let target = insn.near_branch64();
                    // A jump inside the function is its own code, already read.
                    if (target < at || target >= end) && !seen.contains(&target) {
                        seen.push(target);
                        queue.push((target, 0, level + 1));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The system's libc, when it is glibc on x86-64 at the usual place.
    fn system_libc() -> Option<LibcLocks> {
        let random = vec!["random".to_string(), "srandom".to_string()];
        let tz = vec!["tzset".to_string(), "localtime_r".to_string()];
        let groups: Vec<(&[String], &str)> = vec![(&random, "random"), (&tz, "tz")];
        ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"]
            .iter()
            .find_map(|p| LibcLocks::read(p, &[], &groups))
    }

    #[test]
    fn the_system_libc_names_its_private_locks_and_streams() {
        let Some(l) = system_libc() else {
            eprintln!("SKIPPED: no x86-64 glibc at /lib/x86_64-linux-gnu or /lib64");
            return;
        };
        let mut names: Vec<&str> = l.locks.values().map(String::as_str).collect();
        names.sort_unstable();
        names.dedup();
        for want in [
            "random",
            "tz",
            "the lock of stdin",
            "the lock of stdout",
            "the lock of stderr",
        ] {
            assert!(names.contains(&want), "{want} in {:?}", l.locks);
        }
        // One lock per private group.
        assert_eq!(l.locks.values().filter(|w| *w == "random").count(), 1);
        assert_eq!(l.locks.values().filter(|w| *w == "tz").count(), 1);
        // None of them is an arena, and exactly one word of libc's data is.
        assert!(l.locks.keys().all(|&a| !l.is_main_arena(a)));
        // main_arena, where libc's debug file (libc6-dbg) says where it is.
        let Some(at) = main_arena_by_debug_file() else {
            eprintln!("SKIPPED (main_arena): no debug file of libc under /usr/lib/debug");
            return;
        };
        assert!(l.is_main_arena(at), "main_arena at {at:#x}");
        assert!(!l.is_main_arena(at + 8) && !l.is_main_arena(at - 8));
    }

    fn main_arena_by_debug_file() -> Option<u64> {
        let data = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").ok()?;
        let id = object::File::parse(&*data).ok()?.build_id().ok()??.to_vec();
        let path =
            crate::symbols::debuginfod::local_path(&id, std::path::Path::new("/usr/lib/debug"))?;
        let debug = std::fs::read(path).ok()?;
        let file = object::File::parse(&*debug).ok()?;
        file.symbols()
            .find(|s| s.name() == Ok("main_arena"))
            .map(|s| s.address())
    }
}
