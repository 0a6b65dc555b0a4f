//! `index.html`: every chart inline, no script or font from elsewhere.

use super::figures::Figure;
use std::fmt::Write as _;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The script the page runs on load: it counts the drawn elements of each
/// chart and writes the verdict into `#check` (`ok N charts` or the first
/// empty one), which the browser test reads back.
const CHECK: &str = r#"
window.addEventListener('load', function () {
  var figs = document.querySelectorAll('figure.chart');
  var bad = [];
  figs.forEach(function (f) {
    var svg = f.querySelector('svg');
    var box = svg ? svg.getBoundingClientRect() : null;
    var drawn = svg ? svg.querySelectorAll('rect, polyline, path, polygon, line').length : 0;
    if (!svg || box.width < 50 || box.height < 20 || drawn < 3) bad.push(f.id + ' (' + drawn + ' elements)');
  });
  document.getElementById('check').textContent =
    bad.length === 0 ? 'ok ' + figs.length + ' charts' : 'empty: ' + bad.join(', ');
});
"#;

/// The page for `title` with `figures`.
pub(crate) fn html(title: &str, figures: &[Figure]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{t}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em auto; max-width: 960px; color: #222; }}
figure.chart {{ margin: 1.5em 0; border: 1px solid #ddd; padding: 0.5em; }}
figure.chart svg {{ width: 100%; height: auto; display: block; }}
figcaption {{ font-size: 0.9em; color: #444; margin-top: 0.4em; }}
#check {{ font-size: 0.8em; color: #888; }}
nav a {{ margin-right: 0.8em; }}
</style></head><body>
<h1>{t}</h1>
<p>Drawn from <a href="report.json">report.json</a> (the runtime's structured GC log events and periodic samples); each chart is also a file <code>ID.svg</code> beside this page. <span id="check">not checked</span></p>
<nav>"#,
        t = escape(title)
    );
    for f in figures {
        let _ = write!(h, r##"<a href="#{}">{}</a>"##, f.id, escape(&f.title));
    }
    h.push_str("</nav>\n");
    for f in figures {
        let _ = write!(
            h,
            "<figure class=\"chart\" id=\"{}\" data-points=\"{}\">\n{}\n<figcaption><b>{}</b> ({} data points). {}</figcaption></figure>\n",
            f.id,
            f.points,
            with_view_box(&f.svg),
            escape(&f.title),
            f.points,
            escape(&f.caption)
        );
    }
    let _ = write!(h, "<script>{CHECK}</script>\n</body></html>\n");
    h
}

/// The SVG with a `viewBox` (so that CSS can scale it) and without an XML
/// declaration (it is inline).
fn with_view_box(svg: &str) -> String {
    let svg = match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    };
    if svg.contains("viewBox") {
        return svg.to_string();
    }
    let attr = |name: &str| {
        let key = format!("{name}=\"");
        let start = svg.find(&key)? + key.len();
        let end = svg[start..].find('"')? + start;
        Some(svg[start..end].to_string())
    };
    match (attr("width"), attr("height")) {
        (Some(w), Some(h)) => svg.replacen("<svg", &format!("<svg viewBox=\"0 0 {w} {h}\""), 1),
        _ => svg.to_string(),
    }
}
