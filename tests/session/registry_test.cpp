// SPDX-License-Identifier: Apache-2.0
// The registry's rows against the configuration's sections: each row names a section the file
// may have, every source section has a row, and a row that reads what another row set comes
// after it.
#include "session/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

namespace pm {
namespace {

TEST(Registry, RowsNameTheirSectionsAndComeAfterWhatTheyRead) {
  std::vector<std::string_view> sections = config_sections();
  std::set<std::string_view> named, seen;
  for (const SourceEntry& row : source_registry()) {
    if (!row.section.empty()) {
      EXPECT_NE(std::find(sections.begin(), sections.end(), row.section), sections.end())
          << row.name << " names [" << row.section << "], which the configuration does not have";
      named.insert(row.section);
    }
    if (!row.after.empty()) {
      EXPECT_TRUE(seen.count(row.after)) << row.name << " reads what " << row.after << " sets, but comes before it";
    }
    EXPECT_TRUE(seen.insert(row.name).second) << row.name << " twice";
  }
  // Every section but the session's own ([output], [prometheus]) belongs to a source.
  for (std::string_view s : sections) {
    if (s == "output" || s == "prometheus") continue;
    EXPECT_TRUE(named.count(s)) << "[" << s << "] is no source's section";
  }
}

}  // namespace
}  // namespace pm
