// SPDX-License-Identifier: Apache-2.0
//! A work-stealing async executor, std only, that publishes thread context (context.rs) around
//! every poll: W workers, each with a queue of its own, take from it, else steal from another
//! worker's, else from the shared queue that woken tasks go to. Each request is an `async fn`:
//!   1. it burns CPU for --burn-us, then yields (to its worker's queue: another worker may steal it);
//!   2. it sleeps --sleep-us inside the poll (the worker blocks), then awaits a timer of --timer-us
//!      (the request waits with no thread: pending);
//!   3. it writes --bytes (a multiple of 4096) to its worker's file with O_DIRECT and fdatasyncs it
//!      (the worker blocks on I/O), then yields;
//!   4. it burns CPU for half of --burn-us, and is done.
//!
//!   rustc --edition 2021 -O executor.rs -o executor
//!   perf-monitor run -- ./executor --requests 200
//!
//! --truth FILE writes what each poll did as the kernel tells the thread itself, one line per
//! poll: `id tid wall_ns cpu_ns runq_ns wall_in_ns cpu_in_ns runq_in_ns bytes done` (cpu:
//! CLOCK_THREAD_CPUTIME_ID; runq: the thread's run_delay in /proc/thread-self/schedstat; over
//! the window just outside poll_begin/poll_end, then the one just inside: the poll's own figures
//! lie between; bytes: what it wrote), as coro_server.cpp writes it.
mod context;

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

extern "C" {
    fn gettid() -> i32;
}
fn clock_ns(clock: i32) -> u64 {
    let mut ts = context::Timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { context::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
const CLOCK_MONOTONIC: i32 = 1;
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

#[derive(Clone)]
struct Options {
    workers: usize,
    requests: u64,
    in_flight: u64,
    burn_us: u64,
    sleep_us: u64,
    timer_us: u64,
    bytes: usize,
    dir: String,
    truth: String,
}

// ---- tasks and the executor ----

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

struct Task {
    id: u64,
    future: Mutex<Option<BoxFuture>>,
    queued: AtomicBool,
    exec: Arc<Executor>,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.exec.push(self.clone());
        }
    }
}

struct Executor {
    local: Vec<Mutex<VecDeque<Arc<Task>>>>,
    shared: Mutex<VecDeque<Arc<Task>>>,
    idle: Condvar,
    idle_lock: Mutex<()>,
    timers: Mutex<BTreeMap<(Instant, u64), Waker>>,
    timer_cv: Condvar,
    timer_seq: AtomicU64,
    done: AtomicBool,
    finished: AtomicU64,
    started: AtomicU64,
    opt: Options,
}

thread_local! {
    static WORKER: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
    static POLL_BYTES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Executor {
    // A worker's own task goes to its own queue (another may steal it); the rest to the shared one.
    fn push(&self, t: Arc<Task>) {
        let w = WORKER.with(|w| w.get());
        if w < self.local.len() {
            self.local[w].lock().unwrap().push_back(t);
        } else {
            self.shared.lock().unwrap().push_back(t);
        }
        let _g = self.idle_lock.lock().unwrap();
        self.idle.notify_one();
    }

    fn next(&self, me: usize) -> Option<Arc<Task>> {
        if let Some(t) = self.local[me].lock().unwrap().pop_front() {
            return Some(t);
        }
        for k in 1..self.local.len() {
            let other = (me + k) % self.local.len();
            if let Some(t) = self.local[other].lock().unwrap().pop_back() {
                return Some(t);
            }
        }
        self.shared.lock().unwrap().pop_front()
    }

    fn spawn(self: &Arc<Self>, id: u64) {
        let fut: BoxFuture = Box::pin(request(self.clone(), id));
        let t = Arc::new(Task { id, future: Mutex::new(Some(fut)), queued: AtomicBool::new(true), exec: self.clone() });
        self.shared.lock().unwrap().push_back(t);
        let _g = self.idle_lock.lock().unwrap();
        self.idle.notify_one();
    }
}

// ---- futures ----

struct YieldNow(bool);
impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

struct Timer {
    at: Instant,
    exec: Arc<Executor>,
    set: bool,
}
impl Future for Timer {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        if !self.set {
            self.set = true;
            let seq = self.exec.timer_seq.fetch_add(1, Ordering::Relaxed);
            self.exec.timers.lock().unwrap().insert((self.at, seq), cx.waker().clone());
            self.exec.timer_cv.notify_one();
        }
        Poll::Pending
    }
}

fn burn(us: u64) {
    let until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + us * 1000;
    let mut x: u64 = 1;
    while clock_ns(CLOCK_THREAD_CPUTIME_ID) < until {
        for _ in 0..1000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        }
    }
    SINK.store(x, Ordering::Relaxed); // what the work computes, so that it is not optimised away
}
static SINK: AtomicU64 = AtomicU64::new(0);

// Each worker's file: written in place with O_DIRECT, so that a request's bios are its bytes
// (and, now and then, the inode's block for its new mtime); made and filled before the worker's
// first poll. Where the file system has no O_DIRECT (tmpfs), written through the page cache.
struct WorkerFile {
    file: std::fs::File,
    buf: *mut u8,
    path: String,
    size: usize,
}

impl WorkerFile {
    fn open(opt: &Options, me: usize) -> WorkerFile {
        use std::os::unix::fs::OpenOptionsExt;
        let path = format!("{}/executor.{}.{}", opt.dir, std::process::id(), me);
        let mut f = std::fs::File::create(&path).expect("executor: create");
        f.write_all(&vec![b'x'; opt.bytes]).expect("executor: write");
        f.sync_all().expect("executor: fsync");
        drop(f);
        let direct = std::fs::OpenOptions::new().write(true).custom_flags(0o40000).open(&path); // O_DIRECT
        let file = direct.unwrap_or_else(|_| std::fs::OpenOptions::new().write(true).open(&path).expect("executor: open"));
        let layout = std::alloc::Layout::from_size_align(opt.bytes, 4096).unwrap();
        let buf = unsafe { std::alloc::alloc(layout) };
        unsafe { std::ptr::write_bytes(buf, b'x', opt.bytes) };
        WorkerFile { file, buf, path, size: opt.bytes }
    }

    fn write_and_sync(&self) {
        use std::os::unix::fs::FileExt;
        let data = unsafe { std::slice::from_raw_parts(self.buf, self.size) };
        self.file.write_all_at(data, 0).expect("executor: write");
        self.file.sync_data().expect("executor: fdatasync");
        POLL_BYTES.with(|b| b.set(b.get() + self.size));
    }
}

impl Drop for WorkerFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        unsafe { std::alloc::dealloc(self.buf, std::alloc::Layout::from_size_align(self.size, 4096).unwrap()) };
    }
}

thread_local! {
    static FILE: std::cell::RefCell<Option<WorkerFile>> = std::cell::RefCell::new(None);
}

fn write_and_sync() {
    FILE.with(|f| f.borrow().as_ref().expect("executor: the worker's file").write_and_sync());
}

async fn request(exec: Arc<Executor>, _id: u64) {
    let opt = exec.opt.clone();
    burn(opt.burn_us);
    YieldNow(false).await;
    std::thread::sleep(Duration::from_micros(opt.sleep_us)); // blocking, inside the poll
    Timer { at: Instant::now() + Duration::from_micros(opt.timer_us), exec: exec.clone(), set: false }.await;
    write_and_sync();
    YieldNow(false).await;
    burn(opt.burn_us / 2);
}

// ---- workers ----

// A poll as its thread's clocks saw it, over two windows: the outer one read just before
// poll_begin and just after poll_end, the inner one just after begin and just before end. What
// the poll itself did lies between the two.
struct PollTruth {
    id: u64,
    tid: i32,
    outer: [u64; 3], // wall, cpu, runq
    inner: [u64; 3],
    bytes: usize,
    done: bool,
}

// A window opens with the wall clock first and closes with it last, so that the CPU time and the
// run-queue wait read inside it are within its wall time.
fn clocks_open(sched: &std::fs::File) -> [u64; 3] {
    let wall = clock_ns(CLOCK_MONOTONIC);
    let cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    [wall, cpu, run_delay(sched)]
}

fn clocks_close(sched: &std::fs::File) -> [u64; 3] {
    let runq = run_delay(sched);
    let cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    [clock_ns(CLOCK_MONOTONIC), cpu, runq]
}

fn minus(a: [u64; 3], b: [u64; 3]) -> [u64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn run_delay(f: &std::fs::File) -> u64 {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 128];
    let n = f.read_at(&mut buf, 0).unwrap_or(0);
    let s = std::str::from_utf8(&buf[..n]).unwrap_or("");
    s.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn worker(exec: Arc<Executor>, me: usize, truth: bool) -> Vec<PollTruth> {
    WORKER.with(|w| w.set(me));
    FILE.with(|f| *f.borrow_mut() = Some(WorkerFile::open(&exec.opt, me)));
    let sched = std::fs::File::open("/proc/thread-self/schedstat").expect("executor: schedstat");
    let tid = unsafe { gettid() };
    let mut log = Vec::new();
    loop {
        let task = match exec.next(me) {
            Some(t) => t,
            None => {
                if exec.done.load(Ordering::Acquire) {
                    return log;
                }
                let g = exec.idle_lock.lock().unwrap();
                let _ = exec.idle.wait_timeout(g, Duration::from_millis(1)).unwrap();
                continue;
            }
        };
        task.queued.store(false, Ordering::Release);
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        let mut slot = task.future.lock().unwrap();
        let fut = match slot.as_mut() {
            Some(f) => f,
            None => continue,
        };
        POLL_BYTES.with(|b| b.set(0));
        let ready;
        if truth {
            let o0 = clocks_open(&sched);
            context::poll_begin(task.id);
            let i0 = clocks_open(&sched);
            ready = fut.as_mut().poll(&mut cx).is_ready();
            let i1 = clocks_close(&sched);
            context::poll_end(ready);
            let o1 = clocks_close(&sched);
            let bytes = POLL_BYTES.with(|b| b.get());
            log.push(PollTruth { id: task.id, tid, outer: minus(o1, o0), inner: minus(i1, i0), bytes, done: ready });
        } else {
            context::poll_begin(task.id);
            ready = fut.as_mut().poll(&mut cx).is_ready();
            context::poll_end(ready);
        }
        if ready {
            *slot = None;
            drop(slot);
            let n = exec.finished.fetch_add(1, Ordering::AcqRel) + 1;
            let next = exec.started.fetch_add(1, Ordering::AcqRel);
            if next < exec.opt.requests {
                exec.spawn(next + 1);
            }
            if n == exec.opt.requests {
                exec.done.store(true, Ordering::Release);
                let _g = exec.idle_lock.lock().unwrap();
                exec.idle.notify_all();
                exec.timer_cv.notify_all();
            }
        }
    }
}

fn timer_thread(exec: Arc<Executor>) {
    let mut timers = exec.timers.lock().unwrap();
    while !exec.done.load(Ordering::Acquire) {
        let now = Instant::now();
        let first = timers.keys().next().cloned();
        match first {
            Some(k) if k.0 <= now => {
                let w = timers.remove(&k).unwrap();
                drop(timers);
                w.wake();
                timers = exec.timers.lock().unwrap();
            }
            Some(k) => timers = exec.timer_cv.wait_timeout(timers, k.0 - now).unwrap().0,
            None => timers = exec.timer_cv.wait_timeout(timers, Duration::from_millis(10)).unwrap().0,
        }
    }
}

fn main() {
    let mut opt = Options {
        workers: 4,
        requests: 1000,
        in_flight: 16,
        burn_us: 300,
        sleep_us: 200,
        timer_us: 500,
        bytes: 8192,
        dir: "/var/tmp".into(),
        truth: String::new(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let (flag, value) = (&args[i], args.get(i + 1));
        let value = match value {
            Some(v) => v.clone(),
            None => {
                eprintln!("executor: {} needs a value (see the comment at the top of executor.rs)", flag);
                std::process::exit(2);
            }
        };
        let num = || -> u64 {
            value.parse().unwrap_or_else(|_| {
                eprintln!("executor: {} takes a number, not '{}'", flag, value);
                std::process::exit(2)
            })
        };
        match flag.as_str() {
            "--workers" => opt.workers = num() as usize,
            "--requests" => opt.requests = num(),
            "--in-flight" => opt.in_flight = num(),
            "--burn-us" => opt.burn_us = num(),
            "--sleep-us" => opt.sleep_us = num(),
            "--timer-us" => opt.timer_us = num(),
            "--bytes" => opt.bytes = num() as usize,
            "--dir" => opt.dir = value.clone(),
            "--truth" => opt.truth = value.clone(),
            _ => {
                eprintln!("executor: unknown option {}", flag);
                std::process::exit(2);
            }
        }
        i += 2;
    }
    if opt.workers < 1 || opt.requests < 1 || opt.in_flight < 1 || opt.bytes < 4096 || opt.bytes % 4096 != 0 {
        eprintln!("executor: --workers, --requests and --in-flight are at least 1, --bytes a multiple of 4096");
        std::process::exit(2);
    }
    let exec = Arc::new(Executor {
        local: (0..opt.workers).map(|_| Mutex::new(VecDeque::new())).collect(),
        shared: Mutex::new(VecDeque::new()),
        idle: Condvar::new(),
        idle_lock: Mutex::new(()),
        timers: Mutex::new(BTreeMap::new()),
        timer_cv: Condvar::new(),
        timer_seq: AtomicU64::new(0),
        done: AtomicBool::new(false),
        finished: AtomicU64::new(0),
        started: AtomicU64::new(0),
        opt: opt.clone(),
    });
    while exec.started.load(Ordering::Relaxed) < opt.in_flight.min(opt.requests) {
        let id = exec.started.fetch_add(1, Ordering::Relaxed) + 1;
        exec.spawn(id);
    }
    let t = {
        let e = exec.clone();
        std::thread::spawn(move || timer_thread(e))
    };
    let workers: Vec<_> = (0..opt.workers)
        .map(|me| {
            let e = exec.clone();
            let truth = !opt.truth.is_empty();
            std::thread::spawn(move || worker(e, me, truth))
        })
        .collect();
    let logs: Vec<Vec<PollTruth>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    exec.timer_cv.notify_all();
    t.join().unwrap();
    if !opt.truth.is_empty() {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&opt.truth).expect("executor: --truth"));
        for p in logs.iter().flatten() {
            let (o, i) = (p.outer, p.inner);
            writeln!(f, "{} {} {} {} {} {} {} {} {} {}", p.id, p.tid, o[0], o[1], o[2], i[0], i[1], i[2], p.bytes, p.done as u8)
                .unwrap();
        }
    }
    println!("executor: {} requests on {} workers", exec.finished.load(Ordering::Relaxed), opt.workers);
}
