// SPDX-License-Identifier: GPL-2.0
//! A dependency-free PNG line plot: RGB raster, a 3x5 pixel font, and a PNG writer whose
//! deflate stream codes runs of a repeated byte with the fixed Huffman codes (RFC 1951), on
//! rows filtered against the row above, so a plot of flat colours stays a few kilobytes.

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

/// Writes deflate's bit stream: values LSB first, Huffman codes MSB first.
struct Bits {
    out: Vec<u8>,
    acc: u32,
    n: u32,
}

impl Bits {
    fn put(&mut self, v: u32, n: u32) {
        self.acc |= v << self.n;
        self.n += n;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code of `n` bits, sent from its most significant bit.
    fn code(&mut self, code: u32, n: u32) {
        self.put(code.reverse_bits() >> (32 - n), n);
    }

    /// A literal/length symbol with its fixed code (RFC 1951, 3.2.6).
    fn sym(&mut self, s: u32) {
        match s {
            0..=143 => self.code(0x30 + s, 8),
            144..=255 => self.code(0x190 + s - 144, 9),
            256..=279 => self.code(s - 256, 7),
            _ => self.code(0xc0 + s - 280, 8),
        }
    }
}

/// Base lengths of the length symbols 257..=285, and their extra bits.
const LEN_BASE: [u32; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u32; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];

/// zlib stream of one fixed-Huffman deflate block: literals, and runs of the byte before
/// them as matches at distance 1.
fn zlib_runs(data: &[u8]) -> Vec<u8> {
    let mut b = Bits {
        out: vec![0x78, 0x01],
        acc: 0,
        n: 0,
    };
    b.put(1, 1); // BFINAL
    b.put(1, 2); // BTYPE 01: fixed codes
    let mut i = 0;
    while i < data.len() {
        let run = if i == 0 {
            0
        } else {
            data[i..]
                .iter()
                .take(258)
                .take_while(|&&x| x == data[i - 1])
                .count()
        };
        if run >= 3 {
            let k = LEN_BASE
                .iter()
                .rposition(|&l| l as usize <= run)
                .unwrap_or(0);
            b.sym(257 + k as u32);
            b.put(run as u32 - LEN_BASE[k], LEN_EXTRA[k]);
            b.code(0, 5); // distance code 0: distance 1
            i += run;
        } else {
            b.sym(u32::from(data[i]));
            i += 1;
        }
    }
    b.sym(256);
    if b.n > 0 {
        b.out.push(b.acc as u8);
    }
    b.out.extend_from_slice(&adler32(data).to_be_bytes());
    b.out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
}

fn encode_png(c: &Canvas) -> Vec<u8> {
    // Each row filtered "Up" (PNG filter 2): its bytes less those of the row above, so the
    // rows that repeat the one above are zeros.
    let mut raw = Vec::with_capacity(H * (W * 3 + 1));
    for y in 0..H {
        raw.push(2);
        for x in 0..W {
            let above = if y == 0 {
                [0; 3]
            } else {
                c.px[(y - 1) * W + x]
            };
            let px = c.px[y * W + x];
            raw.extend((0..3).map(|i| px[i].wrapping_sub(above[i])));
        }
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&(W as u32).to_be_bytes());
    ihdr.extend_from_slice(&(H as u32).to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &zlib_runs(&raw));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Inflates one fixed-Huffman block whose matches are at distance 1, reading codes bit by
    /// bit as RFC 1951 defines them (independently of the writer's tables).
    fn inflate_fixed(z: &[u8]) -> Vec<u8> {
        let d = &z[2..z.len() - 4];
        let mut pos = 0usize;
        let mut bit = || {
            let b = (d[pos / 8] >> (pos % 8)) & 1;
            pos += 1;
            u32::from(b)
        };
        assert_eq!(
            (bit(), bit() | bit() << 1),
            (1, 1),
            "one final block, fixed codes"
        );
        let mut out = Vec::new();
        loop {
            // Read a code MSB first until it names a symbol of the fixed table.
            let (mut code, mut len) = (0u32, 0u32);
            let sym = loop {
                code = (code << 1) | bit();
                len += 1;
                match (len, code) {
                    (7, 0..=0x17) => break 256 + code,
                    (8, 0x30..=0xbf) => break code - 0x30,
                    (8, 0xc0..=0xc7) => break 280 + code - 0xc0,
                    (9, 0x190..=0x1ff) => break 144 + code - 0x190,
                    _ => assert!(len < 9, "no such code"),
                }
            };
            match sym {
                0..=255 => out.push(sym as u8),
                256 => break,
                _ => {
                    let k = (sym - 257) as usize;
                    let extra = (0..LEN_EXTRA[k]).fold(0, |v, i| v | bit() << i);
                    let dist = (0..5).fold(0, |v, _| (v << 1) | bit());
                    assert_eq!(dist, 0, "distance code 0 (distance 1)");
                    let last = *out.last().expect("a match after a literal");
                    out.extend(std::iter::repeat_n(last, (LEN_BASE[k] + extra) as usize));
                }
            }
        }
        assert_eq!(z[z.len() - 4..], adler32(&out).to_be_bytes());
        out
    }

    #[test]
    fn the_deflate_stream_inflates_to_its_input() {
        let mut data = vec![7u8; 1000];
        data.extend((0..=255u8).cycle().take(700));
        data.extend([0, 0, 1, 1, 1, 1, 200, 200, 200]);
        data.extend(vec![0u8; 259 + 4]);
        let z = zlib_runs(&data);
        assert!(z.len() < data.len() / 2, "{} of {}", z.len(), data.len());
        assert_eq!(inflate_fixed(&z), data);
        assert_eq!(inflate_fixed(&zlib_runs(&[])), Vec::<u8>::new());
    }
}
