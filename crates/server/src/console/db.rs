//! The console's tables in the session database (schema version 2, migrated by
//! [`crate::Store::open`]): capability tokens (only their SHA-256 is stored),
//! conversations, and the proxy log. A connection of its own, so console traffic never
//! waits on the session store's lock; every method is short and synchronous and the lock
//! is never held across `.await`.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::store::StoreError;

/// One conversation as listed (without its messages).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConversationInfo {
    /// Chosen by the console (`c_…`).
    pub id: String,
    /// The first words of the first message, or what the person named it.
    pub title: String,
    /// The runner mode when it was last saved.
    pub runner_mode: Option<String>,
    /// Epoch seconds.
    pub created_at: f64,
    /// Epoch seconds.
    pub updated_at: f64,
}

/// One line of the proxy log.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProxyLogEntry {
    /// Epoch seconds.
    pub at: f64,
    /// The session of the console token, `None` for a request made with the API key
    /// and no `X-Tabgate-Session`.
    pub session_id: Option<String>,
    /// `GET` or `POST`.
    pub method: String,
    /// The URL asked for.
    pub url: String,
    /// The URL of the last hop tried.
    pub final_url: Option<String>,
    /// The upstream status, when there was an answer.
    pub status: Option<u16>,
    /// Body bytes relayed.
    pub bytes: u64,
    /// `ok`, or the error code (`proxy_refused`, `proxy_timeout`, …).
    pub outcome: String,
    /// The rule that refused it.
    pub rule: Option<String>,
    /// Redirects followed.
    pub redirects: u32,
    /// Milliseconds spent.
    pub duration_ms: u64,
}

/// The SHA-256 of a token, hex.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The console's database connection.
pub struct ConsoleDb {
    path: PathBuf,
    conn: Mutex<Option<Connection>>,
}

impl ConsoleDb {
    /// The console tables of the database at `path` (opened on first use; the schema is
    /// the session store's to migrate).
    pub fn new(path: &Path) -> ConsoleDb {
        ConsoleDb {
            path: path.to_path_buf(),
            conn: Mutex::new(None),
        }
    }

    fn err(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError(format!("session database {}: {e}", self.path.display()))
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let mut g: MutexGuard<'_, Option<Connection>> = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            let c = Connection::open(&self.path).map_err(|e| self.err(e))?;
            c.busy_timeout(Duration::from_secs(5)).map_err(|e| self.err(e))?;
            *g = Some(c);
        }
        let c = g.as_ref().expect("opened above");
        f(c).map_err(|e| self.err(e))
    }

    /// Stores a token's hash for `session_id`, valid until `expires_at`.
    pub fn insert_token(&self, token: &str, session_id: &str, now: f64, expires_at: f64) -> Result<(), StoreError> {
        self.with(|c| {
            // expired tokens go when new ones come
            c.execute("DELETE FROM console_tokens WHERE expires_at < ?1", [now])?;
            c.execute(
                "INSERT INTO console_tokens (token_hash, session_id, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)",
                params![token_hash(token), session_id, now, expires_at],
            )?;
            Ok(())
        })
    }

    /// The session of a token that has not expired at `now`.
    pub fn token_session(&self, token: &str, now: f64) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            c.query_row(
                "SELECT session_id FROM console_tokens WHERE token_hash = ?1 AND expires_at >= ?2",
                params![token_hash(token), now],
                |r| r.get(0),
            )
            .optional()
        })
    }

    /// Forgets a token; returns whether it existed.
    pub fn revoke_token(&self, token: &str) -> Result<bool, StoreError> {
        self.with(|c| c.execute("DELETE FROM console_tokens WHERE token_hash = ?1", [token_hash(token)]))
            .map(|n| n > 0)
    }

    /// The conversations of a session, most recently updated first.
    pub fn conversations(&self, session_id: &str) -> Result<Vec<ConversationInfo>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, title, runner_mode, created_at, updated_at FROM console_conversations
                 WHERE session_id = ?1 ORDER BY updated_at DESC, id",
            )?;
            let rows = st.query_map([session_id], |r| {
                Ok(ConversationInfo {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    runner_mode: r.get(2)?,
                    created_at: r.get(3)?,
                    updated_at: r.get(4)?,
                })
            })?;
            rows.collect()
        })
    }

    /// One conversation with its messages (the JSON the console saved).
    pub fn conversation(&self, session_id: &str, id: &str) -> Result<Option<(ConversationInfo, Value)>, StoreError> {
        self.with(|c| {
            c.query_row(
                "SELECT id, title, runner_mode, created_at, updated_at, messages FROM console_conversations
                 WHERE session_id = ?1 AND id = ?2",
                params![session_id, id],
                |r| {
                    let text: String = r.get(5)?;
                    Ok((
                        ConversationInfo {
                            id: r.get(0)?,
                            title: r.get(1)?,
                            runner_mode: r.get(2)?,
                            created_at: r.get(3)?,
                            updated_at: r.get(4)?,
                        },
                        serde_json::from_str(&text).unwrap_or(Value::Null),
                    ))
                },
            )
            .optional()
        })
    }

    /// Creates or replaces a conversation; `created_at` is kept from the first save.
    pub fn put_conversation(
        &self,
        session_id: &str,
        info: &ConversationInfo,
        messages: &Value,
    ) -> Result<ConversationInfo, StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO console_conversations (session_id, id, title, runner_mode, created_at, updated_at, messages)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (session_id, id) DO UPDATE SET
                    title = excluded.title, runner_mode = excluded.runner_mode,
                    updated_at = excluded.updated_at, messages = excluded.messages",
                params![
                    session_id,
                    info.id,
                    info.title,
                    info.runner_mode,
                    info.created_at,
                    info.updated_at,
                    messages.to_string()
                ],
            )?;
            c.query_row(
                "SELECT created_at FROM console_conversations WHERE session_id = ?1 AND id = ?2",
                params![session_id, info.id],
                |r| r.get::<_, f64>(0),
            )
        })
        .map(|created_at| ConversationInfo {
            created_at,
            ..info.clone()
        })
    }

    /// Deletes a conversation; returns whether it existed.
    pub fn delete_conversation(&self, session_id: &str, id: &str) -> Result<bool, StoreError> {
        self.with(|c| {
            c.execute(
                "DELETE FROM console_conversations WHERE session_id = ?1 AND id = ?2",
                params![session_id, id],
            )
        })
        .map(|n| n > 0)
    }

    /// Appends a proxy log line.
    pub fn log_proxy(&self, e: &ProxyLogEntry) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO proxy_log (at, session_id, method, url, final_url, status, bytes, outcome, rule, redirects, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    e.at,
                    e.session_id,
                    e.method,
                    e.url,
                    e.final_url,
                    e.status,
                    e.bytes as i64,
                    e.outcome,
                    e.rule,
                    e.redirects,
                    e.duration_ms as i64
                ],
            )?;
            Ok(())
        })
    }

    /// The last `limit` proxy log lines (of one session when given), oldest first.
    pub fn proxy_log(&self, session_id: Option<&str>, limit: usize) -> Result<Vec<ProxyLogEntry>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT at, session_id, method, url, final_url, status, bytes, outcome, rule, redirects, duration_ms
                 FROM proxy_log WHERE (?1 IS NULL OR session_id = ?1) ORDER BY id DESC LIMIT ?2",
            )?;
            let rows = st.query_map(params![session_id, limit as i64], |r| {
                Ok(ProxyLogEntry {
                    at: r.get(0)?,
                    session_id: r.get(1)?,
                    method: r.get(2)?,
                    url: r.get(3)?,
                    final_url: r.get(4)?,
                    status: r.get(5)?,
                    bytes: r.get::<_, i64>(6)? as u64,
                    outcome: r.get(7)?,
                    rule: r.get(8)?,
                    redirects: r.get(9)?,
                    duration_ms: r.get::<_, i64>(10)? as u64,
                })
            })?;
            let mut v: Vec<ProxyLogEntry> = rows.collect::<rusqlite::Result<_>>()?;
            v.reverse();
            Ok(v)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use serde_json::json;

    #[test]
    fn tokens_conversations_and_log() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.db");
        let _store = Store::open(&p).unwrap();
        let db = ConsoleDb::new(&p);
        db.insert_token("tgc_a", "ses_1", 10.0, 100.0).unwrap();
        assert_eq!(db.token_session("tgc_a", 50.0).unwrap().as_deref(), Some("ses_1"));
        assert_eq!(db.token_session("tgc_a", 101.0).unwrap(), None, "expired");
        assert_eq!(db.token_session("tgc_b", 50.0).unwrap(), None);
        // only the hash is stored
        let raw: String = db
            .with(|c| c.query_row("SELECT token_hash FROM console_tokens", [], |r| r.get(0)))
            .unwrap();
        assert_ne!(raw, "tgc_a");
        assert_eq!(raw.len(), 64);
        assert!(db.revoke_token("tgc_a").unwrap());
        assert_eq!(db.token_session("tgc_a", 50.0).unwrap(), None);

        let info = ConversationInfo {
            id: "c_1".into(),
            title: "hello".into(),
            runner_mode: Some("page".into()),
            created_at: 1.0,
            updated_at: 2.0,
        };
        db.put_conversation("ses_1", &info, &json!([{"role": "user", "content": "hi"}]))
            .unwrap();
        let again = ConversationInfo {
            title: "renamed".into(),
            created_at: 5.0,
            updated_at: 6.0,
            ..info.clone()
        };
        let saved = db.put_conversation("ses_1", &again, &json!([])).unwrap();
        assert_eq!((saved.created_at, saved.title.as_str()), (1.0, "renamed"));
        assert_eq!(db.conversations("ses_1").unwrap().len(), 1);
        assert!(db.conversations("ses_2").unwrap().is_empty(), "scoped by session");
        assert!(db.conversation("ses_2", "c_1").unwrap().is_none());
        assert_eq!(db.conversation("ses_1", "c_1").unwrap().unwrap().1, json!([]));
        assert!(db.delete_conversation("ses_1", "c_1").unwrap());

        let e = ProxyLogEntry {
            at: 1.0,
            session_id: Some("ses_1".into()),
            method: "GET".into(),
            url: "http://x/".into(),
            final_url: None,
            status: None,
            bytes: 0,
            outcome: "proxy_refused".into(),
            rule: Some("loopback".into()),
            redirects: 0,
            duration_ms: 3,
        };
        db.log_proxy(&e).unwrap();
        db.log_proxy(&ProxyLogEntry {
            session_id: None,
            ..e.clone()
        })
        .unwrap();
        assert_eq!(db.proxy_log(Some("ses_1"), 10).unwrap(), vec![e]);
        assert_eq!(db.proxy_log(None, 10).unwrap().len(), 2);
    }
}
