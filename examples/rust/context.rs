// SPDX-License-Identifier: Apache-2.0
//! perf-monitor's thread context for Rust, std only: the same record as
//! include/perf-monitor/annotate.h writes from C and C++ (layout version 1).
//!
//! ```ignore
//! mod context;
//! context::poll_begin(id);   // this thread starts (or resumes) working for request `id`
//! ...                        // its switches, waits and bios count for `id`
//! context::poll_end(done);   // it stops; done: request `id` is finished
//! ```
//!
//! A synchronous handler calls `poll_begin(id)` at the start of a request and `poll_end(true)`
//! at its end. An async executor calls `poll_begin` before it polls a task's future and
//! `poll_end(ready)` after: a request's kernel time then follows it from worker to worker, and
//! its time between polls is reported as pending (executor.rs shows it). The pair is a few
//! stores and two reads of the CPU's counter: no trap into the kernel per request.
//!
//! Each thread's first `poll_begin` maps its record (a log of LOG finished polls) from a sealed
//! memory file of its own and announces it to perf-monitor through the USDT probe
//! `perf_monitor:context_thread`: one trap per thread. perf-monitor maps the same pages, so it
//! reads the last polls of a process that has exited. The record is kept for the life of the
//! process.
#![allow(dead_code)]

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};

/// Finished polls a thread's log holds (perf-monitor reads them every 10 ms): a power of two.
pub const LOG: usize = 4096;

#[repr(C)]
struct LogEntry {
    id: u64,
    begin: u64, // on the record's clock
    end: u64,
    flags: u64, // 1: the request finished with this poll
}

#[repr(C)]
struct Record {
    active: u32, // 1 while a poll runs
    version: u32,
    id: u64,
    head: AtomicU64, // polls finished so far: the running poll's number
    begin: u64,
    capacity: u32,
    clock: u32, // of begin and end: 0 CLOCK_MONOTONIC ns, 1 the x86 TSC, 2 arm64's CNTVCT_EL0
    log: [LogEntry; LOG],
}

/// `struct timespec`, and `clock_gettime` (also for the code that uses this module).
#[repr(C)]
pub struct Timespec {
    pub tv_sec: i64,
    pub tv_nsec: i64,
}

extern "C" {
    pub fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    fn memfd_create(name: *const u8, flags: u32) -> i32;
    fn ftruncate(fd: i32, len: i64) -> i32;
    fn fcntl(fd: i32, cmd: i32, ...) -> i32;
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn close(fd: i32) -> i32;
    fn sysconf(name: i32) -> i64;
}

const CLOCK_MONOTONIC: i32 = 1;

thread_local! {
    static RECORD: Cell<*mut Record> = const { Cell::new(ptr::null_mut()) };
}

/// The clock of the stamps: the CPU's own counter where there is one (cheaper than
/// clock_gettime by half); perf-monitor maps it to CLOCK_MONOTONIC.
#[cfg(target_arch = "x86_64")]
const CLOCK: u32 = 1;
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn stamp() -> u64 {
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(target_arch = "aarch64")]
const CLOCK: u32 = 2;
#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn stamp() -> u64 {
    let v: u64;
    unsafe { std::arch::asm!("mrs {0}, cntvct_el0", out(reg) v, options(nomem, nostack)) };
    v
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const CLOCK: u32 = 0;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
fn stamp() -> u64 {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The USDT probe perf_monitor:context_thread, the record's address as its argument: the note
/// systemtap's <sys/sdt.h> writes, and a `nop` in the code. `options` are the target's.
macro_rules! usdt_context_thread {
    ($addr:expr, $($options:tt)*) => {
        std::arch::asm!(
            "990: nop",
            ".pushsection .note.stapsdt,\"?\",\"note\"",
            ".balign 4",
            ".4byte 992f-991f, 994f-993f, 3",
            "991: .asciz \"stapsdt\"",
            "992: .balign 4",
            "993: .8byte 990b",
            ".8byte _.stapsdt.base",
            ".8byte 0",
            ".asciz \"perf_monitor\"",
            ".asciz \"context_thread\"",
            ".asciz \"8@{0}\"",
            "994: .balign 4",
            ".popsection",
            ".ifndef _.stapsdt.base",
            ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat",
            ".weak _.stapsdt.base",
            ".hidden _.stapsdt.base",
            "_.stapsdt.base: .space 1",
            ".size _.stapsdt.base, 1",
            ".popsection",
            ".endif",
            in(reg) $addr,
            options($($options)*),
        )
    };
}

#[inline(always)]
fn announce(addr: u64) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        usdt_context_thread!(addr, att_syntax, nostack, preserves_flags);
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        usdt_context_thread!(addr, nostack, preserves_flags);
    }
}

/// Once per thread: the record in a sealed memory file (it cannot shrink or grow), or from the
/// heap where that fails; null if neither can be had (the polls then go unrecorded).
#[cold]
#[inline(never)]
fn new_record() -> *mut Record {
    let page = unsafe { sysconf(30) } as usize; // _SC_PAGESIZE
    let size = (std::mem::size_of::<Record>() + page - 1) / page * page;
    let mut rec: *mut Record = ptr::null_mut();
    unsafe {
        let fd = memfd_create(b"perf-monitor-context\0".as_ptr(), 1 | 2); // MFD_CLOEXEC | MFD_ALLOW_SEALING
        if fd >= 0 {
            // F_ADD_SEALS (1033): F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW
            if ftruncate(fd, size as i64) == 0 && fcntl(fd, 1033, 1 | 2 | 4) == 0 {
                let p = mmap(ptr::null_mut(), size, 1 | 2, 1, fd, 0); // PROT_READ | PROT_WRITE, MAP_SHARED
                if p as isize != -1 {
                    rec = p as *mut Record; // zeroed
                }
            }
            close(fd);
        }
        if rec.is_null() {
            let layout = std::alloc::Layout::new::<Record>();
            rec = std::alloc::alloc_zeroed(layout) as *mut Record;
            if rec.is_null() {
                return rec;
            }
        }
        (*rec).version = 1;
        (*rec).capacity = LOG as u32;
        (*rec).clock = CLOCK;
    }
    RECORD.with(|r| r.set(rec));
    announce(rec as u64);
    rec
}

/// This thread starts (or resumes) working for request `id`. A poll still open is ended first
/// (not finished).
#[inline]
pub fn poll_begin(id: u64) {
    let mut rec = RECORD.with(|r| r.get());
    if rec.is_null() {
        rec = new_record();
        if rec.is_null() {
            return;
        }
    }
    unsafe {
        if ptr::read_volatile(&(*rec).active) != 0 {
            poll_end(false);
        }
        ptr::write_volatile(&mut (*rec).id, id);
        compiler_fence(Ordering::SeqCst);
        // First: a switch from here on counts for the poll (its time is clipped to begin).
        ptr::write_volatile(&mut (*rec).active, 1);
        compiler_fence(Ordering::SeqCst);
        ptr::write_volatile(&mut (*rec).begin, stamp());
    }
}

/// This thread stops working for the request of its poll; `done`: the request is finished.
#[inline]
pub fn poll_end(done: bool) {
    let rec = RECORD.with(|r| r.get());
    if rec.is_null() {
        return;
    }
    unsafe {
        if ptr::read_volatile(&(*rec).active) == 0 {
            return;
        }
        let end = stamp();
        let head = (*rec).head.load(Ordering::Relaxed);
        let e = &mut (*rec).log[(head as usize) & (LOG - 1)];
        ptr::write_volatile(&mut e.id, (*rec).id);
        ptr::write_volatile(&mut e.begin, (*rec).begin);
        ptr::write_volatile(&mut e.end, end);
        ptr::write_volatile(&mut e.flags, if done { 1 } else { 0 });
        compiler_fence(Ordering::SeqCst);
        // Last: a switch until here counts for the poll (clipped to its end).
        ptr::write_volatile(&mut (*rec).active, 0);
        // The entry, then the head that shows it.
        (*rec).head.store(head + 1, Ordering::Release);
    }
}
