//! git's pkt-line framing: four hex digits of length, then the data; `0000` flush, `0001`
//! delimiter, `0002` response end; and side-band packets, whose first byte names the band.

/// The most a pkt-line holds, its four length digits included.
pub const MAX_PACKET: usize = 65520;

/// One packet of a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A line, without its trailing newline.
    Line(&'a [u8]),
    Flush,
    Delim,
    ResponseEnd,
}

/// Why a request's framing is broken.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error("bad pkt-line length")]
    BadLength,
    #[error("truncated pkt-line")]
    Truncated,
}

/// Reads the packets of a whole request body.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(body: &'a [u8]) -> Reader<'a> {
        Reader { rest: body }
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Packet<'a>, PacketError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let Some(digits) = self.rest.get(..4) else {
            self.rest = &[];
            return Some(Err(PacketError::Truncated));
        };
        let len = std::str::from_utf8(digits)
            .ok()
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|d| usize::from_str_radix(d, 16).ok());
        let Some(len) = len else {
            self.rest = &[];
            return Some(Err(PacketError::BadLength));
        };
        let packet = match len {
            0 => Packet::Flush,
            1 => Packet::Delim,
            2 => Packet::ResponseEnd,
            3 => {
                self.rest = &[];
                return Some(Err(PacketError::BadLength));
            }
            _ => {
                let Some(data) = self.rest.get(4..len) else {
                    self.rest = &[];
                    return Some(Err(PacketError::Truncated));
                };
                self.rest = &self.rest[len..];
                return Some(Ok(Packet::Line(data.strip_suffix(b"\n").unwrap_or(data))));
            }
        };
        self.rest = &self.rest[4..];
        Some(Ok(packet))
    }
}

/// Appends `line` as one packet (the caller adds its newline).
pub fn line(out: &mut Vec<u8>, line: &[u8]) {
    debug_assert!(line.len() + 4 <= MAX_PACKET);
    out.extend_from_slice(format!("{:04x}", line.len() + 4).as_bytes());
    out.extend_from_slice(line);
}

/// Appends `text` as one packet.
pub fn text(out: &mut Vec<u8>, text: &str) {
    line(out, text.as_bytes());
}

pub fn flush(out: &mut Vec<u8>) {
    out.extend_from_slice(b"0000");
}

pub fn delim(out: &mut Vec<u8>) {
    out.extend_from_slice(b"0001");
}

/// Appends `data` on side band `band`, in packets of at most `max` bytes.
pub fn band(out: &mut Vec<u8>, band: u8, data: &[u8], max: usize) {
    for chunk in data.chunks(max - 5) {
        out.extend_from_slice(format!("{:04x}", chunk.len() + 5).as_bytes());
        out.push(band);
        out.extend_from_slice(chunk);
    }
}

/// A writer that sends what it is given on side band 1 (pack data), in packets of at most
/// `max` bytes.
pub struct BandWriter<'a> {
    pub out: &'a mut dyn std::io::Write,
    pub max: usize,
}

impl std::io::Write for BandWriter<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let mut framed = Vec::with_capacity(data.len() + data.len() / (self.max - 5) * 5 + 5);
        band(&mut framed, 1, data, self.max);
        self.out.write_all(&framed)?;
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_it_writes() {
        let mut out = Vec::new();
        text(&mut out, "command=fetch\n");
        delim(&mut out);
        text(&mut out, "done");
        flush(&mut out);
        let packets: Vec<_> = Reader::new(&out).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            packets,
            [
                Packet::Line(b"command=fetch"),
                Packet::Delim,
                Packet::Line(b"done"),
                Packet::Flush
            ]
        );
    }

    #[test]
    fn broken_framing_is_an_error_not_a_panic() {
        for bad in [&b"00"[..], b"zzzz", b"0003", b"0009abc", b"+fff", b"000"] {
            let got: Result<Vec<_>, _> = Reader::new(bad).collect();
            assert!(got.is_err(), "{bad:?}");
        }
    }

    #[test]
    fn side_band_packets_stay_under_the_limit() {
        let data = vec![7u8; 150_000];
        let mut out = Vec::new();
        band(&mut out, 1, &data, MAX_PACKET);
        let mut total = 0;
        for packet in Reader::new(&out) {
            let Packet::Line(p) = packet.unwrap() else {
                panic!()
            };
            assert!(p.len() + 4 <= MAX_PACKET);
            assert_eq!(p[0], 1);
            total += p.len() - 1;
        }
        assert_eq!(total, data.len());
    }
}
