//! A module's separate debug file by build id: under the debug root
//! (`/usr/lib/debug/.build-id/xx/rest.debug`, what libc6-dbg installs), else, when
//! `DEBUGINFOD_URLS` is set, fetched from those debuginfod servers (`GET
//! $URL/buildid/<hex>/debuginfo`) into elfutils' client cache, so that a file fetched by gdb or
//! eu-stack serves stallscope too and the other way round: `$DEBUGINFOD_CACHE_PATH`, else
//! `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`, as
//! `<cache>/<hex>/debuginfo`.
//!
//! `http://` servers are asked with a small HTTP/1.0 client over `std::net`; `https://` ones
//! (the public servers) through `curl` when it is installed. `DEBUGINFOD_TIMEOUT` (seconds,
//! elfutils' default 90) bounds each request. A build id is asked for at most once per process,
//! and a miss is remembered for 10 minutes as an empty file in the cache, as elfutils does.

use std::collections::HashMap;
use std::io::{IsTerminal, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The debug file of the module with `build_id`: the local one, else one fetched through
/// debuginfod (see the module's comment); None when neither exists.
pub fn debug_file(build_id: &[u8], debug_root: &Path) -> Option<PathBuf> {
    let local = local_path(build_id, debug_root)?;
    if local.is_file() {
        return Some(local);
    }
    let id = hex(build_id);
    let urls = std::env::var("DEBUGINFOD_URLS").ok()?;
    static ASKED: OnceLock<Mutex<HashMap<String, Option<PathBuf>>>> = OnceLock::new();
    let asked = ASKED.get_or_init(Default::default);
    if let Some(known) = asked.lock().ok()?.get(&id) {
        return known.clone();
    }
    let found = fetch(&id, &urls, &cache_dir()?);
    asked.lock().ok()?.insert(id, found.clone());
    found
}

/// Where the debug file of the module with `build_id` is under `debug_root`, whether or not it
/// is there: `<root>/.build-id/ab/cdef....debug`.
pub fn local_path(build_id: &[u8], debug_root: &Path) -> Option<PathBuf> {
    if build_id.len() < 2 {
        return None;
    }
    let id = hex(build_id);
    Some(
        debug_root
            .join(".build-id")
            .join(&id[..2])
            .join(format!("{}.debug", &id[2..])),
    )
}

/// elfutils' client cache directory.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(p) = var("DEBUGINFOD_CACHE_PATH") {
        return Some(PathBuf::from(p));
    }
    if let Some(p) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(p).join("debuginfod_client"));
    }
    Some(PathBuf::from(var("HOME")?).join(".cache/debuginfod_client"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cached file, else the first server's answer written into the cache.
fn fetch(id: &str, urls: &str, cache: &Path) -> Option<PathBuf> {
    let path = cache.join(id).join("debuginfo");
    if let Ok(m) = std::fs::metadata(&path) {
        if m.is_file() && m.len() > 0 {
            return Some(path);
        }
        // An empty file is a recent miss (elfutils' convention, `cache_miss_s`: 600 s).
        if m.modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age < MISS_KEPT)
        {
            return None;
        }
    }
    if std::io::stderr().is_terminal() {
        eprintln!("stallscope: asking debuginfod ({urls}) for the debug file of build id {id}");
    }
    let timeout = std::env::var("DEBUGINFOD_TIMEOUT")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .filter(|&t| t > 0)
        .unwrap_or(90);
    let timeout = Duration::from_secs(timeout);
    for url in urls.split_whitespace() {
        let url = format!("{}/buildid/{id}/debuginfo", url.trim_end_matches('/'));
        let body = if url.starts_with("http://") {
            http_get(&url, timeout, 3)
        } else if url.starts_with("https://") {
            curl_get(&url, timeout)
        } else {
            None
        };
        // An ELF file, not an error page.
        let Some(body) = body.filter(|b| b.starts_with(b"\x7fELF")) else {
            continue;
        };
        std::fs::create_dir_all(path.parent()?).ok()?;
        let partial = path.with_extension(format!("stallscope-{}", std::process::id()));
        std::fs::write(&partial, &body).ok()?;
        std::fs::rename(&partial, &path).ok()?;
        return Some(path);
    }
    // Remember the miss, so that the next report does not ask again at once.
    if std::fs::create_dir_all(cache.join(id)).is_ok() {
        let _ = std::fs::write(&path, b"");
    }
    None
}

/// How long a miss is remembered.
const MISS_KEPT: Duration = Duration::from_secs(600);

/// An `http://host[:port]/path` URL's body when it answers 200 (following up to `redirects`
/// redirections to other `http://` URLs).
fn http_get(url: &str, timeout: Duration, redirects: u32) -> Option<Vec<u8>> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let host_port = if authority.rsplit_once(':').is_some_and(|(_, p)| {
        !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) && !authority.ends_with(']')
    }) {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = host_port.to_socket_addrs().ok()?.next()?;
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout.min(Duration::from_secs(10))).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream.set_write_timeout(Some(timeout)).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {authority}\r\nUser-Agent: stallscope/{}\r\nAccept: */*\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    )
    .ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok()?;
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let mut lines = head.lines();
    let status: u32 = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    match status {
        200 => {
            let mut body = answer.split_off(end + 4);
            if let Some(n) = header("Content-Length").and_then(|n| n.parse::<usize>().ok()) {
                if body.len() < n {
                    return None;
                }
                body.truncate(n);
            }
            Some(body)
        }
        301 | 302 | 303 | 307 | 308 if redirects > 0 => {
            let to = header("Location")?;
            if to.starts_with("http://") {
                http_get(&to, timeout, redirects - 1)
            } else if to.starts_with("https://") {
                curl_get(&to, timeout)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// An `https://` URL's body through curl (absent: None).
fn curl_get(url: &str, timeout: Duration) -> Option<Vec<u8>> {
    let out = std::process::Command::new("curl")
        .args(["-fsSL", "--max-time"])
        .arg(timeout.as_secs().to_string())
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-request HTTP server answering `answer`; the request it got comes back.
    fn serve_once(answer: Vec<u8>) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
            }
            s.write_all(&answer).unwrap();
            String::from_utf8_lossy(&request).into_owned()
        });
        (url, handle)
    }

    #[test]
    fn fetches_into_the_elfutils_cache_and_reads_it_from_there() {
        let body = b"\x7fELF pretend debug file".to_vec();
        let mut answer =
            format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        answer.extend_from_slice(&body);
        let (url, server) = serve_once(answer);
        let cache = std::env::temp_dir().join(format!("ss-debuginfod-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        let got = fetch("abcdef0123", &url, &cache).unwrap();
        assert_eq!(got, cache.join("abcdef0123/debuginfo"));
        assert_eq!(std::fs::read(&got).unwrap(), body);
        let request = server.join().unwrap();
        assert!(
            request.starts_with("GET /buildid/abcdef0123/debuginfo HTTP/1.0\r\n"),
            "{request}"
        );
        // The second time from the cache: no server listens at this URL any more.
        assert_eq!(fetch("abcdef0123", &url, &cache), Some(got));
        let _ = std::fs::remove_dir_all(&cache);
    }

    #[test]
    fn a_missing_file_or_an_error_page_is_none() {
        let cache = std::env::temp_dir().join(format!("ss-debuginfod-404-{}", std::process::id()));
        let (url, server) = serve_once(b"HTTP/1.0 404 Not Found\r\n\r\nnot found".to_vec());
        assert_eq!(fetch("0011", &url, &cache), None);
        server.join().unwrap();
        let (url, server) = serve_once(b"HTTP/1.0 200 OK\r\n\r\n<html>".to_vec());
        assert_eq!(fetch("0022", &url, &cache), None);
        server.join().unwrap();
        // The miss is remembered: no server listens any more, and it is not asked.
        assert_eq!(
            std::fs::metadata(cache.join("0011/debuginfo"))
                .unwrap()
                .len(),
            0
        );
        assert_eq!(fetch("0011", &url, &cache), None);
        let _ = std::fs::remove_dir_all(&cache);
    }
}
