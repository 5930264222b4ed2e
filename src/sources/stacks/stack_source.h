// SPDX-License-Identifier: Apache-2.0
// The stacks source (--stacks): where the target ran and where it waited. On-CPU, a software
// cpu-clock on every CPU samples the target's threads at --stack-rate; off-CPU, every switch of
// one of its threads adds the time it spent off the CPU to its place (bpf/stacks.bpf.c). Stacks
// are unwound in user space (sources/stacks/unwinder.h) as their records come, so a process that
// exits is named all the same; the profile is handed on at the end (EndReport::stacks).
#pragma once

#include <memory>

#include "core/config.h"
#include "core/error.h"
#include "core/source.h"
#include "sources/kernel/bpf_load_options.h"

namespace pm {

class StackSource final : public Source {
 public:
  // Fails (kUnavailable / kPermissionDenied) with the reason when the programs cannot load.
  static Result<std::unique_ptr<StackSource>> create(const Config::Stacks& config, const BpfLoadOptions& target);
  ~StackSource() override;
  [[nodiscard]] std::string_view name() const override { return "stacks"; }
  void collect(Samples& out) override;
  [[nodiscard]] int wake_fd() const override;
  void on_wake() override;
  // Off-CPU: where the slowest spans of each function blocked (EndReport's slowest requests).
  [[nodiscard]] bool sees_spans() const override;
  void see_span(const Span& span) override;
  void finish() override;
  void report(EndReport& r) const override;

  struct Impl;
  explicit StackSource(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pm
