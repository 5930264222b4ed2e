// SPDX-License-Identifier: Apache-2.0
// A small service for perf-monitor's application probes: each request does some CPU work,
// sleeps, or writes and fsyncs a file, and is marked with PERF_MONITOR_REQUEST_BEGIN/END.
//
//   shop [--requests N] [--kind cpu|sleep|write|nest|mix|none] [--ms MS] [--bytes B] [--dir DIR]
//        [--threads T] [--first-id ID] [--depth N]
//
// Request i gets ID first-id + i. `mix` cycles cpu, sleep, write; `none` does no work (for
// counting calls). Each request also calls what C++ from g++ -O2 looks like to a probe: class
// methods (Cart::add, two overloads), a template (price<long>, price<double>), a function with
// an unlikely error path GCC splits off into a ".cold" piece (validate), and a method in a
// shared library (libshopdb.so: shopdb::Ledger::record). Try it:
//   perf-monitor run --probe examples/shop:process_request:arg1 -- build/examples/shop --kind mix
//   perf-monitor run --probe 'build/examples/shop:shop::price<long>(long)'
//     --probe build/examples/shop:shop::validate
//     --probe build/examples/libshopdb.so:shopdb::Ledger::record -- build/examples/shop
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "perf-monitor/annotate.h"
#include "shopdb.h"

// Kept out of line and unchanged by the optimiser: each is a function the probes can find.
#define SHOP_PROBED __attribute__((noinline, noipa))

namespace shop {

struct Options {
  long requests = 10;
  std::string kind = "mix";
  long ms = 20;
  long bytes = 1 << 20;
  std::string dir = "/var/tmp";
  int threads = 1;
  uint64_t first_id = 1;
  long depth = 5;
};

volatile uint64_t sink;  // what the CPU work computes, so that it is not optimised away

class Cart {
 public:
  // Two overloads: a probe names one with its parameter list.
  SHOP_PROBED long add(int item) {
    items_ += item;
    return items_;
  }
  SHOP_PROBED long add(const char* name, int quantity) {
    items_ += static_cast<long>(std::strlen(name)) * quantity;
    return items_;
  }
  SHOP_PROBED long checkout() { return items_; }

 private:
  long items_ = 0;
};

// A template: one function per type. Its demangled name begins with its return type ("long
// shop::price<long>(long)"); a probe names it without: 'shop::price<long>(long)'.
template <typename T>
__attribute__((noinline)) T price(T quantity) {
  asm volatile("" : "+r"(quantity));
  return quantity * 3;
}

// An unlikely error path: GCC moves it into "shop::validate(unsigned long, char const*)
// [clone .cold]", a piece that is not called as the function; the probe goes on the entry.
__attribute__((noinline)) int validate(uint64_t id, const char* kind) {
  if (__builtin_expect(kind == nullptr || id == 0, 0)) {
    std::fprintf(stderr, "shop: request %llu has no kind\n", static_cast<unsigned long long>(id));
    throw std::invalid_argument("request " + std::to_string(id) + " has no kind");
  }
  return static_cast<int>(std::strlen(kind));
}

// CPU work until this thread has used `ms` of CPU time.
SHOP_PROBED void compute(long ms) {
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  uint64_t x = 88172645463325252ULL;
  for (;;) {
    for (int i = 0; i < 10000; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    long used = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (used >= ms) break;
  }
  sink = x;
}

// Writes `bytes` to a new file in `dir` and fsyncs it, so the bios are this thread's.
SHOP_PROBED bool store(const std::string& dir, uint64_t id, long bytes) {
  std::string path = dir + "/shop-" + std::to_string(::getpid()) + "-" + std::to_string(id);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  std::vector<char> buf(64 << 10, static_cast<char>(id));
  bool ok = true;
  for (long done = 0; ok && done < bytes; done += static_cast<long>(buf.size())) {
    ok = ::write(fd, buf.data(), buf.size()) == static_cast<ssize_t>(buf.size());
  }
  ok = ok && ::fsync(fd) == 0;
  ::close(fd);
  ::unlink(path.c_str());
  return ok;
}

// Recursion: nest(n) calls itself down to 0, n + 1 calls in all (--kind nest, --depth N).
SHOP_PROBED long nest(long n) {
  if (n <= 0) return 0;
  long inner = nest(n - 1);
  sink = sink + 1;  // work after the call: the compiler cannot turn the recursion into a loop
  return inner + 1;
}

// One request: its ID is the first argument (probe it with :arg1), and it is marked as a
// request for perf-monitor.
SHOP_PROBED int process_request(uint64_t id, const char* kind, const Options& o) {
  PERF_MONITOR_REQUEST_BEGIN(id);
  thread_local shopdb::Ledger ledger;
  Cart cart;
  cart.add(static_cast<int>(id));
  cart.add("item", 2);
  validate(id, kind);
  ledger.record(id, price<long>(static_cast<long>(id)) + static_cast<long>(price<double>(1.5)));
  int rc = 0;
  if (std::strcmp(kind, "cpu") == 0) {
    compute(o.ms);
  } else if (std::strcmp(kind, "sleep") == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(o.ms));
  } else if (std::strcmp(kind, "write") == 0) {
    rc = store(o.dir, id, o.bytes) ? 0 : 1;
  } else if (std::strcmp(kind, "nest") == 0) {
    rc = nest(o.depth) == o.depth ? 0 : 1;
  }
  cart.checkout();
  PERF_MONITOR_REQUEST_END(id);
  return rc;
}

}  // namespace shop

int main(int argc, char** argv) {
  shop::Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "shop: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--requests") o.requests = std::atol(value());
    else if (a == "--kind") o.kind = value();
    else if (a == "--ms") o.ms = std::atol(value());
    else if (a == "--bytes") o.bytes = std::atol(value());
    else if (a == "--dir") o.dir = value();
    else if (a == "--threads") o.threads = std::atoi(value());
    else if (a == "--first-id") o.first_id = std::strtoull(value(), nullptr, 10);
    else if (a == "--depth") o.depth = std::atol(value());
    else {
      std::fprintf(stderr,
                   "usage: shop [--requests N] [--kind cpu|sleep|write|nest|mix|none] [--ms MS] [--bytes B] [--dir DIR] "
                   "[--threads T] [--first-id ID] [--depth N]\n");
      return 2;
    }
  }
  static const char* const kMix[] = {"cpu", "sleep", "write"};
  std::atomic<int> failed{0};
  auto worker = [&](int t) {
    for (long i = t; i < o.requests; i += o.threads) {
      const char* kind = o.kind == "mix" ? kMix[i % 3] : o.kind.c_str();
      if (shop::process_request(o.first_id + static_cast<uint64_t>(i), kind, o) != 0) ++failed;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < o.threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
  if (failed) std::fprintf(stderr, "shop: %d requests failed (is --dir %s writable?)\n", failed.load(), o.dir.c_str());
  return failed ? 1 : 0;
}
