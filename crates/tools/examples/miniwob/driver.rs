//! A scripted (non-LLM) MiniWoB++ agent that acts only through tabgate's tools: it reads
//! `browser_snapshot` text, picks refs, and calls `browser_click`, `browser_type`,
//! `browser_select_option`, `browser_hover`, `browser_find`, `browser_wait_for` and
//! `browser_press`. `browser_console` is used only to start a seeded episode and to read
//! the instruction (`core.getUtterance()`) and the reward, never to act.
//!
//! Shared by the benchmark (`cargo run --release -p tabgate-tools --example miniwob`) and
//! the CI test (`crates/tools/tests/miniwob.rs`).
#![allow(dead_code)]

use std::time::Duration;

use serde_json::{json, Value};
use tabgate_tools::Session;

/// The 22 tasks of issue 7, in the order of the table.
pub const TASKS: &[&str] = &[
    "click-test",
    "click-button",
    "click-dialog",
    "click-dialog-2",
    "click-tab",
    "click-collapsible",
    "click-checkboxes",
    "click-option",
    "choose-list",
    "enter-text",
    "enter-password",
    "login-user",
    "login-user-popup",
    "focus-text-2",
    "use-autocomplete",
    "enter-date",
    "search-engine",
    "read-table",
    "click-link",
    "click-menu",
    "navigate-tree",
    "click-widget",
];

/// How one episode ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `WOB_DONE_GLOBAL && WOB_RAW_REWARD_GLOBAL > 0`.
    pub ok: bool,
    pub reward: f64,
    /// The utterance (instruction) of the episode.
    pub utterance: String,
    /// Tool calls the agent made (setup and reward reads excluded).
    pub steps: usize,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// One line of a snapshot: `- role "name" [attrs] [ref=eN]`.
#[derive(Debug, Clone)]
pub struct Line {
    pub depth: usize,
    pub role: String,
    pub name: String,
    pub attrs: String,
    pub r: Option<String>,
}

/// Parses snapshot text (lines that do not look like nodes are skipped).
pub fn parse(text: &str) -> Vec<Line> {
    let mut out = vec![];
    for raw in text.lines() {
        let body = raw.trim_start_matches(' ');
        let Some(rest) = body.strip_prefix("- ") else { continue };
        let depth = (raw.len() - body.len()) / 2;
        let (role, mut rest) = match rest.find(' ') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let mut name = String::new();
        if let Some(q) = rest.strip_prefix('"') {
            let mut chars = q.char_indices();
            let mut end = q.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            name.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => name.push(c),
                }
            }
            rest = &q[end..];
        }
        let mut attrs = rest.trim().to_string();
        let mut r = None;
        if let Some(i) = attrs.rfind("[ref=") {
            r = Some(attrs[i + 5..].trim_end_matches(']').to_string());
            attrs.truncate(i);
        }
        out.push(Line {
            depth,
            role: role.to_string(),
            name,
            attrs: attrs.trim().to_string(),
            r,
        });
    }
    out
}

/// Strings between double quotes, in order.
pub fn quoted(s: &str) -> Vec<String> {
    s.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

struct Agent<'a> {
    s: &'a Session,
    steps: usize,
}

type R<T> = Result<T, String>;

impl Agent<'_> {
    async fn call(&mut self, tool: &str, args: Value) -> R<Value> {
        self.steps += 1;
        let o = self.s.call(tool, args.clone()).await;
        match o.error {
            Some(e) => Err(format!("{tool} {args}: {}: {}", e.code, e.message)),
            None => Ok(o.structured.unwrap_or(Value::Null)),
        }
    }

    async fn snap(&mut self) -> R<Vec<Line>> {
        let v = self.call("browser_snapshot", json!({})).await?;
        Ok(parse(v["snapshot"].as_str().unwrap_or("")))
    }

    async fn click(&mut self, r: &str) -> R<Value> {
        self.call("browser_click", json!({"ref": r})).await
    }

    async fn type_text(&mut self, r: &str, text: &str) -> R<Value> {
        self.call("browser_type", json!({"ref": r, "text": text})).await
    }

    /// The ref of the first line with `role` whose name equals `name` (exactly, then
    /// ignoring case).
    fn pick(lines: &[Line], role: &str, name: &str) -> R<String> {
        let f = |exact: bool| {
            lines.iter().find(|l| {
                l.role == role
                    && l.r.is_some()
                    && if exact {
                        l.name == name
                    } else {
                        l.name.eq_ignore_ascii_case(name)
                    }
            })
        };
        f(true)
            .or_else(|| f(false))
            .and_then(|l| l.r.clone())
            .ok_or_else(|| format!("no {role} {name:?} in the snapshot"))
    }

    fn all(lines: &[Line], role: &str) -> Vec<Line> {
        lines
            .iter()
            .filter(|l| l.role == role && l.r.is_some())
            .cloned()
            .collect()
    }

    async fn click_named(&mut self, role: &str, name: &str) -> R<()> {
        let lines = self.snap().await?;
        let r = Self::pick(&lines, role, name)?;
        self.click(&r).await.map(|_| ())
    }

    /// Text boxes in page order (`multiline` ones included).
    fn textboxes(lines: &[Line]) -> Vec<Line> {
        Self::all(lines, "textbox")
    }
}

async fn console(s: &Session, expr: &str) -> R<Value> {
    let o = s.call("browser_console", json!({"expression": expr})).await;
    match o.error {
        Some(e) => Err(format!("{}: {}", e.code, e.message)),
        None => Ok(o.structured.unwrap_or(Value::Null)["result"].clone()),
    }
}

/// Runs one seeded episode of `task` (page `{base}/miniwob/{task}.html`).
pub async fn episode(s: &Session, base: &str, task: &str, seed: u64) -> Outcome {
    let mut out = Outcome {
        ok: false,
        reward: 0.0,
        utterance: String::new(),
        steps: 0,
        error: None,
    };
    let url = format!("{base}/miniwob/{task}.html");
    let nav = s.call("browser_navigate", json!({"url": url})).await;
    if let Some(e) = nav.error {
        out.error = Some(format!("navigate: {}", e.message));
        return out;
    }
    let start =
        format!("Math.seedrandom({seed}); core.EPISODE_MAX_TIME = 1e9; core.startEpisodeReal(); core.getUtterance()");
    match console(s, &start).await {
        Ok(u) => out.utterance = u.as_str().unwrap_or("").to_string(),
        Err(e) => {
            out.error = Some(format!("start: {e}"));
            return out;
        }
    }
    let mut a = Agent { s, steps: 0 };
    let solved = solve(&mut a, task, &out.utterance).await;
    out.steps = a.steps;
    // the reward, once the episode ended
    for _ in 0..30 {
        if let Ok(v) = console(s, "[WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL, WOB_REWARD_REASON]").await {
            if v[0] == true {
                out.reward = v[1].as_f64().unwrap_or(0.0);
                out.ok = out.reward > 0.0;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if let Err(e) = solved {
        out.error = Some(e);
    } else if !out.ok {
        out.error = Some(format!("episode ended with reward {}", out.reward));
    }
    out
}

async fn solve(a: &mut Agent<'_>, task: &str, u: &str) -> R<()> {
    let q = quoted(u);
    match task {
        "click-test" => a.click_named("button", "Click Me!").await,
        "click-button" => a.click_named("button", q.first().ok_or("no button name")?).await,
        "click-dialog" => a.click_named("button", "Close").await,
        "click-dialog-2" => {
            let want = q.first().ok_or("no button name")?;
            a.click_named("button", if want == "x" { "Close" } else { want }).await
        }
        "click-tab" => {
            // "Click on Tab #2."
            let name = u.trim_start_matches("Click on ").trim_end_matches('.');
            let lines = a.snap().await?;
            let r = Agent::pick(&lines, "link", name).or_else(|_| Agent::pick(&lines, "tab", name))?;
            a.click(&r).await.map(|_| ())
        }
        "click-collapsible" => {
            let lines = a.snap().await?;
            let header = lines
                .iter()
                .find(|l| l.role == "tab" && l.attrs.contains("[expanded=false]") && l.name.starts_with("Section"))
                .and_then(|l| l.r.clone())
                .ok_or("no collapsed section")?;
            a.click(&header).await?;
            // the section slides open; the button below it moves until it has
            tokio::time::sleep(Duration::from_millis(500)).await;
            a.click_named("button", "Submit").await
        }
        "click-checkboxes" => {
            // "Select a, b and click Submit." / "Select nothing and click Submit."
            let list = u.trim_start_matches("Select ").trim_end_matches(" and click Submit.");
            let want: Vec<&str> = if list == "nothing" {
                vec![]
            } else {
                list.split(", ").collect()
            };
            let lines = a.snap().await?;
            for b in Agent::all(&lines, "checkbox") {
                if want.contains(&b.name.as_str()) != b.attrs.contains("[checked]") {
                    a.click(b.r.as_deref().unwrap_or_default()).await?;
                }
            }
            a.click_named("button", "Submit").await
        }
        "click-option" => {
            let name = u.trim_start_matches("Select ").trim_end_matches(" and click Submit.");
            a.click_named("radio", name).await?;
            a.click_named("button", "Submit").await
        }
        "choose-list" => {
            let name = u
                .trim_start_matches("Select ")
                .trim_end_matches(" from the list and click Submit.");
            let lines = a.snap().await?;
            let sel = Agent::all(&lines, "combobox")
                .first()
                .and_then(|l| l.r.clone())
                .ok_or("no list")?;
            a.call("browser_select_option", json!({"ref": sel, "values": [name]}))
                .await?;
            a.click_named("button", "Submit").await
        }
        "enter-text" => {
            let lines = a.snap().await?;
            let tb = Agent::textboxes(&lines)
                .first()
                .and_then(|l| l.r.clone())
                .ok_or("no text field")?;
            a.type_text(&tb, q.first().ok_or("no text")?).await?;
            a.click_named("button", "Submit").await
        }
        "enter-password" => {
            let lines = a.snap().await?;
            let pw = q.first().ok_or("no password")?;
            for tb in Agent::textboxes(&lines).iter().take(2) {
                a.type_text(tb.r.as_deref().unwrap_or_default(), pw).await?;
            }
            a.click_named("button", "Submit").await
        }
        "login-user" => {
            let lines = a.snap().await?;
            let tbs = Agent::textboxes(&lines);
            if tbs.len() < 2 || q.len() < 2 {
                return Err("expected two fields and two values".into());
            }
            for (tb, v) in tbs.iter().zip(&q) {
                a.type_text(tb.r.as_deref().unwrap_or_default(), v).await?;
            }
            a.click_named("button", "Login").await
        }
        "login-user-popup" => login_with_popup(a, &q).await,
        "focus-text-2" => {
            // "Focus into the 2nd input textbox."
            let n = u
                .chars()
                .find(|c| c.is_ascii_digit())
                .and_then(|c| c.to_digit(10))
                .ok_or("no position")? as usize;
            let lines = a.snap().await?;
            let tb = Agent::textboxes(&lines)
                .get(n - 1)
                .and_then(|l| l.r.clone())
                .ok_or("no such textbox")?;
            a.click(&tb).await.map(|_| ())
        }
        "use-autocomplete" => {
            let (start, end) = (
                q.first().ok_or("no prefix")?.clone(),
                q.get(1).cloned().unwrap_or_default(),
            );
            let lines = a.snap().await?;
            let tb = Agent::textboxes(&lines)
                .first()
                .and_then(|l| l.r.clone())
                .ok_or("no text field")?;
            a.type_text(&tb, &start).await?;
            // the suggestions open after the widget's delay
            let mut pick = None;
            for _ in 0..20 {
                let lines = a.snap().await?;
                pick = lines
                    .iter()
                    .find(|l| {
                        l.r.is_some() && l.role == "listitem" && l.name.starts_with(&start) && l.name.ends_with(&end)
                    })
                    .and_then(|l| l.r.clone());
                if pick.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            a.click(&pick.ok_or("no matching suggestion")?).await?;
            a.click_named("button", "Submit").await
        }
        "enter-date" => {
            // "Enter 03/27/2014 as the date and hit submit."
            let date = u.split_whitespace().nth(1).ok_or("no date")?.to_string();
            let lines = a.snap().await?;
            let tb = Agent::textboxes(&lines)
                .first()
                .and_then(|l| l.r.clone())
                .ok_or("no date field")?;
            a.type_text(&tb, &date).await?;
            a.click_named("button", "Submit").await
        }
        "search-engine" => search_engine(a, u, &q).await,
        "read-table" => {
            // "Enter the value of Color into the text field and press Submit."
            let key = u
                .trim_start_matches("Enter the value of ")
                .trim_end_matches(" into the text field and press Submit.");
            let lines = a.snap().await?;
            let prefix = format!("{key} | ");
            let value = lines
                .iter()
                .find(|l| l.role == "row" && l.name.starts_with(&prefix))
                .map(|l| l.name[prefix.len()..].to_string())
                .ok_or_else(|| format!("no row {key:?}"))?;
            let tb = Agent::textboxes(&lines)
                .first()
                .and_then(|l| l.r.clone())
                .ok_or("no text field")?;
            a.type_text(&tb, &value).await?;
            a.click_named("button", "Submit").await
        }
        "click-link" => {
            let name = q.first().ok_or("no link text")?;
            let lines = a.snap().await?;
            let r = lines
                .iter()
                .find(|l| {
                    l.r.is_some() && l.name == *name && (l.role == "link" || l.attrs.contains("[cursor=pointer]"))
                })
                .and_then(|l| l.r.clone())
                .ok_or_else(|| format!("no link {name:?}"))?;
            a.click(&r).await.map(|_| ())
        }
        "click-menu" => {
            // "Select Alvera>Terza>Ludovika": hover the way down, click the last
            let path: Vec<&str> = u.trim_start_matches("Select ").split('>').collect();
            for (i, item) in path.iter().enumerate() {
                // a submenu opens a moment after its parent is hovered
                let f = a
                    .call(
                        "browser_wait_for",
                        json!({"role": "menuitem", "name": item, "exact": true, "timeout_ms": 3000}),
                    )
                    .await?;
                let r = f["matches"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|m| m["role"] == "menuitem" && m["name"] == *item)
                    .and_then(|m| m["ref"].as_str())
                    .ok_or_else(|| format!("no menuitem {item:?}"))?
                    .to_string();
                if i + 1 < path.len() {
                    a.call("browser_hover", json!({"ref": r})).await?;
                } else {
                    a.click(&r).await?;
                }
            }
            Ok(())
        }
        "navigate-tree" => {
            let name = q.first().ok_or("no name")?.clone();
            for _ in 0..12 {
                let lines = a.snap().await?;
                if let Some(r) = lines
                    .iter()
                    .find(|l| l.role == "listitem" && l.name == name && l.r.is_some())
                    .and_then(|l| l.r.clone())
                {
                    return a.click(&r).await.map(|_| ());
                }
                let folder = lines
                    .iter()
                    .find(|l| l.role == "listitem" && l.attrs.contains("[expanded=false]"))
                    .and_then(|l| l.r.clone())
                    .ok_or_else(|| format!("{name:?} not in the tree and nothing left to expand"))?;
                a.click(&folder).await?;
            }
            Err("tree too deep".into())
        }
        "click-widget" => {
            // "Click on a \"textarea\" widget."
            let kind = q.first().ok_or("no widget kind")?.as_str();
            let lines = a.snap().await?;
            let hit = |l: &&Line| match kind {
                "radio" => l.role == "radio",
                "checkbox" => l.role == "checkbox",
                "button" => l.role == "button",
                "textarea" => l.role == "textbox" && l.attrs.contains("[multiline]"),
                "text" => l.role == "textbox" && !l.attrs.contains("[multiline]"),
                _ => false,
            };
            let r = lines
                .iter()
                .filter(|l| l.r.is_some())
                .find(hit)
                .and_then(|l| l.r.clone())
                .ok_or_else(|| format!("no {kind} widget"))?;
            a.click(&r).await.map(|_| ())
        }
        other => Err(format!("no solver for {other}")),
    }
}

/// login-user-popup: a "session expiring" popup may open when a field gets focus and
/// disables the form; it is dismissed with Cancel and the field filled again.
async fn login_with_popup(a: &mut Agent<'_>, q: &[String]) -> R<()> {
    if q.len() < 2 {
        return Err("expected a username and a password".into());
    }
    for (i, v) in q.iter().take(2).enumerate() {
        for _attempt in 0..3 {
            let lines = a.snap().await?;
            if dismiss_popup(a, &lines).await? {
                continue;
            }
            let tb = Agent::textboxes(&lines)
                .get(i)
                .and_then(|l| l.r.clone())
                .ok_or("no field")?;
            let typed = a.type_text(&tb, v).await;
            let lines = a.snap().await?;
            if dismiss_popup(a, &lines).await? {
                continue;
            }
            if typed.as_ref().is_ok_and(|t| t["value"] == json!(v)) {
                break;
            }
        }
    }
    let lines = a.snap().await?;
    dismiss_popup(a, &lines).await?;
    a.click_named("button", "OK").await
}

async fn dismiss_popup(a: &mut Agent<'_>, lines: &[Line]) -> R<bool> {
    if !lines.iter().any(|l| l.name.contains("Exit to home page?")) {
        return Ok(false);
    }
    let r = Agent::pick(lines, "button", "Cancel")?;
    a.click(&r).await?;
    Ok(true)
}

/// search-engine: search, go to the result's page, click the n-th result.
async fn search_engine(a: &mut Agent<'_>, u: &str, q: &[String]) -> R<()> {
    let term = q.first().ok_or("no search term")?;
    // "... find and click the 5th search result."
    let n: usize = u
        .split("click the ")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|d| d.parse().ok())
        .ok_or("no result position")?;
    let lines = a.snap().await?;
    let tb = Agent::textboxes(&lines)
        .first()
        .and_then(|l| l.r.clone())
        .ok_or("no search field")?;
    a.type_text(&tb, term).await?;
    a.click_named("button", "Search").await?;
    let page = (n - 1) / 3 + 1;
    if page > 1 {
        a.call(
            "browser_wait_for",
            json!({"text": page.to_string(), "timeout_ms": 3000}),
        )
        .await?;
        a.click_named("link", &page.to_string()).await?;
    }
    // result titles are the links between the Search button and the pager
    let lines = a.snap().await?;
    let pager = |n: &str| {
        n.chars().all(|c| c.is_ascii_digit()) || ["<", ">", "«", "»", "First", "Last", "Previous", "Next"].contains(&n)
    };
    let results: Vec<&Line> = lines
        .iter()
        .filter(|l| l.role == "link" && l.r.is_some() && !pager(&l.name))
        .collect();
    let r = results
        .get((n - 1) % 3)
        .and_then(|l| l.r.clone())
        .ok_or_else(|| format!("only {} results on page {page}", results.len()))?;
    a.click(&r).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_snapshot_lines() {
        let l = parse("Tab x\n- heading \"A \\\"b\\\"\" [level=1]\n  - button \"OK\" [ref=e12]\n- text \"x\"\n");
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].name, "A \"b\"");
        assert_eq!(l[0].attrs, "[level=1]");
        assert_eq!((l[1].depth, l[1].r.as_deref()), (1, Some("e12")));
    }
}
