//! Chart kinds drawn with `plotters` into SVG strings: lines over time,
//! stacked areas, stacked bars per collection, a histogram.

use plotters::prelude::*;

/// Chart size in SVG pixels.
pub(crate) const SIZE: (u32, u32) = (900, 320);

/// The palette the series cycle through.
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// How far above the largest value the y axis reaches with `entries`
/// legend entries: room for the legend in the upper left, above the data.
fn headroom(entries: usize) -> f64 {
    1.2 + 0.12 * entries as f64
}

/// A named series of points.
pub(crate) struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
    /// A marker per point (sparse series: one point per collection, so
    /// that a run with a single collection still shows it).
    pub(crate) marked: bool,
}

/// Axis ranges covering every point (never empty).
fn bounds<'a>(points: impl Iterator<Item = &'a (f64, f64)>, entries: usize) -> (f64, f64, f64) {
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    (
        x0,
        x1,
        if y1 <= 0.0 {
            1.0
        } else {
            y1 * headroom(entries)
        },
    )
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing failed: {e:?}")
}

/// The frame every x/y chart of the page shares: white ground, caption,
/// margins, label areas, a light mesh with the axis descriptions.
fn framed<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    (x_desc, x): (&str, std::ops::Range<f64>),
    (y_desc, y): (&str, std::ops::Range<f64>),
) -> Result<
    ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    String,
> {
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// Lines (or, with `area`, areas stacked in order) of `series` over x.
pub(crate) fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    stacked_area: bool,
) -> Result<String, String> {
    // Stacking: each series' y on top of those before it (same x samples).
    let drawn: Vec<Series> = if stacked_area {
        let mut acc: Vec<(f64, f64)> = Vec::new();
        series
            .iter()
            .map(|s| {
                if acc.len() != s.points.len() {
                    acc = s.points.iter().map(|&(x, _)| (x, 0.0)).collect();
                }
                for (a, p) in acc.iter_mut().zip(&s.points) {
                    a.1 += p.1;
                }
                Series {
                    name: s.name.clone(),
                    points: acc.clone(),
                    marked: false,
                }
            })
            .collect()
    } else {
        series
            .iter()
            .map(|s| Series {
                name: s.name.clone(),
                points: s.points.clone(),
                marked: s.marked,
            })
            .collect()
    };
    let (x0, x1, y1) = bounds(drawn.iter().flat_map(|s| s.points.iter()), drawn.len());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let mut chart = framed(&root, title, (x_desc, x0..x1), (y_desc, 0.0..y1))?;
        // Stacked areas are drawn top first so lower ones stay visible.
        let order: Vec<usize> = if stacked_area {
            (0..drawn.len()).rev().collect()
        } else {
            (0..drawn.len()).collect()
        };
        for i in order {
            let s = &drawn[i];
            let color = PALETTE[i % PALETTE.len()];
            if stacked_area {
                chart
                    .draw_series(
                        AreaSeries::new(s.points.iter().copied(), 0.0, color.mix(0.6))
                            .border_style(color),
                    )
                    .map_err(err)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.mix(0.6).filled())
                    });
            } else {
                chart
                    .draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(err)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                    });
                if s.marked {
                    chart
                        .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(err)?;
                }
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One stacked bar per x (collection number): `parts` gives each bar's
/// segments, named by `names`.
pub(crate) fn stacked_bars(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    names: &[&str],
    bars: &[(f64, Vec<f64>)],
) -> Result<String, String> {
    let x0 = bars.first().map_or(0.0, |b| b.0) - 0.5;
    let x1 = bars.last().map_or(1.0, |b| b.0) + 0.5;
    let y1 = bars
        .iter()
        .map(|(_, p)| p.iter().sum::<f64>())
        .fold(0.0f64, f64::max);
    let y1 = if y1 <= 0.0 {
        1.0
    } else {
        y1 * headroom(names.len())
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let mut chart = framed(&root, title, (x_desc, x0..x1), (y_desc, 0.0..y1))?;
        for (k, name) in names.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            let rects = bars.iter().map(move |(x, parts)| {
                let below: f64 = parts[..k].iter().sum();
                Rectangle::new(
                    [(x - 0.4, below), (x + 0.4, below + parts[k])],
                    color.filled(),
                )
            });
            chart
                .draw_series(rects)
                .map_err(err)?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A histogram of `values` in `bins` equal bins from 0 to the largest.
pub(crate) fn histogram(
    title: &str,
    x_desc: &str,
    values: &[f64],
    bins: usize,
) -> Result<String, String> {
    let max = values.iter().copied().fold(0.0f64, f64::max);
    let width = if max <= 0.0 { 1.0 } else { max / bins as f64 };
    let mut counts = vec![0u32; bins];
    for v in values {
        counts[((v / width) as usize).min(bins - 1)] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(0).max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..width * bins as f64, 0u32..top + top / 10 + 1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("collections")
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        let color = PALETTE[0];
        chart
            .draw_series(counts.iter().enumerate().map(|(i, &n)| {
                let x = i as f64 * width;
                Rectangle::new([(x, 0), (x + width * 0.95, n)], color.filled())
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}
