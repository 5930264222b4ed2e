// SPDX-License-Identifier: Apache-2.0
// A small request server in Rust (std only), the Rust counterpart of examples/shop.cpp: a pool
// of worker threads takes requests from a channel; each request does CPU work, sleeps, or
// writes and fsyncs a file. Probe it by name (see README.md here):
//
//   rustc --edition 2021 -O --crate-name server server.rs -o server
//   perf-monitor run --probe ./server:app::handler::process_request:arg1 -- ./server 30
//
// Arguments: REQUESTS [THREADS [DIR]] (defaults 30, 2, the system's temporary directory).
use std::io::Write;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub mod app {
    pub mod handler {
        use std::io::Write;
        use std::path::Path;
        use std::time::{Duration, Instant};

        pub enum Kind {
            Cpu,
            Sleep,
            Write,
        }

        // One request: what the kernel did during it is what `--probe ...:arg1` reports per ID.
        #[inline(never)]
        pub fn process_request(id: u64, kind: &Kind, dir: &Path) -> std::io::Result<u64> {
            match kind {
                Kind::Cpu => {
                    let start = Instant::now();
                    let mut x = id;
                    while start.elapsed() < Duration::from_millis(5) {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                    Ok(x)
                }
                Kind::Sleep => {
                    std::thread::sleep(Duration::from_millis(5));
                    Ok(id)
                }
                Kind::Write => {
                    let path = dir.join(format!("perf-monitor-example-{}-{id}", std::process::id()));
                    let mut f = std::fs::File::create(&path)?;
                    f.write_all(&vec![id as u8; 256 * 1024])?;
                    f.sync_all()?;
                    std::fs::remove_file(&path)?;
                    Ok(id)
                }
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let requests: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(30);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let dir = args.next().map(std::path::PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let (tx, rx) = mpsc::channel::<u64>();
    let rx = Arc::new(Mutex::new(rx));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let rx = Arc::clone(&rx);
            let dir = dir.clone();
            thread::spawn(move || {
                let mut slowest = Duration::ZERO;
                loop {
                    let id = match rx.lock().unwrap().recv() {
                        Ok(id) => id,
                        Err(_) => return slowest,
                    };
                    let kind = match id % 3 {
                        0 => app::handler::Kind::Cpu,
                        1 => app::handler::Kind::Sleep,
                        _ => app::handler::Kind::Write,
                    };
                    let start = Instant::now();
                    if let Err(e) = app::handler::process_request(id, &kind, &dir) {
                        eprintln!("request {id}: {e}");
                    }
                    slowest = slowest.max(start.elapsed());
                }
            })
        })
        .collect();
    for id in 1..=requests {
        tx.send(id).unwrap();
    }
    drop(tx);
    let slowest = workers.into_iter().map(|w| w.join().unwrap()).max().unwrap_or_default();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{requests} requests in {:.3} s, slowest {:.1} ms", started.elapsed().as_secs_f64(),
             slowest.as_secs_f64() * 1e3)
    .unwrap();
}
