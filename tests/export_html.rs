//! `stallscope html` on tests/golden/sample.prof (a real profile, fixed): a self-contained page
//! (nothing fetched) with its sections and keyboard structure; in headless Chromium (Debian
//! `chromium`), it loads without a console message and draws, and real key presses (over the
//! DevTools protocol) reach and operate its controls; the console check itself fails on a page
//! with a script error. And on a real profile of thousands of stacks the page stays small.
//! The timeline's and flame graph's pixels are checked by src/html/tests.rs.

#[path = "../src/html/browser.rs"]
mod browser;
mod common;

use common::{TempDir, compile, have, profile, stallscope};
use std::path::{Path, PathBuf};
use std::process::Command;

fn render(profile: &Path, out_file: &Path) -> String {
    let out = Command::new(stallscope())
        .args(["html", "-o"])
        .arg(out_file)
        .arg(profile)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(out_file).unwrap()
}

fn sample_page(dir: &TempDir) -> (PathBuf, String) {
    let file = dir.join("sample.html");
    let html = render(Path::new("tests/golden/sample.prof"), &file);
    (file, html)
}

/// The values of `attribute="..."` in `html`.
fn attribute_values<'a>(html: &'a str, attribute: &str) -> Vec<&'a str> {
    let key = format!("{attribute}=\"");
    html.match_indices(&key)
        .map(|(at, _)| {
            let rest = &html[at + key.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect()
}

#[test]
fn html_page_is_self_contained_and_complete() {
    let dir = TempDir::new("html");
    let (_, html) = sample_page(&dir);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    // Nothing fetched: no external resource (the SVG namespace is a name, not a fetch), and
    // links only within the page.
    for bad in ["src=", "@import", "url(", "<link", "<script src"] {
        assert!(!html.contains(bad), "page references a resource: {bad}");
    }
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    for needle in [
        "prefers-color-scheme: dark",
        "<h2 id=\"findings\">Findings</h2>",
        "<h2 id=\"findings\">",
        "Small allocations dominate",
        "<svg class=\"timeline\"",
        "sampling was off",
        "<svg class=\"flame\"",
        "class=\"bar\"",
        "Request sizes",
        "Latency of malloc",
        "<h2 id=\"locks\">Locks</h2>",
        "mutex",
        "<h2 id=\"phases\">Phases</h2>",
        "build",
        "work+0x",
        "malloc",
        "heaviest stacks as a table",
    ] {
        assert!(html.contains(needle), "no `{needle}` in the page");
    }
    // sample.prof's seven heap snapshots (start, begin and end of each thread's phase, done,
    // exit), each with a bar, like each of its three threads.
    assert!(html.contains("<h2 id=\"heap\">Heap snapshots</h2>"));
    assert!(html.contains("<td>begin build</td>") && html.contains("<td>exit</td>"));
    assert_eq!(html.matches("<div class=\"bar\">").count(), 3 + 7);
    // Each thread has a life span on the timeline (sample.prof predates
    // thread-state sampling); its two phases are bands.
    assert_eq!(html.matches("class=\"life\"").count(), 3);
    assert_eq!(html.matches("<rect class=\"phase\"").count(), 2);
    // A flame graph per weight, each frame named in a <title>; sample.prof has lock waits.
    assert_eq!(html.matches("<svg class=\"flame\"").count(), 4);
    assert!(html.contains("<title>malloc: "));
    assert!(html.contains("<title>mutex wait: "));
}

#[test]
fn html_page_is_usable_with_the_keyboard() {
    let dir = TempDir::new("html-keys");
    let (_, html) = sample_page(&dir);
    let ids = attribute_values(&html, "id");
    // A skip link first, then the section links; every link points at an element of the page.
    let body = &html[html.find("<body>").unwrap()..];
    assert!(body.starts_with("<body>\n<a class=\"skip\" href=\"#main\">"));
    let links = attribute_values(&html, "href");
    assert!(links.len() >= 8, "{links:?}");
    for link in links {
        let target = link.strip_prefix('#').expect("in-page link");
        assert!(ids.contains(&target), "link to missing #{target}");
    }
    // The weight switch: six radio buttons of one group (Tab reaches the group, arrows and
    // Space pick), each with its label, one checked, each with its panel.
    let radios = html
        .matches("<input type=\"radio\" name=\"flame-weight\"")
        .count();
    assert_eq!(radios, 6);
    assert_eq!(html.matches(" checked>").count(), 1);
    for weight in ["time", "calls", "bytes", "lock", "cpu", "offcpu"] {
        assert!(html.contains(&format!("<label for=\"w-{weight}\">")));
        assert!(html.contains(&format!("id=\"panel-{weight}\"")));
        assert!(html.contains(&format!("#w-{weight}:checked ~ #panel-{weight}")));
    }
    // Every control is natively focusable (links, radios, <summary>); none is taken out of the
    // tab order or reordered, and focus stays visible.
    assert!(!html.contains("tabindex=\"") || attribute_values(&html, "tabindex") == ["-1"]);
    assert!(html.contains(":focus-visible { outline:3px solid"));
    assert!(!html.contains("outline:none") && !html.contains("outline: none"));
    assert!(html.matches("<details><summary>").count() >= 4);
    // One inline script, the flame graphs' search box; nothing else needs a script or a mouse.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(html.contains("<input type=\"search\" id=\"flame-search\""));
}

/// Chromium, under the missing-tool policy of tests/common.
fn chromium() -> Option<&'static str> {
    let found = browser::chromium();
    if have("chromium", found.is_some(), "apt-get install chromium") {
        found
    } else {
        None
    }
}

#[test]
fn html_page_loads_in_chromium_without_console_messages_and_draws() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = TempDir::new("html-chromium");
    let (file, _) = sample_page(&dir);
    let (console, dom) = browser::load(chromium, &file, dir.path());
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom.contains("<svg class=\"flame\"") && dom.contains("<svg class=\"timeline\""));
    let image = browser::screenshot(chromium, &file, dir.path(), (1280, 2400), false);
    let background = [0xfd, 0xfd, 0xfc];
    let drawn = image.pixels.len() - image.count_near(background, 2);
    assert!(
        drawn * 10 > image.pixels.len(),
        "{drawn} of {} pixels drawn: blank page?",
        image.pixels.len()
    );
    // In the dark scheme the page is dark: its background and cards (the findings' too).
    let dark = browser::screenshot(chromium, &file, dir.path(), (1280, 600), true);
    let dark_pixels = dark
        .pixels
        .iter()
        .filter(|p| p.iter().all(|&c| c < 0x40))
        .count();
    assert!(dark_pixels * 10 > dark.pixels.len() * 8, "not dark");
}

#[test]
fn console_check_catches_a_script_error() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = TempDir::new("html-error");
    let (_, html) = sample_page(&dir);
    // The real page with a deliberate error: the check must see it.
    let broken = html.replace(
        "</body>",
        "<script>document.body.dataset.x = undefinedFunction();</script></body>",
    );
    let file = dir.join("broken.html");
    std::fs::write(&file, broken).unwrap();
    let (console, _) = browser::load(chromium, &file, dir.path());
    assert!(
        console
            .iter()
            .any(|m| m.contains("Uncaught ReferenceError") && m.contains("undefinedFunction")),
        "the error was not caught: {console:?}"
    );
}

/// Threads waiting for work that never comes stall nothing: a program whose idle threads'
/// waiting outweighs its CPU time opens its page on the CPU time, not on the idle waits.
#[test]
fn html_opens_on_the_cpu_time_when_the_off_cpu_time_is_idle_waiting() {
    let dir = TempDir::new("html-idle");
    let exe = compile(
        dir.path(),
        "html_idle_threads.c",
        &["-g", "-O1", "-pthread"],
    );
    let (_, prof) = profile(dir.path(), "idle.prof", &[], &[&exe], 0);
    let html = render(&prof, &dir.join("idle.html"));
    let checked = html
        .split("<input")
        .find(|i| i.contains("name=\"flame-weight\"") && i.contains(" checked"))
        .expect("one weight is checked");
    assert!(checked.contains("id=\"w-cpu\""), "opened on: {checked}");
}

#[test]
fn html_of_a_profile_with_thousands_of_stacks_stays_small() {
    let dir = TempDir::new("html-many");
    let exe = compile(dir.path(), "html_many_stacks.c", &["-g"]);
    let (_, prof) = profile(
        dir.path(),
        "many.prof",
        &["--stack-period", "1"],
        &[&exe],
        0,
    );
    let stacks = Command::new(stallscope())
        .args(["export", "-f", "collapsed", "--weight", "calls"])
        .arg(&prof)
        .output()
        .unwrap();
    let stacks = String::from_utf8_lossy(&stacks.stdout).lines().count();
    assert!(stacks > 2_000, "only {stacks} stacks recorded");
    let started = std::time::Instant::now();
    let html = render(&prof, &dir.join("many.html"));
    let elapsed = started.elapsed();
    // Each path is 12 frames of walk/left/right over main: without merging and the frame budget
    // (2 500 per graph, src/html/flame.rs) the four graphs would hold stacks × 30 rectangles.
    let rects = html.matches("<rect").count();
    assert!(rects <= 4 * 2_500 + 100, "{rects} rectangles");
    assert!(html.len() < 3_000_000, "{} bytes", html.len());
    assert!(html.contains("smaller frames]"));
    // Figures for docs/EXPORT.md (not asserted: the machine is shared).
    eprintln!(
        "{stacks} stacks: page of {} bytes, {rects} rectangles, rendered in {:.0} ms",
        html.len(),
        elapsed.as_secs_f64() * 1e3
    );
}

#[test]
fn html_page_is_operable_with_real_key_presses() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = TempDir::new("html-keyboard");
    let (file, _) = sample_page(&dir);
    let mut page = browser::Devtools::open(chromium, &file, dir.path());
    let display = |page: &mut browser::Devtools, id: &str| {
        page.eval(&format!(
            "getComputedStyle(document.getElementById('{id}')).display"
        ))
    };
    // The first Tab reaches the skip link, which shows itself and, with Enter, moves on.
    assert_eq!(page.tab_to("a.skip", 1), Some(1));
    let left = page.eval("document.activeElement.getBoundingClientRect().left");
    assert!(
        left.as_f64().unwrap() >= 0.0,
        "the focused skip link is on screen"
    );
    page.press("Enter");
    assert_eq!(page.eval("location.hash"), "#main");
    // Tab reaches the weight switch, with a visible focus ring; the arrow key picks the next
    // weight and its graph replaces the first.
    assert!(
        page.tab_to("#w-time", 40).is_some(),
        "Tab never reached the weights"
    );
    assert_eq!(
        page.eval("getComputedStyle(document.activeElement).outlineStyle"),
        "solid"
    );
    assert_eq!(display(&mut page, "panel-time"), "block");
    assert_eq!(display(&mut page, "panel-calls"), "none");
    page.press("ArrowRight");
    assert_eq!(page.eval("document.activeElement.id"), "w-calls");
    assert_eq!(display(&mut page, "panel-calls"), "block");
    assert_eq!(display(&mut page, "panel-time"), "none");
    // Tab leaves the group for the visible graph's table, which Enter opens and Space closes.
    assert!(page.tab_to("#panel-calls summary", 5).is_some());
    let open = "document.activeElement.parentElement.open";
    assert_eq!(page.eval(open), false);
    page.press("Enter");
    assert_eq!(page.eval(open), true);
    page.press(" ");
    assert_eq!(page.eval(open), false);
}

/// The CPU and off-CPU flame graphs of a profile with thread-state samples, and the search box:
/// reached with Tab, typing a function's name outlines its frames and says how many; Escape
/// clears it.
#[test]
fn search_box_highlights_a_function_from_the_keyboard() {
    let dir = TempDir::new("html-search");
    let file = dir.join("sampled.html");
    let html = render(Path::new("tests/golden/sampled.prof"), &file);
    for id in ["cpu", "offcpu"] {
        let panel = html
            .split(&format!("id=\"panel-{id}\""))
            .nth(1)
            .expect("a panel");
        let panel = &panel[..panel.find("</div>").unwrap()];
        assert!(panel.contains("<svg class=\"flame\""), "{id}: no graph");
    }
    let Some(chromium) = chromium() else {
        return;
    };
    let mut page = browser::Devtools::open(chromium, &file, dir.path());
    assert!(
        page.tab_to("#flame-search", 40).is_some(),
        "Tab never reached the search box"
    );
    page.type_text("work+0x");
    let hits = page.eval("document.querySelectorAll('svg.flame g.hit').length");
    assert!(hits.as_u64().unwrap() > 0, "no frame outlined");
    let said = page.eval("document.getElementById('flame-hits').textContent");
    assert_eq!(said, format!("{} frames match", hits.as_u64().unwrap()));
    page.press("Escape");
    assert_eq!(
        page.eval("document.querySelectorAll('svg.flame g.hit').length"),
        0
    );
    assert_eq!(
        page.eval("document.getElementById('flame-search').value"),
        ""
    );
}
