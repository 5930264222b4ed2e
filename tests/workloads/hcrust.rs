// SPDX-License-Identifier: Apache-2.0
// A Rust program of known behaviour for the probe tests (std only): `hcrust N [SPIN_US]` makes
// requests 1..=N through a module function, a trait method, two instances of a generic
// function, a closure and an async fn, and prints its own counts and clock.
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

pub mod app {
    pub mod handler {
        // Busy for `spin`: a request whose latency the program measures itself.
        #[inline(never)]
        pub fn process_request(id: u64, spin: std::time::Duration) -> u64 {
            let start = std::time::Instant::now();
            let mut x = id;
            while start.elapsed() < spin {
                x = std::hint::black_box(x.wrapping_mul(2654435761).rotate_left(7));
            }
            x
        }
    }
    pub trait Handler {
        fn handle(&self, id: u64) -> u64;
    }
    pub struct Server;
    impl Handler for Server {
        #[inline(never)]
        fn handle(&self, id: u64) -> u64 {
            std::hint::black_box(id + 1)
        }
    }
    #[inline(never)]
    pub fn scale<T: Into<u64> + Copy>(x: T) -> u64 {
        std::hint::black_box(x.into() * 3)
    }
    pub async fn fetch(id: u64) -> u64 {
        std::hint::black_box(id ^ 7)
    }
}

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let spin = Duration::from_micros(args.next().and_then(|s| s.parse().ok()).unwrap_or(0));
    // Called through pointers the optimiser cannot see through, so each keeps its own symbol.
    let server: &dyn app::Handler = black_box(&app::Server);
    let k = black_box(3u64);
    let closure = move |i: u64| black_box(i * k);
    let triple: &dyn Fn(u64) -> u64 = black_box(&closure);
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let (mut sum, mut calls, mut busy) = (0u64, 0u64, Duration::ZERO);
    for id in 1..=n {
        let start = Instant::now();
        sum = sum.wrapping_add(app::handler::process_request(black_box(id), spin));
        busy += start.elapsed();
        calls += 1;
        sum = sum.wrapping_add(server.handle(id));
        sum = sum.wrapping_add(app::scale(id as u32) + app::scale(id));
        sum = sum.wrapping_add(triple(id));
        let mut fut: Pin<Box<dyn Future<Output = u64>>> = black_box(Box::pin(app::fetch(id)));
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            sum = sum.wrapping_add(v);
        }
    }
    println!("calls {calls} busy_s {:.9} sum {sum}", busy.as_secs_f64());
}
