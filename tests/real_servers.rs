//! Real software under stallscope: redis-server plain and with I/O threads under
//! redis-benchmark, PostgreSQL under pgbench (as the `postgres` user), MariaDB started with
//! `--user=mysql` under a client's queries, `make -j2` of a generated project, and two attach
//! windows of a redis started without stallscope. Each program keeps its output and exit status,
//! and each report passes the model's invariants (`common::assert_invariants`) and does not
//! contradict itself in the ways `contradictions` lists: one thread counted once, allocator time
//! with its calls, lock figures that agree, no waiting finding from a blind part, a CPU demand that
//! says the CPUs were taken, no critical path through a thread that slept, and remedies whose
//! commands are lines a user types. The loads are short: the file stays within a minute or two.

mod common;

use common::*;
use serde_json::Value;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v[key].as_array().map_or(&[][..], |a| a.as_slice())
}

fn n(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// `stallscope report FILE` (text).
fn report_text(file: &Path) -> String {
    let out = Command::new(stallscope())
        .arg("report")
        .arg(file)
        .output()
        .expect("running stallscope report");
    assert!(out.status.success(), "{}", describe(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The ways a report could contradict itself, beside the invariants `report_json` checks.
fn contradictions(file: &Path) -> Value {
    let r = report_json(file);
    let at = file.display();
    let text = report_text(file);
    let threads = list(&r, "threads");
    // One thread, one row.
    let mut tids: Vec<u64> = threads.iter().map(|t| n(t, "tid")).collect();
    tids.sort_unstable();
    let before = tids.len();
    tids.dedup();
    assert_eq!(
        before,
        tids.len(),
        "{at}: a thread listed twice: {threads:#?}"
    );
    // Timed allocator time comes with timed calls, on every thread; CPU samples in the allocator
    // without a counted call are said to be so (the calls went by the hooks).
    for t in threads {
        assert!(
            n(t, "alloc_calls") > 0 || n(t, "alloc_ns") == 0,
            "{at}: allocator time without a call: {t:#}"
        );
    }
    let calls: u64 = threads.iter().map(|t| n(t, "alloc_calls")).sum();
    let alloc_cpu: u64 = threads.iter().map(|t| n(t, "alloc_cpu_ns")).sum();
    if calls == 0 && alloc_cpu > 0 {
        let line = text
            .lines()
            .find(|l| l.contains("  allocator  "))
            .unwrap_or("");
        assert!(
            line.contains("calls not counted ("),
            "{at}: {alloc_cpu} ns on a CPU in the allocator and no call, unexplained: {line}"
        );
    }
    // Lock figures: the header's, the threads', the lock tables' (the invariants) and a lock
    // finding's stake agree.
    let rows: u64 = list(&r, "locks")
        .iter()
        .chain(list(&r, "unhooked_locks"))
        .map(|l| n(l, "wait_ns"))
        .sum();
    let waited: u64 = threads.iter().map(|t| n(t, "lock_wait_ns")).sum();
    for f in list(&r, "findings") {
        if f["id"].as_str().unwrap_or("").starts_with("lock-") {
            assert!(
                n(f, "stake_ns") <= rows + rows / 100 + 1000,
                "{at}: a lock finding's stake above the lock rows' {rows} ns: {f:#}"
            );
        }
    }
    if waited == 0 {
        assert!(
            !text.contains("lock objects timed") || text.contains("locks       0 ns"),
            "{at}: no thread waited for a lock, the header says otherwise:\n{text}"
        );
    }
    // No finding about waiting from a part of the run whose waits could not be read.
    let ids = finding_ids(&r);
    if ids.iter().any(|i| i == "blind-states") {
        for f in list(&r, "findings") {
            let id = f["id"].as_str().unwrap_or("");
            assert!(
                !matches!(
                    id,
                    "serial-section" | "work-ran-alone" | "load-imbalance" | "parallel-efficiency"
                ),
                "{at}: {id} drawn from a blind part: {}",
                findings_text(&r, "\n")
            );
        }
    }
    // CPU demand: a program that wanted the CPUs and did not get them is not told "ideal" alone.
    if let Some(line) = text.lines().find(|l| l.contains("CPU demand on")) {
        let c = &r["concurrency"];
        let class = |u: &Value| {
            ["ideal", "ok", "poor", "idle"]
                .into_iter()
                .map(|k| (u[k].as_f64().unwrap_or(0.0), k))
                .fold(
                    (f64::MIN, "idle"),
                    |best, c| if c.0 > best.0 { c } else { best },
                )
                .1
        };
        let (offered, achieved) = (class(&c["offered"]), class(&c["achieved"]));
        if offered != achieved {
            assert!(
                line.contains(&format!("{achieved} on a CPU")),
                "{at}: {line}, while the threads on a CPU were mostly {achieved}"
            );
        }
    }
    // No critical path through a thread that slept: a thread that carries most of the path as
    // its own time did not sleep most of its life.
    let path = &r["wait_for"]["critical_path"];
    let length = n(path, "length_ns");
    for b in list(path, "by_thread") {
        if n(b, "own_ns") * 2 < length.max(1) {
            continue;
        }
        let tid = n(&b["thread"], "tid");
        if let Some(t) = threads.iter().find(|t| n(t, "tid") == tid) {
            let s = &t["states"];
            let asleep = n(s, "blocked_ns") + n(s, "idle_ns");
            assert!(
                asleep * 100 < n(t, "wall_ns") * 95,
                "{at}: the critical path runs {} of {length} ns through {tid} as its own work, which slept: {s:#}",
                n(b, "own_ns")
            );
        }
    }
    // A remedy's command is a line a user types.
    for f in list(&r, "findings") {
        let remedy = f["remedy"].as_str().unwrap_or("");
        for cmd in remedy.split('`').skip(1).step_by(2) {
            assert!(
                cmd.len() <= 160,
                "{at}: a command of {} characters in a remedy: {cmd}",
                cmd.len()
            );
        }
    }
    r
}

/// A server, killed if the test fails before it is stopped.
struct Server(Option<Child>);

impl Server {
    fn spawn(mut c: Command) -> Server {
        let child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {c:?}: {e}"));
        Server(Some(child))
    }

    fn id(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    /// Sends `signal` to `pid` and waits for the server (the spawned process) to end.
    fn stop(mut self, pid: u32, signal: i32) -> Output {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(pid as i32, signal) };
        let child = self.0.take().unwrap();
        let started = Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(started.elapsed() < RUN_TIMEOUT, "the server did not end");
        out
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < RUN_TIMEOUT, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn have_redis() -> bool {
    have_tool("redis-server", &["--version"], "redis-server")
        && have_tool("redis-benchmark", &["--version"], "redis-tools")
}

fn redis_args(c: &mut Command, port: u16, dir: &Path, io_threads: bool) {
    c.args(["--port", &port.to_string()]).args([
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]);
    if io_threads {
        c.args(["--io-threads", "2", "--io-threads-do-reads", "yes"]);
    }
    c.arg("--dir").arg(dir).current_dir(dir);
}

fn redis_benchmark(port: u16) {
    let mut bench = Command::new("redis-benchmark");
    bench.args(["-p", &port.to_string(), "-q", "-n", "2000", "-c", "4"]);
    bench.args(["-t", "set,get"]);
    let out = output_within(bench, RUN_TIMEOUT);
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("GET:"), "{text}");
}

/// redis with `--io-threads` parks each idle I/O thread on its mutex, held by the main thread
/// while it serves the clients itself (its reads, writes and `epoll_wait`): a gate, not a lock
/// held across I/O or asleep (docs/FINDINGS.md, "A gate, not a critical section").
fn no_lock_held_away(r: &Value, at: &str) {
    for f in list(r, "findings") {
        let id = f["id"].as_str().unwrap_or("");
        assert!(
            id != "lock-held-across-io" && id != "lock-held-while-asleep",
            "{at}: {id} on the mutexes that park idle I/O threads: {f:#}"
        );
    }
}

fn redis_run(io_threads: bool) {
    if !have_redis() {
        return;
    }
    let _machine = machine();
    let dir = TempDir::new("real-redis");
    let port = free_port();
    let prof = dir.join("redis.prof");
    let mut c = Command::new(stallscope());
    c.args(["run", "-q", "-o"])
        .arg(&prof)
        .args(["--", "redis-server"]);
    redis_args(&mut c, port, dir.path(), io_threads);
    let server = Server::spawn(c);
    wait_until("redis did not listen", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    redis_benchmark(port);
    let pid = server.id();
    let out = server.stop(pid, libc::SIGTERM);
    // As without stallscope: redis ends with status 0 on SIGTERM, saying so.
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ready to exit"),
        "{}",
        describe(&out)
    );
    let r = contradictions(&prof);
    no_lock_held_away(&r, "redis run");
    let names: Vec<&str> = list(&r, "threads")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names.iter().any(|n| n.starts_with("io_thd")),
        io_threads,
        "{names:?}"
    );
}

#[test]
fn redis_under_redis_benchmark() {
    redis_run(false);
}

#[test]
fn redis_with_io_threads_under_redis_benchmark() {
    redis_run(true);
}

/// The threads of a live process, but the interposer's own (named `stallscope`, which stays
/// loaded after an attach: docs/INVISIBLE.md).
fn tasks(pid: u32) -> Vec<u64> {
    let mut t: Vec<u64> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            (comm.trim() != "stallscope").then_some(())?;
            e.file_name().to_str()?.parse().ok()
        })
        .collect();
    t.sort_unstable();
    t
}

/// Two windows of a redis started without stallscope: each lists the process's threads once.
#[test]
fn two_attach_windows_of_a_redis_started_without_stallscope() {
    if !have_redis() {
        return;
    }
    let _machine = machine();
    let dir = TempDir::new("real-attach");
    let port = free_port();
    let mut c = Command::new("redis-server");
    redis_args(&mut c, port, dir.path(), true);
    let server = Server::spawn(c);
    wait_until("redis did not listen", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let pid = server.id();
    for (window, duration) in [(1, "1"), (2, "0.5")] {
        let file = dir.join(&format!("window{window}.prof"));
        let load = std::thread::spawn(move || redis_benchmark(port));
        let mut a = Command::new(stallscope());
        a.args(["attach", "-q", "--duration", duration, "-o"])
            .arg(&file)
            .arg(pid.to_string())
            .current_dir(dir.path());
        let out = output_within(a, RUN_TIMEOUT);
        assert!(out.status.success(), "{}", describe(&out));
        load.join().expect("every request answered while attached");
        // redis ends none of its threads: those alive now ran in the window (jemalloc starts its
        // background threads with the load).
        let threads = tasks(pid);
        let r = contradictions(&file);
        no_lock_held_away(&r, &format!("window {window}"));
        assert_eq!(r["attach"]["window"], window, "{:#}", r["attach"]);
        let mut seen: Vec<u64> = list(&r, "threads").iter().map(|t| n(t, "tid")).collect();
        seen.sort_unstable();
        assert_eq!(
            seen, threads,
            "window {window}: the process's threads, once each"
        );
        assert_eq!(
            n(&r, "thread_count"),
            threads.len() as u64,
            "window {window}"
        );
        // A window of a running process is measured in windows, never from start to end.
        for f in list(&r, "findings") {
            let remedy = f["remedy"].as_str().unwrap_or("");
            assert!(!remedy.contains("stallscope bench"), "{f:#}");
        }
    }
    let out = server.stop(pid, libc::SIGTERM);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
}

/// The directory that holds PostgreSQL's server programs (Debian: /usr/lib/postgresql/N/bin).
fn postgres_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|d| d.join("postgres").exists() && d.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// `runuser -u USER -- CMD...` (the tests run as root in CI).
fn as_user(user: &str, cmd: &[&str]) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", user, "--"]).args(cmd);
    c
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn chown(path: &Path, user: &str) {
    let out = Command::new("chown")
        .arg("-R")
        .arg(user)
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
}

#[test]
fn postgres_under_pgbench_as_the_postgres_user() {
    let bin = postgres_bin();
    let found = bin
        .as_ref()
        .is_some_and(|b| b.join("pgbench").exists() && Path::new("/usr/sbin/runuser").exists());
    if !have(
        "PostgreSQL's server, pgbench and runuser",
        found,
        "apt-get install postgresql util-linux",
    ) {
        return;
    }
    if !is_root() {
        skipped(
            "postgres_under_pgbench_as_the_postgres_user",
            "runs the server as the postgres user, which needs root",
        );
        return;
    }
    let bin = bin.unwrap();
    let tool = |name: &str| bin.join(name).display().to_string();
    let _machine = machine();
    let dir = TempDir::new("real-postgres");
    chown(dir.path(), "postgres");
    let data = dir.join("data");
    let data_s = data.display().to_string();
    let sock = dir.path().display().to_string();
    let init = as_user(
        "postgres",
        &[&tool("initdb"), "-D", &data_s, "-A", "trust", "--no-sync"],
    );
    let out = output_within(init, Duration::from_secs(120));
    assert!(out.status.success(), "{}", describe(&out));
    let port = free_port().to_string();
    let prof = dir.join("pg.prof").display().to_string();
    let postgres = tool("postgres");
    let mut c = as_user(
        "postgres",
        &[stallscope(), "run", "-q", "-o", &prof, "--", &postgres],
    );
    c.args(["-D", &data_s, "-k", &sock, "-p", &port])
        .args(["-c", "listen_addresses=", "-c", "fsync=off"])
        .current_dir(dir.path());
    let server = Server::spawn(c);
    let pgbench = |args: &[&str]| {
        let mut c = as_user("postgres", &[&tool("pgbench"), "-h", &sock, "-p", &port]);
        c.args(args).arg("postgres");
        output_within(c, Duration::from_secs(60))
    };
    let pid_file = data.join("postmaster.pid");
    wait_until("postgres did not start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.contains("ready"))
    });
    let out = pgbench(&["-i", "-s", "1", "-q"]);
    assert!(out.status.success(), "{}", describe(&out));
    let out = pgbench(&["-c", "2", "-T", "2"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("number of failed transactions: 0"),
        "{}",
        describe(&out)
    );
    let postmaster: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // A fast shutdown: status 0, as without stallscope.
    let out = server.stop(postmaster, libc::SIGINT);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let files = run_files(dir.path());
    assert!(
        files.len() > 3,
        "the postmaster and its processes: {files:?}"
    );
    for f in files {
        contradictions(&f);
    }
}

#[test]
fn mariadb_started_with_user_under_a_client() {
    if !have_tool("mariadbd", &["--version"], "mariadb-server")
        || !have_tool("mariadb-install-db", &["--help"], "mariadb-server")
        || !have_tool("mariadb", &["--version"], "mariadb-client")
    {
        return;
    }
    if !is_root() {
        skipped(
            "mariadb_started_with_user_under_a_client",
            "starts the server with --user=mysql, which needs root",
        );
        return;
    }
    let _machine = machine();
    let dir = TempDir::new("real-mariadb");
    chown(dir.path(), "mysql");
    let data = dir.join("db").display().to_string();
    let sock = dir.join("mysqld.sock").display().to_string();
    let pid_file = dir.join("mysqld.pid");
    let mut init = Command::new("mariadb-install-db");
    init.args(["--no-defaults", "--user=mysql", "--skip-test-db"])
        .arg(format!("--datadir={data}"))
        .arg("--auth-root-authentication-method=normal");
    let out = output_within(init, Duration::from_secs(120));
    assert!(out.status.success(), "{}", describe(&out));
    let prof = dir.join("mariadb.prof");
    let mut c = Command::new(stallscope());
    c.args(["run", "-q", "-o"])
        .arg(&prof)
        .args(["--", "mariadbd", "--no-defaults", "--user=mysql"])
        .arg(format!("--datadir={data}"))
        .arg(format!("--socket={sock}"))
        .arg(format!("--pid-file={}", pid_file.display()))
        .args(["--skip-networking", "--innodb-buffer-pool-size=32M"])
        .args(["--innodb-flush-log-at-trx-commit=0"])
        .current_dir(dir.path());
    let server = Server::spawn(c);
    wait_until("mariadbd did not start", || {
        Path::new(&sock).exists() && pid_file.exists()
    });
    let mut sql = String::from(
        "CREATE DATABASE t; CREATE TABLE t.kv (k INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB;",
    );
    for i in 0..2000 {
        sql.push_str(&format!(
            "INSERT INTO t.kv VALUES ({i}, REPEAT('x', {}));",
            i % 60
        ));
    }
    sql.push_str("SELECT COUNT(*), SUM(LENGTH(v)) FROM t.kv;");
    let mut client = Command::new("mariadb");
    client
        .args(["--no-defaults", "-uroot", "-N", "-B"])
        .arg(format!("--socket={sock}"))
        .args(["-e", &sql]);
    let out = output_within(client, Duration::from_secs(60));
    assert!(out.status.success(), "{}", describe(&out));
    let expected: u64 = (0..2000u64).map(|i| i % 60).sum();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("2000\t{expected}"),
        "{}",
        describe(&out)
    );
    let mariadbd: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let out = server.stop(mariadbd, libc::SIGTERM);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    contradictions(&prof);
}

/// A generated project of `files` C files and its Makefile.
fn project(dir: &Path, files: usize) {
    let mut objects = Vec::new();
    let mut main = String::from("#include <stdio.h>\n");
    let mut body = String::from("int main(void) {\n long s = 0;\n");
    for i in 0..files {
        let src = format!(
            "long f{i}(long n) {{ long s = 0; for (long k = 0; k < n; k++) s += (k ^ {i}) % 7; return s; }}\n"
        );
        std::fs::write(dir.join(format!("f{i}.c")), src).unwrap();
        objects.push(format!("f{i}.o"));
        main.push_str(&format!("long f{i}(long);\n"));
        body.push_str(&format!(" s += f{i}(1000);\n"));
    }
    body.push_str(" printf(\"%ld\\n\", s);\n return 0;\n}\n");
    std::fs::write(dir.join("main.c"), main + &body).unwrap();
    objects.push("main.o".into());
    let make = format!(
        "prog: {o}\n\tcc -o $@ {o}\n%.o: %.c\n\tcc -O1 -c $< -o $@\n",
        o = objects.join(" ")
    );
    std::fs::write(dir.join("Makefile"), make).unwrap();
}

#[test]
fn make_j2_of_a_small_project() {
    if !have_tool("make", &["--version"], "make") {
        return;
    }
    let _machine = machine();
    let plain_dir = TempDir::new("real-make-plain");
    project(plain_dir.path(), 6);
    let mut c = Command::new("make");
    c.args(["-j2", "-s"]).current_dir(plain_dir.path());
    let plain = output_within(c, RUN_TIMEOUT);
    assert!(plain.status.success(), "{}", describe(&plain));
    let dir = TempDir::new("real-make");
    project(dir.path(), 6);
    let out = stallscope_run(
        dir.path(),
        &["-q", "-o", "make.prof"],
        &["make", "-j2", "-s"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(out.stdout, plain.stdout, "{}", describe(&out));
    let run = |d: &Path| {
        Command::new(d.join("prog"))
            .output()
            .expect("the built program")
            .stdout
    };
    assert_eq!(run(dir.path()), run(plain_dir.path()));
    let files = run_files(dir.path());
    assert!(files.len() > 6, "make and its compilers: {files:?}");
    for f in files {
        contradictions(&f);
    }
}
