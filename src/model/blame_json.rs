//! `blame` in the report's JSON (docs/STATES.md, "Waiting for work"): the time threads waited for
//! work while others of the process worked, charged to that work.

use crate::analysis::Analysis;
use serde::Serialize;

#[derive(Serialize)]
pub struct BlameJson {
    /// Thread time waiting for work while another thread worked and a CPU was free.
    charged_ns: u64,
    /// Thread time waiting for work charged to nothing (nothing worked, or no CPU was free).
    uncharged_ns: u64,
    /// The places the charge went to, heaviest first.
    places: Vec<PlaceJson>,
}

#[derive(Serialize)]
struct PlaceJson {
    function: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    module: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    caller: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    construct: Option<String>,
    tids: Vec<u32>,
    charged_ns: u64,
    alone_ns: u64,
    work_ns: u64,
    gain_ns: u64,
    concurrent_ns: u64,
    /// What the waiting threads waited in, and for how long.
    waits: Vec<WaitJson>,
}

#[derive(Serialize)]
struct WaitJson {
    name: String,
    ns: u64,
}

impl BlameJson {
    pub fn of(a: &Analysis) -> Option<BlameJson> {
        let b = a.blame.as_ref()?;
        let states = a.states.as_ref()?;
        Some(BlameJson {
            charged_ns: b.charged_ns,
            uncharged_ns: b.uncharged_ns,
            places: b
                .culprits
                .iter()
                .map(|c| PlaceJson {
                    function: c.frame.name(),
                    file: c.frame.file.clone(),
                    line: c.frame.line,
                    module: c.frame.module_name().to_string(),
                    caller: c.caller.as_ref().map(|f| f.display()),
                    construct: c.construct.clone(),
                    tids: c
                        .threads
                        .iter()
                        .filter_map(|&i| states.threads.get(i).map(|t| t.tid))
                        .collect(),
                    charged_ns: c.charged_ns,
                    alone_ns: c.alone_ns,
                    work_ns: c.work_ns,
                    gain_ns: c.gain_ns,
                    concurrent_ns: c.concurrent_ns,
                    waits: c
                        .waits
                        .iter()
                        .map(|(name, ns)| WaitJson {
                            name: name.clone(),
                            ns: *ns,
                        })
                        .collect(),
                })
                .collect(),
        })
    }
}
