// SPDX-License-Identifier: Apache-2.0
// `perf-monitor top` on a terminal: the full-screen view, drawn with ncurses. What it shows and
// what the keys do is top_view_model.cpp; here the terminal: taking it over (header()), keys as
// the session's event loop finds standard input readable (no thread of our own), drawing, and
// giving it back as it was — on q and Ctrl-C, on SIGTERM (the session ends its loop normally and
// calls summary()), and on any other way out of the session (the destructor).
//
// While the view owns the terminal, what perf-monitor writes on standard error (a source that
// failed, the Prometheus address) would be drawn over: it goes to a memory file instead, is shown
// in the footer, and is written to standard error once the terminal is restored.
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "core/fd.h"
#include "core/output.h"
#include "sinks/format.h"
#include "sinks/sink.h"
#include "sinks/top_view_model.h"

// Functions, not macros: ncurses' macros (erase, refresh, ...) would rewrite C++ names.
#define NCURSES_NOMACROS
#include <curses.h>

namespace pm {
namespace {

// ncurses' codes for the keys the view knows.
std::optional<ViewKey> view_key(int ch) {
  switch (ch) {
    case KEY_UP:
      return ViewKey{ViewKey::kUp};
    case KEY_DOWN:
      return ViewKey{ViewKey::kDown};
    case KEY_LEFT:
      return ViewKey{ViewKey::kLeft};
    case KEY_RIGHT:
      return ViewKey{ViewKey::kRight};
    case KEY_PPAGE:
      return ViewKey{ViewKey::kPageUp};
    case KEY_NPAGE:
      return ViewKey{ViewKey::kPageDown};
    case KEY_HOME:
      return ViewKey{ViewKey::kHome};
    case KEY_END:
      return ViewKey{ViewKey::kEnd};
    case KEY_ENTER:
    case '\n':
    case '\r':
      return ViewKey{ViewKey::kEnter};
    case 27:
      return ViewKey{ViewKey::kEscape};
    case KEY_BACKSPACE:
    case 127:
    case 8:
      return ViewKey{ViewKey::kBackspace};
    default:
      if (ch >= 0 && ch < 0x80) return ViewKey{ViewKey::kChar, ch};
      return std::nullopt;
  }
}

class TopViewSink final : public Sink {
 public:
  explicit TopViewSink(const Config& config) : model_(config.top.sort) {}
  ~TopViewSink() override { stop(); }
  TopViewSink(const TopViewSink&) = delete;
  TopViewSink& operator=(const TopViewSink&) = delete;

  void header(const RunHeader& /*header*/) override { start(); }

  // One line per reason, as the text output says them: in the help (and on standard error now
  // where that is not the terminal).
  void unavailable(const std::vector<Unavailable>& list) override {
    for (const Unavailable& u : list) {
      if (u.source == "top") model_.set_no_lists(u.reason);
    }
    for (const auto& [reason, sources] : by_reason(list)) {
      std::string line = fmt::format("{}: not available: {}", sources, reason);
      // Standard error that is not the terminal (a file, a pipe) is not captured: said now.
      if (!saved_stderr_) say(line);
      unavailable_.push_back(std::move(line));
    }
    if (!unavailable_.empty())
      flash(fmt::format("{} not available here (h: which, and why)",
                        unavailable_.size() == 1 ? "a source is" : "sources are"));
    notes();
    draw();
  }

  void interval(const IntervalRecord& rec) override {
    model_.update(rec.top, system_figures(rec));
    if (flash_intervals_ > 0 && --flash_intervals_ == 0) model_.set_flash("");
    notes();
    draw();
  }

  void summary(const SummaryRecord& /*rec*/, const RunInfo& /*info*/,
               const std::vector<Unavailable>& /*list*/) override {
    // A normal end (q, Ctrl-C, SIGTERM, --duration): what perf-monitor said meanwhile was shown
    // in the view (the footer, the help's notes); nothing of it is printed onto the terminal.
    stop(/*replay=*/false);
  }

  [[nodiscard]] int input_fd() const override { return screen_ != nullptr ? STDIN_FILENO : -1; }

  void on_resize() override { draw(); }  // draw() takes the terminal's new size

  bool on_input() override {
    if (screen_ == nullptr) return true;
    int keys = 0;
    bool redraw = false;
    for (int ch = wgetch(stdscr); ch != ERR; ch = wgetch(stdscr)) {
      ++keys;
      if (ch == KEY_RESIZE) {
        redraw = true;
        continue;
      }
      auto k = view_key(ch);
      if (!k) continue;
      auto action = model_.key(*k);
      if (action == TopViewModel::Action::kQuit) return false;
      redraw = redraw || action == TopViewModel::Action::kRedraw;
    }
    if (keys == 0 && terminal_gone()) return false;  // readable and nothing to read: hung up
    if (redraw) draw();
    return true;
  }

 private:
  void start() {
    if (screen_ != nullptr) return;
    capture_stderr();
    screen_ = newterm(nullptr, stdout, stdin);
    if (screen_ == nullptr) {
      release_stderr();
      const char* term = std::getenv("TERM");
      say("the terminal view cannot start on this terminal (TERM=" + std::string(term != nullptr ? term : "") + ")");
      return;
    }
    set_term(screen_);
    cbreak();  // Ctrl-C stays a signal, which the session reads like any other
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);  // the loop calls us when a key is there; read until none is left
    set_escdelay(25);       // Esc alone, without waiting a second for a sequence to follow
    curs_set(0);
    if (has_colors()) {
      start_color();
      use_default_colors();
      init_pair(1, COLOR_BLACK, COLOR_GREEN);  // column header
      init_pair(2, COLOR_BLACK, COLOR_CYAN);   // selected row
      colors_ = true;
    }
    draw();
  }

  // replay: write what was captured to the restored standard error (a way out other than the
  // session's normal end: an error the view may not have shown long enough to be read).
  void stop(bool replay = true) {
    if (screen_ != nullptr) {
      endwin();  // the terminal's modes back, the alternate screen left, the cursor shown
      delscreen(screen_);
      screen_ = nullptr;
    }
    release_stderr(replay);
  }

  // Standard error on the terminal goes to a memory file while the view is up.
  void capture_stderr() {
    if (::isatty(STDERR_FILENO) == 0) return;
    int mem = ::memfd_create("perf-monitor-messages", MFD_CLOEXEC);
    int saved = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (mem < 0 || saved < 0 || ::dup2(mem, STDERR_FILENO) < 0) {
      if (mem >= 0) ::close(mem);
      if (saved >= 0) ::close(saved);
      return;
    }
    messages_ = UniqueFd(mem);
    saved_stderr_ = UniqueFd(saved);
  }

  // Standard error back, and what was written to it meanwhile.
  void release_stderr(bool replay = true) {
    if (!saved_stderr_) return;
    ::dup2(saved_stderr_.get(), STDERR_FILENO);
    saved_stderr_ = UniqueFd();
    std::string text = replay ? captured(0) : std::string();
    for (size_t at = 0; at < text.size();) {
      ssize_t n = ::write(STDERR_FILENO, text.data() + at, text.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    messages_ = UniqueFd();
  }

  std::string captured(size_t from) const {
    std::string text;
    if (!messages_) return text;
    char buf[4096];
    for (auto at = static_cast<off_t>(from);;) {
      ssize_t n = ::pread(messages_.get(), buf, sizeof buf, at);
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
      at += n;
    }
    return text;
  }

  // The footer's notes: the sources that could not start, then the latest messages.
  void notes() {
    std::string fresh = captured(messages_read_);
    messages_read_ += fresh.size();
    size_t start = 0;
    for (size_t nl = fresh.find('\n'); nl != std::string::npos; nl = fresh.find('\n', start)) {
      std::string line = fresh.substr(start, nl - start);
      if (line.rfind("perf-monitor: ", 0) == 0) line.erase(0, 14);
      if (!line.empty()) {
        lines_.push_back(line);
        flash(line);
      }
      start = nl + 1;
    }
    if (lines_.size() > 20) lines_.erase(lines_.begin(), lines_.end() - 20);
    std::vector<std::string> all = unavailable_;
    all.insert(all.end(), lines_.begin(), lines_.end());
    model_.set_notes(std::move(all));
  }

  // Shown in the footer for a few intervals.
  void flash(const std::string& text) {
    model_.set_flash(text);
    flash_intervals_ = 4;
  }

  bool terminal_gone() const {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) return true;
    int pending = 0;
    return (p.revents & POLLIN) != 0 && ::ioctl(STDIN_FILENO, FIONREAD, &pending) == 0 && pending == 0;
  }

  void draw() {
    if (screen_ == nullptr) return;
    // A resize seen here too: the window's size is asked at every drawing, not only on SIGWINCH.
    winsize ws{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0 &&
        (ws.ws_row != LINES || ws.ws_col != COLS)) {
      resizeterm(ws.ws_row, ws.ws_col);
    }
    erase();
    std::vector<ScreenLine> lines = model_.screen(COLS, LINES);
    for (size_t i = 0; i < lines.size(); ++i) {
      const ScreenLine& l = lines[i];
      chtype attr = A_NORMAL;
      switch (l.style) {
        case ScreenLine::kTitle:
        case ScreenLine::kCaption:
          attr = A_BOLD;
          break;
        case ScreenLine::kHeader:
          attr = colors_ ? COLOR_PAIR(1) : A_REVERSE;
          break;
        case ScreenLine::kSelected:
          attr = colors_ ? COLOR_PAIR(2) : A_REVERSE | A_BOLD;
          break;
        case ScreenLine::kFooter:
          attr = A_REVERSE;
          break;
        case ScreenLine::kPlain:
          break;
      }
      attron(attr);
      // The last cell of the screen is left alone: writing it would scroll some terminals.
      int n = static_cast<int>(i) == LINES - 1 ? COLS - 1 : COLS;
      mvaddnstr(static_cast<int>(i), 0, l.text.c_str(), n);
      attroff(attr);
    }
    refresh();
  }

  TopViewModel model_;
  SCREEN* screen_ = nullptr;
  bool colors_ = false;
  UniqueFd messages_, saved_stderr_;
  size_t messages_read_ = 0;
  int flash_intervals_ = 0;
  std::vector<std::string> unavailable_, lines_;
};

}  // namespace

std::unique_ptr<Sink> make_top_view_sink(const Config& config) { return std::make_unique<TopViewSink>(config); }

}  // namespace pm

// Last: terminfo's capability macros (lines, columns, ...) would rewrite the names above.
#include <term.h>

namespace pm {

bool top_view_possible() {
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDOUT_FILENO) == 0) return false;
  int err = 0;
  if (setupterm(nullptr, STDOUT_FILENO, &err) != OK) return false;  // no TERM, or one not known here
  del_curterm(cur_term);
  return true;
}

}  // namespace pm
