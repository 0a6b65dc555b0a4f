//! Metaspace pictures: one column per commit granule, coloured by the
//! level of the chunk covering it, full colour in use, pale free, grey
//! untouched.

use super::charts::SIZE;
use super::data::SpaceImage;
use plotters::prelude::*;

/// Height of the picture band.
const BAND: i32 = 60;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing failed: {e:?}")
}

/// The colour of a map letter: `(colour, in use)`, `None` untouched. Each
/// level has its own hue, from red (root chunks) round to violet.
fn colour(c: char) -> Option<(HSLColor, bool)> {
    if !c.is_ascii_alphabetic() {
        return None;
    }
    let level = f64::from(c.to_ascii_uppercase() as u8 - b'A');
    Some((HSLColor(level / 15.0, 0.7, 0.45), c.is_ascii_uppercase()))
}

/// The picture of `image` as SVG, titled `title`.
pub(crate) fn draw(title: &str, image: &SpaceImage) -> Result<String, String> {
    let cells: Vec<char> = image.cells.chars().collect();
    let n = cells.len().max(1) as i32;
    // Columns at least 1 px wide, the picture about as wide as a chart.
    let col = ((SIZE.0 as i32 - 40) / n).max(1);
    let width = (n * col + 40) as u32;
    let legend_rows = image.legend.len().div_ceil(6) as i32;
    let height = (40 + BAND + 30 + 22 * legend_rows) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let text = ("sans-serif", 16).into_font().color(&BLACK);
        root.draw(&Text::new(title.to_string(), (20, 8), text.clone()))
            .map_err(err)?;
        let top = 34;
        for (i, &c) in cells.iter().enumerate() {
            let x = 20 + i as i32 * col;
            let style = match colour(c) {
                None => RGBColor(225, 225, 225).mix(1.0).filled(),
                Some((rgb, true)) => rgb.mix(1.0).filled(),
                Some((rgb, false)) => rgb.mix(0.3).filled(),
            };
            root.draw(&Rectangle::new([(x, top), (x + col, top + BAND)], style))
                .map_err(err)?;
        }
        let small = ("sans-serif", 13).into_font().color(&BLACK);
        let used = cells.iter().filter(|c| c.is_ascii_uppercase()).count();
        let free = cells.iter().filter(|c| c.is_ascii_lowercase()).count();
        let caption = format!(
            "{} granules of {} KiB: {used} in use, {free} free, {} untouched (per level: left swatch in use, right free)",
            cells.len(),
            image.granule_bytes >> 10,
            cells.len() - used - free
        );
        root.draw(&Text::new(caption, (20, top + BAND + 8), small.clone()))
            .map_err(err)?;
        for (k, (letter, size)) in image.legend.iter().enumerate() {
            let (rgb, _) = colour(*letter).unwrap_or((HSLColor(0.0, 0.0, 0.0), true));
            let x = 20 + (k as i32 % 6) * 140;
            let y = top + BAND + 30 + (k as i32 / 6) * 22;
            root.draw(&Rectangle::new([(x, y), (x + 14, y + 14)], rgb.filled()))
                .map_err(err)?;
            root.draw(&Rectangle::new(
                [(x + 16, y), (x + 30, y + 14)],
                rgb.mix(0.3).filled(),
            ))
            .map_err(err)?;
            let label = if *size >= 1 << 20 {
                format!("{letter}: {} MiB", size >> 20)
            } else {
                format!("{letter}: {} KiB", size >> 10)
            };
            root.draw(&Text::new(label, (x + 36, y), small.clone()))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}
