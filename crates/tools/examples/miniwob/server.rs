//! A minimal static file server on loopback for the MiniWoB++ task pages (GET only,
//! one request per connection).

use std::path::{Component, Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves `root` on `127.0.0.1:<random port>`; returns the base URL (no trailing slash).
/// The server runs until the process ends.
pub async fn serve(root: PathBuf) -> std::io::Result<String> {
    let l = TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://127.0.0.1:{}", l.local_addr()?.port());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = l.accept().await else { continue };
            let root = root.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut n = 0;
                while n < buf.len() {
                    match sock.read(&mut buf[n..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(k) => n += k,
                    }
                    if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                let head = String::from_utf8_lossy(&buf[..n]);
                let path = head.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split(['?', '#']).next().unwrap_or("/");
                let (status, ctype, body) =
                    match resolve(&root, path).and_then(|p| std::fs::read(&p).ok().map(|b| (p, b))) {
                        Some((p, b)) => ("200 OK", content_type(&p), b),
                        None => ("404 Not Found", "text/plain", b"not found".to_vec()),
                    };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    Ok(base)
}

/// `root` + the URL path, refusing anything that leaves `root`.
fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    let mut p = root.to_path_buf();
    for c in Path::new(url_path.trim_start_matches('/')).components() {
        match c {
            Component::Normal(s) => p.push(s),
            Component::CurDir => {}
            _ => return None,
        }
    }
    p.is_file().then_some(p)
}

fn content_type(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "png" => "image/png",
        "gif" => "image/gif",
        "jpg" | "jpeg" => "image/jpeg",
        "svg" => "image/svg+xml",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}
