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
