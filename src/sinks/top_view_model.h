// SPDX-License-Identifier: Apache-2.0
// The interactive view of `perf-monitor top` without the terminal: what it shows (the system
// block, a list of processes, cgroups or threads sorted, filtered and cut to the screen), what the
// keys do, and the screen as lines of text. The ncurses side (top_view.cpp) only reads keys and
// prints these lines, so everything a person sees can be tested without a terminal.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/aggregator.h"
#include "core/clock.h"
#include "core/fd.h"
#include "core/top.h"
#include "sinks/top_table.h"

namespace pm {

// The system block: the figures the text output shows, read from the same interval record
// (absent: not read here, shown as n/a).
struct SystemFigures {
  static constexpr std::array<const char*, 8> kCpuModes = {"user", "system",  "nice",  "iowait",
                                                           "irq",  "softirq", "steal", "idle"};
  static constexpr std::array<const char*, 3> kPsiResources = {"cpu", "io", "memory"};
  WallClock::time_point timestamp{};
  double seconds = 0;
  std::array<std::optional<double>, kCpuModes.size()> cpu_pct;  // all CPUs, percent per mode
  std::optional<double> mem_used, mem_total, mem_available, mem_cached, swap_total, swap_free;
  std::optional<double> load1, load5, load15, running, blocked;
  // Share of the interval some / all runnable tasks stalled, percent, per resource.
  std::array<std::array<std::optional<double>, 2>, kPsiResources.size()> psi;
};
SystemFigures system_figures(const IntervalRecord& rec);

// A key as the view understands it (the terminal side maps its codes to these).
struct ViewKey {
  enum Kind { kChar, kUp, kDown, kPageUp, kPageDown, kHome, kEnd, kEnter, kEscape, kBackspace, kLeft, kRight };
  Kind kind = kChar;
  int ch = 0;  // kChar: the character
  static ViewKey of(char c) { return {kChar, static_cast<unsigned char>(c)}; }
};

struct ScreenLine {
  enum Style { kPlain, kTitle, kCaption, kHeader, kSelected, kFooter };
  std::string text;  // exactly the screen's width
  Style style = kPlain;
};

class TopViewModel {
 public:
  explicit TopViewModel(TopSort sort) : sort_(sort) {}

  // The interval's lists and system figures. While paused, the screen keeps the ones it shows
  // and takes the latest on resuming.
  void update(std::shared_ptr<const TopRecord> top, const SystemFigures& sys);
  // What could not start and what perf-monitor printed meanwhile: listed under the help; the
  // footer says how many. `flash` is shown in the footer instead of the keys while not empty.
  void set_notes(std::vector<std::string> notes) { notes_ = std::move(notes); }
  void set_flash(std::string flash) { flash_ = std::move(flash); }
  // Why there are no lists (the top source could not start): shown where they would be.
  void set_no_lists(std::string why) { no_lists_ = std::move(why); }

  enum class Action { kNone, kRedraw, kQuit };
  Action key(const ViewKey& k);

  // The screen, `height` lines of `width` characters; scrolls so the selected row is on it.
  std::vector<ScreenLine> screen(int width, int height);

  [[nodiscard]] TopList list() const { return list_; }
  [[nodiscard]] TopSort sort() const { return sort_; }
  [[nodiscard]] const std::string& filter() const { return filter_; }
  [[nodiscard]] bool paused() const { return paused_; }
  [[nodiscard]] bool editing_filter() const { return editing_; }
  [[nodiscard]] bool help_shown() const { return help_; }
  // The cgroup whose processes are listed ("" when not expanded), the process whose threads are.
  [[nodiscard]] const std::string& expanded_cgroup() const { return in_cgroup_; }
  [[nodiscard]] int expanded_pid() const { return of_pid_; }
  // The rows of the current list, sorted and filtered (all of them, not only those on screen).
  [[nodiscard]] std::vector<TopRow> rows() const;
  [[nodiscard]] int selected() const { return selected_; }
  [[nodiscard]] bool tree() const { return tree_; }
  [[nodiscard]] bool command_shown() const { return command_; }
  // The footer's status: what the last k or r did (or why it could not), until the next key.
  [[nodiscard]] const std::string& status() const { return status_; }
  // A question being asked in the footer (k: which signal, then y/n; r: which nice value).
  [[nodiscard]] bool asking() const { return prompt_ != Prompt::kNone; }

 private:
  enum class Prompt { kNone, kSignal, kConfirm, kNice };
  Action act(const ViewKey& k);
  Action answer(const ViewKey& k);
  void ask(Prompt p, const std::vector<TopRow>& rows);
  void send_signal();
  void renice();
  std::string prompt_text() const;
  void settle(const std::vector<TopRow>& rows);
  void show_list(TopList list);
  void expand(const std::vector<TopRow>& rows);
  bool collapse();
  void move_selection(int to, const std::vector<TopRow>& rows);
  static std::string key_of(const TopRow& r);
  std::vector<std::string> system_lines(int width) const;
  std::string caption(size_t rows) const;

  std::shared_ptr<const TopRecord> shown_, latest_;
  SystemFigures sys_shown_, sys_latest_;
  bool have_system_ = false;
  TopList list_ = TopList::kProcesses;
  TopSort sort_;
  std::string filter_;
  bool editing_ = false, paused_ = false, help_ = false;
  std::string in_cgroup_;            // processes of this cgroup only
  int of_pid_ = 0;                   // threads of this process only
  std::string cgroup_row_;           // the cgroup list's selection to return to
  std::string threads_from_cgroup_;  // the cgroup whose processes a threads list came from
  // The selection: the top row until the user moves it, then the same process or cgroup as the
  // rows reorder (by its key), else the same place.
  bool follow_top_ = true;
  std::string selected_key_;
  int selected_ = 0, scroll_ = 0, page_ = 10;
  bool tree_ = false, command_ = true;
  // k and r: the process asked about (a pidfd taken when asked: a PID reused before the answer is
  // never signalled), the signal chosen, what was typed.
  Prompt prompt_ = Prompt::kNone;
  std::string input_, target_name_, status_;
  int target_pid_ = 0, target_tid_ = 0, signal_ = 15;
  std::optional<int> target_nice_;
  UniqueFd target_fd_;
  std::vector<std::string> notes_;
  std::string flash_, no_lists_;
};

}  // namespace pm
