//! `stallscope html` on tests/golden/sample.prof: a self-contained page (nothing fetched), with
//! the overview, thread bars, flame graph, histograms and lock table; and, when chromium is
//! installed, a headless screenshot of it.

use std::path::Path;
use std::process::Command;

fn render(dir: &Path) -> (std::path::PathBuf, String) {
    let out_file = dir.join("sample.html");
    let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(["html", "-o"])
        .arg(&out_file)
        .arg("tests/golden/sample.prof")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&out_file).unwrap();
    (out_file, html)
}

#[test]
fn html_page_is_self_contained_and_complete() {
    let dir = std::env::temp_dir().join(format!("stallscope-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (file, html) = render(&dir);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    // Nothing fetched: no external resource (the SVG namespace is a name, not a fetch).
    for bad in ["src=", "href=", "@import", "url(", "<link", "<script src"] {
        assert!(!html.contains(bad), "page references a resource: {bad}");
    }
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    for needle in [
        "prefers-color-scheme: dark",
        "<svg class=\"flame\"",
        "class=\"bar\"",
        "Request sizes",
        "Latency of malloc",
        "<h2>Locks</h2>",
        "mutex",
        "<h2>Phases</h2>",
        "build",
        "work+0x",
        "malloc",
    ] {
        assert!(html.contains(needle), "no `{needle}` in the page");
    }
    // Three threads, each with a bar.
    assert_eq!(html.matches("<div class=\"bar\">").count(), 3);

    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok());
    let Some(chromium) = chromium else {
        println!(
            "SKIPPED: chromium is not installed (apt-get install chromium); no screenshot taken"
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let shot = dir.join("shot.png");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1280,2400",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", file.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    assert!(
        png.len() > 20_000,
        "screenshot of {} bytes: blank page?",
        png.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
