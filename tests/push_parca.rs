//! `run --push` into a real Parca server (v0.28.0, built by .ci/run into PARCA_BUILD_DIR, by
//! default /opt/parca): the windows of a running program are pushed through Parca's WriteRaw
//! and queried back through its query API: the profile types (CPU, allocations, lock waits,
//! wall time by state), the labels, and the top function of the CPU and lock-wait profiles.

mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn parca() -> Option<PathBuf> {
    let dir = std::env::var_os("PARCA_BUILD_DIR").unwrap_or_else(|| "/opt/parca".into());
    let exe = PathBuf::from(dir).join("parca");
    have(
        &format!("Parca v0.28.0 ({})", exe.display()),
        exe.is_file(),
        "bash .ci/run (it builds Parca from its Go module)",
    )
    .then_some(exe)
}

/// A Parca server on a free loopback port, stopped when dropped.
struct Parca {
    child: Child,
    base: String,
}

impl Drop for Parca {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Parca {
    fn start(exe: &PathBuf, dir: &TempDir) -> Parca {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let store = dir.join("store");
        std::fs::create_dir_all(&store).unwrap();
        let config = dir.join("parca.yaml");
        std::fs::write(
            &config,
            format!(
                "object_storage:\n  bucket:\n    type: \"FILESYSTEM\"\n    config:\n      directory: \"{}\"\n",
                store.display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("parca.log")).unwrap();
        let child = Command::new(exe)
            .arg(format!("--config-path={}", config.display()))
            .arg(format!("--http-address=127.0.0.1:{port}"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting parca");
        let p = Parca {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let started = Instant::now();
        while p.get("/api/profiles/types").is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "parca did not answer: {}",
                std::fs::read_to_string(dir.join("parca.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    fn get(&self, path_and_query: &str) -> Option<Value> {
        let mut resp = ureq::get(format!("{}{path_and_query}", self.base))
            .call()
            .ok()?;
        let text = resp.body_mut().read_to_string().ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The top table of the profiles matching QUERY over the last hour: (function, flat,
    /// cumulative), most flat first.
    fn top(&self, query: &str) -> Vec<(String, i64, i64)> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let rfc = |t: u64| {
            let out = Command::new("date")
                .args(["-u", "-d", &format!("@{t}"), "+%Y-%m-%dT%H:%M:%SZ"])
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        let q = format!(
            "/api/profiles/query?mode=MODE_MERGE&reportType=REPORT_TYPE_TOP&merge.query={}&merge.start={}&merge.end={}",
            encode(query),
            rfc(now - 3600),
            rfc(now + 60)
        );
        let v = self
            .get(&q)
            .unwrap_or_else(|| panic!("parca answered nothing to {q}"));
        let mut rows: Vec<(String, i64, i64)> = v["top"]["list"]
            .as_array()
            .unwrap_or_else(|| panic!("no top list in {v}"))
            .iter()
            .map(|row| {
                let n = |k: &str| {
                    row[k]
                        .as_str()
                        .and_then(|s| s.parse().ok())
                        .or_else(|| row[k].as_i64())
                        .unwrap_or(0)
                };
                (
                    row["meta"]["function"]["name"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                    n("flat"),
                    n("cumulative"),
                )
            })
            .collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        rows
    }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~:".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[test]
fn windows_of_a_running_program_are_queried_back_from_parca() {
    let Some(exe) = parca() else { return };
    let dir = TempDir::new("push-parca");
    let server = Parca::start(&exe, &dir);
    let program = compile_file(&dir, &test_source("push_programs", "fleet.c"), &["-O1"]);
    let url = format!("{}/api/profiles/writeraw", server.base);
    let out = stallscope_run(
        &dir,
        &["--push", &url, "--every", "1s", "--label", "team=core"],
        &[program.to_str().unwrap(), "80"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(exit_code(&out), 3, "{}", describe(&out));
    assert!(
        err.contains("windows pushed") && !err.contains("lost"),
        "{err}"
    );

    let types = server.get("/api/profiles/types").unwrap();
    let listed: Vec<(String, String, String)> = types["types"]
        .as_array()
        .unwrap_or_else(|| panic!("{types}"))
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or("").to_string();
            (s("name"), s("sampleType"), s("sampleUnit"))
        })
        .collect();
    for (name, kind, unit) in [
        ("process_cpu", "cpu", "nanoseconds"),
        ("process_cpu", "samples", "count"),
        ("wall", "wall", "nanoseconds"),
        ("memory", "alloc_objects", "count"),
        ("memory", "alloc_space", "bytes"),
        ("mutex", "contentions", "count"),
        ("mutex", "delay", "nanoseconds"),
    ] {
        assert!(
            listed.contains(&(name.into(), kind.into(), unit.into())),
            "{name}:{kind}:{unit} is not among Parca's profile types: {listed:?}"
        );
    }
    let values = |label: &str| -> Vec<String> {
        let v = server
            .get(&format!("/api/profiles/labels/{label}/values"))
            .unwrap();
        v["labelValues"]
            .as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .iter()
            .filter_map(|s| s.as_str().map(String::from))
            .collect()
    };
    assert_eq!(values("service_name"), ["fleet"]);
    assert_eq!(values("team"), ["core"]);
    assert!(!values("host").is_empty());

    let cpu =
        server.top("process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{service_name=\"fleet\"}");
    assert_eq!(
        cpu.first().map(|r| r.0.as_str()),
        Some("spin_hot"),
        "the CPU profile's top function: {cpu:?}"
    );
    let delay =
        server.top("mutex:delay:nanoseconds:contentions:count:delta{service_name=\"fleet\"}");
    assert_eq!(
        delay.first().map(|r| r.0.as_str()),
        Some("mutex wait"),
        "the lock-wait profile ends in the wait: {delay:?}"
    );
    let total = delay.first().map_or(0, |r| r.1);
    let hold = delay.iter().find(|r| r.0 == "hold_lock").map_or(0, |r| r.2);
    assert!(
        hold * 2 > total,
        "the waits are taken in hold_lock ({hold} of {total} ns): {delay:?}"
    );
}
