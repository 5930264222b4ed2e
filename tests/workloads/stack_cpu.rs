// SPDX-License-Identifier: Apache-2.0
// stack_cpu in Rust (std only, rustc -O: no frame pointers): CPU in two known functions, about
// 70/30, each burning the thread's CPU clock for 7 and 3 ms at a time. Its own clock is the
// truth, printed at the end as
//   cpu_ns hot_a=N hot_b=N
// Usage: stack_cpu_rs SECONDS (of its own CPU time)
use std::hint::black_box;

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}
extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

fn clock_ns(clock: i32) -> u64 {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub mod burn {
    use super::*;

    // The arithmetic, inlined into hot_a and hot_b: built with -g, DWARF names it in their frames.
    #[inline(always)]
    fn spin_a(mut x: u64) -> u64 {
        for _ in 0..20000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        }
        x
    }

    #[inline(always)]
    fn spin_b(mut x: u64) -> u64 {
        for _ in 0..20000 {
            x = (x ^ (x >> 7)).wrapping_mul(0x9E3779B97F4A7C15);
        }
        x
    }

    // The clock is read between rounds of arithmetic: nearly every sample is in the function.
    #[inline(never)]
    pub fn hot_a(ns: u64) -> u64 {
        let start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        let mut now = start;
        let mut x: u64 = black_box(1);
        while now - start < ns {
            x = spin_a(x);
            black_box(x);
            now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        }
        now - start
    }

    #[inline(never)]
    pub fn hot_b(ns: u64) -> u64 {
        let start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        let mut now = start;
        let mut x: u64 = black_box(2);
        while now - start < ns {
            x = spin_b(x);
            black_box(x);
            now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        }
        now - start
    }
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let want = (seconds * 1e9) as u64;
    let (mut a, mut b) = (0u64, 0u64);
    while a + b < want {
        a += burn::hot_a(black_box(7_000_000));
        b += burn::hot_b(black_box(3_000_000));
    }
    println!("cpu_ns hot_a={} hot_b={}", a, b);
}
