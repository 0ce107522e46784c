// SPDX-License-Identifier: GPL-2.0
//! A dependency-free PNG line plot: RGB raster, a 3x5 pixel font, and a PNG writer using
//! stored (uncompressed) deflate blocks with CRC-32 and Adler-32.

use std::io::Write;

const W: usize = 720;
const H: usize = 480;
const COLORS: [[u8; 3]; 6] = [
    [214, 39, 40],
    [31, 119, 180],
    [44, 160, 44],
    [255, 127, 14],
    [148, 103, 189],
    [90, 90, 90],
];

struct Canvas {
    px: Vec<[u8; 3]>,
}

impl Canvas {
    fn new() -> Self {
        Canvas {
            px: vec![[255, 255, 255]; W * H],
        }
    }

    fn put(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < W && (y as usize) < H {
            self.px[y as usize * W + x as usize] = c;
        }
    }

    fn dot(&mut self, x: i64, y: i64, r: i64, c: [u8; 3]) {
        for dy in -r..=r {
            for dx in -r..=r {
                self.put(x + dx, y + dy, c);
            }
        }
    }

    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), c: [u8; 3], thick: i64) {
        let n = (x1 - x0).abs().max((y1 - y0).abs()).max(1);
        for k in 0..=n {
            let x = x0 + (x1 - x0) * k / n;
            let y = y0 + (y1 - y0) * k / n;
            self.dot(x, y, thick, c);
        }
    }

    fn text(&mut self, x: i64, y: i64, s: &str, c: [u8; 3]) {
        let scale = 2;
        let mut cx = x;
        for ch in s.chars() {
            let g = glyph(ch);
            for (row, bits) in g.iter().enumerate() {
                for col in 0..3 {
                    if bits & (4 >> col) != 0 {
                        for sy in 0..scale {
                            for sx in 0..scale {
                                self.put(cx + col * scale + sx, y + row as i64 * scale + sy, c);
                            }
                        }
                    }
                }
            }
            cx += 4 * scale;
        }
    }
}

/// 3x5 glyphs, rows top to bottom, bit 2 = left column.
fn glyph(c: char) -> [u8; 5] {
    match c.to_ascii_lowercase() {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        '.' => [0, 0, 0, 0, 2],
        ',' => [0, 0, 0, 2, 4],
        '%' => [5, 1, 2, 4, 5],
        '-' => [0, 0, 7, 0, 0],
        'a' => [2, 5, 7, 5, 5],
        'b' => [6, 5, 6, 5, 6],
        'c' => [7, 4, 4, 4, 7],
        'd' => [6, 5, 5, 5, 6],
        'e' => [7, 4, 6, 4, 7],
        'f' => [7, 4, 6, 4, 4],
        'g' => [7, 4, 5, 5, 7],
        'h' => [5, 5, 7, 5, 5],
        'i' => [7, 2, 2, 2, 7],
        'j' => [1, 1, 1, 5, 7],
        'k' => [5, 5, 6, 5, 5],
        'l' => [4, 4, 4, 4, 7],
        'm' => [5, 7, 7, 5, 5],
        'n' => [6, 5, 5, 5, 5],
        'o' => [7, 5, 5, 5, 7],
        'p' => [7, 5, 7, 4, 4],
        'q' => [7, 5, 5, 7, 1],
        'r' => [6, 5, 6, 5, 5],
        's' => [7, 4, 7, 1, 7],
        't' => [7, 2, 2, 2, 2],
        'u' => [5, 5, 5, 5, 7],
        'v' => [5, 5, 5, 5, 2],
        'w' => [5, 5, 7, 7, 5],
        'x' => [5, 5, 2, 5, 5],
        'y' => [5, 5, 2, 2, 2],
        'z' => [7, 1, 2, 4, 7],
        _ => [0; 5],
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// zlib stream of stored deflate blocks.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let mut chunks = data.chunks(65535).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xFF, 0xFF]);
    }
    while let Some(c) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = c.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(c);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
}

fn encode_png(c: &Canvas) -> Vec<u8> {
    let mut raw = Vec::with_capacity(H * (W * 3 + 1));
    for y in 0..H {
        raw.push(0);
        for x in 0..W {
            raw.extend_from_slice(&c.px[y * W + x]);
        }
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&(W as u32).to_be_bytes());
    ihdr.extend_from_slice(&(H as u32).to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &zlib_stored(&raw));
    chunk(&mut out, b"IEND", &[]);
    out
}

/// Draws `series` (name, points (loss, goodput ratio)) with a log-scaled loss axis and a
/// 0..1 goodput axis, and writes the PNG to `path`.
/// The x axis of a plot (always logarithmic).
pub(crate) struct XAxis<'a> {
    /// Label under the axis.
    pub(crate) label: &'a str,
    /// Tick labels in percent (loss rates), else as integers (QP counts).
    pub(crate) percent: bool,
}

/// The loss-rate axis.
pub(crate) const LOSS_AXIS: XAxis<'static> = XAxis {
    label: "loss rate",
    percent: true,
};

/// A plot against the loss rate.
pub(crate) fn write_png(
    path: &str,
    title: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> std::io::Result<()> {
    write_png_axis(path, title, &LOSS_AXIS, series)
}

/// A plot against `axis`.
pub(crate) fn write_png_axis(
    path: &str,
    title: &str,
    axis: &XAxis<'_>,
    series: &[(String, Vec<(f64, f64)>)],
) -> std::io::Result<()> {
    let mut c = Canvas::new();
    let (l, r, t, b) = (70i64, W as i64 - 150, 40i64, H as i64 - 50);
    let black = [0, 0, 0];
    let grey = [220, 220, 220];
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .filter(|x| *x > 0.0)
        .collect();
    let xmin = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let xmin = if axis.percent { xmin.min(1e-3) } else { xmin };
    let xmax = xs.iter().copied().fold(0.0, f64::max).max(xmin * 10.0);
    let (lx0, lx1) = (xmin.log10(), xmax.log10());
    let px = |x: f64| l + ((x.max(xmin).log10() - lx0) / (lx1 - lx0) * (r - l) as f64) as i64;
    let py = |y: f64| b - (y.clamp(0.0, 1.05) / 1.05 * (b - t) as f64) as i64;
    for k in 0..=10 {
        let y = py(k as f64 / 10.0);
        c.line((l, y), (r, y), grey, 0);
        if k % 2 == 0 {
            c.text(l - 40, y - 5, &format!("{:.1}", k as f64 / 10.0), black);
        }
    }
    // A tick at every x measured.
    let mut ticks = xs.clone();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    for x in ticks {
        c.line((px(x), t), (px(x), b), grey, 0);
        let label = if axis.percent {
            format!("{}%", x * 100.0)
        } else {
            format!("{x}")
        };
        c.text(px(x) - 16, b + 10, &label, black);
    }
    c.line((l, b), (r, b), black, 0);
    c.line((l, t), (l, b), black, 0);
    c.text(l, 12, title, black);
    c.text((l + r) / 2 - 40, H as i64 - 20, axis.label, black);
    for (k, (name, pts)) in series.iter().enumerate() {
        let col = COLORS[k % COLORS.len()];
        let mut prev: Option<(i64, i64)> = None;
        for &(x, y) in pts {
            let p = (px(x), py(y));
            if let Some(q) = prev {
                c.line(q, p, col, 1);
            }
            c.dot(p.0, p.1, 3, col);
            prev = Some(p);
        }
        let ly = t + 20 + 24 * k as i64;
        c.line((r + 15, ly + 4), (r + 45, ly + 4), col, 1);
        c.text(r + 52, ly, name, black);
    }
    let mut f = std::fs::File::create(path)?;
    f.write_all(&encode_png(&c))
}
