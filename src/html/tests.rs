//! The page's parts in a real browser: headless Chromium draws the timeline (from a synthetic
//! timeline, through the same function as the page) in each category's colour, in both schemes,
//! and draws the flame graph of a real profile. Skipped, with a message, without Chromium.

use super::browser::{self, Image};
use super::{STYLE, flame_section, timeline};
use crate::export::Loaded;
use std::path::Path;

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
        let Some(browser) = browser::chromium() else {
            println!("SKIPPED: chromium is not installed (apt-get install chromium)");
            return None;
        };
        let dir =
            std::env::temp_dir().join(format!("stallscope-html-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Some(Shot { dir, browser })
    }

    fn take(&self, html: &str, dark: bool) -> Image {
        let file = self.dir.join("page.html");
        std::fs::write(&file, html).unwrap();
        let (console, _) = browser::load(self.browser, &file, &self.dir);
        assert!(console.is_empty(), "console: {console:?}");
        browser::screenshot(self.browser, &file, &self.dir, (1280, 700), dark)
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
        &timeline::tests::synthetic_report(),
        &[],
    ));
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
    let loaded = Loaded::read(&profile).unwrap();
    let image = shot.take(&page(&flame_section(&loaded)), false);
    let area = image.width * image.height;
    let warm = flame_pixels(&image);
    // sample.prof's time graph is a few frames deep across the whole width: ≥ 5% of the window.
    assert!(warm * 20 > area, "{warm} flame pixels of {area}");
    // Control: the same page with the graph's panel hidden has none.
    let hidden = page(&flame_section(&loaded).replace(
        "id=\"w-time\" aria-describedby=\"weight-name\" checked",
        "id=\"w-time\" aria-describedby=\"weight-name\"",
    ));
    let image = shot.take(&hidden, false);
    assert_eq!(
        flame_pixels(&image),
        0,
        "no panel is shown without a checked weight"
    );
}
