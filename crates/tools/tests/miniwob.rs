//! MiniWoB++ tasks as CI input: the benchmark's scripted agent (tabgate's tools only) on
//! the vendored task pages in `bench/miniwob/html` (MIT, from miniwob==1.1.0), seeds 1–3.
//! The full 22-task table comes from `cargo run --release -p tabgate-tools --example miniwob`.

mod common;

#[path = "../examples/miniwob/driver.rs"]
mod driver;
#[path = "../examples/miniwob/server.rs"]
mod server;

use common::{run, T};

/// The vendored tasks (pages that need only MiniWoB's core, d3 and ui_utils).
const TASKS: &[&str] = &[
    "click-test",
    "click-button",
    "choose-list",
    "enter-text",
    "enter-password",
    "login-user",
    "login-user-popup",
    "focus-text-2",
    "enter-date",
    "read-table",
    "click-link",
];

#[test]
fn miniwob_vendored_tasks_pass_with_seeds_1_to_3() {
    run(async {
        let t = T::new().await;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/miniwob/html");
        assert!(
            dir.join("core/core.js").exists(),
            "vendored MiniWoB++ pages missing at {}",
            dir.display()
        );
        let base = server::serve(dir).await.expect("serve the pages");
        let mut failures = vec![];
        for task in TASKS {
            for seed in 1..=3 {
                let o = driver::episode(&t.s, &base, task, seed).await;
                if !o.ok {
                    failures.push(format!("{task} seed {seed}: {:?} {:?}", o.utterance, o.error));
                }
            }
        }
        assert!(failures.is_empty(), "failed episodes:\n{}", failures.join("\n"));
    })
}
