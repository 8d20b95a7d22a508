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
