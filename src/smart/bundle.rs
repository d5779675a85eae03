//! git's `bundle-uri`: the bundle list a protocol v2 client is told of, and the header of the
//! bundle (format v2) of a whole repository, its refs as the resident snapshot has them.

use super::head_id;
use super::pktline;
use crate::repos::RefSnapshot;
use gix::ObjectId;

/// The key=value lines of a `command=bundle-uri` answer: one bundle, `uri` (relative to the
/// repository's URL, as git ≥ 2.40 resolves it), that holds everything. Nothing is offered for
/// a repository without refs.
pub fn list(refs: &RefSnapshot, uri: &str) -> Vec<u8> {
    let mut out = Vec::new();
    if !refs.all.is_empty() {
        for line in [
            "bundle.version=1".to_string(),
            "bundle.mode=all".into(),
            format!("bundle.all.uri={uri}"),
        ] {
            pktline::text(&mut out, &format!("{line}\n"));
        }
    }
    pktline::flush(&mut out);
    out
}

/// What a bundle of every ref holds: its header, and the objects its pack must bring.
pub struct Contents {
    /// `# v2 git bundle`, a line per ref (HEAD first when it names a branch), a blank line.
    pub header: Vec<u8>,
    /// The ids the refs point at, each once, sorted: the wants of the pack that follows.
    pub wants: Vec<ObjectId>,
}

/// The bundle of `refs`, or `None` when there are none (a bundle needs at least one ref).
pub fn contents(refs: &RefSnapshot) -> Option<Contents> {
    if refs.all.is_empty() {
        return None;
    }
    let mut header = b"# v2 git bundle\n".to_vec();
    if let Some(id) = head_id(refs) {
        header.extend_from_slice(format!("{id} HEAD\n").as_bytes());
    }
    for entry in &refs.all {
        header.extend_from_slice(format!("{} {}\n", entry.id, entry.name).as_bytes());
    }
    header.push(b'\n');
    let mut wants: Vec<ObjectId> = refs.all.iter().map(|r| r.id).collect();
    wants.sort_unstable();
    wants.dedup();
    Some(Contents { header, wants })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repos::RefEntry;

    fn id(byte: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[byte; 20])
    }

    fn refs() -> RefSnapshot {
        let entry = |name: &str, byte| RefEntry {
            name: name.into(),
            id: id(byte),
            peeled: None,
        };
        RefSnapshot {
            head_branch: Some("main".into()),
            all: vec![
                entry("refs/heads/main", 2),
                entry("refs/heads/topic", 1),
                entry("refs/tags/v1", 2),
            ],
            ..RefSnapshot::default()
        }
    }

    #[test]
    fn the_header_lists_head_and_every_ref_and_the_wants_once() {
        let contents = contents(&refs()).unwrap();
        let two = id(2).to_string();
        let one = id(1).to_string();
        let expected = format!(
            "# v2 git bundle\n{two} HEAD\n{two} refs/heads/main\n{one} refs/heads/topic\n\
             {two} refs/tags/v1\n\n"
        );
        assert_eq!(String::from_utf8(contents.header).unwrap(), expected);
        assert_eq!(contents.wants, [id(1), id(2)]);
    }

    #[test]
    fn an_empty_repository_has_no_bundle_and_offers_none() {
        let empty = RefSnapshot::default();
        assert!(contents(&empty).is_none());
        assert_eq!(list(&empty, "x"), b"0000");
        let offered = String::from_utf8(list(&refs(), "bundle/clone.bundle")).unwrap();
        assert!(offered.starts_with("0015bundle.version=1\n"), "{offered}");
        assert!(offered.ends_with("bundle.all.uri=bundle/clone.bundle\n0000"));
    }
}
