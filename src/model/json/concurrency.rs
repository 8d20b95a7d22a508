//! `concurrency` in the report's JSON: CPU use over time, serial sections and imbalance, from the
//! kernel's per-thread figures.

use super::*;

/// `concurrency`: from the kernel's per-thread figures (docs/STATES.md).
#[derive(Serialize)]
pub(super) struct ConcurrencyJson {
    pub(super) cpus: u32,
    pub(super) bin_ns: u64,
    pub(super) verdict: &'static str,
    pub(super) offered: UtilizationJson,
    pub(super) achieved: UtilizationJson,
    pub(super) over_ns: u64,
    pub(super) own_runnable_ns: u64,
    pub(super) other_runnable_ns: u64,
    pub(super) peak_wanting: f64,
    pub(super) parallel_ns: u64,
    pub(super) serial_sections: Vec<SerialJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) imbalance: Option<ImbalanceJson>,
}

#[derive(Serialize)]
pub(super) struct UtilizationJson {
    pub(super) idle: f64,
    pub(super) poor: f64,
    pub(super) ok: f64,
    pub(super) ideal: f64,
    pub(super) over: f64,
    pub(super) mean: f64,
}

impl UtilizationJson {
    pub(super) fn of(u: &crate::analysis::concurrency::Utilization) -> UtilizationJson {
        let r = |v: f64| (v * 1e4).round() / 1e4;
        UtilizationJson {
            idle: r(u.idle),
            poor: r(u.poor),
            ok: r(u.ok),
            ideal: r(u.ideal),
            over: r(u.over),
            mean: r(u.mean),
        }
    }
}

#[derive(Serialize)]
pub(super) struct SerialJson {
    pub(super) begin_ns: u64,
    pub(super) end_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) user_frame: Option<String>,
}

#[derive(Serialize)]
pub(super) struct ImbalanceJson {
    pub(super) tids: Vec<u32>,
    pub(super) start_ns: u64,
    pub(super) ideal_end_ns: u64,
    pub(super) finish_ns: Vec<u64>,
    pub(super) last_end_ns: u64,
    pub(super) lagging_tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) user_frame: Option<String>,
    pub(super) idle_ns: u64,
    pub(super) lagging_exec_ns: u64,
    pub(super) others_exec_ns: u64,
}

pub(super) fn concurrency_json(a: &Analysis) -> Option<ConcurrencyJson> {
    let c = a.concurrency.as_ref()?;
    let tid = |i: usize| a.profile.threads.get(i).map_or(0, |t| t.tid);
    Some(ConcurrencyJson {
        cpus: c.cpus,
        bin_ns: c.bin_ns,
        verdict: c.offered.verdict(),
        offered: UtilizationJson::of(&c.offered),
        achieved: UtilizationJson::of(&c.achieved),
        over_ns: c.over_ns,
        own_runnable_ns: c.own_runnable_ns,
        other_runnable_ns: c.other_runnable_ns,
        peak_wanting: (c.peak_wanting * 100.0).round() / 100.0,
        parallel_ns: c.parallel_ns,
        serial_sections: c
            .serial
            .iter()
            .map(|s| SerialJson {
                begin_ns: s.begin_ns,
                end_ns: s.end_ns,
                tid: s.thread.map(tid),
                user_frame: s.user_frame.as_ref().map(|f| f.display()),
            })
            .collect(),
        imbalance: c.imbalance.as_ref().map(|im| ImbalanceJson {
            tids: im.members.iter().map(|&i| tid(i)).collect(),
            start_ns: im.start_ns,
            ideal_end_ns: im.ideal_end_ns,
            finish_ns: im.finish_ns.clone(),
            last_end_ns: im.last_end_ns,
            lagging_tid: tid(im.lagging),
            user_frame: im.user_frame.as_ref().map(|f| f.display()),
            idle_ns: im.idle_ns,
            lagging_exec_ns: im.lagging_exec_ns,
            others_exec_ns: im.others_exec_ns,
        }),
    })
}
