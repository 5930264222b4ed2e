// SPDX-License-Identifier: Apache-2.0
// The block I/O source: eBPF programs on block_bio_queue, block_rq_issue and
// block_rq_complete that count, per device, bio bytes read and written, request latency
// (issue -> complete) and queue depth at issue, and the bytes the target tree submits.
#pragma once

#include <memory>

#include "core/error.h"
#include "core/source.h"
#include "sources/kernel/skeleton.h"

namespace pm {

class BlockSource;
Result<std::unique_ptr<BlockSource>> make_block_source(const BpfLoadOptions& target);

class BlockSource final : public Source {
 public:
  ~BlockSource() override;
  [[nodiscard]] std::string_view name() const override { return "block_io"; }
  void collect(Samples& out) override;

  struct Impl;
  explicit BlockSource(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pm
