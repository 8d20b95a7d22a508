//! Test support that reads every view: compiled for the unit tests and the fuzz targets only
//! (`cfg(test)`, `cfg(fuzzing)`), so that the library's model layers never import a view. The
//! policies the integration tests share (`in_ci`, `have`) are in `util::testing`.

use crate::export::{Format, Options, Weight, exporter};
use crate::model::Model;
use crate::util::Style;

/// Renders every view of a model (the JSON and text reports, each export, the html page, a diff
/// with itself), as the fuzz targets do: none may panic, whatever the profile held. Returns the
/// total size of what was rendered.
pub fn render_every_view(a: &Model) -> usize {
    let style = Style { enabled: false };
    let mut size = crate::model::json::to_string(std::slice::from_ref(a))
        .expect("the report serializes")
        .len();
    size += crate::report::render_text(a, style, true).len();
    for format in [
        Format::Collapsed,
        Format::Json,
        Format::Chrome,
        Format::Pprof,
    ] {
        for weight in [Weight::Calls, Weight::Bytes, Weight::Time, Weight::LockWait] {
            let mut out = Vec::new();
            exporter(format)
                .write(a, &Options { weight }, &mut out)
                .expect("export into memory");
            size += out.len();
        }
    }
    size += crate::html::render(a).len();
    let d = crate::diff::compare(a, a, 10);
    size += crate::diff::render_text(&d, style).len();
    size += serde_json::to_string(&crate::diff::to_json(&d))
        .expect("the diff serializes")
        .len();
    size
}

#[cfg(test)]
mod tests {
    /// The fuzz targets' seeds (fuzz/seeds: real profiles, anonymized) and the inputs the fuzzers
    /// found crashing (fuzz/regressions, one file each), replayed on stable Rust: each file whole and
    /// cut every 997 bytes, with its checksums made valid, through the reader and every view; no
    /// model breaks an invariant (model::invariants).
    #[test]
    fn fuzz_seeds_and_regressions_read_and_render_without_panicking() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut files: Vec<std::path::PathBuf> = ["seeds", "regressions"]
            .iter()
            .filter_map(|d| std::fs::read_dir(root.join(d)).ok())
            .flatten()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(files.len() >= 5, "fuzz/seeds holds the seed corpus");
        let mut rendered = 0;
        for file in &files {
            let whole = std::fs::read(file).unwrap();
            for len in (0..whole.len()).step_by(997).chain([whole.len()]) {
                let mut bytes = whole[..len].to_vec();
                crate::profile::fix_checksums(&mut bytes);
                if let Ok(p) = crate::profile::parse(&bytes) {
                    let a = crate::model::Model::of(
                        p,
                        file.display().to_string(),
                        crate::analysis::Options {
                            read_modules: false,
                        },
                    );
                    let broken = crate::model::invariants::violations(&a);
                    assert!(
                        broken.is_empty(),
                        "{} cut at {len}: {broken:?}",
                        file.display()
                    );
                    rendered += super::render_every_view(&a);
                }
            }
        }
        assert!(rendered > 0);
    }
}
