//! Finding nodes in a stitched snapshot (case 10): the same frames, shadow roots and
//! visibility rules as `browser_snapshot`, so anything the snapshot shows can be found, in
//! any frame, with a ref that acts on it.

use super::Collected;

/// What to look for. Every given criterion must hold; text comparisons ignore case and
/// collapse whitespace.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    /// Text anywhere in a node's name or text (`text` lines included).
    pub text: Option<String>,
    /// The node's role (`button`, `link`, `heading`, `text`, …).
    pub role: Option<String>,
    /// The node's accessible name.
    pub name: Option<String>,
    /// Whole-string comparisons instead of "contains".
    pub exact: bool,
}

/// A node that matched.
pub(crate) struct Match {
    /// Index into `Collected::nodes`.
    pub node: usize,
    /// The nearest named ancestor, as `role "name"` (a row, a list item, a dialog …).
    pub context: Option<String>,
    /// Names of the iframes the node is inside, outermost first.
    pub frames: Vec<String>,
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

impl Query {
    fn hit(&self, have: &str, want: &str) -> bool {
        let (h, w) = (norm(have), norm(want));
        if self.exact {
            h == w
        } else {
            h.contains(&w)
        }
    }

    /// True when nothing is asked for.
    pub fn is_empty(&self) -> bool {
        self.text.is_none() && self.role.is_none() && self.name.is_none()
    }
}

/// Every node of `c` matching `q`, in document order.
pub(crate) fn find_nodes(c: &Collected, q: &Query) -> Vec<Match> {
    let mut stack: Vec<usize> = vec![];
    let mut out = vec![];
    for (i, n) in c.nodes.iter().enumerate() {
        while stack.last().is_some_and(|&p| c.nodes[p].depth >= n.depth) {
            stack.pop();
        }
        let ok = q.text.as_deref().is_none_or(|t| q.hit(&n.name, t))
            && q.role.as_deref().is_none_or(|r| n.role.eq_ignore_ascii_case(r.trim()))
            && q.name.as_deref().is_none_or(|m| q.hit(&n.name, m));
        if ok && n.id != 0 {
            let context = stack
                .iter()
                .rev()
                .map(|&p| &c.nodes[p])
                .find(|p| !p.name.is_empty() && p.role != "iframe" && p.role != "text")
                .map(|p| format!("{} {:?}", p.role, p.name));
            let frames = stack
                .iter()
                .map(|&p| &c.nodes[p])
                .filter(|p| p.role == "iframe")
                .map(|p| p.name.clone())
                .collect();
            out.push(Match {
                node: i,
                context,
                frames,
            });
        }
        stack.push(i);
    }
    out
}
