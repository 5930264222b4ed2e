// SPDX-License-Identifier: Apache-2.0
// The example service's ledger (libshopdb.so).
#pragma once

#include <cstdint>

namespace shopdb {

class Ledger {
 public:
  // Books a request's amount; returns the running total.
  long record(uint64_t id, long cents);

 private:
  long total_ = 0;
  uint64_t last_ = 0;
};

}  // namespace shopdb
