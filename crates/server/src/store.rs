//! Session records and the dialog audit, in SQLite (`<state dir>/tabgate.db`).
//!
//! The schema is versioned with `PRAGMA user_version` and migrated forward one step at a
//! time. A file that is not a database, fails `quick_check`, or carries a newer schema
//! than this build knows is a startup error that names the file: it is never replaced.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use serde_json::Value;

/// Migrations, in order; `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: sessions and the dialog audit
    "CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        name TEXT,
        origin TEXT NOT NULL,
        settings TEXT NOT NULL,
        created_at REAL NOT NULL,
        last_used_at REAL NOT NULL,
        last_url TEXT
    );
    CREATE TABLE dialog_audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        dialog_id TEXT NOT NULL,
        type TEXT NOT NULL,
        message TEXT NOT NULL,
        default_prompt TEXT,
        tab_id TEXT,
        frame_id TEXT,
        opened_at REAL NOT NULL,
        closed_at REAL,
        closed_by TEXT,
        action TEXT,
        prompt_text TEXT
    );
    CREATE INDEX dialog_audit_session ON dialog_audit (session_id, id);",
    // 2: the in-page console: capability tokens (hashed), conversations, and the log of
    // every /v1/proxy request (see crates/server/src/console/db.rs)
    "CREATE TABLE console_tokens (
        token_hash TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL
    );
    CREATE INDEX console_tokens_session ON console_tokens (session_id);
    CREATE TABLE console_conversations (
        session_id TEXT NOT NULL,
        id TEXT NOT NULL,
        title TEXT NOT NULL,
        runner_mode TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        messages TEXT NOT NULL,
        PRIMARY KEY (session_id, id)
    );
    CREATE TABLE proxy_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        session_id TEXT,
        method TEXT NOT NULL,
        url TEXT NOT NULL,
        final_url TEXT,
        status INTEGER,
        bytes INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        rule TEXT,
        redirects INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL
    );
    CREATE INDEX proxy_log_session ON proxy_log (session_id, id);",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// A storage failure, with the database path.
#[derive(Debug, Clone)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

/// A stored session.
#[derive(Debug, Clone, Serialize)]
pub struct SessionRecord {
    /// `ses_…`.
    pub session_id: String,
    /// Optional label given at creation.
    pub name: Option<String>,
    /// `http` (POST /v1/sessions) or `mcp` (created for an MCP session, removed with it).
    pub origin: String,
    /// The per-session settings given at creation (`dialog_policy`, `dialog_timeout_s`).
    pub settings: Value,
    /// Epoch seconds.
    pub created_at: f64,
    /// Epoch seconds of the last tool call.
    pub last_used_at: f64,
    /// URL of the current tab when its tab was last closed (idle, shutdown).
    pub last_url: Option<String>,
}

/// One audited dialog: when it opened, how and when it closed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DialogAudit {
    /// The supervisor's id (`d-N`, counted per opened tab set).
    pub dialog_id: String,
    /// `alert` | `confirm` | `prompt` | `beforeunload`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The dialog's text.
    pub message: String,
    /// A prompt's default text.
    pub default_prompt: Option<String>,
    /// The tab it belonged to.
    pub tab_id: Option<String>,
    /// The frame that opened it, when known.
    pub frame_id: Option<String>,
    /// Epoch seconds.
    pub opened_at: f64,
    /// Epoch seconds; `None` while pending.
    pub closed_at: Option<f64>,
    /// `agent` | `auto_policy` | `watchdog` | `remote`.
    pub closed_by: Option<String>,
    /// `accept` | `dismiss` when tabgate answered.
    pub action: Option<String>,
    /// The text an agent typed into a prompt.
    pub prompt_text: Option<String>,
}

/// The database. Every method is short and synchronous; the connection is behind a mutex
/// that is never held across `.await`.
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl Store {
    /// Opens (creating when missing) `path`, checks it and migrates it to
    /// [`SCHEMA_VERSION`]. Errors name the file and the way out.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            StoreError(format!(
                "session database {}: {what}: {e}; move it away to start with an empty one, or pass another --state-dir",
                path.display()
            ))
        };
        let conn = Connection::open(path).map_err(|e| fail("cannot open", &e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| fail("cannot configure", &e))?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| fail("not a usable SQLite database", &e))?;
        if check != "ok" {
            return Err(fail("integrity check failed", &check));
        }
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .map_err(|e| fail("cannot configure", &e))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| fail("cannot read the schema version", &e))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError(format!(
                "session database {} has schema version {version}, newer than this tabgate understands ({SCHEMA_VERSION}); run a newer tabgate or pass another --state-dir",
                path.display()
            )));
        }
        if version < 0 {
            return Err(fail("bad schema version", &version));
        }
        let mut conn = conn;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let to = i as i64 + 1;
            let tx = conn.transaction().map_err(|e| fail("cannot migrate", &e))?;
            tx.execute_batch(sql)
                .map_err(|e| fail(&format!("migration to version {to} failed"), &e))?;
            tx.pragma_update(None, "user_version", to)
                .map_err(|e| fail("cannot migrate", &e))?;
            tx.commit().map_err(|e| fail("cannot migrate", &e))?;
            tracing::info!(version = to, "session database migrated");
        }
        Ok(Store {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn db(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        StoreError(format!("session database {}: {e}", self.path.display()))
    }

    /// Inserts a new session record.
    pub fn insert_session(&self, r: &SessionRecord) -> Result<(), StoreError> {
        self.db()
            .execute(
                "INSERT INTO sessions (id, name, origin, settings, created_at, last_used_at, last_url)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    r.session_id,
                    r.name,
                    r.origin,
                    r.settings.to_string(),
                    r.created_at,
                    r.last_used_at,
                    r.last_url
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRecord> {
        let settings: String = r.get(3)?;
        Ok(SessionRecord {
            session_id: r.get(0)?,
            name: r.get(1)?,
            origin: r.get(2)?,
            settings: serde_json::from_str(&settings).unwrap_or(Value::Null),
            created_at: r.get(4)?,
            last_used_at: r.get(5)?,
            last_url: r.get(6)?,
        })
    }

    /// The record of session `id`, if it exists.
    pub fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        self.db()
            .query_row(
                "SELECT id, name, origin, settings, created_at, last_used_at, last_url FROM sessions WHERE id = ?1",
                [id],
                Store::row,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Every session record, oldest first.
    pub fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let db = self.db();
        let mut st = db
            .prepare(
                "SELECT id, name, origin, settings, created_at, last_used_at, last_url FROM sessions
                 ORDER BY created_at, id",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], Store::row)
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        Ok(rows)
    }

    /// Deletes session `id`; returns whether it existed. Its audit rows stay.
    pub fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        let n = self
            .db()
            .execute("DELETE FROM sessions WHERE id = ?1", [id])
            .map_err(|e| self.err(e))?;
        Ok(n > 0)
    }

    /// Deletes every session of `origin` (MCP sessions left over from a previous run).
    pub fn delete_origin(&self, origin: &str) -> Result<usize, StoreError> {
        self.db()
            .execute("DELETE FROM sessions WHERE origin = ?1", [origin])
            .map_err(|e| self.err(e))
    }

    /// Records use: `last_used_at`, and `last_url` when given.
    pub fn touch(&self, id: &str, at: f64, last_url: Option<&str>) -> Result<(), StoreError> {
        let db = self.db();
        match last_url {
            Some(u) => db.execute(
                "UPDATE sessions SET last_used_at = MAX(last_used_at, ?2), last_url = ?3 WHERE id = ?1",
                params![id, at, u],
            ),
            None => db.execute(
                "UPDATE sessions SET last_used_at = MAX(last_used_at, ?2) WHERE id = ?1",
                params![id, at],
            ),
        }
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records a dialog that opened; returns its audit row id.
    pub fn audit_open(&self, session_id: &str, d: &DialogAudit) -> Result<i64, StoreError> {
        let db = self.db();
        db.execute(
            "INSERT INTO dialog_audit (session_id, dialog_id, type, message, default_prompt, tab_id, frame_id,
                opened_at, closed_at, closed_by, action, prompt_text)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                session_id,
                d.dialog_id,
                d.kind,
                d.message,
                d.default_prompt,
                d.tab_id,
                d.frame_id,
                d.opened_at,
                d.closed_at,
                d.closed_by,
                d.action,
                d.prompt_text
            ],
        )
        .map_err(|e| self.err(e))?;
        Ok(db.last_insert_rowid())
    }

    /// Records how audit row `row` closed.
    pub fn audit_close(
        &self,
        row: i64,
        closed_at: f64,
        closed_by: &str,
        action: Option<&str>,
    ) -> Result<(), StoreError> {
        self.db()
            .execute(
                "UPDATE dialog_audit SET closed_at = ?2, closed_by = ?3, action = COALESCE(?4, action) WHERE id = ?1",
                params![row, closed_at, closed_by, action],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Adds the prompt text an agent answered with to audit row `row`.
    pub fn audit_prompt_text(&self, row: i64, text: &str) -> Result<(), StoreError> {
        self.db()
            .execute(
                "UPDATE dialog_audit SET prompt_text = ?2 WHERE id = ?1",
                params![row, text],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The audited dialogs of a session, oldest first (at most `limit`, newest kept).
    pub fn dialogs(&self, session_id: &str, limit: usize) -> Result<Vec<DialogAudit>, StoreError> {
        let db = self.db();
        let mut st = db
            .prepare(
                "SELECT dialog_id, type, message, default_prompt, tab_id, frame_id, opened_at, closed_at,
                        closed_by, action, prompt_text
                 FROM dialog_audit WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = st
            .query_map(params![session_id, limit as i64], |r| {
                Ok(DialogAudit {
                    dialog_id: r.get(0)?,
                    kind: r.get(1)?,
                    message: r.get(2)?,
                    default_prompt: r.get(3)?,
                    tab_id: r.get(4)?,
                    frame_id: r.get(5)?,
                    opened_at: r.get(6)?,
                    closed_at: r.get(7)?,
                    closed_by: r.get(8)?,
                    action: r.get(9)?,
                    prompt_text: r.get(10)?,
                })
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        rows.reverse();
        Ok(rows)
    }

    /// Writes the WAL back into the main file, so the database is one consistent file at
    /// rest. Called on shutdown.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.db()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str) -> SessionRecord {
        SessionRecord {
            session_id: id.into(),
            name: Some("n".into()),
            origin: "http".into(),
            settings: serde_json::json!({"dialog_policy": "auto_dismiss"}),
            created_at: 1.0,
            last_used_at: 1.0,
            last_url: None,
        }
    }

    #[test]
    fn sessions_round_trip_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.db");
        {
            let s = Store::open(&p).unwrap();
            s.insert_session(&rec("ses_a")).unwrap();
            s.insert_session(&rec("ses_b")).unwrap();
            s.touch("ses_a", 5.0, Some("http://x/")).unwrap();
            assert!(s.delete_session("ses_b").unwrap());
            assert!(!s.delete_session("ses_b").unwrap());
            s.checkpoint().unwrap();
        }
        let s = Store::open(&p).unwrap();
        let all = s.list_sessions().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].last_used_at, 5.0);
        assert_eq!(all[0].last_url.as_deref(), Some("http://x/"));
        assert_eq!(all[0].settings["dialog_policy"], "auto_dismiss");
    }

    #[test]
    fn audit_rows() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("t.db")).unwrap();
        let d = DialogAudit {
            dialog_id: "d-1".into(),
            kind: "prompt".into(),
            message: "name?".into(),
            default_prompt: Some("x".into()),
            tab_id: Some("T".into()),
            frame_id: None,
            opened_at: 1.0,
            closed_at: None,
            closed_by: None,
            action: None,
            prompt_text: None,
        };
        let row = s.audit_open("ses_a", &d).unwrap();
        s.audit_close(row, 2.0, "agent", Some("accept")).unwrap();
        s.audit_prompt_text(row, "Ada").unwrap();
        let got = s.dialogs("ses_a", 10).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].closed_by.as_deref(), Some("agent"));
        assert_eq!(got[0].prompt_text.as_deref(), Some("Ada"));
    }

    #[test]
    fn refuses_garbage_and_newer_schemas() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.db");
        std::fs::write(&p, vec![b'x'; 8192]).unwrap();
        let e = Store::open(&p).err().unwrap().0;
        assert!(
            e.contains("bad.db") && e.contains("not a usable SQLite database"),
            "{e}"
        );
        assert_eq!(std::fs::read(&p).unwrap(), vec![b'x'; 8192], "the file was touched");

        let p = dir.path().join("new.db");
        {
            let c = Connection::open(&p).unwrap();
            c.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        }
        let e = Store::open(&p).err().unwrap().0;
        assert!(e.contains("newer than this tabgate"), "{e}");
    }
}
