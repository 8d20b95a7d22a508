//! An SVG flame graph from folded stacks (`root;...;leaf` with values), drawn root at the bottom,
//! and a table of the heaviest stacks for keyboard and screen-reader users.
//!
//! Hand-written rather than the inferno crate's SVG, after evaluating it: inferno writes a
//! standalone SVG document with an embedded script (zoom and search, driven by mouse clicks, with
//! document-wide element ids that collide when four graphs share a page), fixed light colours
//! and background (no dark scheme), and no keyboard access to frames; embedding it would mean
//! stripping its prolog and script, and it would add a dependency tree (quick-xml, rgb,
//! str_stack, num-format, ...). What the page needs of it — rectangles, `<title>` tooltips,
//! merging of frames too narrow to see — is the ~100 lines below.
//!
//! Frames narrower than `MIN_SHARE` (0.1%) of the whole are merged, per parent, into one grey
//! "[n smaller frames]" rectangle (drawn only if the merge itself is wide enough) and their
//! subtrees are not drawn: at most 1/`MIN_SHARE` rectangles per level, however many stacks, and
//! at most `MAX_FRAMES` in all (the threshold rises for deep graphs).

use crate::util::escape;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// The rest of one stack below a frame (`frame;frame;...;leaf`, empty when the stack ends
/// there) and its value.
type Suffix<'a> = (&'a str, u64);

const WIDTH: f64 = 1200.0;
const ROW: f64 = 17.0;
/// Narrower frames (a share of the root) are merged: 0.1% is 1.2 of the 1200 units.
const MIN_SHARE: f64 = 0.001;
/// The colour of merged frames.
const MERGED_FILL: (u32, u32, u32) = (0, 0, 78);
/// The text colour on every frame; `tests::text_on_every_fill_is_readable` checks its contrast.
pub const TEXT: (u8, u8, u8) = (0x1d, 0x1f, 0x21);

/// A warm colour (hue, saturation %, lightness %) from the name, stable between renders; light
/// enough for dark text in either colour scheme.
fn fill(name: &str) -> (u32, u32, u32) {
    let h = name
        .bytes()
        .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
    (10 + h % 45, 85, 62 + (h >> 8) % 14)
}

/// What one rectangle shows: a frame with the stacks under it (`None` for merged frames, whose
/// children are not drawn).
struct Frame<'a> {
    name: std::borrow::Cow<'a, str>,
    value: u64,
    fill: (u32, u32, u32),
    below: Option<Vec<Suffix<'a>>>,
}

/// The frames to draw directly above stacks `suffixes`, by name: those at least `min` wide, then
/// the rest merged into one. Only drawn frames are ever grouped further, so the work is bounded
/// by the stacks under visible frames, not by the size of the whole tree.
fn children<'a>(suffixes: &[Suffix<'a>], min: f64) -> Vec<Frame<'a>> {
    let mut groups: HashMap<&'a str, (u64, Vec<Suffix<'a>>)> = HashMap::new();
    for &(suffix, value) in suffixes {
        if suffix.is_empty() {
            continue;
        }
        let (frame, rest) = suffix.split_once(';').unwrap_or((suffix, ""));
        let group = groups.entry(frame).or_default();
        group.0 += value;
        group.1.push((rest, value));
    }
    let mut groups: Vec<_> = groups.into_iter().collect();
    groups.sort_unstable_by_key(|g| g.0);
    let (mut merged, mut merged_count) = (0u64, 0usize);
    let mut frames = Vec::new();
    for (name, (value, below)) in groups {
        if value as f64 >= min {
            frames.push(Frame {
                name: name.into(),
                value,
                fill: fill(name),
                below: Some(below),
            });
        } else {
            merged += value;
            merged_count += 1;
        }
    }
    if merged > 0 && merged as f64 >= min {
        frames.push(Frame {
            name: format!("[{merged_count} smaller frames]").into(),
            value: merged,
            fill: MERGED_FILL,
            below: None,
        });
    }
    frames
}

/// At most this many rectangles per graph: when the frames of `MIN_SHARE` would be more (deep
/// stacks each just over the threshold), the threshold doubles until they fit.
pub const MAX_FRAMES: usize = 2500;

/// The SVG of `stacks`; `unit` formats a value for the tooltips, `what` names the weight for
/// screen readers.
pub fn svg(stacks: &BTreeMap<String, u64>, unit: fn(u64) -> String, what: &str) -> String {
    let total: u64 = stacks.values().sum();
    let all: Vec<Suffix<'_>> = stacks.iter().map(|(s, &v)| (s.as_str(), v)).collect();
    let mut min = total as f64 * MIN_SHARE;
    let (body, rows) = loop {
        match draw(&all, total, min, unit) {
            Some(drawn) => break drawn,
            None => min *= 2.0,
        }
    };
    let height = rows.max(1) as f64 * ROW + 2.0;
    // Labels inherit the text colour from the inner group; rectangles have their own fill.
    format!(
        r##"<svg class="flame" xmlns="http://www.w3.org/2000/svg" viewBox="0 {:.0} {WIDTH} {height}" width="100%" role="img" aria-label="flame graph of {}; the table below lists the heaviest stacks"><g fill="#{:02x}{:02x}{:02x}">{body}</g></svg>"##,
        -height,
        escape(what),
        TEXT.0,
        TEXT.1,
        TEXT.2
    )
}

/// The frames' elements and the number of rows, or `None` past `MAX_FRAMES` rectangles.
fn draw(
    all: &[Suffix<'_>],
    total: u64,
    min: f64,
    unit: fn(u64) -> String,
) -> Option<(String, usize)> {
    let scale = WIDTH / total.max(1) as f64;
    // Rows go upwards from y = 0 (root at the bottom), so that the height, known only once
    // drawn, sets the viewBox alone.
    let mut body = String::new();
    let (mut rows, mut drawn) = (0, 0);
    let mut pending: Vec<(Vec<Suffix<'_>>, f64, usize)> = vec![(all.to_vec(), 0.0, 0)];
    while let Some((suffixes, x0, level)) = pending.pop() {
        let mut x = x0;
        for frame in children(&suffixes, min) {
            drawn += 1;
            if drawn > MAX_FRAMES {
                return None;
            }
            rows = rows.max(level + 1);
            let w = frame.value as f64 * scale;
            let y = -((level + 1) as f64) * ROW;
            let share = 100.0 * frame.value as f64 / total as f64;
            let title = format!("{}: {} ({share:.1}%)", frame.name, unit(frame.value));
            let (hue, sat, light) = frame.fill;
            let _ = write!(
                body,
                r#"<g><title>{}</title><rect x="{x:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" rx="2" fill="hsl({hue},{sat}%,{light}%)"/>"#,
                escape(&title),
                (w - 0.5).max(0.1),
                ROW - 1.0,
            );
            let chars = ((w - 6.0) / 7.0).floor();
            if chars >= 3.0 {
                let chars = chars as usize;
                let label: String = if frame.name.chars().count() > chars {
                    let mut s: String = frame.name.chars().take(chars.saturating_sub(2)).collect();
                    s.push_str("..");
                    s
                } else {
                    frame.name.to_string()
                };
                let _ = write!(
                    body,
                    r#"<text x="{:.2}" y="{:.1}">{}</text>"#,
                    x + 3.0,
                    y + ROW - 5.0,
                    escape(&label)
                );
            }
            body.push_str("</g>");
            if let Some(below) = frame.below {
                pending.push((below, x, level + 1));
            }
            x += w;
        }
    }
    Some((body, rows))
}

/// Frames of a stack shown in the table, innermost first.
const TABLE_FRAMES: usize = 5;

/// The `n` heaviest stacks as a table inside a `<details>` (operable with Enter or Space): the
/// flame graph's content for those who cannot point at its rectangles.
pub fn top_table(stacks: &BTreeMap<String, u64>, unit: fn(u64) -> String, n: usize) -> String {
    let total: u64 = stacks.values().sum();
    let mut heaviest: Vec<(&String, u64)> = stacks.iter().map(|(s, &v)| (s, v)).collect();
    let order = |a: &(&String, u64), b: &(&String, u64)| b.1.cmp(&a.1).then(a.0.cmp(b.0));
    // Only the first n need sorting: a selection is linear in the number of stacks.
    if heaviest.len() > n && n > 0 {
        heaviest.select_nth_unstable_by(n - 1, order);
    }
    heaviest.truncate(n);
    heaviest.sort_by(order);
    let mut out = format!(
        "<details><summary>The {} heaviest stacks as a table</summary><table><tr><th>share</th><th>value</th><th class=\"l\">stack, innermost frame first</th></tr>",
        heaviest.len()
    );
    for (stack, value) in heaviest {
        let frames: Vec<&str> = stack.rsplit(';').collect();
        let mut shown = frames[..frames.len().min(TABLE_FRAMES)].join(" ← ");
        if frames.len() > TABLE_FRAMES {
            shown.push_str(&format!(" ← … ({} more)", frames.len() - TABLE_FRAMES));
        }
        let _ = write!(
            out,
            "<tr><td>{:.1}%</td><td>{}</td><td class=\"l\"><code>{}</code></td></tr>",
            100.0 * value as f64 / total.max(1) as f64,
            escape(&unit(value)),
            escape(&shown)
        );
    }
    out.push_str("</table></details>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::tests::{luminance, rgb};

    fn count(n: u64) -> String {
        n.to_string()
    }

    /// WCAG AA for normal text is 4.5:1; frame labels are the same dark colour in both schemes
    /// (the frame, not the page, is their background), so one check covers both.
    #[test]
    fn text_on_every_fill_is_readable() {
        let text = luminance([TEXT.0, TEXT.1, TEXT.2].map(|v| v as f64 / 255.0));
        let mut fills = vec![MERGED_FILL];
        for hue in 10..55 {
            for light in 62..76 {
                fills.push((hue, 85, light));
            }
        }
        for f in fills {
            let contrast = (luminance(rgb(f)) + 0.05) / (text + 0.05);
            assert!(contrast >= 4.5, "contrast {contrast:.2} on hsl{f:?}");
        }
        // And `fill` stays within that range.
        for name in ["malloc", "main", "x", "std::vector<int>::push_back", ""] {
            let (h, _, l) = fill(name);
            assert!((10..55).contains(&h) && (62..76).contains(&l));
        }
    }

    #[test]
    fn frames_are_titled_and_escaped() {
        let stacks = BTreeMap::from([
            ("main;work<int>;malloc".to_string(), 30),
            ("main;other;free".to_string(), 10),
        ]);
        let svg = svg(&stacks, count, "calls");
        assert!(svg.contains("<title>work&lt;int&gt;: 30 (75.0%)</title>"));
        assert!(svg.contains("<title>main: 40 (100.0%)</title>"));
        assert_eq!(svg.matches("<rect").count(), 5);
        let table = top_table(&stacks, count, 10);
        assert!(table.contains("malloc ← work&lt;int&gt; ← main"));
        assert!(table.find("75.0%") < table.find("25.0%"), "heaviest first");
    }

    /// A long run's profile: 50 000 distinct stacks, 24 frames deep, most of them tiny.
    fn many_stacks() -> BTreeMap<String, u64> {
        let mut state = 0x9e3779b97f4a7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..50_000)
            .map(|i| {
                let frames: Vec<String> = (0..24)
                    .map(|d| format!("module::function_{}_{}", d, next() % (3 + d as u64 * 4)))
                    .collect();
                (
                    format!("{};malloc", frames.join(";")),
                    1 + (i % 97) * next() % 1000,
                )
            })
            .collect()
    }

    #[test]
    fn tiny_frames_are_merged_so_the_svg_stays_small() {
        let stacks = many_stacks();
        let started = std::time::Instant::now();
        let svg = svg(&stacks, count, "calls");
        let elapsed = started.elapsed();
        let table = top_table(&stacks, count, 20);
        let with_table = started.elapsed();
        let rects = svg.matches("<rect").count();
        // Without merging there would be ~50 000 × 20 rectangles.
        assert!(rects <= MAX_FRAMES, "{rects} rectangles");
        assert!(svg.contains("smaller frames]"), "tiny frames merged");
        assert!(svg.len() < 2_000_000, "{} bytes", svg.len());
        // Figures for docs/EXPORT.md (not asserted: the machine is shared).
        eprintln!(
            "50 000 stacks: {rects} rectangles, {} bytes of SVG in {:.0} ms; with the table ({} bytes) {:.0} ms",
            svg.len(),
            elapsed.as_secs_f64() * 1e3,
            table.len(),
            with_table.as_secs_f64() * 1e3
        );
    }

    #[test]
    fn deep_graphs_of_frames_just_over_the_threshold_stay_within_the_budget() {
        // 800 stacks of equal weight (each 0.125%, over the 0.1% threshold), 40 distinct frames
        // deep: 32 000 frames at the threshold, so it rises until at most MAX_FRAMES are drawn.
        let stacks: BTreeMap<String, u64> = (0..800)
            .map(|i| {
                let frames: Vec<String> = (0..40).map(|d| format!("f{i}_{d}")).collect();
                (frames.join(";"), 1)
            })
            .collect();
        let svg = svg(&stacks, count, "calls");
        let rects = svg.matches("<rect").count();
        assert!(rects <= MAX_FRAMES && rects > 0, "{rects} rectangles");
        assert!(
            svg.contains("[800 smaller frames]"),
            "all merged at the root"
        );
    }
}
