//! The console's files (`web/` at the repository root), compiled into the binary so
//! `tabgate serve` needs nothing beside it. Plain ES modules, no build step.

/// One served file.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// Path under `web/` (`index.html`, `js/app.js`).
    pub path: &'static str,
    /// `Content-Type`.
    pub mime: &'static str,
    /// The file.
    pub body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $mime:expr) => {
        Asset {
            path: $path,
            mime: $mime,
            body: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../web/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the console loads. `web/test/` and `web/package.json` (for Node's test
/// runner) are not served.
pub const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("js/app.js", JS),
    asset!("js/api.js", JS),
    asset!("js/agent.js", JS),
    asset!("js/prompts.js", JS),
    asset!("js/badge.js", JS),
    asset!("js/render.js", JS),
    asset!("js/tools.js", JS),
    asset!("js/sse.js", JS),
    asset!("js/runner.js", JS),
    asset!("js/runner-worker.js", JS),
    asset!("js/runner-shared.js", JS),
];

/// The file at `path` (under `web/`).
pub fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file under `web/` (but tests and package.json) is served, with a MIME type
    /// that fits its extension: a new module cannot be forgotten here.
    #[test]
    fn every_web_file_is_served() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web");
        let mut found = vec![];
        let mut stack = vec![root.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
                if rel == "test" || rel == "package.json" || rel == "node_modules" {
                    continue;
                }
                if p.is_dir() {
                    stack.push(p);
                } else {
                    found.push(rel);
                }
            }
        }
        for f in &found {
            let a = find(f).unwrap_or_else(|| panic!("web/{f} is not in console::assets::ASSETS"));
            let want = match f.rsplit('.').next() {
                Some("js") => JS,
                Some("css") => "text/css; charset=utf-8",
                Some("html") => "text/html; charset=utf-8",
                other => panic!("web/{f}: unexpected extension {other:?}"),
            };
            assert_eq!(a.mime, want, "{f}");
        }
        assert_eq!(found.len(), ASSETS.len(), "listed but missing: {found:?}");
    }
}
