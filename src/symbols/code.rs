//! The machine code of a profile's modules, read from their files: whether an instruction is a
//! locked read-modify-write (for the `atomic` thread state) and whether an address follows a call
//! (to tell real return addresses among the words scanned from a blocked thread's stack).

use super::cache::{self, CodeFile};
use crate::profile::Module;
use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Default)]
pub struct CodeReader {
    /// Per module of the profile, its file's executable segments (shared by every profile that
    /// names the file: `cache`).
    segments: HashMap<usize, Arc<CodeFile>>,
    /// Never read a module's file: every question is answered "no" (see `Symbolizer::offline`).
    offline: bool,
}

const MAX_INSN: usize = 15;

fn is_locked_rmw(insn: &Instruction) -> bool {
    if insn.has_lock_prefix() {
        return true;
    }
    // xchg with a memory operand is locked without the prefix.
    insn.mnemonic() == Mnemonic::Xchg
        && (0..insn.op_count()).any(|i| insn.op_kind(i) == OpKind::Memory)
}

impl CodeReader {
    /// A reader that opens no file.
    pub fn offline() -> CodeReader {
        CodeReader {
            offline: true,
            ..CodeReader::default()
        }
    }

    /// `before` bytes ending at `pc` and up to `after` bytes from it, as (bytes, index of pc).
    fn window(
        &mut self,
        modules: &[Module],
        pc: u64,
        before: usize,
        after: usize,
    ) -> Option<(Vec<u8>, usize)> {
        if self.offline {
            return None;
        }
        let index = modules.iter().rposition(|m| m.lo <= pc && pc < m.hi)?;
        let module = &modules[index];
        let file = self
            .segments
            .entry(index)
            .or_insert_with(|| cache::code_file(&module.path));
        let address = pc.checked_sub(module.bias)?;
        let (seg_address, bytes) = file.segment_at(address)?;
        let at = (address - seg_address) as usize;
        let start = at.saturating_sub(before);
        let end = at.saturating_add(after).min(bytes.len());
        Some((bytes[start..end].to_vec(), at - start))
    }

    /// Whether the instruction at `pc` is a locked read-modify-write, or one ends exactly at `pc`
    /// (a CPU sample's pc is usually the instruction after the one that was slow).
    pub fn at_or_after_atomic(&mut self, modules: &[Module], pc: u64) -> bool {
        self.atomic_at(modules, pc).is_some()
    }

    /// The memory word of the atomic instruction at or ending at `pc` when the instruction names
    /// it by a fixed address (RIP-relative: a static lock word, as glibc's inlined `lll_lock` on
    /// random()'s lock), so a CPU sample there says which lock it fought over.
    pub fn atomic_target(&mut self, modules: &[Module], pc: u64) -> Option<u64> {
        let insn = self.atomic_at(modules, pc)?;
        insn.is_ip_rel_memory_operand()
            .then(|| insn.ip_rel_memory_address())
    }

    /// The locked read-modify-write at `pc`, or the one that ends exactly at `pc`.
    fn atomic_at(&mut self, modules: &[Module], pc: u64) -> Option<Instruction> {
        let (bytes, at) = self.window(modules, pc, MAX_INSN, MAX_INSN)?;
        let decode_at = |offset: usize| {
            let mut d = Decoder::with_ip(
                64,
                &bytes[offset..],
                pc - (at - offset) as u64,
                DecoderOptions::NONE,
            );
            let insn = d.decode();
            (!insn.is_invalid()).then_some(insn)
        };
        if let Some(i) = decode_at(at).filter(is_locked_rmw) {
            return Some(i);
        }
        (1..=at.min(MAX_INSN)).find_map(|k| {
            decode_at(at - k)
                .filter(|i| i.len() == k && (i.has_lock_prefix() || (is_locked_rmw(i) && k >= 2)))
        })
    }

    /// Whether `pc` lies in a spin-wait loop: right after a `pause` (where the timer interrupt
    /// lands, `pause` being slow), or within a few bytes of one (the loop's load, compare and
    /// branch around it). Compilers emit `pause` only for spin hints (`_mm_pause`,
    /// `__builtin_ia32_pause`, glibc's spin loops).
    pub fn in_pause_loop(&mut self, modules: &[Module], pc: u64) -> bool {
        const NEAR: usize = 24;
        let Some((bytes, _)) = self.window(modules, pc, NEAR, NEAR) else {
            return false;
        };
        bytes.windows(2).any(|w| w == [0xf3, 0x90])
    }

    /// Whether `pc` lies in a polling loop: a short loop (at most `POLL_LOOP_BYTES`) that re-reads
    /// memory and changes nothing but registers and flags: only loads, compares, tests, `nop`s
    /// and `pause`, and the branch back. It waits for another thread to change the word it
    /// reads (a runtime's hand-off flag): a spin-wait, with or without a `pause` hint
    /// (OpenBLAS's `YIELDING` is eight `nop`s). A loop that computes (adds, shifts, stores) or
    /// calls is no such loop.
    pub fn in_polling_loop(&mut self, modules: &[Module], pc: u64) -> bool {
        let Some((bytes, at)) = self.window(modules, pc, POLL_LOOP_BYTES, POLL_LOOP_BYTES) else {
            return false;
        };
        let base = pc - at as u64;
        // Forward from the sample's instruction to the branch that closes the loop.
        let mut d = Decoder::with_ip(64, &bytes[at..], pc, DecoderOptions::NONE);
        let mut back = None;
        for _ in 0..POLL_LOOP_INSNS {
            let insn = d.decode();
            if insn.is_invalid() || !polls(&insn) {
                return false;
            }
            if insn.op0_kind() == OpKind::NearBranch64 {
                let target = insn.near_branch_target();
                if target <= pc && target >= base {
                    back = Some((target, insn.next_ip()));
                    break;
                }
                // A branch farther back is another loop's; one forward (the loop's exit, or a
                // skip inside it) lets the loop go on past it.
                if target < pc {
                    return false;
                }
            }
        }
        let Some((target, end)) = back else {
            return false;
        };
        // The loop from its top: every instruction polls, one of them reads memory, and the
        // decoding lands on the sample's instruction (a consistent boundary).
        let from = (target - base) as usize;
        let to = (end - base) as usize;
        let mut d = Decoder::with_ip(64, &bytes[from..to], target, DecoderOptions::NONE);
        let (mut reads, mut on_pc) = (false, false);
        while d.can_decode() {
            let insn = d.decode();
            if insn.is_invalid() || !polls(&insn) {
                return false;
            }
            on_pc |= insn.ip() == pc;
            reads |= (0..insn.op_count()).any(|i| insn.op_kind(i) == OpKind::Memory)
                && insn.mnemonic() != Mnemonic::Nop;
        }
        reads && on_pc
    }

    /// Whether `pc` is a `syscall` instruction or directly follows one: where a CPU sample lands
    /// on a thread in a system call (interrupted and to be restarted, or just returned), with the
    /// call's first argument still in RDI.
    pub fn at_or_after_syscall(&mut self, modules: &[Module], pc: u64) -> bool {
        const SYSCALL: [u8; 2] = [0x0f, 0x05];
        let Some((bytes, at)) = self.window(modules, pc, 2, 2) else {
            return false;
        };
        bytes.get(at..at + 2) == Some(&SYSCALL[..])
            || (at >= 2 && bytes.get(at - 2..at) == Some(&SYSCALL[..]))
    }

    /// Whether `ret` directly follows a call instruction (so it can be a return address).
    pub fn follows_call(&mut self, modules: &[Module], ret: u64) -> bool {
        let Some((bytes, at)) = self.window(modules, ret, 8, 0) else {
            return false;
        };
        (2..=at.min(7)).any(|k| {
            let mut d =
                Decoder::with_ip(64, &bytes[at - k..at], ret - k as u64, DecoderOptions::NONE);
            let insn = d.decode();
            !insn.is_invalid() && insn.len() == k && matches!(insn.mnemonic(), Mnemonic::Call)
        })
    }
}

/// The longest polling loop `in_polling_loop` looks for, in bytes and instructions.
const POLL_LOOP_BYTES: usize = 48;
const POLL_LOOP_INSNS: usize = 16;

/// Whether an instruction may stand in a polling loop: it reads, compares or waits, and writes
/// no memory (a load into a register, `cmp`, `test`, `nop`, `pause`, a jump).
fn polls(insn: &Instruction) -> bool {
    let writes_memory = insn.op_count() > 0 && insn.op0_kind() == OpKind::Memory;
    match insn.mnemonic() {
        Mnemonic::Nop | Mnemonic::Pause => true,
        Mnemonic::Cmp | Mnemonic::Test => true,
        Mnemonic::Mov | Mnemonic::Movzx | Mnemonic::Movsx | Mnemonic::Movsxd => !writes_memory,
        Mnemonic::Call => false,
        _ => insn.op_count() == 1 && insn.op0_kind() == OpKind::NearBranch64,
    }
}
