// SPDX-License-Identifier: Apache-2.0
// The event loop with real timerfds, pipes and a signalfd. Every test has a stop timer so a broken
// loop fails the test instead of hanging it.
#include "core/event_loop.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

namespace pm {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EventLoop> make_loop() {
  auto loop = EventLoop::create();
  EXPECT_TRUE(loop.ok()) << (loop.ok() ? "" : loop.error().message);
  return loop.ok() ? std::move(*loop) : nullptr;
}

struct Pipe {
  UniqueFd r, w;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
};

TEST(EventLoop, StopBeforeRunIsKept) {
  // A target that ended while the session was still starting: run() returns at once.
  auto loop = make_loop();
  ASSERT_NE(loop, nullptr);
  bool timed_out = false;
  ASSERT_TRUE(loop->add_timer(2s, [&] {
                    timed_out = true;
                    loop->stop();
                  })
                  .ok());
  loop->stop();
  ASSERT_TRUE(loop->run().ok());
  EXPECT_FALSE(timed_out);
}

TEST(EventLoop, PeriodicTimer) {
  auto loop = make_loop();
  ASSERT_NE(loop, nullptr);
  int ticks = 0;
  // Before the timers are armed: the stop is due 110 ms after its arming, not after run().
  auto before = std::chrono::steady_clock::now();
  ASSERT_TRUE(loop->add_timer(20ms, [&] { ++ticks; }).ok());
  ASSERT_TRUE(loop->add_timer(110ms, [&] { loop->stop(); }).ok());
  ASSERT_TRUE(loop->run().ok());
  auto elapsed = std::chrono::steady_clock::now() - before;
  // 20, 40, 60, 80 and 100 ms fall before the stop at 110 ms: each is a tick, or a missed one
  // folded into the next when the loop was held up longer than a period (a busy machine).
  uint64_t due = static_cast<uint64_t>(ticks) + loop->missed_ticks();
  EXPECT_GE(ticks, 1);
  EXPECT_GE(due, 4u);
  EXPECT_LE(due, 6u);
  EXPECT_GE(elapsed, 110ms);
}

TEST(EventLoop, RejectsNonPositiveTimer) {
  auto loop = make_loop();
  ASSERT_NE(loop, nullptr);
  auto id = loop->add_timer(0ns, [] {});
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, Errc::kInvalidArgument);
}

TEST(EventLoop, FdCallbackWhenPipeIsWritten) {
  auto loop = make_loop();
  ASSERT_NE(loop, nullptr);
  Pipe p;
  char got = 0;
  int calls = 0;
  ASSERT_TRUE(loop->add_fd(p.r.get(),
                           [&] {
                             ++calls;
                             EXPECT_EQ(::read(p.r.get(), &got, 1), 1);
                             loop->stop();
                           })
                  .ok());
  // Written from a timer, once the loop is already waiting.
  ASSERT_TRUE(loop->add_timer(10ms, [&] { EXPECT_EQ(::write(p.w.get(), "x", 1), 1); }).ok());
  bool timed_out = false;
  ASSERT_TRUE(loop->add_timer(2s,
                              [&] {
                                timed_out = true;
                                loop->stop();
                              })
                  .ok());
  ASSERT_TRUE(loop->run().ok());
  EXPECT_FALSE(timed_out);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got, 'x');
}

TEST(EventLoop, HungUpPipeCallsBack) {
  auto loop = make_loop();
  ASSERT_NE(loop, nullptr);
  Pipe p;
  bool called = false;
  ASSERT_TRUE(loop->add_fd(p.r.get(),
                           [&] {
                             called = true;
                             loop->stop();
                           })
                  .ok());
  p.w.reset();  // the writer goes away: EPOLLHUP on the read end
  ASSERT_TRUE(loop->add_timer(2s, [&] { loop->stop(); }).ok());
  ASSERT_TRUE(loop->run().ok());
  EXPECT_TRUE(called);
}

TEST(EventLoop, TimerRemovesItselfInItsCallback) {
  auto loop = make_loop();
  ASSERT_NE(loop, nullptr);
  int calls = 0;
  int id = -1;
  auto added = loop->add_timer(5ms, [&] {
    ++calls;
    loop->remove(id);  // destroys the handler whose callback is running
  });
  ASSERT_TRUE(added.ok());
  id = *added;
  ASSERT_TRUE(loop->add_timer(80ms, [&] { loop->stop(); }).ok());
  ASSERT_TRUE(loop->run().ok());
  EXPECT_EQ(calls, 1);  // 5 ms timer would have fired ~15 times had it stayed
}

TEST(EventLoop, FdHandlerRemovesItselfAndAnotherReadyOne) {
  auto loop = make_loop();
  ASSERT_NE(loop, nullptr);
  Pipe a, b;
  // Both readable before the loop starts: they come back from the same epoll_wait.
  ASSERT_EQ(::write(a.w.get(), "a", 1), 1);
  ASSERT_EQ(::write(b.w.get(), "b", 1), 1);
  int calls = 0;
  auto remove_both = [&] {
    ++calls;
    loop->remove(a.r.get());
    loop->remove(b.r.get());
  };
  ASSERT_TRUE(loop->add_fd(a.r.get(), remove_both).ok());
  ASSERT_TRUE(loop->add_fd(b.r.get(), remove_both).ok());
  ASSERT_TRUE(loop->add_timer(50ms, [&] { loop->stop(); }).ok());
  ASSERT_TRUE(loop->run().ok());
  // The first callback removed both; the second must not run, now or later (the data is unread).
  EXPECT_EQ(calls, 1);
}

TEST(EventLoop, RemovedFdCanBeAddedAgain) {
  auto loop = make_loop();
  ASSERT_NE(loop, nullptr);
  Pipe p;
  int first = 0, second = 0;
  ASSERT_TRUE(loop->add_fd(p.r.get(), [&] { ++first; }).ok());
  loop->remove(p.r.get());
  loop->remove(p.r.get());  // removing twice is harmless
  ASSERT_TRUE(loop->add_fd(p.r.get(),
                           [&] {
                             ++second;
                             char c = 0;
                             EXPECT_EQ(::read(p.r.get(), &c, 1), 1);
                             loop->stop();
                           })
                  .ok());
  ASSERT_EQ(::write(p.w.get(), "y", 1), 1);
  ASSERT_TRUE(loop->add_timer(2s, [&] { loop->stop(); }).ok());
  ASSERT_TRUE(loop->run().ok());
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

// Restores the signal mask at the end of a test, first draining a SIGUSR1 a failed test left
// pending (unblocking it would kill the test binary).
class SignalMaskGuard {
 public:
  SignalMaskGuard() { ::sigprocmask(SIG_BLOCK, nullptr, &old_); }
  ~SignalMaskGuard() {
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    timespec zero{};
    while (::sigtimedwait(&usr1, nullptr, &zero) == SIGUSR1) {
    }
    ::sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalMaskGuard(const SignalMaskGuard&) = delete;
  SignalMaskGuard& operator=(const SignalMaskGuard&) = delete;

 private:
  sigset_t old_{};
};

TEST(EventLoop, WatchSignalsDeliversSigusr1) {
  SignalMaskGuard guard;
  {
    auto loop = make_loop();
    ASSERT_NE(loop, nullptr);
    uint32_t signo = 0;
    uint32_t sender = 0;
    int calls = 0;
    ASSERT_TRUE(loop->watch_signals({SIGUSR1},
                                    [&](const signalfd_siginfo& info) {
                                      ++calls;
                                      signo = info.ssi_signo;
                                      sender = info.ssi_pid;
                                      loop->stop();
                                    })
                    .ok());
    // The signal is now blocked: raising it marks it pending instead of killing the process.
    sigset_t now;
    ASSERT_EQ(::sigprocmask(SIG_BLOCK, nullptr, &now), 0);
    EXPECT_EQ(::sigismember(&now, SIGUSR1), 1);

    ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
    bool timed_out = false;
    ASSERT_TRUE(loop->add_timer(2s,
                                [&] {
                                  timed_out = true;
                                  loop->stop();
                                })
                    .ok());
    ASSERT_TRUE(loop->run().ok());
    EXPECT_FALSE(timed_out);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(signo, static_cast<uint32_t>(SIGUSR1));
    EXPECT_EQ(sender, static_cast<uint32_t>(::getpid()));
  }
  // The signalfd read consumed it: nothing is left pending to kill us once unblocked.
  sigset_t pending;
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_EQ(::sigismember(&pending, SIGUSR1), 0);
}

}  // namespace
}  // namespace pm
