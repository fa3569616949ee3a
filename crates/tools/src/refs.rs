//! Element refs: `e<N>`, unique in a session, bound to node identity.
//!
//! Identity is (tab, frame, document, element): the document is the in-page script's
//! per-document token (a new document gets a new token even when a frame is reused) and
//! the `loaderId` is kept to say *why* a ref went stale. The same element keeps its ref
//! across snapshots; a ref is never reused for another element.

use std::collections::HashMap;

/// What a ref points at.
#[derive(Debug, Clone)]
pub struct RefEntry {
    pub tab: String,
    pub frame_id: String,
    /// `loaderId` of the frame's document when the ref was issued.
    pub loader_id: String,
    /// The in-page script's document token.
    pub doc: String,
    /// The in-page script's element id.
    pub elem: u64,
    pub role: String,
    pub name: String,
}

/// The session's ref table, plus the frame-owner cache used to stitch frames and to add
/// frame offsets.
#[derive(Default)]
pub struct Refs {
    by_ref: HashMap<String, RefEntry>,
    by_key: HashMap<(String, String, u64), String>,
    next: u64,
    /// (child frame id, parent frame loaderId) → owner element id in the parent document.
    owners: HashMap<(String, String), u64>,
}

impl Refs {
    /// The ref for an element, assigning a fresh `e<N>` the first time it is seen.
    pub fn assign(&mut self, e: RefEntry) -> String {
        let key = (e.frame_id.clone(), e.doc.clone(), e.elem);
        if let Some(r) = self.by_key.get(&key) {
            return r.clone();
        }
        self.next += 1;
        let r = format!("e{}", self.next);
        self.by_key.insert(key, r.clone());
        self.by_ref.insert(r.clone(), e);
        r
    }

    /// Looks a ref up; accepts `e12` and `@e12`.
    pub fn get(&self, r: &str) -> Option<&RefEntry> {
        self.by_ref.get(r.trim().trim_start_matches('@'))
    }

    /// Cached owner element of `child` in the parent document with `parent_loader`.
    pub fn owner(&self, child: &str, parent_loader: &str) -> Option<u64> {
        self.owners
            .get(&(child.to_string(), parent_loader.to_string()))
            .copied()
    }

    /// Remembers an owner mapping.
    pub fn set_owner(&mut self, child: &str, parent_loader: &str, elem: u64) {
        self.owners.insert((child.to_string(), parent_loader.to_string()), elem);
    }
}
