//! Decoding the records of sites and code: lock sites, cross-thread frees, modules, stacks and
//! allocation sites.

use super::*;

pub(super) fn parse_lock_sites(
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

pub(super) fn parse_cross_frees(
    payload: &[u8],
    pos: usize,
) -> Result<Vec<CrossFrees>, ProfileError> {
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

pub(super) fn parse_module(payload: &[u8], pos: usize) -> Result<Module, ProfileError> {
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

pub(super) fn parse_stack(payload: &[u8], pos: usize) -> Result<(u32, Stack), ProfileError> {
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

pub(super) fn parse_alloc_sites(
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
