//! Fitting a snapshot into a size budget (case 28), and the views that narrow it: one
//! element's subtree, a window of a container's children (`offset`/`limit`), only what can
//! be acted on, only what matches a search.
//!
//! When the page does not fit, the longest lists are cut short rather than the page's end:
//! every container shows at most its first `L` children, with `L` the largest that fits,
//! and says how many it left out and the call that shows them. A page whose table has
//! 20,000 rows still shows its navigation, the first rows and the footer form.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::{node_ref, write_line, Collected};
use crate::refs::Refs;
use crate::target::Target;

/// Default `max_tokens` of a snapshot: below the 25k-token result cap common MCP clients
/// enforce.
pub const DEFAULT_MAX_TOKENS: usize = 24_000;
/// Characters per token assumed for the budget (snapshot text measures ~3.1 with o200k).
pub const CHARS_PER_TOKEN: usize = 3;
/// Room a "… N more" line takes, for the budget.
const MARKER_CHARS: usize = 140;
/// Room a ref takes on a line, for the budget.
const REF_CHARS: usize = 12;

/// What to show of a snapshot.
#[derive(Default)]
pub struct Opts {
    /// Keep wrapper nodes too (the script's `full` mode).
    pub full: bool,
    /// Show only this element's subtree.
    pub root: Option<Target>,
    /// Only nodes with a ref (and frames), flattened.
    pub interactive_only: bool,
    /// Only nodes whose name contains this (case-insensitive), with their ancestors.
    pub search: Option<String>,
    /// First child of the root (or top-level node) to show.
    pub offset: usize,
    /// How many children of the root (or top-level nodes) to show.
    pub limit: Option<usize>,
    /// Size budget in characters; 0 = none.
    pub max_chars: usize,
}

/// A rendered view.
pub(crate) struct Out {
    pub text: String,
    pub refs: usize,
    pub truncated: Option<Value>,
}

/// A node of the view: index into `Collected::nodes` and its depth in the view.
#[derive(Clone, Copy)]
struct V {
    n: usize,
    depth: usize,
}

fn line_chars(c: &Collected, v: V) -> usize {
    let n = &c.nodes[v.n];
    let name = if n.name.is_empty() {
        0
    } else {
        n.name.chars().count() + 3
    };
    2 * v.depth + 3 + n.role.len() + name + n.attrs.chars().count() + if n.id > 0 { REF_CHARS } else { 0 }
}

/// Parent of each view node (by depth), `None` for top-level ones.
fn parents(view: &[V]) -> Vec<Option<usize>> {
    let mut stack: Vec<usize> = vec![];
    let mut out = Vec::with_capacity(view.len());
    for (i, v) in view.iter().enumerate() {
        while stack.last().is_some_and(|&p| view[p].depth >= v.depth) {
            stack.pop();
        }
        out.push(stack.last().copied());
        stack.push(i);
    }
    out
}

/// `{"ref": …, "offset": …, …}`: the browser_snapshot arguments that show more.
fn more_args(opts: &Opts, container: Option<&str>, offset: usize, limit: usize) -> String {
    let mut a = vec![];
    if let Some(r) = container {
        a.push(format!("\"ref\": {}", json!(r)));
    }
    a.push(format!("\"offset\": {offset}"));
    a.push(format!("\"limit\": {limit}"));
    if opts.interactive_only {
        a.push("\"interactive_only\": true".into());
    }
    if let Some(s) = &opts.search {
        a.push(format!("\"search\": {}", json!(s)));
    }
    format!("{{{}}}", a.join(", "))
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Renders `c` as `opts` asks, assigning refs to what is shown.
pub(crate) fn render(c: &Collected, opts: &Opts, refs: &mut Refs, tab: &str) -> Out {
    let total = c.nodes.len();
    let mut view: Vec<V> = c
        .nodes
        .iter()
        .enumerate()
        .map(|(n, x)| V { n, depth: x.depth })
        .collect();

    // search: matches and their ancestors
    if let Some(q) = opts
        .search
        .as_deref()
        .map(|q| q.to_lowercase())
        .filter(|q| !q.is_empty())
    {
        let par = parents(&view);
        let mut keep = vec![false; view.len()];
        for (i, v) in view.iter().enumerate() {
            if c.nodes[v.n].name.to_lowercase().contains(&q) {
                let mut cur = Some(i);
                while let Some(j) = cur {
                    if keep[j] && j != i {
                        break;
                    }
                    keep[j] = true;
                    cur = par[j];
                }
            }
        }
        view = view.into_iter().zip(keep).filter(|(_, k)| *k).map(|(v, _)| v).collect();
    }

    // interactive only: nodes with a ref, depth = kept ancestors
    if opts.interactive_only {
        let par = parents(&view);
        let mut new_depth: Vec<Option<usize>> = vec![None; view.len()];
        for i in 0..view.len() {
            if c.nodes[view[i].n].id > 0 {
                let mut p = par[i];
                while let Some(j) = p {
                    if new_depth[j].is_some() {
                        break;
                    }
                    p = par[j];
                }
                new_depth[i] = Some(p.and_then(|j| new_depth[j]).map_or(0, |d| d + 1));
            }
        }
        view = view
            .iter()
            .zip(new_depth)
            .filter_map(|(v, d)| d.map(|depth| V { n: v.n, depth }))
            .collect();
    }

    let mut lines: Vec<Item> = vec![];
    let mut notes: Vec<String> = vec![];

    // paging: a window of the root's children (subtree) or of the top-level nodes
    let rooted = opts.root.is_some() && !view.is_empty() && view[0].depth == 0;
    let item_depth = if rooted { 1 } else { 0 };
    let container = if rooted { Some(0) } else { None };
    let items: Vec<usize> = view
        .iter()
        .enumerate()
        .filter(|(_, v)| v.depth == item_depth)
        .map(|(i, _)| i)
        .collect();
    let n_items = items.len();
    let (from, to) = (
        opts.offset.min(n_items),
        opts.limit.map_or(n_items, |l| (opts.offset + l).min(n_items)),
    );
    let container_ref = |refs: &mut Refs, view: &[V]| -> Option<String> {
        container.and_then(|i: usize| node_ref(refs, c, &c.nodes[view[i].n], tab, true))
    };
    if from > 0 || to < n_items {
        let start = if from < n_items { items[from] } else { view.len() };
        let end = if to < n_items { items[to] } else { view.len() };
        let head: Vec<V> = if rooted { vec![view[0]] } else { vec![] };
        let r = container_ref(refs, &view);
        let limit = opts.limit.unwrap_or(n_items);
        if from > 0 {
            notes.push(format!(
                "… {} earlier items not shown: browser_snapshot{}",
                thousands(from),
                more_args(opts, r.as_deref(), from.saturating_sub(limit), limit)
            ));
        }
        let after = (to < n_items).then(|| {
            format!(
                "… {} more items not shown ({}–{} of {} shown): browser_snapshot{}",
                thousands(n_items - to),
                thousands(from + 1),
                thousands(to),
                thousands(n_items),
                more_args(opts, r.as_deref(), to, limit)
            )
        });
        view = head
            .into_iter()
            .chain(view[start.max(usize::from(rooted))..end].iter().copied())
            .collect();
        if let Some(a) = after {
            lines.push(Item::Tail(a));
        }
    }

    // the size budget: cut every container to its first L children, L as large as fits
    let par = parents(&view);
    let mut kids: Vec<Vec<usize>> = vec![vec![]; view.len() + 1];
    for (i, p) in par.iter().enumerate() {
        kids[p.unwrap_or(view.len())].push(i);
    }
    let own: Vec<usize> = view.iter().map(|&v| line_chars(c, v)).collect();
    let size_at = |l: usize| -> usize {
        let mut size = vec![0usize; view.len() + 1];
        // children come after their parent; the virtual root (index len) goes last
        for i in (0..view.len()).rev().chain(std::iter::once(view.len())) {
            let k = &kids[i];
            let mut s = if i < view.len() { own[i] } else { 0 };
            for &ch in k.iter().take(l) {
                s += size[ch];
            }
            if k.len() > l {
                s += MARKER_CHARS;
            }
            size[i] = s;
        }
        size[view.len()]
    };
    let max_kids = kids.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let budget = opts.max_chars;
    let cap = if budget == 0 || size_at(max_kids) <= budget {
        None
    } else if size_at(1) > budget {
        Some(0) // even one child per container is too much: cut at the budget
    } else {
        let (mut lo, mut hi) = (1, max_kids);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if size_at(mid) <= budget {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    };

    let mut body: Vec<Item> = vec![];
    match cap {
        None | Some(0) => body.extend((0..view.len()).map(Item::Node)),
        Some(l) => {
            // walk the tree, each container's first `l` children, then its "… more" line
            fn walk(i: usize, l: usize, kids: &[Vec<usize>], out: &mut Vec<Item>, root: usize) {
                if i != root {
                    out.push(Item::Node(i));
                }
                let k = &kids[i];
                for &ch in k.iter().take(l) {
                    walk(ch, l, kids, out, root);
                }
                if k.len() > l {
                    out.push(Item::More {
                        container: (i != root).then_some(i),
                        shown: l,
                        total: k.len(),
                    });
                }
            }
            walk(view.len(), l, &kids, &mut body, view.len());
        }
    }

    // render
    let mut text = String::new();
    let mut nrefs = 0;
    let mut shown = 0;
    let mut cut_at = None;
    // containers cut short get a ref, so their "… more" line can name them
    let forced: HashSet<usize> = body
        .iter()
        .filter_map(|it| match it {
            Item::More { container, .. } => *container,
            _ => None,
        })
        .collect();
    for (pos, it) in body.iter().enumerate() {
        if cap == Some(0) && text.len() > budget {
            cut_at = Some(pos);
            break;
        }
        match *it {
            Item::Node(i) => {
                let v = view[i];
                let n = &c.nodes[v.n];
                let r = node_ref(refs, c, n, tab, forced.contains(&i));
                if r.is_some() {
                    nrefs += 1;
                }
                write_line(&mut text, v.depth, &n.role, &n.name, &n.attrs, r.as_deref());
                shown += 1;
            }
            Item::More {
                container: ci,
                shown: l,
                total: k,
            } => {
                let depth = ci.map_or(0, |i| view[i].depth + 1);
                // offsets count from the window shown when this is the paged container
                let (r, base) = match ci {
                    Some(0) if rooted => (container_ref(refs, &view), from),
                    Some(i) => (node_ref(refs, c, &c.nodes[view[i].n], tab, true), 0),
                    None => (container_ref(refs, &view), from),
                };
                for _ in 0..depth {
                    text.push_str("  ");
                }
                text.push_str(&format!(
                    "- … {} more not shown (first {} of {} shown): browser_snapshot{}\n",
                    thousands(k - l),
                    thousands(l),
                    thousands(k),
                    more_args(opts, r.as_deref(), base + l, l)
                ));
            }
            Item::Tail(_) => {}
        }
    }
    if let Some(pos) = cut_at {
        text.push_str(&format!(
            "- … snapshot cut at the size budget after {} lines; {} nodes not shown: browser_snapshot{{\"ref\": …}} shows one part, browser_find finds anything\n",
            thousands(pos),
            thousands(body.len() - pos)
        ));
    }
    for it in &lines {
        if let Item::Tail(s) = it {
            text.push_str("- ");
            text.push_str(s);
            text.push('\n');
        }
    }
    let mut head = String::new();
    for n in &notes {
        head.push_str("- ");
        head.push_str(n);
        head.push('\n');
    }
    let omitted = total.saturating_sub(shown);
    let narrowed = opts.root.is_some() || opts.interactive_only || opts.search.is_some();
    let cut = cap.is_some() || from > 0 || to < n_items;
    let truncated = (cut || (narrowed && omitted > 0)).then(|| {
        json!({
            "total_nodes": total,
            "shown_nodes": shown,
            "omitted": omitted,
            "max_tokens": budget / CHARS_PER_TOKEN,
            "budget_cut": cap.is_some(),
            "how": "browser_snapshot{ref, offset, limit} pages through a container; browser_find{text | role, name} or browser_snapshot{search} finds anything on the page; browser_snapshot{interactive_only: true} lists only what can be acted on",
        })
    });
    if cap.is_some() {
        head.insert_str(
            0,
            &format!(
                "[Snapshot limited to ~{} tokens: {} of {} nodes shown, {} left out. Lists cut short end with \"… N more\" and the call that shows the rest (browser_snapshot{{ref, offset, limit}}); browser_find{{text}} or browser_snapshot{{search}} finds anything on the page; browser_snapshot{{interactive_only: true}} lists only what can be acted on.]\n",
                thousands(budget / CHARS_PER_TOKEN),
                thousands(shown),
                thousands(total),
                thousands(omitted)
            ),
        );
    }
    Out {
        text: head + &text,
        refs: nrefs,
        truncated,
    }
}

enum Item {
    Node(usize),
    More {
        container: Option<usize>,
        shown: usize,
        total: usize,
    },
    Tail(String),
}
