// SPDX-License-Identifier: Apache-2.0
// A process and its descendants as /proc shows them now: what `attach` follows. A walk of the
// children files only (no figures read), for the target to find its processes; the tree source
// (sources/tree/) keeps them and reads their figures.
#pragma once

#include <string>
#include <vector>

namespace pm {

// `root` and every process below it: each process's children as its threads' task/TID/children
// files list them, parents before children. A process that ends during the walk is left out
// (its children, reparented, may be too). Empty when `root` is not there.
std::vector<int> process_and_descendants(int root, const std::string& proc = "/proc");

}  // namespace pm
