//! `--push`: what reaches a profile server, and that a server that is down, slow, refusing or
//! stopped mid-run leaves the program alone. A small HTTP server in the test takes the requests
//! (it answers as told: accepted, an error, not for minutes, or once and then no more);
//! Pyroscope's push body is decoded with the types Grafana generates from its published protocol
//! definitions (tests/pyroscope_push, Go), and each profile in it with pprof's own parser. No
//! timing is asserted: a run that the server held up would pass RUN_TIMEOUT and fail as hung.

mod common;

use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Accept,
    Refuse,
    /// Reads the request, then answers nothing for minutes.
    Hang,
    /// Accepts the first request, then stops: every later connection is closed unread. The
    /// port stays held: tests run side by side, and a port let go can be given to another
    /// test's server, which would then take this one's windows.
    StopAfterOne,
}

#[derive(Debug, Clone)]
struct Request {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An HTTP/1.1 server on a free loopback port, keeping every request it reads.
struct Server {
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    fn start(answer: Answer) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let kept = requests.clone();
        std::thread::spawn(move || {
            let mut stopped = false;
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if answer == Answer::StopAfterOne {
                    // One request answered on this thread; every later connection is closed
                    // as soon as it comes.
                    if !stopped {
                        serve(stream, answer, &kept);
                        stopped = true;
                    }
                    continue;
                }
                let kept = kept.clone();
                std::thread::spawn(move || serve(stream, answer, &kept));
            }
        });
        Server { port, requests }
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, answer: Answer, kept: &Mutex<Vec<Request>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((n, v)) = h.split_once(':') {
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
        }
        let length: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        kept.lock().unwrap().push(Request {
            path,
            headers,
            body,
        });
        let mut w = &stream;
        match answer {
            Answer::StopAfterOne => {
                let _ = w.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                );
                return;
            }
            Answer::Accept => {
                let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
            }
            Answer::Refuse => {
                let _ = w.write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 9\r\n\r\nno store\n",
                );
            }
            Answer::Hang => {
                std::thread::sleep(Duration::from_secs(300));
                return;
            }
        }
    }
}

/// A TCP socket bound to a free loopback port that never listens (connections to it are
/// refused), and the port.
fn bound_not_listening() -> (std::os::fd::OwnedFd, u16) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns; the address structure is
    // initialised before use and its size passed with it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let owned = std::os::fd::OwnedFd::from_raw_fd(fd);
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let rc = libc::bind(fd, (&raw const addr).cast(), len);
        assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
        let mut bound: libc::sockaddr_in = std::mem::zeroed();
        let mut blen = len;
        let rc = libc::getsockname(fd, (&raw mut bound).cast(), &mut blen);
        assert_eq!(rc, 0, "getsockname: {}", std::io::Error::last_os_error());
        (owned, u16::from_be(bound.sin_port))
    }
}

/// `stallscope ARGS EXE ARG` started with its output piped, once the program (fleet.c) said
/// "ready": the supervisor, its output past that line, and the program's pid (its child).
fn run_until_ready(
    dir: &Path,
    args: &[&str],
    exe: &Path,
    arg: &str,
) -> (
    std::process::Child,
    BufReader<std::process::ChildStdout>,
    u32,
) {
    let mut child = Command::new(stallscope())
        .args(args)
        .arg(exe)
        .arg(arg)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    let pid = std::fs::read_to_string(format!("/proc/{}/task/{}/children", child.id(), child.id()))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse::<u32>()
        .unwrap();
    (child, stdout, pid)
}

fn build(dir: &Path) -> PathBuf {
    compile_file(dir, &test_source("push_programs", "fleet.c"), &["-O1"])
}

/// The Go program that decodes a push body, built once per test binary (None under the
/// missing-tool policy when Go is missing).
fn decoder() -> Option<PathBuf> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let go = go()?;
    let mut built = BUILT.lock().unwrap();
    if let Some(p) = &*built {
        return Some(p.clone());
    }
    let out = repo().join("target").join("pyroscope_push_decode");
    let status = Command::new(go)
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(repo_file("tests/pyroscope_push"))
        .status()
        .expect("running go build");
    assert!(status.success(), "building tests/pyroscope_push failed");
    *built = Some(out.clone());
    Some(out)
}

fn decode(decoder: &Path, body: &[u8]) -> Value {
    let mut child = Command::new(decoder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the push body does not decode as push.v1.PushRequest: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn series_named<'a>(decoded: &'a Value, name: &str) -> &'a Value {
    decoded
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["labels"]["__name__"] == name)
        .unwrap_or_else(|| panic!("no {name} series in {decoded}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_profile_pushed_to_pyroscope_decodes_with_its_published_types() {
    let Some(decoder) = decoder() else { return };
    let dir = TempDir::new("push-pyroscope");
    let exe = build(&dir);
    let prof = dir.join("fleet.prof");
    let out = stallscope_run(
        &dir,
        &["-q", "-o", prof.to_str().unwrap()],
        &[&exe.to_string_lossy(), "40"],
    );
    assert_eq!(exit_code(&out), 3, "{}", describe(&out));
    let server = Server::start(Answer::Accept);
    let url = format!(
        "http://pusher:s%3Acret@127.0.0.1:{}/push.v1.PusherService/Push",
        server.port
    );
    let out = Command::new(stallscope())
        .args([
            "export",
            "--push",
            &url,
            "--tenant",
            "team-a",
            "--label",
            "region=eu",
        ])
        .arg(&prof)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one push for the profile");
    let r = &requests[0];
    assert_eq!(r.path, "/push.v1.PusherService/Push");
    assert_eq!(r.header("content-type"), Some("application/proto"));
    // base64("pusher:s:cret")
    assert_eq!(
        r.header("authorization"),
        Some("Basic cHVzaGVyOnM6Y3JldA==")
    );
    assert_eq!(r.header("x-scope-orgid"), Some("team-a"));
    let decoded = decode(&decoder, &r.body);
    let expect: &[(&str, &[&str])] = &[
        ("process_cpu", &["samples/count", "cpu/nanoseconds"]),
        ("wall", &["wall/nanoseconds"]),
        ("memory", &["alloc_objects/count", "alloc_space/bytes"]),
        ("mutex", &["contentions/count", "delay/nanoseconds"]),
    ];
    let report = report_json(&prof);
    let pid = num(&report, &["pid"]);
    let mut ids = finding_ids(&report);
    ids.sort();
    ids.dedup();
    for (name, types) in expect {
        let s = series_named(&decoded, name);
        let labels = &s["labels"];
        assert_eq!(labels["service_name"], "fleet", "{s}");
        assert_eq!(labels["__delta__"], "false", "{s}");
        assert_eq!(labels["region"], "eu", "{s}");
        assert_eq!(labels["pid"], pid.to_string(), "{s}");
        // The findings that fired go with every profile: their ids as a label, their titles as
        // the profile's comments.
        assert_eq!(
            labels["findings"].as_str().unwrap_or(""),
            ids.join(","),
            "{name}: the report's findings"
        );
        let comments = strings(&s["samples"][0]["comments"]);
        for id in &ids {
            assert!(
                comments.iter().any(|c| c.starts_with(&format!("{id}: "))),
                "{name}: {id} is not among the comments {comments:?}"
            );
        }
        assert!(
            labels["host"].as_str().is_some_and(|h| !h.is_empty()),
            "{s}"
        );
        let p = &s["samples"][0];
        assert_eq!(strings(&p["sample_types"]), *types, "{name}");
        assert!(p["samples"].as_u64().unwrap() > 0, "{name}: {p}");
        assert_eq!(
            p["locations_unmapped"], 0,
            "{name}: every location has a mapping"
        );
        assert!(
            p["totals"]
                .as_array()
                .unwrap()
                .iter()
                .all(|v| v.as_i64().unwrap() > 0),
            "{name}: {p}"
        );
    }
    let cpu = &series_named(&decoded, "process_cpu")["samples"][0];
    assert_eq!(cpu["top_leaf"], "spin_hot", "{cpu}");
    let wall = &series_named(&decoded, "wall")["samples"][0];
    assert!(
        strings(&wall["label_keys"]).contains(&"state".to_string()),
        "{wall}"
    );
    let mutex = &series_named(&decoded, "mutex")["samples"][0];
    assert!(
        strings(&mutex["label_values"]["lock"])
            .iter()
            .any(|l| l.starts_with("pthread mutex")),
        "the lock's name labels its waits: {mutex}"
    );
}

/// The body of a Parca WriteRaw request: its series' labels.
fn parca_series(r: &Request) -> Vec<Value> {
    let body: Value = serde_json::from_slice(&r.body).expect("a JSON WriteRaw request");
    body["series"].as_array().unwrap().clone()
}

fn label(series: &Value, name: &str) -> Option<String> {
    series["labels"]["labels"]
        .as_array()?
        .iter()
        .find(|l| l["name"] == name)
        .and_then(|l| l["value"].as_str().map(String::from))
}

#[test]
fn run_pushes_a_window_as_each_closes_and_a_failing_server_changes_nothing() {
    let dir = TempDir::new("push-run");
    let exe = build(&dir);
    let exe = exe.to_string_lossy().into_owned();
    let plain = plain_run(&dir, &[&exe, "60"], |_| {});
    assert_eq!(exit_code(&plain), 3, "{}", describe(&plain));

    let accept = Server::start(Answer::Accept);
    let refuse = Server::start(Answer::Refuse);
    let hang = Server::start(Answer::Hang);
    let stops = Server::start(Answer::StopAfterOne);
    // A port nothing listens on: the server is down. The socket is bound and never listens, so
    // a connection is refused and the port is not given to another test's server meanwhile.
    let (_down_socket, down) = bound_not_listening();
    for (server, port) in [
        (Some(&accept), accept.port),
        (Some(&refuse), refuse.port),
        (Some(&hang), hang.port),
        (Some(&stops), stops.port),
        (None, down),
    ] {
        let url = format!("http://127.0.0.1:{port}/api/profiles/writeraw");
        let out = stallscope_run(
            &dir,
            &[
                "--push",
                &url,
                "--every",
                "400ms",
                "--push-timeout",
                "2",
                "--label",
                "team=core",
            ],
            &[&exe, "60"],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.stdout, plain.stdout,
            "{url}: the program's output changed: {err}"
        );
        assert_eq!(exit_code(&out), 3, "{url}: {err}");
        let requests = server.map(|s| s.requests()).unwrap_or_default();
        if server.is_some_and(|s| std::ptr::eq(s, &accept)) {
            assert!(
                requests.len() >= 2,
                "a run of over a second in windows of 400 ms pushed {} windows: {err}",
                requests.len()
            );
            assert!(err.contains("windows pushed"), "{err}");
            for r in &requests {
                assert_eq!(r.path, "/api/profiles/writeraw");
                let series = parca_series(r);
                let names: Vec<String> =
                    series.iter().filter_map(|s| label(s, "__name__")).collect();
                assert!(names.contains(&"process_cpu".to_string()), "{names:?}");
                for s in &series {
                    assert_eq!(label(s, "service_name").as_deref(), Some("fleet"));
                    assert_eq!(label(s, "team").as_deref(), Some("core"));
                }
            }
            let windows: std::collections::BTreeSet<String> = requests
                .iter()
                .flat_map(parca_series)
                .filter_map(|s| s["samples"][0]["rawProfile"].as_str().map(String::from))
                .collect();
            assert!(windows.len() >= 2, "each window is a profile of its own");
        } else {
            if server.is_some_and(|s| std::ptr::eq(s, &stops)) {
                assert_eq!(requests.len(), 1, "{err}");
                assert!(
                    err.contains(" 1 window pushed"),
                    "the window pushed before the server stopped is counted: {err}"
                );
            }
            assert!(
                err.contains("lost"),
                "{url}: the lost windows are counted and reported: {err}"
            );
            assert_eq!(
                err.matches("failed").count(),
                1,
                "{url}: the failure is reported once: {err}"
            );
        }
    }
    assert!(
        !std::fs::read_dir(&*dir).unwrap().any(|e| e
            .unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "prof")),
        "run --push writes no profile file"
    );
}

#[test]
fn attach_pushes_windows_of_a_paused_process() {
    let dir = TempDir::new("push-attach");
    let exe = build(&dir);
    let server = Server::start(Answer::Accept);
    let (mut child, mut stdout, pid) =
        run_until_ready(&dir, &["run", "-q", "--paused", "--"], &exe, "100");
    let url = format!("http://127.0.0.1:{}/ingest", server.port);
    let token = dir.join("token");
    std::fs::write(&token, "s3cr3t-token\n").unwrap();
    let mut c = Command::new(stallscope());
    c.args([
        "attach",
        "--push",
        &url,
        "--every",
        "300ms",
        "--duration",
        "1.5",
        "--service-name",
        "svc",
        "--tenant",
        "ops",
        "--token-file",
    ])
    .arg(&token)
    .arg(pid.to_string());
    let out = output_within(c, RUN_TIMEOUT);
    assert!(out.status.success(), "{}", describe(&out));
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    assert!(rest.starts_with("total "), "{rest}");
    let requests = server.requests();
    let cpu: Vec<&Request> = requests
        .iter()
        .filter(|r| r.path.contains("format=pprof") && r.path.starts_with("/ingest?name=svc%7B"))
        .collect();
    assert!(
        cpu.len() >= 2,
        "windows of 300 ms for 1.5 s went to /ingest: {:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert!(
        cpu.iter().all(|r| r.body.starts_with(&[0x1f, 0x8b])),
        "each body is a gzipped pprof"
    );
    for r in &cpu {
        assert_eq!(r.header("authorization"), Some("Bearer s3cr3t-token"));
        assert_eq!(r.header("x-scope-orgid"), Some("ops"));
    }
}

/// Standard base64 (Parca's rawProfile), for the test's own reading of a pushed profile.
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// A Parca series' profile, unzipped (a pprof: its string table holds the function names).
fn raw_profile(series: &Value) -> Vec<u8> {
    use std::io::Read as _;
    let zipped = base64(series["samples"][0]["rawProfile"].as_str().unwrap_or(""));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&zipped[..])
        .read_to_end(&mut out)
        .expect("a gzipped profile");
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn run_push_records_the_processes_a_server_forks() {
    let dir = TempDir::new("push-forks");
    let exe = compile_file(&dir, &test_source("push_programs", "forks.c"), &["-O1"]);
    let server = Server::start(Answer::Accept);
    let url = format!("http://127.0.0.1:{}/api/profiles/writeraw", server.port);
    let exe = exe.to_string_lossy().into_owned();
    let out = stallscope_run(&dir, &["--push", &url, "--every", "300ms"], &[&exe, "3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    let workers: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("worker ").map(String::from))
        .collect();
    assert_eq!(workers.len(), 2, "{}", describe(&out));
    let series: Vec<Value> = server.requests().iter().flat_map(parca_series).collect();
    let pids: std::collections::BTreeSet<String> =
        series.iter().filter_map(|s| label(s, "pid")).collect();
    for w in &workers {
        // Each worker's windows: its own pid label, its CPU in its own function.
        let cpu: Vec<&Value> = series
            .iter()
            .filter(|s| label(s, "pid").as_deref() == Some(w.as_str()))
            .filter(|s| label(s, "__name__").as_deref() == Some("process_cpu"))
            .collect();
        assert!(
            cpu.len() >= 2,
            "worker {w}: {} CPU profiles pushed over 3 s in windows of 300 ms (pids pushed: {pids:?}): {err}",
            cpu.len()
        );
        assert!(
            cpu.iter().any(|s| contains(&raw_profile(s), "worker_spin")),
            "worker {w}'s CPU profiles name the function it burns its CPU in"
        );
    }
    assert!(err.contains("windows pushed"), "{err}");
}

/// The resident anonymous memory of a process, in kB.
fn anon_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_interposers_memory_stays_bounded_however_many_windows() {
    let dir = TempDir::new("push-memory");
    let exe = build(&dir);
    let server = Server::start(Answer::Accept);
    let url = format!("http://127.0.0.1:{}/api/profiles/writeraw", server.port);
    let (mut child, _stdout, pid) = run_until_ready(
        &dir,
        &["run", "-q", "--push", &url, "--every", "100ms", "--"],
        &exe,
        "100000",
    );
    // The program's memory as the windows go by, counted by the windows pushed (not by time: a
    // slow machine has fewer windows in a second, and each window is what may cost memory).
    let at_window = |n: usize| {
        let started = std::time::Instant::now();
        while server.requests().len() < n {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "only {} windows pushed",
                server.requests().len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        anon_kb(pid)
    };
    let (early, middle, late) = (at_window(5), at_window(20), at_window(35));
    // SAFETY: a signal to the program this test started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = child.wait();
    assert!(
        early > 0 && middle > 0 && late > 0,
        "{early} {middle} {late}"
    );
    // A window that kept its threads' nodes (about 25 kB each, five threads) would grow the
    // program by about 2 MB every 15 windows. Reused nodes leave the later windows no growth
    // beyond noise.
    let first = middle.saturating_sub(early);
    let second = late.saturating_sub(middle);
    assert!(
        second <= (first / 2).max(512),
        "the program grew by {first} kB over windows 5-20 and {second} kB over windows 20-35 (RssAnon {early}, {middle}, {late} kB)"
    );
}
