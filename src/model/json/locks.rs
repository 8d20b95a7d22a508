//! `locks`, `unhooked_locks` and lock sites in the report's JSON.

use super::*;

#[derive(Serialize)]
pub(super) struct UnhookedLockJson {
    /// `malloc's arena lock (main_arena)`, `the pthread mutex at 0x...`, `a lock in readdir`.
    pub(super) name: String,
    /// The lock word, where the samples caught one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) address: Option<String>,
    /// Estimated from the samples.
    pub(super) wait_ns: u64,
    pub(super) samples: u64,
    pub(super) threads: usize,
    /// Where the heaviest waiting stack waited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) user_frame: Option<String>,
}

#[derive(Serialize)]
pub(super) struct Lock<'a> {
    pub(super) address: String,
    pub(super) kind: &'static str,
    pub(super) acquisitions: u64,
    pub(super) contended: u64,
    pub(super) wait_ns: u64,
    pub(super) max_wait_ns: u64,
    pub(super) hold_ns: u64,
    /// Holds timed, of which `hold_ns` is the estimate.
    pub(super) timed_holds: u64,
    pub(super) threads: usize,
    pub(super) sites: Vec<LockSite<'a>>,
    pub(super) holder_sites: Vec<LockSite<'a>>,
    /// A runtime's lock that waits on futex words (absent for pthread locks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) runtime: Option<RuntimeLock<'a>>,
}

#[derive(Serialize)]
pub(super) struct RuntimeLock<'a> {
    pub(super) runtime: &'a str,
    pub(super) object: &'a str,
    /// Futex words grouped into it (parked threads' own words).
    pub(super) words: usize,
    /// The user's frame that took it, where the runtime parks threads on their own words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) taken_at: Option<String>,
}

impl<'a> Lock<'a> {
    pub(super) fn of(l: &'a LockSummary) -> Lock<'a> {
        Lock {
            address: l.address_text(),
            kind: l.kind,
            acquisitions: l.acquisitions,
            contended: l.contended,
            wait_ns: l.wait_ns,
            max_wait_ns: l.max_wait_ns,
            hold_ns: l.hold_ns,
            timed_holds: l.timed_holds,
            threads: l.threads,
            sites: l.sites.iter().map(LockSite::of).collect(),
            holder_sites: l.holder_sites.iter().map(LockSite::of).collect(),
            runtime: l.runtime.as_ref().map(|r| RuntimeLock {
                runtime: &r.runtime,
                object: &r.object,
                words: r.words,
                taken_at: r.taken_at.as_ref().map(|f| f.display()),
            }),
        }
    }
}

#[derive(Serialize)]
pub(super) struct LockSite<'a> {
    pub(super) frames: Frames<'a>,
    pub(super) user_frame: usize,
    pub(super) contended: u64,
    pub(super) wait_ns: u64,
    pub(super) samples: u64,
}

impl<'a> LockSite<'a> {
    pub(super) fn of(site: &'a LockSiteSummary) -> LockSite<'a> {
        LockSite {
            frames: Frames(&site.frames),
            user_frame: site.user,
            contended: site.contended,
            wait_ns: site.wait_ns,
            samples: site.samples,
        }
    }
}
