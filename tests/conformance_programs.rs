//! Conformance, real programs: multithreaded programs from the machine run plainly and
//! under `stallscope run` in the same conditions and must not be able to tell (tests/harness):
//! xz and sort with threads, git, make -j2 with gcc, sqlite3 with sorter threads, a JVM (threads,
//! and its shutdown hooks on Ctrl-C), node with worker threads, and two servers (redis, memcached)
//! started on a loopback port, driven and stopped by the test. No assertion on time.

mod common;
mod harness;

use common::*;
use harness::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Deterministic text: `lines` lines of words drawn by a fixed generator.
fn text_data(lines: usize) -> Vec<u8> {
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    ];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(lines * 40);
    for i in 0..lines {
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(words[(x % 10) as usize].as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(format!("{} {}\n", x % 100_000, i % 977).as_bytes());
    }
    out
}

#[test]
fn xz_with_two_threads() {
    if !have_tool("xz", &["--version"], "xz-utils") {
        return;
    }
    let dir = TempDir::new("xz");
    let data = text_data(300_000);
    // Small blocks, so that both threads get work.
    let pair = assert_invisible(
        &Launch::new(&["xz", "-T2", "--block-size=1MiB", "-6", "-c"], dir.path()).stdin(&data),
    );
    assert!(pair.plain.status.success() && pair.plain.stdout.len() < data.len());
    let compressed = pair.plain.stdout.clone();
    let pair =
        assert_invisible(&Launch::new(&["xz", "-T2", "-d", "-c"], dir.path()).stdin(&compressed));
    assert!(pair.plain.stdout == data, "round trip");
    // A corrupt stream: same error, same status.
    let mut bad = compressed;
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    let pair = assert_invisible(&Launch::new(&["xz", "-T2", "-d", "-c"], dir.path()).stdin(&bad));
    assert_ne!(pair.plain.status.code(), Some(0));
}

#[test]
fn sort_in_parallel_with_temporary_files() {
    let dir = TempDir::new("sort");
    let data = text_data(200_000);
    std::fs::write(dir.join("in.txt"), &data).unwrap();
    let pair = assert_invisible(
        &Launch::new(
            &[
                "sort",
                "--parallel=2",
                "-S",
                "1M",
                "-k5,5n",
                "-k1,1",
                "in.txt",
            ],
            dir.path(),
        )
        .env("LC_ALL", "C")
        .env("TMPDIR", dir.path()),
    );
    assert_eq!(pair.plain.stdout.len(), data.len());
}

fn git_env(launch: Launch, home: &Path) -> Launch {
    launch
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Ada Tester")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_AUTHOR_DATE", "2024-01-02T03:04:05+00:00")
        .env("GIT_COMMITTER_NAME", "Ada Tester")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_DATE", "2024-01-02T03:04:05+00:00")
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
}

#[test]
fn git_repack_and_grep_with_threads() {
    if !have_tool("git", &["--version"], "git") {
        return;
    }
    let home = TempDir::new("git-conf-home");
    // One repository per run, built the same way, so that each run starts from the same state.
    let repos = [TempDir::new("git-conf-a"), TempDir::new("git-conf-b")];
    for repo in &repos {
        let run = |args: &[&str]| {
            let out = plain_run(repo.path(), args, |c| {
                c.env("HOME", home.path())
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("GIT_CONFIG_GLOBAL", "/dev/null")
                    .env("GIT_AUTHOR_NAME", "A")
                    .env("GIT_AUTHOR_EMAIL", "a@example.com")
                    .env("GIT_AUTHOR_DATE", "2024-01-02T03:04:05+00:00")
                    .env("GIT_COMMITTER_NAME", "A")
                    .env("GIT_COMMITTER_EMAIL", "a@example.com")
                    .env("GIT_COMMITTER_DATE", "2024-01-02T03:04:05+00:00");
            });
            assert!(out.status.success(), "{args:?}\n{}", describe(&out));
        };
        run(&["git", "init", "-q", "-b", "main"]);
        for n in 0..40 {
            std::fs::write(repo.join(&format!("file{n}.txt")), text_data(500 + n * 10)).unwrap();
            if n % 10 == 9 {
                run(&["git", "add", "."]);
                run(&["git", "commit", "-q", "-m", &format!("commit {n}")]);
            }
        }
    }
    let steps: [&[&str]; 4] = [
        &["git", "repack", "-a", "-d", "-q", "--threads=2"],
        &["git", "grep", "--threads=2", "-c", "foxtrot golf"],
        &["git", "log", "--stat", "--format=%H %s"],
        &["git", "fsck", "--no-progress"],
    ];
    for step in steps {
        let pair = run_both_in(&repos, step, home.path());
        assert_same(&pair);
        assert!(pair.plain.status.success(), "{}", pair.describe());
    }
}

/// The plain run in the first directory and the profiled run in the second.
fn run_both_in(dirs: &[TempDir; 2], argv: &[&str], home: &Path) -> Pair {
    run_both_with(
        &git_env(Launch::new(argv, dirs[0].path()), home),
        &git_env(Launch::new(argv, dirs[1].path()), home),
    )
}

const MAKEFILE: &str = "\
OBJS = main.o a.o b.o c.o d.o
prog: $(OBJS)
\t$(CC) -o $@ $(OBJS)
%.o: %.c
\t$(CC) -O1 -c -o $@ $<
clean:
\trm -f prog $(OBJS)
";

#[test]
fn make_j2_builds_the_same_program_and_leaves_one_profile() {
    if !have_tool("make", &["--version"], "make") {
        return;
    }
    if !have_tool("gcc", &["--version"], "gcc") {
        return;
    }
    let dirs = [TempDir::new("make-plain"), TempDir::new("make-prof")];
    for dir in &dirs {
        std::fs::write(dir.join("Makefile"), MAKEFILE).unwrap();
        let mut main = String::from("#include <stdio.h>\n");
        for f in ["a", "b", "c", "d"] {
            std::fs::write(
                dir.join(&format!("{f}.c")),
                format!("int {f}(int x) {{ return x * 3 + '{f}'; }}\n"),
            )
            .unwrap();
            main.push_str(&format!("int {f}(int);\n"));
        }
        main.push_str(
            "int main(void) { printf(\"%d\\n\", a(1) + b(2) + c(3) + d(4)); return 0; }\n",
        );
        std::fs::write(dir.join("main.c"), main).unwrap();
    }
    let plain = run_command_in(&dirs[0], &["make", "-j2", "CC=gcc"], false);
    let profiled = run_command_in(&dirs[1], &["make", "-j2", "CC=gcc"], true);
    assert_eq!(
        profiled.status.into_raw(),
        plain.status.into_raw(),
        "{}\n{}",
        plain.describe(),
        profiled.describe()
    );
    // With -j2 the order of the recipe lines differs from run to run: compare them as sets.
    let sorted = |b: &[u8]| {
        let mut lines: Vec<String> = String::from_utf8_lossy(b)
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(sorted(&profiled.stdout), sorted(&plain.stdout));
    assert_eq!(sorted(&profiled.stderr), sorted(&plain.stderr));
    assert!(
        std::fs::read(dirs[0].join("prog")).unwrap()
            == std::fs::read(dirs[1].join("prog")).unwrap(),
        "the same executable"
    );
    // One profile in the profiles directory, every other process in the run's directory.
    let profiles = dirs[1].join("profiles");
    assert_eq!(prof_files(&profiles).len(), 1, "one profile per run");
    let children = run_files(&profiles);
    assert!(
        children.len() >= 10,
        "make's compilers, assemblers and linker: {children:?}"
    );
}

/// Runs `argv` in `dir` plainly, or under `stallscope run -q` with the profile in `dir/profiles/`.
fn run_command_in(dir: &TempDir, argv: &[&str], profiled: bool) -> Outcome {
    let c = if profiled {
        let profiles = dir.join("profiles");
        std::fs::create_dir_all(&profiles).unwrap();
        profiled_command(&profiles.join("make.prof"), &[], argv, dir.path())
    } else {
        plain_command(argv, dir.path())
    };
    run_command(c, b"", Duration::from_secs(120))
}

#[test]
fn sqlite3_sorts_with_worker_threads() {
    if !have_tool("sqlite3", &["-version"], "sqlite3") {
        return;
    }
    let dirs = [TempDir::new("sqlite-conf-a"), TempDir::new("sqlite-conf-b")];
    let sql = "PRAGMA threads=2; PRAGMA cache_size=-512; \
        CREATE TABLE t(n INTEGER, s TEXT); \
        WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) \
        INSERT INTO t SELECT x, printf('%08d-%s', (x * 7919) % 200000, hex(x)) FROM c; \
        SELECT count(*), min(s), max(s) FROM (SELECT s FROM t ORDER BY s); \
        CREATE INDEX ts ON t(s); \
        SELECT n, s FROM t ORDER BY s LIMIT 3; \
        SELECT * FROM missing_table;";
    let pair = run_both_with(
        &Launch::new(&["sqlite3", "db.sqlite", sql], dirs[0].path()),
        &Launch::new(&["sqlite3", "db.sqlite", sql], dirs[1].path()),
    );
    assert_same(&pair);
    let outcomes = [pair.plain, pair.profiled];
    assert_ne!(
        outcomes[0].status.code(),
        Some(0),
        "the missing table is an error"
    );
}

const JAVA_MAIN: &str = r#"
import java.util.*;
import java.util.concurrent.*;

public class Main {
    public static void main(String[] args) throws Exception {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("shutdown hook ran")));
        if (args.length > 0 && args[0].equals("wait")) {
            System.out.println("ready");
            System.out.flush();
            Thread.sleep(30000);
            System.out.println("not interrupted");
            return;
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<Long>> results = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            final int seed = t;
            results.add(pool.submit(() -> {
                Map<String, Long> m = new HashMap<>();
                for (int i = 0; i < 200000; i++) {
                    m.merge("k" + ((i * 31 + seed) % 5000), (long) i * (seed + 1), Long::sum);
                }
                long sum = 0;
                for (long v : m.values()) sum += v % 1000003;
                return sum;
            }));
        }
        long total = 0;
        for (Future<Long> f : results) total += f.get();
        pool.shutdown();
        System.out.println("total " + total);
        System.exit(3);
    }
}
"#;

#[test]
fn jvm_with_a_thread_pool_and_shutdown_hooks() {
    if !have_tool("java", &["-version"], "default-jdk-headless") {
        return;
    }
    let dir = TempDir::new("jvm");
    std::fs::write(dir.join("Main.java"), JAVA_MAIN).unwrap();
    let pair = assert_invisible(
        &Launch::new(&["java", "-Xmx256m", "Main.java"], dir.path())
            .timeout(Duration::from_secs(120)),
    );
    assert_eq!(pair.plain.status.code(), Some(3), "{}", pair.describe());
    let out = String::from_utf8_lossy(&pair.plain.stdout);
    assert!(out.contains("shutdown hook ran"), "{out}");
}

#[test]
fn jvm_runs_its_shutdown_hooks_on_ctrl_c() {
    if !have_tool("java", &["-version"], "default-jdk-headless") {
        return;
    }
    let dir = TempDir::new("jvm-ctrl-c");
    std::fs::write(dir.join("Main.java"), JAVA_MAIN).unwrap();
    let argv = ["java", "-Xmx256m", "Main.java", "wait"];
    let limit = Duration::from_secs(120);
    let plain = run_in_terminal(
        plain_command(&argv, dir.path()),
        "ready\r\n",
        b"\x03",
        limit,
    );
    let profiled = run_in_terminal(
        profiled_command(&dir.join("p.prof"), &[], &argv, dir.path()),
        "ready\r\n",
        b"\x03",
        limit,
    );
    let shown = String::from_utf8_lossy(&plain.stdout);
    assert!(shown.contains("shutdown hook ran"), "{shown}");
    assert_eq!(
        profiled.status.into_raw(),
        plain.status.into_raw(),
        "{}\n{}",
        plain.describe(),
        profiled.describe()
    );
    assert_eq!(String::from_utf8_lossy(&profiled.stdout), shown);
}

const NODE_WORKERS: &str = r#"
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const crypto = require('crypto');
if (isMainThread) {
  const jobs = [0, 1, 2, 3].map((i) => new Promise((resolve, reject) => {
    const w = new Worker(__filename, { workerData: i });
    w.on('message', resolve);
    w.on('error', reject);
  }));
  Promise.all(jobs).then((results) => {
    for (const r of results) console.log(r);
    process.exitCode = 5;
  });
} else {
  const h = crypto.createHash('sha256');
  const m = new Map();
  for (let n = 0; n < 200000; n++) {
    const k = 'k' + ((n * 31 + workerData) % 3000);
    m.set(k, (m.get(k) || 0) + n * (workerData + 1));
    if (n % 1000 === 0) h.update(String(n * workerData));
  }
  let sum = 0;
  for (const v of m.values()) sum = (sum + v) % 1000003;
  parentPort.postMessage(`worker ${workerData}: ${sum} ${h.digest('hex').slice(0, 16)}`);
}
"#;

#[test]
fn node_with_worker_threads() {
    if !have_tool("node", &["--version"], "nodejs") {
        return;
    }
    let dir = TempDir::new("node");
    std::fs::write(dir.join("workers.js"), NODE_WORKERS).unwrap();
    let pair = assert_invisible(&Launch::new(&["node", "workers.js"], dir.path()));
    assert_eq!(pair.plain.status.code(), Some(5), "{}", pair.describe());
    assert_eq!(
        String::from_utf8_lossy(&pair.plain.stdout).lines().count(),
        4
    );
}

/// A free loopback port (bound then released: a server started right after gets it).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server started by a test: killed if the test fails before stopping it.
struct Server {
    child: Option<Child>,
    port: u16,
}

impl Server {
    fn start(argv: &[String], profile: Option<&Path>, dir: &Path, port: u16) -> Server {
        let mut c = match profile {
            Some(p) => profiled_command(p, &[], argv, dir),
            None => plain_command(argv, dir),
        };
        let child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {argv:?}: {e}"));
        let server = Server {
            child: Some(child),
            port,
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{argv:?} did not listen on port {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// Sends SIGTERM (to stallscope, which passes it on) and returns how the server ended.
    #[allow(clippy::zombie_processes)] // reaped by waitpid in wait_within
    fn stop(mut self) -> Outcome {
        let mut child = self.child.take().unwrap();
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut stdout)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut stderr)
            .unwrap();
        let (status, max_rss_kib) =
            wait_within(child.id() as i32, Duration::from_secs(30), "the server");
        Outcome {
            status,
            stdout,
            stderr,
            max_rss_kib,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_tree(child.id() as i32);
            let _ = child.wait();
        }
    }
}

/// Sends each request on one connection and reads one reply per request (`reply` reads it).
fn converse(
    port: u16,
    requests: &[Vec<u8>],
    reply: impl Fn(&mut BufReader<TcpStream>) -> String,
) -> Vec<String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    requests
        .iter()
        .map(|r| {
            writer.write_all(r).unwrap();
            reply(&mut reader)
        })
        .collect()
}

fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// One RESP reply, flattened to text.
fn resp_reply(r: &mut BufReader<TcpStream>) -> String {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let line = line.trim_end().to_string();
    match line.as_bytes().first() {
        Some(b'$') => {
            let n: i64 = line[1..].parse().unwrap();
            if n < 0 {
                return "(nil)".into();
            }
            let mut buf = vec![0u8; n as usize + 2];
            r.read_exact(&mut buf).unwrap();
            String::from_utf8_lossy(&buf[..n as usize]).into_owned()
        }
        Some(b'*') => {
            let n: i64 = line[1..].parse().unwrap();
            let items: Vec<String> = (0..n.max(0)).map(|_| resp_reply(r)).collect();
            format!("[{}]", items.join(","))
        }
        _ => line,
    }
}

fn redis_session(port: u16) -> Vec<String> {
    let mut requests = vec![resp(&["PING"])];
    for i in 0..200 {
        requests.push(resp(&["SET", &format!("key:{i}"), &format!("value {i}")]));
        requests.push(resp(&["INCRBY", "counter", &i.to_string()]));
        requests.push(resp(&["RPUSH", "list", &format!("item{}", i % 17)]));
    }
    requests.push(resp(&["GET", "key:123"]));
    requests.push(resp(&["GET", "missing"]));
    requests.push(resp(&["LRANGE", "list", "0", "5"]));
    requests.push(resp(&["DBSIZE"]));
    requests.push(resp(&["NOSUCHCOMMAND"]));
    converse(port, &requests, resp_reply)
}

#[test]
fn redis_server_on_a_loopback_port() {
    if !have_tool("redis-server", &["--version"], "redis-server") {
        return;
    }
    let dir = TempDir::new("redis");
    let mut transcripts = Vec::new();
    let mut endings = Vec::new();
    for profiled in [false, true] {
        let port = free_port();
        let argv: Vec<String> = [
            "redis-server",
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--io-threads",
            "2",
            "--io-threads-do-reads",
            "yes",
            "--dir",
            dir.path().to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let profile = dir.join("redis.prof");
        let server = Server::start(
            &argv,
            profiled.then_some(profile.as_path()),
            dir.path(),
            port,
        );
        transcripts.push(redis_session(server.port));
        endings.push(server.stop());
        if profiled {
            assert!(profile.is_file(), "redis was profiled");
        }
    }
    assert_eq!(transcripts[0], transcripts[1], "the same replies");
    assert_eq!(transcripts[0][0], "+PONG");
    assert_eq!(
        endings[1].status.into_raw(),
        endings[0].status.into_raw(),
        "the same ending on SIGTERM\n{}\n{}",
        endings[0].describe(),
        endings[1].describe()
    );
    assert_eq!(
        endings[0].status.code(),
        Some(0),
        "{}",
        endings[0].describe()
    );
    // Its log has dates and pids; what matters is that it shut down the same way.
    let log = String::from_utf8_lossy(&endings[1].stdout);
    assert!(log.contains("ready to exit"), "{log}");
    assert!(endings[1].stderr.is_empty(), "{}", endings[1].describe());
}

fn memcached_reply(r: &mut BufReader<TcpStream>) -> String {
    // A reply ends with a line that is not a VALUE line or data: END, STORED, a number, an error.
    let mut out = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let line = line.trim_end().to_string();
        let value = line.starts_with("VALUE ");
        out.push(line);
        if value {
            let mut data = String::new();
            r.read_line(&mut data).unwrap();
            out.push(data.trim_end().to_string());
            continue;
        }
        return out.join("|");
    }
}

#[test]
fn memcached_on_a_loopback_port() {
    if !have_tool("memcached", &["-h"], "memcached") {
        return;
    }
    let dir = TempDir::new("memcached");
    let mut transcripts = Vec::new();
    let mut endings = Vec::new();
    for profiled in [false, true] {
        let port = free_port();
        let mut argv: Vec<String> = ["memcached", "-l", "127.0.0.1", "-p", &port.to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        argv.extend(["-U", "0", "-t", "2", "-m", "16"].map(String::from));
        if unsafe { libc::geteuid() } == 0 {
            argv.extend(["-u", "nobody"].map(String::from));
        }
        let profile = dir.join("memcached.prof");
        let server = Server::start(
            &argv,
            profiled.then_some(profile.as_path()),
            dir.path(),
            port,
        );
        let mut requests: Vec<Vec<u8>> = Vec::new();
        for i in 0..200 {
            let v = format!("value-{i}");
            requests.push(format!("set k{i} 0 0 {}\r\n{v}\r\n", v.len()).into_bytes());
        }
        requests.push(b"get k7 k150 nokey\r\n".to_vec());
        requests.push(b"incr n 1\r\n".to_vec());
        requests.push(b"set n 0 0 1\r\n5\r\n".to_vec());
        requests.push(b"incr n 37\r\n".to_vec());
        requests.push(b"delete k7\r\n".to_vec());
        requests.push(b"get k7\r\n".to_vec());
        requests.push(b"bogus command\r\n".to_vec());
        transcripts.push(converse(server.port, &requests, memcached_reply));
        endings.push(server.stop());
    }
    assert_eq!(transcripts[0], transcripts[1], "the same replies");
    assert_eq!(
        transcripts[0][200],
        "VALUE k7 0 7|value-7|VALUE k150 0 9|value-150|END"
    );
    assert_eq!(
        endings[1].status.into_raw(),
        endings[0].status.into_raw(),
        "the same ending on SIGTERM\n{}\n{}",
        endings[0].describe(),
        endings[1].describe()
    );
    assert_eq!(endings[1].stdout, endings[0].stdout);
    assert_eq!(endings[1].stderr, endings[0].stderr);
}
