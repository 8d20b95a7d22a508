//! The servers' own APIs, over HTTP or HTTPS (ureq with rustls):
//! - Parca's profile store, `WriteRaw` through its HTTP gateway (`POST /api/profiles/writeraw`,
//!   JSON: `series[{labels: {labels: [{name, value}]}, samples: [{rawProfile: base64}]}]`);
//! - Pyroscope's push API, a Connect unary call (`POST /push.v1.PusherService/Push`,
//!   `application/proto`: `PushRequest` of api/push/v1/push.proto, encoded here by hand), with
//!   `__delta__="false"`: each profile holds its window's own totals;
//! - Pyroscope's ingest endpoint (`POST /ingest?name=SERVICE{labels}&format=pprof&from&until`),
//!   one request per profile.
//!
//! The profiles are gzipped pprof in every case. Credentials: user:password in the URL (basic
//! auth), a bearer token, a tenant (`X-Scope-OrgID`). One deadline, the push timeout, covers the
//! whole push.

use super::{Target, Window};
use crate::export::pprof::Msg;
use std::time::{Duration, Instant};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Parca's profile store (WriteRaw, through /api/profiles/writeraw)
    Parca,
    /// Pyroscope's push API (/push.v1.PusherService/Push)
    Pyroscope,
    /// Pyroscope's ingest endpoint (/ingest, format=pprof)
    PyroscopeIngest,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Parca => "parca",
            Engine::Pyroscope => "pyroscope",
            Engine::PyroscopeIngest => "pyroscope-ingest",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Engine::Parca => "/api/profiles/writeraw",
            Engine::Pyroscope => "/push.v1.PusherService/Push",
            Engine::PyroscopeIngest => "/ingest",
        }
    }
}

/// What a `--push` URL names.
#[derive(Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub engine: Engine,
    /// The URL to post to, without credentials.
    pub url: String,
    /// The user and password of basic auth.
    pub basic: Option<(String, String)>,
}

/// The endpoint of a `--push` URL, or why it names none.
pub fn parse_url(url: &str, engine: Option<Engine>) -> Result<Endpoint, String> {
    let (scheme, rest) = url
        .split_once("://")
        .filter(|(s, _)| matches!(*s, "http" | "https"))
        .ok_or_else(|| format!("--push {url}: expected an http:// or https:// URL"))?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if host.is_empty() {
        return Err(format!("--push {url}: no host"));
    }
    if path.contains('?') {
        return Err(format!(
            "--push {url}: the URL takes no query (labels are given with --label)"
        ));
    }
    let basic = userinfo.map(|u| {
        let (user, password) = u.split_once(':').unwrap_or((u, ""));
        (percent_decode(user), percent_decode(password))
    });
    let all = [Engine::Parca, Engine::Pyroscope, Engine::PyroscopeIngest];
    let path = path.trim_end_matches('/');
    let engine = match engine {
        Some(e) => e,
        None => all
            .into_iter()
            .find(|e| path.ends_with(e.path()))
            .ok_or_else(|| {
                format!(
                    "--push {url}: the path names no server's API: add --engine parca, pyroscope or pyroscope-ingest, or end the URL with /api/profiles/writeraw, /push.v1.PusherService/Push or /ingest"
                )
            })?,
    };
    let path = if path.ends_with(engine.path()) {
        path.to_string()
    } else {
        format!("{path}{}", engine.path())
    };
    Ok(Endpoint {
        engine,
        url: format!("{scheme}://{host}{path}"),
        basic,
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(hex) = std::str::from_utf8(&b[i + 1..i + 3])
            && let Ok(v) = u8::from_str_radix(hex, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn base64(data: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * k)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The labels of a series for a server: `__name__` first, then the others by name.
fn series_labels(name: &str, labels: &[(String, String)], delta: bool) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = labels.to_vec();
    out.push(("__name__".into(), name.into()));
    if delta {
        out.push(("__delta__".into(), "false".into()));
    }
    out.sort();
    out
}

/// Parca's WriteRaw request, as its HTTP gateway takes it.
pub fn parca_body(w: &Window) -> Vec<u8> {
    let series: Vec<serde_json::Value> = w
        .series
        .iter()
        .map(|s| {
            let labels: Vec<serde_json::Value> = series_labels(s.name, &s.labels, false)
                .into_iter()
                .map(|(name, value)| serde_json::json!({"name": name, "value": value}))
                .collect();
            serde_json::json!({
                "labels": {"labels": labels},
                "samples": [{"rawProfile": base64(&s.pprof_gz)}],
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({"series": series, "normalized": false}))
        .unwrap_or_default()
}

/// Pyroscope's `push.v1.PushRequest`: `series` (1) of `RawProfileSeries`: `labels` (1) of
/// `types.v1.LabelPair` (name 1, value 2) and `samples` (2) of `RawSample` (raw_profile 1, ID 2).
pub fn pyroscope_body(w: &Window) -> Vec<u8> {
    let mut req = Msg::default();
    for (i, s) in w.series.iter().enumerate() {
        let mut series = Msg::default();
        for (name, value) in series_labels(s.name, &s.labels, true) {
            let mut pair = Msg::default();
            pair.bytes(1, name.as_bytes());
            pair.bytes(2, value.as_bytes());
            series.msg(1, pair);
        }
        let mut sample = Msg::default();
        sample.bytes(1, &s.pprof_gz);
        sample.bytes(
            2,
            format!("{:016x}-{i}", s.start_ns ^ u64::from(std::process::id())).as_bytes(),
        );
        series.msg(2, sample);
        req.msg(1, series);
    }
    req.0
}

/// The query of Pyroscope's ingest endpoint for one series.
pub fn ingest_query(s: &super::Series) -> String {
    let service = s
        .labels
        .iter()
        .find(|(n, _)| n == "service_name")
        .map_or("unknown", |(_, v)| v.as_str());
    let others: Vec<String> = s
        .labels
        .iter()
        .filter(|(n, _)| n != "service_name")
        .map(|(n, v)| format!("{n}={}", v.replace([',', '}', '{', '='], "_")))
        .collect();
    let name = format!("{service}{{{}}}", others.join(","));
    format!(
        "name={}&from={}&until={}&format=pprof&spyName=stallscope",
        percent_encode(&name),
        s.start_ns / 1_000_000_000,
        s.end_ns.div_ceil(1_000_000_000)
    )
}

/// Pushes one window; on failure, why (the first failure when there are several requests).
pub fn send(t: &Target, w: &Window) -> Result<(), String> {
    if w.series.is_empty() {
        return Ok(());
    }
    let deadline = Instant::now() + t.timeout;
    match t.engine {
        Engine::Parca => post(t, &t.url, "application/json", &parca_body(w), deadline),
        Engine::Pyroscope => post(t, &t.url, "application/proto", &pyroscope_body(w), deadline),
        Engine::PyroscopeIngest => {
            for s in &w.series {
                let url = format!("{}?{}", t.url, ingest_query(s));
                post(t, &url, "application/octet-stream", &s.pprof_gz, deadline)?;
            }
            Ok(())
        }
    }
}

fn post(
    t: &Target,
    url: &str,
    content_type: &str,
    body: &[u8],
    deadline: Instant,
) -> Result<(), String> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(format!("no answer within {:?}", t.timeout));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(left.max(Duration::from_millis(1))))
        .http_status_as_error(false)
        .user_agent(concat!("stallscope/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut req = agent
        .post(url)
        .content_type(content_type)
        .header("Connect-Protocol-Version", "1");
    if let Some((user, password)) = &t.basic {
        req = req.header(
            "Authorization",
            format!("Basic {}", base64(format!("{user}:{password}").as_bytes())),
        );
    }
    if let Some(token) = &t.token {
        req = req.header("Authorization", format!("Bearer {token}"));
    }
    if let Some(tenant) = &t.tenant {
        req = req.header("X-Scope-OrgID", tenant.as_str());
    }
    let mut resp = req.send(body).map_err(|e| match e {
        ureq::Error::Timeout(_) => format!("no answer within {:?}", t.timeout),
        e => e.to_string(),
    })?;
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    let text = resp
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .unwrap_or_default();
    let text: String = text.trim().chars().take(300).collect();
    Err(format!("the server answered {status}: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_as_rfc4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn the_url_names_the_engine_and_carries_credentials() {
        let e = parse_url("https://u%40x:p@h:4040/push.v1.PusherService/Push", None).unwrap();
        assert_eq!(e.engine, Engine::Pyroscope);
        assert_eq!(e.url, "https://h:4040/push.v1.PusherService/Push");
        assert_eq!(e.basic, Some(("u@x".into(), "p".into())));
        let e = parse_url("http://h:7070", Some(Engine::Parca)).unwrap();
        assert_eq!(
            (e.engine, e.url.as_str(), e.basic),
            (Engine::Parca, "http://h:7070/api/profiles/writeraw", None)
        );
        let e = parse_url("http://h/pyro/", Some(Engine::PyroscopeIngest)).unwrap();
        assert_eq!(
            (e.engine, e.url.as_str()),
            (Engine::PyroscopeIngest, "http://h/pyro/ingest")
        );
        assert!(parse_url("http://h:7070/", None).is_err());
        assert!(parse_url("ftp://h/ingest", None).is_err());
        assert!(parse_url("http:///ingest", None).is_err());
    }
}
