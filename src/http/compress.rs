//! Content codings: what a client accepts (`Accept-Encoding`), which responses are worth
//! compressing, and in-process compression of the variants the response cache keeps.
//!
//! Levels (measured with `cargo bench --bench compress`; the figures are in
//! docs/benchmarks.md, "Compression levels"):
//! - Uncached responses (a fresh page pays this every time): gzip 1 made by ISA-L's igzip
//!   (`Igzip`: a third of libdeflate's time on a tree page for 7 % more bytes), brotli 1 and
//!   zstd 1. Higher levels cost far more time than the bytes they save are worth on a page
//!   that is sent once. Of equal q-values zstd is preferred: as cheap, up to 12 % smaller.
//! - Cached variants (the first answer keeps a cheap one; the first repeat has it remade in
//!   the background, sent to every repeat after): gzip 6, brotli 5, zstd 7 — each the knee of
//!   its curve (7–18 % fewer bytes than the cheap levels for under 1.5 ms on a 150 KB page);
//!   the next levels save at most 3 % more, the highest 5–14 % for 60–160× the time.
//! - tower-http still compresses what is not buffered (file bodies) at [`STREAM_LEVEL`].

use bytes::Bytes;
use isal_sys::igzip_lib as isal;
use std::cell::RefCell;
use std::io::Write;

/// The quality tower-http compresses file bodies with (every algorithm).
pub const STREAM_LEVEL: i32 = 1;
/// Levels of uncached buffered responses: (gzip, brotli, zstd).
pub const CHEAP: (i32, i32, i32) = (1, 1, 1);
/// Levels of the variants the response cache keeps: (gzip, brotli, zstd).
pub const STORED: (i32, i32, i32) = (6, 5, 7);

/// How hard a body is compressed: cheaply when it may be sent once (an uncached page, or a
/// kept page's first answer), at the stored levels when it is kept for repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effort {
    Cheap,
    Stored,
}

/// A content coding of a response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Coding {
    Identity,
    Gzip,
    Brotli,
    Zstd,
}

impl Coding {
    /// The `Content-Encoding` token.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Brotli => "br",
            Coding::Zstd => "zstd",
        }
    }

    /// The coding to answer with: the accepted one with the highest q-value, ties going to
    /// the cheapest to make (zstd, then gzip, then brotli; see [`Coding::rank`]). Identity
    /// when nothing we compress with is accepted.
    pub fn negotiate(accept_encoding: Option<&str>) -> Coding {
        let Some(header) = accept_encoding else {
            return Coding::Identity;
        };
        let mut best = (0u16, Coding::Identity);
        for item in header.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim();
            let coding = if name.eq_ignore_ascii_case("gzip") {
                Coding::Gzip
            } else if name.eq_ignore_ascii_case("br") {
                Coding::Brotli
            } else if name.eq_ignore_ascii_case("zstd") {
                Coding::Zstd
            } else {
                continue;
            };
            let q = parts
                .find_map(|p| {
                    let p = p.trim();
                    p.strip_prefix("q=").or_else(|| p.strip_prefix("Q="))
                })
                .map_or(Some(1000), parse_q);
            let Some(q) = q else { continue };
            if q > 0 && (q, coding.rank()) > (best.0, best.1.rank()) {
                best = (q, coding);
            }
        }
        best.1
    }

    /// Preference among accepted codings of equal q-value: the cheaper to make, the higher.
    /// Most pages are sent once (a crawler's): brotli 1 takes 1.7 times gzip 1's time for
    /// about the same bytes (the table above), and a crawl with Googlebot's `gzip, deflate,
    /// br` made 2,228–2,283 pages a second with brotli against 3,427 uncompressed. Kept
    /// variants pay for it: gzip 6 is 5 % larger than brotli 5 on the tree page (browsers
    /// that accept zstd get zstd).
    fn rank(self) -> u8 {
        match self {
            Coding::Identity => 0,
            Coding::Brotli => 1,
            Coding::Gzip => 2,
            Coding::Zstd => 3,
        }
    }

    /// `body` in this coding at the level for `effort`.
    pub fn compress(self, body: &[u8], effort: Effort) -> Bytes {
        let levels = match effort {
            Effort::Cheap => CHEAP,
            Effort::Stored => STORED,
        };
        compress_at(self, body, self.level(levels))
    }

    fn level(self, (gzip, brotli, zstd): (i32, i32, i32)) -> i32 {
        match self {
            Coding::Identity => 0,
            Coding::Gzip => gzip,
            Coding::Brotli => brotli,
            Coding::Zstd => zstd,
        }
    }
}

/// A q-value (`0`, `0.5`, `1.000`) in thousandths; `None` when malformed.
fn parse_q(text: &str) -> Option<u16> {
    let q: f32 = text.trim().parse().ok()?;
    (0.0..=1.0)
        .contains(&q)
        .then(|| (q * 1000.0).round() as u16)
}

/// Scratch space a thread keeps for compressing into, up to this many bytes.
const SCRATCH_KEPT: usize = 1 << 20;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static COMPRESSORS: RefCell<Compressors> = RefCell::default();
}

/// The gzip and zstd compressors a thread made last, with their levels: making one allocates
/// its tables (libdeflate's, about 128 KB at level 1; ISA-L's, 276 KB; a zstd context, more),
/// which cost as much as compressing a small page.
#[derive(Default)]
struct Compressors {
    igzip: Option<Igzip>,
    gzip: Option<(i32, libdeflater::Compressor)>,
    zstd: Option<(i32, zstd::bulk::Compressor<'static>)>,
}

impl Compressors {
    fn igzip(&mut self) -> &mut Igzip {
        self.igzip.get_or_insert_with(Igzip::new)
    }

    /// libdeflate's bound on the gzip of `len` bytes, from whichever compressor the thread
    /// keeps: the bound counts stored blocks, so it holds at every level, and a thread that
    /// makes ISA-L's level 1 between libdeflate's level 6 keeps its level-6 compressor.
    fn gzip_bound(&mut self, len: usize) -> usize {
        match &mut self.gzip {
            Some((_, kept)) => kept.gzip_compress_bound(len),
            None => self.gzip(1).gzip_compress_bound(len),
        }
    }

    fn gzip(&mut self, level: i32) -> &mut libdeflater::Compressor {
        let level = level.clamp(1, 12);
        if self.gzip.as_ref().is_none_or(|(kept, _)| *kept != level) {
            let lvl = libdeflater::CompressionLvl::new(level).unwrap_or_default();
            self.gzip = Some((level, libdeflater::Compressor::new(lvl)));
        }
        &mut self.gzip.as_mut().expect("made above").1
    }

    fn zstd(&mut self, level: i32) -> std::io::Result<&mut zstd::bulk::Compressor<'static>> {
        if self.zstd.as_ref().is_none_or(|(kept, _)| *kept != level) {
            self.zstd = None;
            self.zstd = Some((level, zstd::bulk::Compressor::new(level)?));
        }
        Ok(&mut self.zstd.as_mut().expect("made above").1)
    }
}

/// ISA-L's gzip at its level 1, kept by a thread with its working memory.
struct Igzip {
    // Boxed: the stream holds ISA-L's history window (the stream is about 80 KB).
    stream: Box<isal::isal_zstream>,
    level_buf: Vec<u8>,
}

impl Igzip {
    fn new() -> Igzip {
        Igzip {
            // SAFETY: the stream is plain data (numbers and pointers); all zeros is a valid
            // value, and `isal_deflate_stateless_init` sets it up before every use.
            stream: Box::new(unsafe { std::mem::zeroed() }),
            level_buf: vec![0; isal::ISAL_DEF_LVL1_DEFAULT as usize],
        }
    }

    /// `body` as a gzip member in `out`; its length, or `None` when `out` is too small or a
    /// length does not fit ISA-L's 32-bit counts.
    fn gzip_compress(&mut self, body: &[u8], out: &mut [u8]) -> Option<usize> {
        let avail_in = u32::try_from(body.len()).ok()?;
        let avail_out = u32::try_from(out.len()).ok()?;
        let stream = &mut *self.stream;
        // SAFETY: `stream` is a valid, exclusively borrowed stream.
        unsafe { isal::isal_deflate_stateless_init(stream) };
        stream.level = 1;
        stream.level_buf = self.level_buf.as_mut_ptr();
        stream.level_buf_size = self.level_buf.len() as u32;
        stream.gzip_flag = isal::IGZIP_GZIP as u16;
        stream.end_of_stream = 1;
        stream.flush = isal::NO_FLUSH as u16;
        // ISA-L only reads through `next_in`.
        stream.next_in = body.as_ptr().cast_mut();
        stream.avail_in = avail_in;
        stream.next_out = out.as_mut_ptr();
        stream.avail_out = avail_out;
        // SAFETY: the stream points at `body` and `out` with their lengths, and at its level
        // buffer with its size, all of which outlive the call; nothing keeps the pointers after.
        let status = unsafe { isal::isal_deflate_stateless(stream) };
        (status == isal::COMP_OK as i32).then_some(stream.total_out as usize)
    }
}

/// `body` compressed with `coding` at `level` (gzip: 1 is ISA-L's level 1, 2–12 libdeflate's;
/// brotli 0–11, zstd 1–22).
///
/// The output is made in the thread's scratch space, sized for any input, and copied out at
/// its own length: a compressed variant kept by the response cache holds its bytes, not an
/// allocation as large as the page (a `Bytes` made from a `Vec` keeps the `Vec`'s capacity).
pub fn compress_at(coding: Coding, body: &[u8], level: i32) -> Bytes {
    SCRATCH.with_borrow_mut(|scratch| {
        let len = compress_into(scratch, coding, body, level);
        let out = Bytes::copy_from_slice(&scratch[..len]);
        if scratch.capacity() > SCRATCH_KEPT {
            *scratch = Vec::new();
        }
        out
    })
}

/// Compresses `body` into `out` (whose bytes before are of no use); returns the length.
fn compress_into(out: &mut Vec<u8>, coding: Coding, body: &[u8], level: i32) -> usize {
    match coding {
        Coding::Identity => {
            out.clear();
            out.extend_from_slice(body);
        }
        Coding::Gzip => {
            return COMPRESSORS.with_borrow_mut(|kept| {
                let bound = kept.gzip_bound(body.len());
                if out.len() < bound {
                    out.resize(bound, 0);
                }
                // ISA-L stops short of a full buffer (it keeps to stored blocks on
                // incompressible input, but may need more room than libdeflate's bound);
                // libdeflate then does it.
                if level <= 1
                    && let Some(len) = kept.igzip().gzip_compress(body, out)
                {
                    return len;
                }
                // The bound fits any input, so this cannot run out of space.
                kept.gzip(level).gzip_compress(body, out).unwrap_or(0)
            });
        }
        Coding::Brotli => {
            out.clear();
            let quality = level.clamp(0, 11) as u32;
            let mut encoder = brotli::CompressorWriter::new(&mut *out, 16 << 10, quality, 22);
            let _ = encoder.write_all(body);
            drop(encoder);
        }
        Coding::Zstd => {
            out.clear();
            // Into the vector's spare capacity, which bounds the output.
            out.reserve(zstd::zstd_safe::compress_bound(body.len()));
            let compressed = COMPRESSORS
                .with_borrow_mut(|kept| kept.zstd(level)?.compress_to_buffer(body, &mut *out));
            if compressed.is_err() {
                out.clear();
            }
        }
    }
    out.len()
}

/// Whether a response of this type and length is worth compressing: tower-http's default
/// predicate (at least 32 bytes, not images except SVG, not event streams or gRPC) and not
/// archives or git's own files, which are compressed already.
pub fn compressible(content_type: &str, len: usize) -> bool {
    let ct = content_type.trim().to_ascii_lowercase();
    let raster_image = ct.starts_with("image/") && !ct.starts_with("image/svg+xml");
    len >= 32
        && !raster_image
        && !ct.starts_with("application/octet-stream")
        && !ct.starts_with("application/x-")
        && !ct.starts_with("application/grpc")
        && !ct.starts_with("text/event-stream")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn negotiation_follows_q_values_then_cost() {
        assert_eq!(Coding::negotiate(None), Coding::Identity);
        assert_eq!(Coding::negotiate(Some("gzip")), Coding::Gzip);
        assert_eq!(Coding::negotiate(Some("gzip, br")), Coding::Gzip);
        assert_eq!(Coding::negotiate(Some("br")), Coding::Brotli);
        assert_eq!(Coding::negotiate(Some("br, gzip;q=0.9")), Coding::Brotli);
        assert_eq!(
            Coding::negotiate(Some("gzip, deflate, br, zstd")),
            Coding::Zstd
        );
        assert_eq!(Coding::negotiate(Some("br;q=0.5, gzip")), Coding::Gzip);
        assert_eq!(Coding::negotiate(Some("gzip;q=0")), Coding::Identity);
        assert_eq!(
            Coding::negotiate(Some("identity, deflate")),
            Coding::Identity
        );
        assert_eq!(Coding::negotiate(Some("GZIP;Q=0.8")), Coding::Gzip);
    }

    fn decoded(coding: Coding, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match coding {
            Coding::Identity => out.extend_from_slice(body),
            Coding::Gzip => {
                flate2::read::GzDecoder::new(body)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Coding::Brotli => {
                brotli::Decompressor::new(body, 4096)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Coding::Zstd => out = zstd::decode_all(body).unwrap(),
        }
        out
    }

    #[test]
    fn variants_decode_to_the_original() {
        let body = Bytes::from("<tr><td>some html</td></tr>\n".repeat(500));
        let gz = Coding::Gzip.compress(&body, Effort::Stored);
        assert_eq!(decoded(Coding::Gzip, &gz), body);
        let br = Coding::Brotli.compress(&body, Effort::Stored);
        assert_eq!(decoded(Coding::Brotli, &br), body);
        let zs = Coding::Zstd.compress(&body, Effort::Stored);
        assert_eq!(decoded(Coding::Zstd, &zs), body);
        assert!(gz.len() < body.len() / 10);
    }

    #[test]
    fn a_thread_compresses_at_the_level_asked_whichever_it_used_before() {
        let body = "<tr><td class='ls-mode'>-rw-r--r--</td><td>a row</td></tr>\n".repeat(2_000);
        let mut body = body.into_bytes();
        // varied enough that the levels differ in size
        for (i, b) in body.iter_mut().enumerate().filter(|(i, _)| i % 7 == 0) {
            *b = b'a' + (i * 7919 % 26) as u8;
        }
        for coding in [Coding::Gzip, Coding::Zstd] {
            let fast = compress_at(coding, &body, 1);
            let better = compress_at(coding, &body, 9);
            let fast_again = compress_at(coding, &body, 1);
            assert!(better.len() < fast.len(), "{coding:?}");
            assert_eq!(fast_again, fast, "{coding:?}");
            assert_eq!(decoded(coding, &better), body, "{coding:?}");
        }
    }

    #[test]
    fn cheap_gzip_decodes_whatever_the_input() {
        // Incompressible bytes (ISA-L stores them, or gives way to libdeflate), nothing at
        // all, and HTML larger than ISA-L's 64 KB blocks.
        let mut noise = Vec::with_capacity(300_000);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        while noise.len() < 300_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            noise.extend_from_slice(&x.to_le_bytes());
        }
        let html = "<tr><td class='ls-mode'>-rw-r--r--</td><td>row</td></tr>\n".repeat(5_000);
        for body in [noise, Vec::new(), html.into_bytes()] {
            let gz = Coding::Gzip.compress(&body, Effort::Cheap);
            assert_eq!(decoded(Coding::Gzip, &gz), body, "{} bytes", body.len());
        }
    }

    #[test]
    fn a_variant_holds_its_own_bytes_and_nothing_of_the_one_before() {
        let large = Bytes::from("<tr><td>a large page</td></tr>\n".repeat(20_000));
        let small = Bytes::from("<p>a small one, made after it</p>\n".repeat(40));
        for coding in [Coding::Gzip, Coding::Brotli, Coding::Zstd] {
            for effort in [Effort::Cheap, Effort::Stored] {
                let _ = coding.compress(&large, effort);
                let variant = coding.compress(&small, effort);
                let len = variant.len();
                assert_eq!(decoded(coding, &variant), small, "{coding:?} {effort:?}");
                // Not an allocation sized for the page: what the response cache counts is
                // what it holds.
                let allocated = variant.try_into_mut().unwrap().capacity();
                assert_eq!(allocated, len, "{coding:?} {effort:?}");
            }
        }
    }

    #[test]
    fn archives_and_images_are_not_compressed() {
        assert!(compressible("text/html; charset=UTF-8", 1000));
        assert!(!compressible("text/html", 10));
        assert!(!compressible("image/png", 1000));
        assert!(compressible("image/svg+xml", 1000));
        assert!(!compressible("application/x-gzip", 1000));
        assert!(!compressible("application/octet-stream", 1000));
    }
}
