//! Byte ranges (RFC 9110 §14) on responses whose bytes are stable — git's own files, snapshots
//! and `plain` files: `Range: bytes=…` (one range), `If-Range` with the response's strong ETag
//! or its `Last-Modified`, 206 with `Content-Range`, 416 for a range past the end. A git client
//! resuming a pack download sends exactly this.

use crate::pages::{self, Body};
use crate::request::Page;

/// Pages whose successful bodies may be sent in parts.
pub fn accepts_ranges(page: Page) -> bool {
    matches!(
        page,
        Page::Plain | Page::Snapshot | Page::CloneObjects | Page::CloneInfo | Page::CloneHead
    )
}

/// Says on a successful response that it may be asked for in parts.
pub fn advertise(response: &mut pages::Response) {
    if response.status == 200 {
        response.headers.push(("Accept-Ranges", "bytes".into()));
    }
}

/// `response` cut to the range asked for, when there is one and `If-Range` allows it.
pub fn apply(
    mut response: pages::Response,
    range: Option<&str>,
    if_range: Option<&str>,
) -> pages::Response {
    let Some(range) = range.filter(|_| response.status == 200) else {
        return response;
    };
    if if_range.is_some_and(|v| !validator_matches(&response, v)) {
        return response;
    }
    let total = match &response.body {
        Body::Full(bytes) => bytes.len() as u64,
        Body::File { len, .. } => *len,
    };
    let Some(wanted) = parse(range, total) else {
        return response;
    };
    let Some((start, end)) = wanted else {
        let mut refused = pages::Response::text(String::new());
        refused.status = 416;
        refused
            .headers
            .push(("Content-Range", format!("bytes */{total}")));
        return refused;
    };
    response.body = match response.body {
        Body::Full(bytes) => Body::Full(bytes.slice(start as usize..=end as usize)),
        Body::File { file, offset, .. } => Body::File {
            file,
            offset: offset + start,
            len: end - start + 1,
        },
    };
    response.status = 206;
    response
        .headers
        .retain(|(name, _)| *name != "Content-Length");
    response
        .headers
        .push(("Content-Range", format!("bytes {start}-{end}/{total}")));
    response
}

/// `If-Range` holds: a strong ETag equal to the response's, or its exact `Last-Modified`.
fn validator_matches(response: &pages::Response, if_range: &str) -> bool {
    let header = |name: &str| {
        response
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let if_range = if_range.trim();
    if if_range.starts_with('"') {
        header("ETag") == Some(if_range)
    } else {
        header("Last-Modified") == Some(if_range)
    }
}

/// The first and last byte of a single `bytes=` range over `total` bytes: `None` when the
/// header is not one we serve (the whole body is sent), `Some(None)` when it cannot be
/// satisfied.
fn parse(header: &str, total: u64) -> Option<Option<(u64, u64)>> {
    let spec = header.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (first, last) = spec.split_once('-')?;
    let (first, last) = (first.trim(), last.trim());
    let range = if first.is_empty() {
        let suffix: u64 = last.parse().ok()?;
        (suffix > 0 && total > 0).then(|| (total.saturating_sub(suffix), total - 1))
    } else {
        let start: u64 = first.parse().ok()?;
        let end = match last {
            "" => total.checked_sub(1),
            n => {
                let last: u64 = n.parse().ok()?;
                if last < start {
                    return None;
                }
                Some(last.min(total.saturating_sub(1)))
            }
        };
        end.filter(|_| start < total).map(|end| (start, end))
    };
    Some(range)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_byte_ranges() {
        assert_eq!(parse("bytes=0-9", 100), Some(Some((0, 9))));
        assert_eq!(parse("bytes=90-", 100), Some(Some((90, 99))));
        assert_eq!(parse("bytes=-10", 100), Some(Some((90, 99))));
        assert_eq!(parse("bytes=-500", 100), Some(Some((0, 99))));
        assert_eq!(parse("bytes=50-1000", 100), Some(Some((50, 99))));
        assert_eq!(parse("bytes=100-", 100), Some(None));
        assert_eq!(parse("bytes=9-3", 100), None);
        assert_eq!(parse("bytes=0-", 0), Some(None));
        assert_eq!(parse("bytes=0-1,5-6", 100), None);
        assert_eq!(parse("items=0-1", 100), None);
        assert_eq!(parse("bytes=x-1", 100), None);
    }
}
