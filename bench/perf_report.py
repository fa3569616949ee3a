#!/usr/bin/env python3
"""Issue 9's scoreboard: reads one run of the shared peers harness (results/<adapter>.json of
@playwright/mcp, chrome-devtools-mcp and tabgate) plus tabgate's supervisor benches
(supervisor.json from `crates/tools/examples/supervisor_bench.rs`) and prints ONE table: each
target, tabgate's value, the peers' values, tabgate / @playwright/mcp, goal, PASS/FAIL.

    perf_report.py --harness DIR --supervisor FILE --peers /tmp/peers [--markdown FILE]
    perf_report.py quiet SECONDS      # wait until >= 70 % of the CPU is idle (or give up)

Run it with the harness venv's python (`/tmp/peers/venv/bin/python`): it counts o200k_base
tokens with tiktoken from the harness's offline cache; without tiktoken it falls back to
chars / 3.6 and says so.
"""
import argparse
import collections
import html.parser
import json
import os
import re
import sys
import time

PW, DT, TG = "playwright-mcp", "chrome-devtools-mcp", "tabgate"

# Every @playwright/mcp tool and the tabgate tools that offer the same capability as a
# dedicated tool (any one of them counts). Raw `browser_cdp` can reach almost anything, so it
# does not count here: a capability an agent has to build from CDP calls is not offered.
PW_CAPABILITIES = {
    "browser_close": ["browser_tabs"],                 # close a tab (sessions end over HTTP)
    "browser_resize": ["browser_resize"],
    "browser_console_messages": ["browser_console"],
    "browser_handle_dialog": ["browser_dialog"],
    "browser_emulate_media": ["browser_emulate", "browser_emulate_media"],
    "browser_evaluate": ["browser_console", "run_js", "browser_evaluate"],
    "browser_file_upload": ["browser_upload", "browser_file_upload"],
    "browser_drop": ["browser_drop", "browser_drag"],
    "browser_find": ["browser_find"],
    "browser_fill_form": ["browser_fill_form", "browser_fill"],
    "browser_press_key": ["browser_press"],
    "browser_type": ["browser_type"],
    "browser_navigate": ["browser_navigate"],
    "browser_navigate_back": ["browser_back"],
    "browser_network_requests": ["browser_network", "browser_network_requests"],
    "browser_network_request": ["browser_network", "browser_network_request"],
    "browser_run_code_unsafe": ["run_js", "browser_console"],
    "browser_take_screenshot": ["browser_screenshot"],
    "browser_snapshot": ["browser_snapshot"],
    "browser_click": ["browser_click"],
    "browser_drag": ["browser_drag"],
    "browser_hover": ["browser_hover"],
    "browser_select_option": ["browser_select_option"],
    "browser_tabs": ["browser_tabs"],
    "browser_wait_for": ["browser_wait_for"],
}

MARKER_WORDS = ("truncat", "omitted", "left out", "not shown", "more nodes", "nodes hidden")


# --------------------------------------------------------------------------------------------
# helpers

def cpu_idle(interval=1.0):
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v)
    i0, t0 = snap()
    time.sleep(interval)
    i1, t1 = snap()
    return (i1 - i0) / max(1, t1 - t0)


def wait_quiet(limit):
    start = time.monotonic()
    idle = cpu_idle()
    while idle < 0.70 and time.monotonic() - start < limit:
        idle = cpu_idle()
    return idle, time.monotonic() - start


_ENC = None


def tokens(text):
    """(count, method)."""
    global _ENC
    if _ENC is None:
        try:
            import tiktoken
            _ENC = tiktoken.get_encoding("o200k_base")
        except Exception as e:  # no tiktoken or no offline cache
            print(f"note: tiktoken unavailable ({e}); tokens = chars / 3.6", file=sys.stderr)
            _ENC = False
    if _ENC:
        return len(_ENC.encode(text, disallowed_special=())), "o200k"
    return round(len(text) / 3.6), "chars/3.6"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def get(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def fmt(v, unit="", nd=2):
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    if unit == "k":
        return f"{v / 1000:.1f}k"
    return f"{v:.{nd}f}{unit}"


# --------------------------------------------------------------------------------------------
# interactive elements of big.html (the S1 page) and who gives each one a ref

class Controls(html.parser.HTMLParser):
    """Interactive elements of a static page: (kind, accessible name or None), in order."""

    VOID = {"input", "br", "img", "meta", "link", "hr", "source", "wbr", "col", "area"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found = []            # [kind, name]
        self.open = []             # [(tag, collector index or None)]
        self.collect = []          # [[text parts, target]] target: ("el", i) | ("label", for_id, [i...])
        self.labels_for = {}       # id -> label text
        self.ids = {}              # element index -> id

    def handle_starttag(self, tag, a):
        a = dict(a)
        kind, col = None, None
        if tag == "a" and "href" in a:
            kind = "link"
        elif tag in ("button", "summary") or (tag == "input" and a.get("type") in ("submit", "button", "reset")):
            kind = "button"
        elif tag == "input" and a.get("type") in ("checkbox", "radio"):
            kind = a["type"]
        elif tag == "input" and a.get("type") == "search":
            kind = "searchbox"
        elif tag == "input" and a.get("type", "text") in ("text", "email", "password", "url", "tel", "number"):
            kind = "textbox"
        elif tag == "textarea" or a.get("contenteditable") in ("", "true"):
            kind = "textbox"
        elif tag == "select":
            kind = "combobox"
        elif "onclick" in a or "cursor:pointer" in (a.get("style") or "").replace(" ", ""):
            kind = "clickable"
        if kind:
            name = a.get("aria-label") or a.get("title")
            if tag == "input" and a.get("type") in ("submit", "button", "reset"):
                name = name or a.get("value") or a["type"].capitalize()
            self.found.append([kind, name])
            i = len(self.found) - 1
            if a.get("id"):
                self.ids[i] = a["id"]
            # inside a <label>: that label names it
            for c in self.collect:
                if c[1][0] == "label":
                    c[1][2].append(i)
            if tag in ("a", "button", "summary") and not name:
                self.collect.append([[], ("el", i)])
                col = len(self.collect) - 1
        if tag == "label":
            self.collect.append([[], ("label", a.get("for"), [])])
            col = len(self.collect) - 1
        if tag not in self.VOID:
            self.open.append((tag, col))

    def handle_endtag(self, tag):
        while self.open:
            t, col = self.open.pop()
            if col is not None:
                parts, target = self.collect.pop(col)
                text = " ".join("".join(parts).split())
                if target[0] == "el":
                    self.found[target[1]][1] = text
                else:
                    if target[1]:
                        self.labels_for[target[1]] = text
                    for i in target[2]:
                        if self.found[i][1] is None:
                            self.found[i][1] = text
            if t == tag:
                break

    def handle_data(self, data):
        for c in self.collect:
            c[0].append(data)

    def result(self):
        out = []
        for i, (kind, name) in enumerate(self.found):
            if name is None and i in self.ids:
                name = self.labels_for.get(self.ids[i])
            out.append((kind, name))
        return out


ROLES = {
    "link": {"link"},
    "button": {"button", "DisclosureTriangle", "disclosuretriangle", "generic"},
    "checkbox": {"checkbox"},
    "radio": {"radio"},
    "searchbox": {"searchbox", "textbox"},
    "textbox": {"textbox", "searchbox"},
    "combobox": {"combobox", "listbox"},
    "clickable": None,  # any role
}


def interactive_coverage(peers, results_dir, adapter_name):
    """(with_ref, total, missing examples) for big.html's controls in the S1 snapshot."""
    page = os.path.join(peers, "site", "big.html")
    snap = os.path.join(results_dir, "raw", adapter_name, "S1-big-snapshot.txt")
    if not (os.path.exists(page) and os.path.exists(snap)):
        return None
    p = Controls()
    p.feed(open(page, encoding="utf-8").read())
    controls = p.result()
    sys.path.insert(0, peers)
    mod = {PW: "playwright", DT: "devtools", TG: "tabgate"}[adapter_name]
    ad = __import__(f"adapters.{mod}", fromlist=["Adapter"]).Adapter()
    nodes = [n for n in ad.parse_nodes(open(snap, encoding="utf-8").read()) if n.get("ref")]
    norm = lambda s: " ".join((s or "").split())
    pool = collections.defaultdict(list)  # name -> [node]
    for n in nodes:
        pool[norm(n["name"])].append(n)
    used, missing = set(), []
    # named controls first, then unnamed ones take any free node with a fitting role
    order = sorted(range(len(controls)), key=lambda i: controls[i][1] is None)
    for i in order:
        kind, name = controls[i]
        roles = ROLES[kind]
        cands = pool.get(norm(name), []) if name is not None else [n for ns in pool.values() for n in ns]
        hit = next((n for n in cands if id(n) not in used and (roles is None or n["role"] in roles)), None)
        if hit is None:
            missing.append(f"{kind} {name!r}")
        else:
            used.add(id(hit))
    return len(controls) - len(missing), len(controls), missing


# --------------------------------------------------------------------------------------------

def main_report(a):
    R = {k: load(os.path.join(a.harness, f"{k}.json")) for k in (PW, DT, TG)}
    S = load(a.supervisor) or {}
    rows = []   # (target, tabgate, playwright, devtools, ratio, goal, verdict)
    notes = []

    def ratio_row(label, path, goal, unit="", nd=2, scale=1.0):
        v = {k: (get(R[k], *path) if R[k] else None) for k in R}
        v = {k: (x * scale if isinstance(x, (int, float)) else None) for k, x in v.items()}
        r = v[TG] / v[PW] if v[TG] is not None and v[PW] else None
        verdict = "—" if r is None else ("PASS" if r <= goal else "FAIL")
        f = (lambda x: fmt(x, "k")) if unit == "k" else (lambda x: fmt(x, unit, nd))
        rows.append((label, f(v[TG]), f(v[PW]), f(v[DT]), fmt(r, "×"), f"≤ {goal}×", verdict))

    ratio_row("S1 `browser_snapshot` median (s)", ("scenarios", "S1", "metrics", "snapshot_median_s"), 0.5, nd=3)
    ratio_row("S1 snapshot size (o200k tokens)", ("scenarios", "S1", "metrics", "snapshot_tokens"), 0.5, unit="k")

    # every interactive element carries a ref, and the harness's checks pass
    cov = {k: interactive_coverage(a.peers, a.harness, k) if R[k] else None for k in R}
    def cov_s(c):
        return "—" if c is None else f"{c[0]}/{c[1]}"
    tg_cov = cov[TG]
    ok = tg_cov is not None and tg_cov[0] == tg_cov[1]
    rows.append(("S1 big.html controls with a ref", cov_s(tg_cov), cov_s(cov[PW]), cov_s(cov[DT]), "—",
                 "all", "PASS" if ok else "FAIL"))
    if tg_cov and tg_cov[2]:
        notes.append(f"tabgate S1 controls without a ref ({len(tg_cov[2])}): " + ", ".join(tg_cov[2][:10]))
    def checks(d):
        if not d:
            return None
        sc = d["scenarios"]
        return sum(1 for s in sc.values() if s.get("status") == "pass"), len(sc)
    ch = {k: checks(R[k]) for k in R}
    s1c = get(R[TG], "scenarios", "S1", "checks") or {}
    ok = ch[TG] is not None and ch[TG][0] == ch[TG][1] and bool(s1c) and all(s1c.values())
    rows.append(("harness scenarios passed (S1 completeness incl.)",
                 *["—" if ch[k] is None else f"{ch[k][0]}/{ch[k][1]}" for k in (TG, PW, DT)],
                 "—", "all", "PASS" if ok else "FAIL"))
    for k in R:
        if R[k]:
            bad = [sid for sid, s in R[k]["scenarios"].items() if s.get("status") != "pass"]
            if bad:
                notes.append(f"{k}: scenarios not passing: {', '.join(bad)}")

    ratio_row("S8 spawn → first snapshot, median (s)", ("scenarios", "S8", "metrics", "to_first_snapshot_median_s"), 0.6)
    ratio_row("S1 server memory, PSS (MiB)", ("scenarios", "S1", "metrics", "memory_after_s1", "server_pss_mib"), 0.25, nd=1)
    ratio_row("`tools/list` (o200k tokens)", ("tools", "tools_list_tokens"), 0.6, unit="k")

    tg_tools = set(get(R[TG], "tools", "names") or [])
    if tg_tools:
        missing = [t for t, alts in PW_CAPABILITIES.items() if not tg_tools.intersection(alts)]
        have = len(PW_CAPABILITIES) - len(missing)
        pw_n, dt_n = get(R[PW], "tools", "count"), get(R[DT], "tools", "count")
        rows.append(("@playwright/mcp tools with a tabgate counterpart", f"{have}/{len(PW_CAPABILITIES)} ({len(tg_tools)} tools)",
                     f"{pw_n} tools" if pw_n else "—", f"{dt_n} tools" if dt_n else "—", "—", "all",
                     "PASS" if not missing else "FAIL"))
        if missing:
            notes.append("tabgate has no dedicated tool for: " + ", ".join(missing))

    d = get(S, "dialog", "alert_to_pending_ms")
    if d:
        rows.append(("dialog: `alert()` → `pending_dialogs`, median (ms)", fmt(d["median"]), "—", "—", "—",
                     "< 10 ms", "PASS" if d["median"] is not None and d["median"] < 10 else "FAIL"))
        notes.append(f"dialog detection over {d['n']} alerts: p90 {fmt(d['p90'])} ms, max {fmt(d['max'])} ms "
                     f"(page clock → supervisor `opened_at` median {get(S, 'dialog', 'alert_to_opened_at_ms', 'median')} ms)")
    else:
        rows.append(("dialog: `alert()` → `pending_dialogs`, median (ms)", "not run", "—", "—", "—", "< 10 ms", "FAIL"))

    floods = get(S, "flood") or {}
    if not floods:
        rows.append(("console flood 100k: snapshot during / quiet", "not run", "—", "—", "—", "≤ 2×", "FAIL"))
    for level, f in sorted(floods.items(), key=lambda kv: (kv[0] != "log", kv[0])):
        if level == "burn":  # the control: as busy, no console output
            notes.append(f"control (flood page busy {f.get('busy_ms')} ms, no console output): small-page snapshot "
                         f"{fmt(f['during_ms'].get('median'), nd=1)} ms vs {fmt(f['quiet_ms'].get('median'), nd=1)} ms quiet "
                         f"= {fmt(f.get('ratio'), '×')} (p90 {fmt(f['during_ms'].get('p90'), nd=1)} ms): the part of the "
                         f"flood ratios that is CPU contention, not console traffic")
            continue
        n = f.get("messages", 0)
        label = f"console flood {n // 1000}k `console.{level}`: small-page snapshot (ms)"
        dm, qm, r = f["during_ms"].get("median"), f["quiet_ms"].get("median"), f.get("ratio")
        rows.append((label, f"{fmt(dm, nd=1)} vs {fmt(qm, nd=1)} quiet", "—", "—",
                     fmt(r, "×"), "≤ 2×", "PASS" if r is not None and r <= 2 else "FAIL"))
        notes.append(f"console.{level} flood: {f['during_ms']['n']} snapshots during the flood (p90 {fmt(f['during_ms'].get('p90'), nd=1)} ms, "
                     f"max {fmt(f['during_ms'].get('max'), nd=1)} ms; quiet median {fmt(get(f, 'quiet_before_ms', 'median'), nd=1)} ms "
                     f"before, {fmt(get(f, 'quiet_after_ms', 'median'), nd=1)} ms after); the page logged {n} messages in {f.get('page_flood_ms')} ms, "
                     f"the supervisor had handled them all {f.get('supervisor_drained_after_s')} s after the start")

    b = get(S, "budget")
    if b:
        text = ""
        try:
            text = open(b["text_file"], encoding="utf-8").read()
        except OSError:
            pass
        tok, how = tokens(text) if text else (b.get("tokens_estimate_chars_3_6"), "chars/3.6")
        marker = b.get("truncation_marker")
        ok = tok is not None and tok < 25000 and bool(marker)
        nrows = b.get("table_rows")
        rows.append((f"case 28: {nrows:,}-row table, default snapshot ({how} tokens)" if nrows else
                     f"case 28: {b['page']}, default snapshot ({how} tokens)",
                     f"{fmt(tok, 'k')}, marker: {'yes' if marker else 'NO'}", "—", "—", "—",
                     "< 25k + marker", "PASS" if ok else "FAIL"))
        notes.append(f"case 28 ({b['page']}): {b['chars']} chars, {b['refs']} refs, snapshot median "
                     f"{b['snapshot_ms']['median']:.0f} ms" + (f"; marker line: {marker}" if marker else
                                                            "; no truncation marker (no size budget yet?)")
                     + (f"; error: {b['error']}" if b.get("error") else ""))
    else:
        rows.append(("case 28: 20k-row table, default snapshot", "not run", "—", "—", "—", "< 25k + marker", "FAIL"))

    head = ("target", "tabgate", "@playwright/mcp", "chrome-devtools-mcp", "tabgate / playwright", "goal", "result")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows]
    passed = sum(1 for r in rows if r[-1] == "PASS")
    out.append("")
    out.append(f"{passed}/{len(rows)} targets pass.")
    # machine load during the run
    loads = []
    for k in (PW, DT, TG):
        if R[k]:
            ml = [s.get("machine_load", {}) for s in R[k]["scenarios"].values()]
            idle = [m["cpu_idle_before"] for m in ml if "cpu_idle_before" in m]
            la = [m["loadavg_before"] for m in ml if "loadavg_before" in m]
            if idle:
                loads.append(f"{k} {R[k].get('started_utc', '?')}: CPU idle before scenarios "
                             f"{min(idle):.0%}–{max(idle):.0%}, loadavg {min(la):.2f}–{max(la):.2f}")
    for k in (PW, DT, TG):
        if R[k]:
            busy = [sid for sid, sc in R[k]["scenarios"].items()
                    if sc.get("machine_load", {}).get("cpu_idle_before", 1) < 0.70]
            if busy:
                notes.append(f"{k}: scenarios {', '.join(busy)} started with < 70 % idle CPU "
                             f"(--wait-quiet gave up): their times are inflated; rerun on a quieter machine")
    if S.get("loadavg_before"):
        loads.append(f"supervisor benches: loadavg {S['loadavg_before']} → {S.get('loadavg_after')}"
                     + (f", CPU idle before {S['cpu_idle_before']:.0%}" if "cpu_idle_before" in S else ""))
    out.append("")
    out.append("Machine load:")
    out += [f"  {x}" for x in loads]
    if notes:
        out.append("")
        out.append("Notes:")
        out += [f"  - {n}" for n in notes]
    versions = [f"{R[k]['display']} {R[k]['version']}" for k in (PW, DT) if R[k]]
    if R[TG] or R[PW]:
        out.append("")
        out.append(f"Versions: {'; '.join(versions)}; {(R[TG] or R[PW]).get('chromium', '')}")
    text = "\n".join(out)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    return 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "quiet":
        idle, waited = wait_quiet(float(sys.argv[2]) if len(sys.argv) > 2 else 120)
        print(json.dumps({"cpu_idle": round(idle, 3), "waited_s": round(waited, 1),
                          "loadavg": os.getloadavg()[0]}))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--harness", required=True, help="the harness's --out directory of this run")
    ap.add_argument("--supervisor", required=True, help="supervisor.json written by supervisor_bench")
    ap.add_argument("--peers", default="/tmp/peers", help="the harness copy (site/ and adapters/)")
    ap.add_argument("--markdown", help="also write the table here")
    return main_report(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
