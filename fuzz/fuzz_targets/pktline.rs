//! pkt-line framing: any bytes read as packets until an error or the end, never past them.
#![no_main]

use cgitd::smart::pktline::{Packet, Reader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut consumed = 0;
    for packet in Reader::new(data) {
        match packet {
            Ok(Packet::Line(line)) => consumed += 4 + line.len(),
            Ok(_) => consumed += 4,
            Err(_) => break,
        }
        assert!(consumed <= data.len());
    }
});
