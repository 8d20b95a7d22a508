//! The page's parts in a real browser: headless Chromium draws the timeline (from a synthetic
//! timeline, through the same function as the page) in each category's colour, in both schemes,
//! and draws the flame graph of a real profile. Skipped, with a message, without Chromium.

use super::browser::{self, Image};
use super::{STYLE, flame_section, timeline};
use crate::analysis::Analysis;
use std::path::Path;

/// sRGB of an HSL colour as CSS computes it.
pub fn rgb((h, s, l): (u32, u32, u32)) -> [f64; 3] {
    let (s, l) = (s as f64 / 100.0, l as f64 / 100.0);
    let a = s * l.min(1.0 - l);
    let f = |n: f64| {
        let k = (n + h as f64 / 30.0) % 12.0;
        l - a * (k - 3.0).min(9.0 - k).clamp(-1.0, 1.0)
    };
    [f(0.0), f(8.0), f(4.0)]
}

pub fn luminance(c: [f64; 3]) -> f64 {
    let lin = |v: f64| {
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2])
}

/// WCAG contrast ratio of two sRGB colours.
fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let l = |c: [u8; 3]| luminance(c.map(|v| v as f64 / 255.0));
    let (hi, lo) = (l(a).max(l(b)), l(a).min(l(b)));
    (hi + 0.05) / (lo + 0.05)
}

/// Text (body, muted, links and focus rings) on the page and card backgrounds reaches WCAG AA
/// (4.5:1) in each scheme.
#[test]
fn text_colours_are_readable_in_both_schemes() {
    let (bg, bg_dark) = scheme_colours("--bg");
    let (card, card_dark) = scheme_colours("--card");
    for text in ["--fg", "--muted", "--focus"] {
        let (light, dark) = scheme_colours(text);
        for (fg, back) in [
            (light, bg),
            (light, card),
            (dark, bg_dark),
            (dark, card_dark),
        ] {
            let ratio = contrast(fg, back);
            assert!(ratio >= 4.5, "{text} {fg:?} on {back:?}: {ratio:.2}");
        }
    }
}

/// A page with only `body`, styled like the real one.
fn page(body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><style>{STYLE}</style></head><body>{body}</body></html>"
    )
}

/// `(light, dark)` of a CSS variable, read from the stylesheet (defined once per scheme).
fn scheme_colours(variable: &str) -> ([u8; 3], [u8; 3]) {
    let hex: Vec<[u8; 3]> = STYLE
        .match_indices(&format!("{variable}:#"))
        .map(|(at, m)| {
            let digits = &STYLE[at + m.len()..at + m.len() + 6];
            let byte = |i: usize| u8::from_str_radix(&digits[i..i + 2], 16).unwrap();
            [byte(0), byte(2), byte(4)]
        })
        .collect();
    assert_eq!(hex.len(), 2, "{variable} defined once per scheme");
    (hex[0], hex[1])
}

struct Shot {
    dir: std::path::PathBuf,
    browser: &'static str,
}

impl Shot {
    fn new(tag: &str) -> Option<Shot> {
        let found = browser::chromium();
        if !crate::util::testing::have("chromium", found.is_some(), "apt-get install chromium") {
            return None;
        }
        let browser = found?;
        let dir =
            std::env::temp_dir().join(format!("stallscope-html-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Some(Shot { dir, browser })
    }

    fn write(&self, html: &str) -> std::path::PathBuf {
        let file = self.dir.join("page.html");
        std::fs::write(&file, html).unwrap();
        file
    }

    fn assert_no_console_message(&self, html: &str) {
        let (console, _) = browser::load(self.browser, &self.write(html), &self.dir);
        assert!(console.is_empty(), "console: {console:?}");
    }

    fn take(&self, html: &str, dark: bool) -> Image {
        browser::screenshot(
            self.browser,
            &self.write(html),
            &self.dir,
            (1280, 700),
            dark,
        )
    }
}

impl Drop for Shot {
    fn drop(&mut self) {
        // Kept for debugging like tests/common's TempDir.
        if std::env::var_os("STALLSCOPE_KEEP_TEST_DIRS").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[test]
fn timeline_renders_every_category_colour_in_both_schemes() {
    let Some(shot) = Shot::new("timeline") else {
        return;
    };
    let html = page(&timeline::section(
        &timeline::tests::synthetic_timeline(),
        &[],
    ));
    shot.assert_no_console_message(&html);
    for dark in [false, true] {
        let image = shot.take(&html, dark);
        if std::env::var_os("STALLSCOPE_KEEP_TEST_DIRS").is_some() {
            let name = if dark { "dark.png" } else { "light.png" };
            let _ = std::fs::copy(shot.dir.join("screenshot.png"), shot.dir.join(name));
        }
        for c in timeline::CATEGORIES {
            let (light_rgb, dark_rgb) = scheme_colours(&format!("--c-{c}"));
            let rgb = if dark { dark_rgb } else { light_rgb };
            // The smallest run is worker-1's ~28 of 200 slices, ~140 px wide and 16 px high; the
            // legend swatches alone are ~100 px.
            let n = image.count_near(rgb, 2);
            assert!(n > 1000, "{c} ({rgb:?}, dark {dark}): {n} pixels");
        }
    }
}

/// Pixels of the flame graph's warm fills (hue 10–55°, saturated), which nothing else on a page
/// of only the flame section has.
fn flame_pixels(image: &Image) -> usize {
    image
        .pixels
        .iter()
        .filter(|[r, g, b]| *r > 200 && *r > *g && *g > *b && r - b > 60)
        .count()
}

#[test]
fn flame_graph_of_a_real_profile_renders() {
    let Some(shot) = Shot::new("flame") else {
        return;
    };
    let profile = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/sample.prof");
    let analysis = Analysis::read(&profile).unwrap();
    let section = flame_section(&analysis);
    shot.assert_no_console_message(&page(&section));
    let image = shot.take(&page(&section), false);
    let area = image.width * image.height;
    let warm = flame_pixels(&image);
    // sample.prof's time graph is a few frames deep across the whole width: ≥ 5% of the window.
    assert!(warm * 20 > area, "{warm} flame pixels of {area}");
    // The weight switch: with no radio button checked no graph shows (the control for the
    // pixel count); with any one checked, its graph shows (sample.prof has every weight).
    let radio = |id: &str| format!("id=\"w-{id}\" aria-describedby=\"weight-name\"");
    let unchecked = section.replace(&format!("{} checked", radio("time")), &radio("time"));
    assert_eq!(flame_pixels(&shot.take(&page(&unchecked), false)), 0);
    for id in ["calls", "bytes", "lock"] {
        let checked = unchecked.replace(&radio(id), &format!("{} checked", radio(id)));
        let warm = flame_pixels(&shot.take(&page(&checked), false));
        assert!(
            warm * 50 > area,
            "weight {id}: {warm} flame pixels of {area}"
        );
    }
}
