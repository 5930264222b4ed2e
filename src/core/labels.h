// SPDX-License-Identifier: Apache-2.0
// Label values that must tell series apart, made from names the kernel or a user gives (zone
// types, powercap zone names): two series with one label are one series to Prometheus, and a
// value lost in JSON.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace pm {

// names[i] where it occurs once; a repeated name gets "." and its own suffix ("acpitz.1",
// suffixes[i]: the zone's number, say). Should that collide as well (a zone named "acpitz.1"
// beside two named "acpitz"), "_2", "_3", ... follows until it is unique: no two labels are
// ever the same.
inline std::vector<std::string> unique_labels(const std::vector<std::string>& names,
                                              const std::vector<std::string>& suffixes) {
  std::map<std::string, size_t> uses;
  for (const std::string& n : names) ++uses[n];
  std::vector<std::string> out(names.size());
  std::set<std::string> taken;
  for (size_t i = 0; i < names.size(); ++i) {
    if (uses[names[i]] == 1) taken.insert(out[i] = names[i]);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (uses[names[i]] == 1) continue;
    std::string base = names[i] + "." + (i < suffixes.size() ? suffixes[i] : std::to_string(i));
    std::string label = base;
    for (size_t n = 2; !taken.insert(label).second; ++n) label = base + "_" + std::to_string(n);
    out[i] = std::move(label);
  }
  return out;
}

}  // namespace pm
