// SPDX-License-Identifier: Apache-2.0
// The sinks are generic over MetricDesc: none of them finds a metric by its family or name (a
// rename would turn what it shows into n/a, silently). What a sink must single out, it finds by
// a mark on the descriptor (MetricDesc::system, MetricDesc::text). This reads the sinks' source.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

TEST(Architecture, NoSinkLooksUpAMetricByItsName) {
  fs::path sinks = fs::path(PM_FIXTURES_DIR) / ".." / ".." / "src" / "sinks";
  ASSERT_TRUE(fs::is_directory(sinks)) << sinks;
  // family == "cpu", name != "load1", d.name == "x", "cpu" == family, find("used_bytes") on a name.
  std::regex lookup(
      R"re(\b(family|name)\s*(==|!=)\s*"|"\s*(==|!=)\s*[\w.>-]*\b(family|name)\b|(family|name)\.find\(")re");
  int files = 0;
  for (const auto& e : fs::directory_iterator(sinks)) {
    if (e.path().extension() != ".cpp" && e.path().extension() != ".h") continue;
    ++files;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      EXPECT_FALSE(std::regex_search(line, lookup)) << e.path().filename().string() << ":" << n << ": " << line;
    }
  }
  EXPECT_GT(files, 10);
  // The check itself finds what it is for.
  EXPECT_TRUE(std::regex_search(std::string(R"(if (family == "cpu" && name == "load1"))"), lookup));
  EXPECT_TRUE(std::regex_search(std::string(R"(v.desc->name != "stall_seconds")"), lookup));
}
