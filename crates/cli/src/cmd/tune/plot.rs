//! The plots of `tune`: precision, recall and F1 curves and the distance and Jaccard
//! histograms of duplicates and non-duplicates, as PNG or SVG.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, bail};
use neardup::tune::{Cell, Grid, LabelledPair};

/// A curve of the plots: its legend, colour and the score it draws.
type Series = (&'static str, plotters::style::RGBColor, fn(&Cell) -> f64);

/// What the plots show.
pub(crate) struct PlotData<'a> {
    pub(crate) grid: &'a Grid,
    /// The recommended radius (a black line).
    pub(crate) max_distance: u32,
    /// The recommended threshold (a black line).
    pub(crate) min_jaccard: f64,
    pub(crate) pairs: &'a [LabelledPair],
    /// The thresholds in use, drawn as an orange line where given.
    pub(crate) current: Option<(u32, f64)>,
}

pub(super) enum PlotFormat {
    Png,
    Svg,
}

pub(super) fn plot_format(path: &Path) -> anyhow::Result<PlotFormat> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("png") => Ok(PlotFormat::Png),
        Some("svg") => Ok(PlotFormat::Svg),
        _ => bail!(
            "--plot {}: the file name must end in .png or .svg",
            path.display()
        ),
    }
}

/// Registers a TrueType font with plotters once; false when none is found (plots are then
/// drawn without text). `NEARDUP_FONT=none` forces that.
fn font_available() -> bool {
    static FONT: OnceLock<bool> = OnceLock::new();
    *FONT.get_or_init(|| {
        let Some(bytes) = find_font() else {
            eprintln!(
                "neardup: no TrueType font found (set NEARDUP_FONT=FILE.ttf): plots are drawn without text"
            );
            return false;
        };
        // plotters keeps fonts as 'static references; one font for the process lifetime.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, bytes)
            .is_ok()
    })
}

fn find_font() -> Option<Vec<u8>> {
    if let Some(path) = std::env::var_os("NEARDUP_FONT") {
        if path == "none" {
            return None;
        }
        return std::fs::read(&path).ok();
    }
    const KNOWN: [&str; 5] = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/Library/Fonts/Arial.ttf",
    ];
    for path in KNOWN {
        if let Ok(bytes) = std::fs::read(path) {
            return Some(bytes);
        }
    }
    let mut stack = vec![PathBuf::from("/usr/share/fonts")];
    let mut found: Vec<PathBuf> = Vec::new();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("ttf")) {
                found.push(p);
            }
        }
    }
    found.sort();
    found.iter().find_map(|p| std::fs::read(p).ok())
}

pub(super) fn plot(path: &Path, data: &PlotData<'_>) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let text = font_available();
    let size = (1200, 900);
    match plot_format(path)? {
        PlotFormat::Png => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            draw(&root, data, text)?;
            root.present().map_err(|e| anyhow!("{e}"))?;
        }
        PlotFormat::Svg => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            draw(&root, data, text)?;
            root.present().map_err(|e| anyhow!("{e}"))?;
        }
    }
    Ok(())
}

/// The plots as an SVG document of `size` pixels.
pub(crate) fn svg(data: &PlotData<'_>, size: (u32, u32)) -> anyhow::Result<String> {
    use plotters::prelude::*;
    let text = font_available();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        draw(&root, data, text)?;
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(out)
}

/// Four panels: precision/recall/F1 by radius and by threshold, and the distance and
/// Jaccard histograms of duplicates against non-duplicates (each as a share of its class).
fn draw<DB: plotters::prelude::DrawingBackend>(
    root: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    data: &PlotData<'_>,
    text: bool,
) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    root.fill(&WHITE).map_err(e)?;
    let panels = root.split_evenly((2, 2));
    let blue = RGBColor(31, 119, 180);
    let red = RGBColor(214, 39, 40);
    let green = RGBColor(44, 160, 44);
    let grid = data.grid;
    let j_index = grid.jaccard_index(data.min_jaccard).unwrap_or(0);
    let kmax = grid.spec().max_distance() as f64;

    // Curves: precision, recall, F1 against an x value.
    let curves = |area: &DrawingArea<DB, plotters::coord::Shift>,
                  title: String,
                  x_desc: &str,
                  x_range: std::ops::Range<f64>,
                  cells: Vec<(f64, Cell)>,
                  chosen: f64,
                  current: Option<f64>,
                  legend: SeriesLabelPosition,
                  integer_x: bool|
     -> anyhow::Result<()> {
        let mut chart = chart_on(
            area,
            &title,
            (x_desc, "score"),
            (x_range, 0f64..1.05f64),
            integer_x,
            text,
        )?;
        let series: [Series; 3] = [
            ("precision", blue, |c| c.precision),
            ("recall", red, |c| c.recall),
            ("F1", green, |c| c.f1),
        ];
        for (label, color, get) in series {
            let points: Vec<(f64, f64)> = cells.iter().map(|(x, c)| (*x, get(c))).collect();
            let drawn = chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(e)?;
            if text {
                drawn.label(label).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            }
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(e)?;
        }
        chart
            .draw_series(LineSeries::new(
                vec![(chosen, 0.0), (chosen, 1.05)],
                BLACK.mix(0.5).stroke_width(1),
            ))
            .map_err(e)?;
        if let Some(x) = current {
            let orange = RGBColor(255, 127, 14);
            let drawn = chart
                .draw_series(LineSeries::new(
                    vec![(x, 0.0), (x, 1.05)],
                    orange.stroke_width(2),
                ))
                .map_err(e)?;
            if text {
                drawn.label("in use").legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], orange.stroke_width(2))
                });
            }
        }
        draw_legend(&mut chart, legend, text)
    };
    curves(
        &panels[0],
        format!("by max_distance, min_jaccard {:.2}", data.min_jaccard),
        "max_distance (bits)",
        -0.5..kmax + 0.5,
        grid.by_distance(j_index)
            .into_iter()
            .map(|c| (f64::from(c.max_distance), c))
            .collect(),
        f64::from(data.max_distance),
        data.current.map(|c| f64::from(c.0)),
        SeriesLabelPosition::LowerRight,
        true,
    )?;
    let js = grid.spec().min_jaccards();
    let (jlo, jhi) = (js[0], js[js.len() - 1]);
    curves(
        &panels[1],
        format!("by min_jaccard, max_distance {}", data.max_distance),
        "min_jaccard",
        jlo - 0.01..jhi + 0.01,
        grid.by_jaccard(data.max_distance)
            .into_iter()
            .map(|c| (c.min_jaccard, c))
            .collect(),
        data.min_jaccard,
        data.current.map(|c| c.1),
        SeriesLabelPosition::LowerLeft,
        false,
    )?;

    // Histograms: share of each class per bin, side by side.
    let hist = |area: &DrawingArea<DB, plotters::coord::Shift>,
                title: &str,
                x_desc: &str,
                bins: usize,
                bin_width: f64,
                bin_of: &dyn Fn(&LabelledPair) -> usize,
                chosen: f64|
     -> anyhow::Result<()> {
        let mut shares = [vec![0f64; bins], vec![0f64; bins]];
        let mut totals = [0f64; 2];
        for p in data.pairs {
            let class = usize::from(!p.duplicate);
            shares[class][bin_of(p).min(bins - 1)] += p.weight;
            totals[class] += p.weight;
        }
        for (s, t) in shares.iter_mut().zip(totals) {
            s.iter_mut().for_each(|v| *v /= t.max(f64::MIN_POSITIVE));
        }
        let top = shares
            .iter()
            .flatten()
            .copied()
            .fold(0.0, f64::max)
            .max(0.05)
            * 1.1;
        let x_max = bins as f64 * bin_width;
        let mut chart = chart_on(
            area,
            title,
            (x_desc, "share of class"),
            (0f64..x_max, 0f64..top),
            bin_width == 1.0,
            text,
        )?;
        for (class, (label, color)) in [("duplicates", blue), ("non-duplicates", red)]
            .into_iter()
            .enumerate()
        {
            let offset = class as f64 * bin_width * 0.45;
            let bars = shares[class].iter().enumerate().map(move |(i, &v)| {
                let x0 = i as f64 * bin_width + bin_width * 0.05 + offset;
                Rectangle::new(
                    [(x0, 0.0), (x0 + bin_width * 0.45, v)],
                    color.mix(0.8).filled(),
                )
            });
            let drawn = chart.draw_series(bars).map_err(e)?;
            if text {
                drawn.label(label).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled())
                });
            }
        }
        chart
            .draw_series(LineSeries::new(
                vec![(chosen, 0.0), (chosen, top)],
                BLACK.mix(0.6).stroke_width(2),
            ))
            .map_err(e)?;
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight, text)
    };
    let far = data
        .pairs
        .iter()
        .map(|p| p.scores.distance)
        .max()
        .unwrap_or(0)
        .clamp(data.max_distance + 1, 64);
    hist(
        &panels[2],
        "Hamming distance (line: recommended max_distance)",
        "distance (bits)",
        far as usize + 1,
        1.0,
        &|p| p.scores.distance as usize,
        f64::from(data.max_distance) + 1.0,
    )?;
    hist(
        &panels[3],
        "Jaccard similarity (line: recommended min_jaccard)",
        "Jaccard of shingle sets",
        20,
        0.05,
        &|p| (p.scores.jaccard * 20.0).floor() as usize,
        data.min_jaccard,
    )?;
    Ok(())
}

/// A chart of one panel: margin, and with `text` a caption and room for labels; its mesh
/// drawn, with `text` the axes described (else no labels at all), whole-number x labels
/// when `integer_x`.
fn chart_on<'a, DB: plotters::prelude::DrawingBackend>(
    area: &'a plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    (x_range, y_range): (std::ops::Range<f64>, std::ops::Range<f64>),
    integer_x: bool,
    text: bool,
) -> anyhow::Result<Chart<'a, DB>> {
    use plotters::prelude::*;
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    let mut builder = ChartBuilder::on(area);
    builder.margin(15);
    if text {
        builder
            .caption(title, ("sans-serif", 20))
            .x_label_area_size(40)
            .y_label_area_size(50);
    }
    let mut chart = builder.build_cartesian_2d(x_range, y_range).map_err(e)?;
    let mut mesh = chart.configure_mesh();
    let whole = |x: &f64| format!("{x:.0}");
    if integer_x {
        mesh.x_label_formatter(&whole);
    }
    if text {
        mesh.x_desc(x_desc).y_desc(y_desc);
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(e)?;
    Ok(chart)
}

/// A chart of the plots: real numbers on both axes.
type Chart<'a, DB> = plotters::prelude::ChartContext<
    'a,
    DB,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::types::RangedCoordf64,
    >,
>;

/// The legend of `chart` at `position`, when there is text.
fn draw_legend<'a, DB: plotters::prelude::DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    position: plotters::chart::SeriesLabelPosition,
    text: bool,
) -> anyhow::Result<()> {
    use plotters::prelude::*;
    if text {
        chart
            .configure_series_labels()
            .position(position)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
    }
    Ok(())
}
