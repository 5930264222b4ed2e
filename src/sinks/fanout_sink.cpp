// SPDX-License-Identifier: Apache-2.0
// One sink that passes everything to several: the output the user chose (text or JSON) and,
// beside it, the Prometheus exporter.
#include "sinks/sink.h"

namespace pm {
namespace {

class FanOutSink final : public Sink {
 public:
  explicit FanOutSink(std::vector<std::unique_ptr<Sink>> sinks) : sinks_(std::move(sinks)) {}

  void header(const RunHeader& h) override {
    for (auto& s : sinks_) s->header(h);
  }
  void unavailable(const std::vector<Unavailable>& list) override {
    for (auto& s : sinks_) s->unavailable(list);
  }
  void interval(const IntervalRecord& rec) override {
    for (auto& s : sinks_) s->interval(rec);
  }
  void span(const Span& sp) override {
    for (auto& s : sinks_) s->span(sp);
  }
  void summary(const SummaryRecord& rec, const RunInfo& info, const std::vector<Unavailable>& list) override {
    for (auto& s : sinks_) s->summary(rec, info, list);
  }
  // The first sink that takes input (there is at most one: the view).
  [[nodiscard]] int input_fd() const override {
    for (const auto& s : sinks_) {
      if (s->input_fd() >= 0) return s->input_fd();
    }
    return -1;
  }
  bool on_input() override {
    for (auto& s : sinks_) {
      if (s->input_fd() >= 0) return s->on_input();
    }
    return true;
  }
  void on_resize() override {
    for (auto& s : sinks_) s->on_resize();
  }

 private:
  std::vector<std::unique_ptr<Sink>> sinks_;
};

}  // namespace

std::unique_ptr<Sink> make_fanout_sink(std::vector<std::unique_ptr<Sink>> sinks) {
  if (sinks.size() == 1) return std::move(sinks.front());
  return std::make_unique<FanOutSink>(std::move(sinks));
}

}  // namespace pm
