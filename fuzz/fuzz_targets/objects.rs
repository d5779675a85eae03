//! Commit and tag objects as a repository may hold them: whatever gix parses, the people,
//! subject and body cgitd derives from it are made without a panic, in any encoding.
#![no_main]

use cgitd::git::commit::{Person, subject_of};
use cgitd::git::encoding::decode;
use gix::objs::{CommitRef, TagRef};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(commit) = CommitRef::from_bytes(data, gix::hash::Kind::Sha1) {
        let encoding = commit.encoding.map(|e| e.as_ref());
        if let Ok(author) = commit.author() {
            Person::from_signature(author, encoding);
        }
        subject_of(commit.message, encoding);
        decode(commit.message, encoding);
    }
    if let Ok(tag) = TagRef::from_bytes(data, gix::hash::Kind::Sha1) {
        if let Some(Ok(tagger)) = tag.tagger().transpose() {
            Person::from_signature(tagger, None);
        }
        subject_of(tag.message, None);
    }
});
