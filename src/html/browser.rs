//! Test helpers: load a page in headless Chromium (Debian `chromium`), collect its console
//! messages, take a screenshot and decode it. Used by the unit tests of src/html and, through
//! `#[path]`, by tests/export_html.rs, so that both check pages the same way.
#![allow(dead_code)] // each user needs a different subset

use std::path::Path;
use std::process::{Command, Output};

/// The browser, or `None` when none is installed (the callers then say SKIPPED).
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok())
}

/// Runs headless `browser` on `page` with `args`, its profile in `dir`, for at most a minute.
fn run(browser: &str, page: &Path, dir: &Path, args: &[String]) -> Output {
    let out = Command::new("timeout")
        .arg("60")
        .arg(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!(
            "--user-data-dir={}",
            dir.join("chromium-profile").display()
        ))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("running chromium");
    assert!(
        out.status.success(),
        "chromium failed on {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Loads `page` and returns its console messages (every level: `console.log`, errors, uncaught
/// exceptions) and the DOM after its scripts ran. Chromium logs them to stderr as
/// `...:CONSOLE:<line>] "message", source: ...` with `--enable-logging=stderr`.
pub fn load(browser: &str, page: &Path, dir: &Path) -> (Vec<String>, String) {
    let out = run(
        browser,
        page,
        dir,
        &[
            "--enable-logging=stderr".into(),
            "--v=0".into(),
            "--dump-dom".into(),
        ],
    );
    let messages = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    (messages, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An RGB image.
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<[u8; 3]>,
}

impl Image {
    /// Pixels within `tolerance` (per channel) of `colour`.
    pub fn count_near(&self, colour: [u8; 3], tolerance: u8) -> usize {
        self.pixels
            .iter()
            .filter(|p| (0..3).all(|i| p[i].abs_diff(colour[i]) <= tolerance))
            .count()
    }
}

/// A screenshot of `page` in a `width` × `height` window; `dark` asks for the dark scheme.
pub fn screenshot(
    browser: &str,
    page: &Path,
    dir: &Path,
    (width, height): (u32, u32),
    dark: bool,
) -> Image {
    let shot = dir.join("screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let mut args = vec![
        format!("--window-size={width},{height}"),
        format!("--screenshot={}", shot.display()),
        "--hide-scrollbars".into(),
    ];
    if dark {
        args.push("--force-dark-mode".into());
    }
    run(browser, page, dir, &args);
    decode_png(&std::fs::read(&shot).expect("screenshot written"))
}

/// Decodes the PNGs Chromium writes: 8-bit RGB or RGBA, not interlaced.
pub fn decode_png(bytes: &[u8]) -> Image {
    use std::io::Read;
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let (mut width, mut height, mut channels) = (0usize, 0usize, 0usize);
    let mut data = Vec::new();
    let mut at = 8;
    while at + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = &bytes[at + 4..at + 8];
        let body = &bytes[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(body[0..4].try_into().unwrap()) as usize;
                height = u32::from_be_bytes(body[4..8].try_into().unwrap()) as usize;
                assert_eq!(body[8], 8, "bit depth");
                assert_eq!(body[12], 0, "interlaced");
                channels = match body[9] {
                    2 => 3,
                    6 => 4,
                    other => panic!("PNG colour type {other}"),
                };
            }
            b"IDAT" => data.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&data[..])
        .read_to_end(&mut raw)
        .expect("PNG data inflates");
    let stride = width * channels;
    assert_eq!(raw.len(), height * (stride + 1), "PNG data size");
    let mut rows: Vec<u8> = vec![0; height * stride];
    for y in 0..height {
        let filter = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for x in 0..stride {
            let a = if x >= channels {
                rows[y * stride + x - channels]
            } else {
                0
            };
            let b = if y > 0 { rows[(y - 1) * stride + x] } else { 0 };
            let c = if x >= channels && y > 0 {
                rows[(y - 1) * stride + x - channels]
            } else {
                0
            };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((a as u16 + b as u16) / 2) as u8,
                4 => {
                    let p = a as i16 + b as i16 - c as i16;
                    let (pa, pb, pc) = (
                        (p - a as i16).abs(),
                        (p - b as i16).abs(),
                        (p - c as i16).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                other => panic!("PNG filter {other}"),
            };
            rows[y * stride + x] = line[x].wrapping_add(predicted);
        }
    }
    let pixels = rows.chunks(channels).map(|p| [p[0], p[1], p[2]]).collect();
    Image {
        width,
        height,
        pixels,
    }
}

/// A headless Chromium driven over the DevTools protocol (`--remote-debugging-pipe`: commands
/// on its fd 3, answers on its fd 4, each a JSON object ended by a NUL byte), attached to the
/// page's target, for real key presses: the keyboard test needs trusted events, which a page's
/// own script cannot make.
pub struct Devtools {
    child: std::process::Child,
    to_browser: std::fs::File,
    from_browser: std::io::BufReader<std::fs::File>,
    session: String,
    next_id: u64,
    /// Set when dropped; until then a watchdog kills a browser that outlives a minute, so that a
    /// hung Chromium fails the test (the pipe closes) instead of blocking it.
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Devtools {
    pub fn open(browser: &str, page: &Path, dir: &Path) -> Devtools {
        use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
        use std::os::unix::process::CommandExt;
        let pipe = || {
            let mut fds = [0; 2];
            // SAFETY: pipe(2) fills `fds` with two new descriptors that we then own.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
            // SAFETY: both descriptors were just created and are owned by nobody else.
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
        };
        let (commands_read, commands_write) = pipe();
        let (answers_read, answers_write) = pipe();
        let (child_in, child_out) = (commands_read.into_raw_fd(), answers_write.into_raw_fd());
        let mut command = Command::new(browser);
        command
            .args(["--headless", "--no-sandbox", "--disable-gpu"])
            .arg("--remote-debugging-pipe")
            .arg("--window-size=1280,900")
            .arg(format!(
                "--user-data-dir={}",
                dir.join("chromium-profile").display()
            ))
            .arg(format!("file://{}", page.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: only async-signal-safe calls (dup2) between fork and exec.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(child_in, 3) < 0 || libc::dup2(child_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("starting chromium");
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (watched, pid) = (done.clone(), child.id() as libc::pid_t);
        std::thread::spawn(move || {
            for _ in 0..600 {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if watched.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
            }
            // SAFETY: plain kill(2) of our own child, not yet reaped (Drop reaps it after `done`).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        });
        // SAFETY: the child has its copies; these are ours and closed once.
        unsafe {
            libc::close(child_in);
            libc::close(child_out);
        }
        let mut tools = Devtools {
            child,
            to_browser: std::fs::File::from(commands_write),
            from_browser: std::io::BufReader::new(std::fs::File::from(answers_read)),
            session: String::new(),
            next_id: 0,
            done,
        };
        let targets = tools.call("Target.getTargets", serde_json::json!({}));
        let page_target = targets["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["targetId"].as_str())
            .expect("a page target")
            .to_string();
        let attached = tools.call(
            "Target.attachToTarget",
            serde_json::json!({"targetId": page_target, "flatten": true}),
        );
        tools.session = attached["sessionId"].as_str().expect("session").to_string();
        // A headless window never has the OS focus: without this, key presses move nothing.
        tools.call(
            "Emulation.setFocusEmulationEnabled",
            serde_json::json!({"enabled": true}),
        );
        // Navigate only once attached (the target may still be about:blank otherwise), and wait
        // until the page has loaded and has the (emulated) focus, so that key presses reach it.
        let url = format!("file://{}", page.display());
        tools.call("Page.navigate", serde_json::json!({"url": url}));
        let loaded = format!(
            "location.href == {} && document.readyState == 'complete' && document.hasFocus()",
            serde_json::Value::from(url.as_str())
        );
        let ready = (0..400).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(25));
            tools.eval(&loaded) == true
        });
        assert!(ready, "{url} did not load");
        tools
    }

    /// Sends `method` (to the page once attached) and returns its result.
    fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        use std::io::{BufRead, Write};
        self.next_id += 1;
        let mut message =
            serde_json::json!({"id": self.next_id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = self.session.clone().into();
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .expect("writing to chromium");
        loop {
            let mut buf = Vec::new();
            let n = self
                .from_browser
                .read_until(0, &mut buf)
                .expect("reading from chromium");
            assert!(n > 0, "chromium closed the pipe");
            buf.pop();
            let answer: serde_json::Value = serde_json::from_slice(&buf).expect("JSON answer");
            if answer["id"] == self.next_id {
                assert!(answer.get("error").is_none(), "{method}: {answer}");
                return answer["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expression: &str) -> serde_json::Value {
        let result = self.call(
            "Runtime.evaluate",
            serde_json::json!({"expression": expression, "returnByValue": true}),
        );
        result["result"]["value"].clone()
    }

    /// Presses and releases a key (`Tab`, `Enter`, ` `, `ArrowRight`), as a user would.
    pub fn press(&mut self, key: &str) {
        let (code, vk, text) = match key {
            "Tab" => ("Tab", 9, ""),
            "Enter" => ("Enter", 13, "\r"),
            " " => ("Space", 32, " "),
            "ArrowRight" => ("ArrowRight", 39, ""),
            "Escape" => ("Escape", 27, ""),
            other => panic!("no key {other}"),
        };
        let down = if text.is_empty() {
            "rawKeyDown"
        } else {
            "keyDown"
        };
        for kind in [down, "keyUp"] {
            let mut params = serde_json::json!({"type": kind, "key": key, "code": code,
                "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk});
            if kind == "keyDown" {
                params["text"] = text.into();
            }
            self.call("Input.dispatchKeyEvent", params);
        }
    }

    /// Types `text` into the focused element, as an input method would (one `input` event).
    pub fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", serde_json::json!({"text": text}));
    }

    /// Presses Tab until the focused element matches `selector` (at most `limit` times); the
    /// number of presses, or `None`.
    pub fn tab_to(&mut self, selector: &str, limit: usize) -> Option<usize> {
        let test = format!(
            "!!document.activeElement && document.activeElement.matches({})",
            serde_json::Value::from(selector)
        );
        for presses in 1..=limit {
            self.press("Tab");
            if self.eval(&test) == true {
                return Some(presses);
            }
        }
        None
    }
}

impl Drop for Devtools {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
