// SPDX-License-Identifier: Apache-2.0
#include "sources/files/descendants.h"

#include <set>

#include "core/file_reader.h"
#include "core/text.h"

namespace pm {

std::vector<int> process_and_descendants(int root, const std::string& proc) {
  FileReader reader;
  std::vector<int> out;
  if (root <= 0 || !reader.read(proc + "/" + std::to_string(root) + "/stat")) return out;
  std::set<int> seen{root};
  out.push_back(root);
  for (size_t i = 0; i < out.size(); ++i) {
    std::string task = proc + "/" + std::to_string(out[i]) + "/task/";
    auto tids = list_dir(task);
    if (!tids) continue;  // ended since it was listed
    for (const std::string& tid : *tids) {
      auto text = reader.read(task + tid + "/children");  // NOLINT(performance-inefficient-string-concatenation)
      if (!text) continue;
      std::string_view rest = *text;
      for (std::string_view field = next_field(rest); !field.empty(); field = next_field(rest)) {
        auto pid = parse_i64(field);
        if (pid && *pid > 0 && seen.insert(static_cast<int>(*pid)).second) out.push_back(static_cast<int>(*pid));
      }
    }
  }
  return out;
}

}  // namespace pm
