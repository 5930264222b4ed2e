// SPDX-License-Identifier: Apache-2.0
// The example service's ledger, in a shared library of its own (libshopdb.so): a function
// probed in a library the program loads, by the library's path or name.
//   perf-monitor run --probe build/examples/libshopdb.so:shopdb::Ledger::record -- build/examples/shop
#include "shopdb.h"

namespace shopdb {

__attribute__((noinline)) long Ledger::record(uint64_t id, long cents) {
  total_ += cents;
  last_ = id;
  return total_;
}

}  // namespace shopdb
