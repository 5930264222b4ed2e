// SPDX-License-Identifier: Apache-2.0
// A Rust program of known behaviour for the probe tests (std only): `hcrust N [SPIN_US]` makes
// requests 1..=N, each through a module function (busy for SPIN_US), a trait method, two
// instances of a generic function, a closure and an async fn, and prints its own clock of each
// process_request call ("own ID NS") and their count and sum. app::rare is never called.
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

// std::hint::black_box, for Debian 12's rustc 1.63 too (it came in 1.66): a value the optimiser
// cannot see through.
#[inline(always)]
pub fn black_box<T: Copy>(x: T) -> T {
    unsafe { std::ptr::read_volatile(&x) }
}

pub mod app {
    use super::black_box;
    pub mod handler {
        use crate::black_box;
        // Busy for `spin`: a request whose latency the program measures itself.
        #[inline(never)]
        pub fn process_request(id: u64, spin: std::time::Duration) -> u64 {
            let start = std::time::Instant::now();
            let mut x = id;
            while start.elapsed() < spin {
                x = black_box(x.wrapping_mul(2654435761).rotate_left(7));
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
            black_box(id + 1)
        }
    }
    #[inline(never)]
    pub fn scale<T: Into<u64> + Copy>(x: T) -> u64 {
        black_box(x.into() * 3)
    }
    // The closure is called through a pointer the optimiser cannot see through: it keeps a
    // symbol, app::apply::{closure#0}.
    #[inline(never)]
    pub fn apply(id: u64) -> u64 {
        let k = black_box(3u64);
        let triple = move |i: u64| black_box(i * k);
        let f: &dyn Fn(u64) -> u64 = black_box(&triple);
        f(id)
    }
    pub async fn fetch(id: u64) -> u64 {
        black_box(id ^ 7)
    }
    #[inline(never)]
    pub fn rare(id: u64) -> u64 {
        black_box(id)
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
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let (mut sum, mut calls, mut busy) = (0u64, 0u64, Duration::ZERO);
    let mut own = Vec::with_capacity(n as usize);
    for id in 1..=n {
        let start = Instant::now();
        sum = sum.wrapping_add(app::handler::process_request(black_box(id), spin));
        let took = start.elapsed();
        busy += took;
        own.push((id, took.as_nanos()));
        calls += 1;
        sum = sum.wrapping_add(server.handle(id));
        sum = sum.wrapping_add(app::scale(id as u32) + app::scale(id));
        sum = sum.wrapping_add(app::apply(id));
        if black_box(id == u64::MAX) {
            sum = sum.wrapping_add(app::rare(id));
        }
        let mut fut: Pin<Box<dyn Future<Output = u64>>> = Box::pin(app::fetch(id));
        // Polled through a pointer the optimiser cannot follow: the poll function stays a call.
        let raw: *mut dyn Future<Output = u64> = black_box(unsafe { Pin::get_unchecked_mut(fut.as_mut()) } as *mut _);
        if let Poll::Ready(v) = unsafe { Pin::new_unchecked(&mut *raw) }.poll(&mut cx) {
            sum = sum.wrapping_add(v);
        }
    }
    for (id, ns) in own {
        println!("own {id} {ns}");
    }
    println!("calls {calls} busy_s {:.9} sum {sum}", busy.as_secs_f64());
}
