//! An SVG flame graph from folded stacks (`root;...;leaf` with values), drawn root at the bottom.
//! Static: each frame is a rectangle with its name (when it fits) and a tooltip.

use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Default)]
struct Node {
    value: u64,
    children: BTreeMap<String, Node>,
}

const WIDTH: f64 = 1200.0;
const ROW: f64 = 17.0;

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn depth(n: &Node) -> usize {
    n.children.values().map(|c| 1 + depth(c)).max().unwrap_or(0)
}

/// A warm colour from the name, stable between renders.
fn colour(name: &str) -> String {
    let h = name
        .bytes()
        .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
    let hue = 10 + h % 45;
    let light = 55 + (h >> 8) % 15;
    format!("hsl({hue},85%,{light}%)")
}

/// The SVG of `stacks`; `unit` formats a value for the tooltips.
pub fn svg(stacks: &BTreeMap<String, u64>, unit: fn(u64) -> String) -> String {
    let mut root = Node::default();
    for (line, &value) in stacks {
        root.value += value;
        let mut node = &mut root;
        for frame in line.split(';') {
            node = node.children.entry(frame.to_string()).or_default();
            node.value += value;
        }
    }
    let rows = depth(&root).max(1);
    let height = rows as f64 * ROW + 4.0;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="flame" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" aria-label="flame graph">"#
    );
    if root.value == 0 {
        out.push_str("</svg>");
        return out;
    }
    let scale = WIDTH / root.value as f64;
    let mut stack: Vec<(&Node, f64, usize)> = vec![(&root, 0.0, 0)];
    while let Some((node, x0, level)) = stack.pop() {
        let mut x = x0;
        for (name, child) in &node.children {
            let w = child.value as f64 * scale;
            let y = height - (level + 1) as f64 * ROW - 2.0;
            let share = 100.0 * child.value as f64 / root.value as f64;
            let title = format!("{name}: {} ({share:.1}%)", unit(child.value));
            let _ = write!(
                out,
                r#"<g><title>{}</title><rect x="{x:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" rx="2" fill="{}"/>"#,
                escape(&title),
                (w - 0.5).max(0.1),
                ROW - 1.0,
                colour(name)
            );
            let chars = ((w - 6.0) / 7.0).floor();
            if chars >= 3.0 {
                let chars = chars as usize;
                let label: String = if name.chars().count() > chars {
                    let mut s: String = name.chars().take(chars.saturating_sub(2)).collect();
                    s.push_str("..");
                    s
                } else {
                    name.clone()
                };
                let _ = write!(
                    out,
                    r#"<text x="{:.2}" y="{:.1}">{}</text>"#,
                    x + 3.0,
                    y + ROW - 5.0,
                    escape(&label)
                );
            }
            out.push_str("</g>");
            stack.push((child, x, level + 1));
            x += w;
        }
    }
    out.push_str("</svg>");
    out
}
