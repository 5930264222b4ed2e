// SPDX-License-Identifier: Apache-2.0
// Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON
// messages ending in a NUL byte, commands on fd 3, answers and events on fd 4): load a page
// from file://, collect console errors, uncaught exceptions and every network request, run
// JavaScript in it, take a screenshot. Used by the report tests and bench/report_bench.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pm::test {

class Chromium {
 public:
  // The browser to run: $PM_CHROMIUM, else `chromium` on PATH; nullopt when there is none.
  static std::optional<std::string> find();
  // Starts it (headless, no sandbox, no GPU, no background networking, a fresh profile).
  // Returns null and sets *error when it does not start.
  static std::unique_ptr<Chromium> launch(int width, int height, std::string* error);
  ~Chromium();
  Chromium(const Chromium&) = delete;
  Chromium& operator=(const Chromium&) = delete;

  struct Load {
    bool ready = false;                 // the page set body[data-ready] = "yes"
    std::string ready_state;            // what it set ("yes", "error", "" on timeout)
    double wall_ms = 0;                 // from Page.navigate to ready, measured here
    std::vector<std::string> errors;    // console errors, exceptions, error log entries
    std::vector<std::string> requests;  // every URL the page asked for
  };
  // Navigates to url and waits (up to timeout) for the page to say it is drawn.
  Load open(const std::string& url, std::chrono::milliseconds timeout);
  // Evaluates an expression in the page (awaiting a promise) and returns its value as JSON.
  nlohmann::json eval(const std::string& expression);
  // A PNG of the page from from_y down, at most max_height CSS pixels tall.
  std::string screenshot_png(int max_height = 16000, int from_y = 0);
  // Errors reported since the last open() (console, exceptions, log).
  [[nodiscard]] const std::vector<std::string>& errors() const { return errors_; }

 private:
  Chromium() = default;
  nlohmann::json call(const std::string& method, nlohmann::json params, bool session = true,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));
  bool read_message(nlohmann::json* out, std::chrono::steady_clock::time_point deadline);
  void on_event(const nlohmann::json& ev);

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
  std::string profile_dir_;
  std::string session_;
  int next_id_ = 1;
  std::vector<std::string> errors_, requests_;
};

// Decodes base64 (as the DevTools protocol sends screenshots).
std::string base64_decode(const std::string& text);

}  // namespace pm::test
