//! Pushing profiles into a continuous-profiling server: Parca (its profile store's `WriteRaw`)
//! or Grafana Pyroscope (its push API or its `/ingest` endpoint). What a window of a program
//! becomes ([`window`]): one gzipped pprof per kind of figure, each with one `__name__` and the
//! sample types and units the servers know (`process_cpu`: `samples`, `cpu`; `wall`: `wall`,
//! labelled by thread state; `memory`: `alloc_objects`, `alloc_space`; `mutex`: `contentions`,
//! `delay`, labelled by lock; `allocator`: the allocator's time on a CPU), and the labels
//! `service_name`, `host`, `pid`, the user's, and `findings` (the rules that fired; their
//! titles ride along as the profile's comments). How it is sent is [`engines`]; the bounded
//! queue that keeps pushing off the program's way is [`queue`].

pub mod engines;
pub mod queue;

use super::pprof::{Selection, encode_selected};
use crate::model::Model;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

pub use engines::Engine;

/// The options every command that pushes takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PushArgs {
    /// Push to a profile server: Parca (http://HOST:7070/api/profiles/writeraw), Pyroscope's
    /// push API (http://HOST:4040/push.v1.PusherService/Push) or its ingest endpoint
    /// (http://HOST:4040/ingest); user:password@ in the URL is sent as basic auth
    #[arg(long, value_name = "URL")]
    pub push: Option<String>,
    /// The server's API, when the URL's path does not say it (the API's path is then added)
    #[arg(long, value_enum, value_name = "ENGINE", requires = "push")]
    pub engine: Option<Engine>,
    /// Label every pushed profile NAME=VALUE (repeatable)
    #[arg(long = "label", value_name = "NAME=VALUE", requires = "push")]
    pub labels: Vec<String>,
    /// The service_name label [default: the program's name]
    #[arg(long, value_name = "NAME", requires = "push")]
    pub service_name: Option<String>,
    /// The tenant, sent as X-Scope-OrgID (multi-tenant Pyroscope, Parca behind a gateway)
    #[arg(long, value_name = "ID", requires = "push")]
    pub tenant: Option<String>,
    /// Send the token in FILE as `Authorization: Bearer`
    #[arg(long, value_name = "FILE", requires = "push")]
    pub token_file: Option<PathBuf>,
    /// Give up on a push after SECONDS (connection, sending and answer together)
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10.0,
        requires = "push"
    )]
    pub push_timeout: f64,
}

/// One kind of figure: a pprof profile of its own.
struct Group {
    name: &'static str,
    types: &'static [&'static str],
    state: Option<&'static str>,
}

/// The profiles a window becomes, named as Pyroscope names its own (`process_cpu`, `memory`,
/// `mutex`, `wall`); `allocator` is the CPU samples taken inside the allocator.
const GROUPS: &[Group] = &[
    Group {
        name: "process_cpu",
        types: &["samples", "cpu"],
        state: None,
    },
    Group {
        name: "wall",
        types: &["wall"],
        state: None,
    },
    Group {
        name: "memory",
        types: &["alloc_objects", "alloc_space"],
        state: None,
    },
    Group {
        name: "mutex",
        types: &["contentions", "delay"],
        state: None,
    },
    Group {
        name: "allocator",
        types: &["samples", "cpu"],
        state: Some("allocator"),
    },
];

/// One profile to push: its `__name__`, its labels (without `__name__`), the gzipped pprof,
/// and the time it covers (Unix nanoseconds).
#[derive(Debug, Clone)]
pub struct Series {
    pub name: &'static str,
    pub labels: Vec<(String, String)>,
    pub pprof_gz: Vec<u8>,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A profile (a whole run or one window) as the series to push; kinds without a sample are
/// left out.
#[derive(Debug, Clone, Default)]
pub struct Window {
    pub series: Vec<Series>,
}

/// Where and how to push: the server, its API, the credentials and the labels given.
#[derive(Clone)]
pub struct Target {
    pub engine: Engine,
    pub url: String,
    pub basic: Option<(String, String)>,
    pub token: Option<String>,
    pub tenant: Option<String>,
    pub timeout: Duration,
    pub service_name: Option<String>,
    /// `host` and the user's labels.
    pub labels: Vec<(String, String)>,
}

impl Target {
    /// The target the options name (None without `--push`), or why they are wrong.
    pub fn from_args(args: &PushArgs) -> Result<Option<Target>, String> {
        let Some(url) = &args.push else {
            return Ok(None);
        };
        if !(args.push_timeout.is_finite()
            && args.push_timeout > 0.0
            && args.push_timeout <= 3600.0)
        {
            return Err("--push-timeout must be a number of seconds above 0 (at most 3600)".into());
        }
        let engines::Endpoint { engine, url, basic } = engines::parse_url(url, args.engine)?;
        if basic.is_some() && args.token_file.is_some() {
            return Err(
                "--push's URL holds a user (basic auth) and --token-file a bearer token: give one"
                    .into(),
            );
        }
        let token = match &args.token_file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                let token = text.trim().to_string();
                if token.is_empty() || token.contains(['\r', '\n']) {
                    return Err(format!("{} holds no one-line token", path.display()));
                }
                Some(token)
            }
            None => None,
        };
        let mut labels = vec![("host".to_string(), hostname())];
        for label in &args.labels {
            let Some((name, value)) = label.split_once('=') else {
                return Err(format!("--label {label}: expected NAME=VALUE"));
            };
            if !valid_label_name(name) || name.starts_with("__") {
                return Err(format!(
                    "--label {label}: a label's name is letters, digits and _, not starting with a digit or __"
                ));
            }
            if matches!(name, "service_name" | "pid" | "findings") {
                return Err(format!(
                    "--label {label}: {name} is set by stallscope (--service-name names the service)"
                ));
            }
            labels.retain(|(n, _)| n != name);
            labels.push((name.to_string(), value.to_string()));
        }
        if let Some(s) = &args.service_name
            && s.is_empty()
        {
            return Err("--service-name is empty".into());
        }
        Ok(Some(Target {
            engine,
            url,
            basic,
            token,
            tenant: args.tenant.clone(),
            timeout: Duration::from_secs_f64(args.push_timeout),
            service_name: args.service_name.clone(),
            labels,
        }))
    }

    /// Where the profiles go, as printed (without credentials).
    pub fn describe(&self) -> String {
        format!("{} ({})", self.url, self.engine.name())
    }
}

/// Prometheus' label names: what both servers accept.
fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most the buffer's length.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The service's name: given, else the program's file name.
fn service_name(m: &Model, target: &Target) -> String {
    if let Some(s) = &target.service_name {
        return s.clone();
    }
    let s = &m.analysis.summary;
    let program = s
        .command
        .first()
        .filter(|c| !c.is_empty())
        .unwrap_or(&s.exe);
    let base = program.rsplit('/').next().unwrap_or(program);
    if base.is_empty() {
        "unknown".into()
    } else {
        base.to_string()
    }
}

/// The series a profile becomes; `time`: the window's start (Unix nanoseconds) and length,
/// where the caller knows them better than the profile (None: the profile's own).
pub fn window(m: &Model, target: &Target, time: Option<(u64, u64)>) -> Window {
    let s = &m.analysis.summary;
    let mut labels = vec![("service_name".to_string(), service_name(m, target))];
    labels.extend(target.labels.iter().cloned());
    labels.push(("pid".into(), s.pid.to_string()));
    let mut ids: Vec<&str> = m.findings.iter().map(|f| f.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    if !ids.is_empty() {
        labels.push(("findings".into(), ids.join(",")));
    }
    let comments: Vec<String> = m
        .findings
        .iter()
        .map(|f| format!("{}: {}", f.id, f.title))
        .collect();
    let (start_ns, length) = time.unwrap_or((s.start_time_unix_ns, s.wall_ns));
    let end_ns = start_ns.saturating_add(length.max(1));
    let mut series = Vec::new();
    for g in GROUPS {
        let sel = Selection {
            types: g.types,
            state: g.state,
            comments: &comments,
            time: Some((start_ns, length)),
        };
        let (pprof, samples) = encode_selected(&m.analysis, &sel);
        if samples == 0 {
            continue;
        }
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        if gz.write_all(&pprof).is_err() {
            continue;
        }
        let Ok(pprof_gz) = gz.finish() else {
            continue;
        };
        series.push(Series {
            name: g.name,
            labels: labels.clone(),
            pprof_gz,
            start_ns,
            end_ns,
        });
    }
    Window { series }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_names_are_prometheus_names() {
        assert!(valid_label_name("region"));
        assert!(valid_label_name("_a1"));
        assert!(!valid_label_name("1a"));
        assert!(!valid_label_name("a-b"));
        assert!(!valid_label_name(""));
    }

    #[test]
    fn options_are_checked() {
        let mut args = PushArgs {
            push: Some("http://127.0.0.1:7070/api/profiles/writeraw".into()),
            push_timeout: 10.0,
            labels: vec!["region=eu".into(), "region=us".into()],
            ..PushArgs::default()
        };
        let t = Target::from_args(&args).unwrap().unwrap();
        assert_eq!(t.engine, Engine::Parca);
        assert_eq!(
            t.labels.iter().filter(|(n, _)| n == "region").count(),
            1,
            "a label given twice keeps the last value"
        );
        assert!(t.labels.contains(&("region".into(), "us".into())));
        args.labels = vec!["pid=3".into()];
        assert!(Target::from_args(&args).is_err());
        args.labels = vec!["novalue".into()];
        assert!(Target::from_args(&args).is_err());
        args.labels.clear();
        args.push_timeout = 0.0;
        assert!(Target::from_args(&args).is_err());
        args.push_timeout = 10.0;
        args.push = Some("http://u:p@127.0.0.1:4040/ingest".into());
        args.token_file = Some("/nonexistent/token".into());
        assert!(
            Target::from_args(&args).err().unwrap().contains("give one"),
            "basic auth and a bearer token are not sent together"
        );
        args.token_file = None;
        args.push = None;
        assert!(Target::from_args(&args).unwrap().is_none());
    }
}
