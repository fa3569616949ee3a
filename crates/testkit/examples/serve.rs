//! Serves the fixture pages for manual poking: `cargo run -p tabgate-testkit --example serve [SECS]`.
//! Prints both origins, then every log entry as it arrives; exits after SECS (default 3600).
use std::time::Duration;

#[tokio::main]
async fn main() {
    let secs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3600);
    let site = tabgate_testkit::Site::start().await;
    println!("A {}", site.a("/"));
    println!("B {}", site.b("/"));
    let mut seen = 0;
    for _ in 0..secs * 10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let logs = site.log_entries();
        for e in logs.iter().skip(seen) {
            println!("log {:?} {} = {}", e.site, e.key, e.value);
        }
        seen = logs.len();
    }
    println!("requests: {:?}", site.requests());
}
