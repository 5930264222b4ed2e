// SPDX-License-Identifier: Apache-2.0
// Config files: the legacy format is accepted unchanged, and every mistake is an error that says
// where it is (file:line:column) and which key it concerns.
#include "core/config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace pm {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kLegacy = R"([pmc]
interval_secs = 1
events = ["instructions", "cycles", "cache_references", "cache_misses", "branch_misses"]
[scheduler]
enabled = true
[block_io]
enabled = true
[file_poll]
interval_secs = 5
[output]
format = "text"   # "text" or "json"
)";

Error apply_error(const std::string& text) {
  Config c;
  Status st = apply_toml(text, "file.toml", c);
  EXPECT_FALSE(st.ok()) << "accepted: " << text;
  return st.ok() ? Error{} : st.error();
}

TEST(Config, LegacyFileIsAccepted) {
  Config c;
  // Start from the opposite of what the file says, so each setting is seen to be applied.
  c.format = OutputFormat::kJson;
  c.scheduler.enabled = false;
  c.block_io.enabled = false;
  c.file_poll.interval = seconds(1);
  c.pmc.interval = seconds(9);
  Status st = apply_toml(kLegacy, "file.toml", c);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(c.format, OutputFormat::kText);
  EXPECT_TRUE(c.scheduler.enabled);
  EXPECT_TRUE(c.block_io.enabled);
  EXPECT_EQ(c.file_poll.interval, Duration(seconds(5)));
  EXPECT_EQ(c.pmc.interval, Duration(seconds(1)));
  ASSERT_EQ(c.pmc.events.size(), 5u);
  EXPECT_EQ(c.pmc.events,
            (std::vector<std::string>{"instructions", "cycles", "cache_references", "cache_misses", "branch_misses"}));
}

TEST(Config, JsonFormatAndDisabledSections) {
  Config c;
  Status st = apply_toml("[output]\nformat = \"json\"\n[scheduler]\nenabled = false\n[file_poll]\nnuma = false\n",
                         "file.toml", c);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(c.format, OutputFormat::kJson);
  EXPECT_FALSE(c.scheduler.enabled);
  EXPECT_FALSE(c.file_poll.numa);
  EXPECT_TRUE(c.file_poll.thermal);  // untouched default
}

TEST(Config, UnknownKeyNamesFileLineColumnAndKey) {
  Error e = apply_error("[output]\nformat = \"json\"\n\n  colour = true\n");
  EXPECT_EQ(e.code, Errc::kInvalidArgument);
  // The key is on line 4, indented by two spaces: column 3.
  EXPECT_NE(e.message.find("file.toml:4:3"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("colour"), std::string::npos) << e.message;
}

TEST(Config, UnknownKeyInLegacySection) {
  Error e = apply_error("[pmc]\ninterval_secs = 1\nevent = [\"cycles\"]\n");
  EXPECT_NE(e.message.find("file.toml:3:1"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("'event'"), std::string::npos) << e.message;
}

TEST(Config, UnknownSectionIsAnError) {
  Error e = apply_error("[output]\nformat = \"text\"\n[gpu]\nenabled = true\n");
  EXPECT_EQ(e.code, Errc::kInvalidArgument);
  EXPECT_NE(e.message.find("[gpu]"), std::string::npos) << e.message;
  // The header of the unknown section is at the start of line 3.
  EXPECT_NE(e.message.find("file.toml:3:1"), std::string::npos) << e.message;
}

TEST(Config, TopLevelKeyIsAnError) {
  Error e = apply_error("format = \"json\"\n");
  EXPECT_NE(e.message.find("file.toml:1:1"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("format"), std::string::npos) << e.message;
}

TEST(Config, MalformedTomlGivesLineAndColumn) {
  Error e = apply_error("[output\nformat=");
  EXPECT_EQ(e.code, Errc::kInvalidArgument);
  // The header "[output" is unterminated: the newline where ']' should be is at line 1, column 8.
  EXPECT_NE(e.message.find("file.toml:1:8: "), std::string::npos) << e.message;
}

TEST(Config, MalformedValueOnLaterLine) {
  Error e = apply_error("[output]\nformat = \"text\"\nfile = \n");
  // "file = " is 7 characters: the missing value is at line 3, column 8.
  EXPECT_NE(e.message.find("file.toml:3:8: "), std::string::npos) << e.message;
}

TEST(Config, WrongTypesNameTheKey) {
  // The position is the value's: "format = " is 9 characters, so column 10.
  Error e = apply_error("[output]\nformat = 3\n");
  EXPECT_EQ(e.code, Errc::kInvalidArgument);
  EXPECT_NE(e.message.find("format"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("file.toml:2:10"), std::string::npos) << e.message;

  e = apply_error("[scheduler]\nenabled = \"yes\"\n");
  EXPECT_EQ(e.code, Errc::kInvalidArgument);
  EXPECT_NE(e.message.find("enabled"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("file.toml:2:11"), std::string::npos) << e.message;

  e = apply_error("[pmc]\nevents = \"cycles\"\n");
  EXPECT_NE(e.message.find("events"), std::string::npos) << e.message;

  e = apply_error("[pmc]\nevents = [\"cycles\", 3]\n");
  EXPECT_NE(e.message.find("events"), std::string::npos) << e.message;

  e = apply_error("[file_poll]\ninterval_secs = -2\n");
  EXPECT_NE(e.message.find("interval_secs"), std::string::npos) << e.message;
}

TEST(Config, UnknownFormatIsAnError) {
  Error e = apply_error("[output]\nformat = \"xml\"\n");
  EXPECT_EQ(e.code, Errc::kInvalidArgument);
  EXPECT_NE(e.message.find("format"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("file.toml:2:"), std::string::npos) << e.message;
}

TEST(Config, Probes) {
  Config c;
  Status st = apply_toml(
      "[[probes]]\nbinary = \"/usr/bin/python3\"\nfunction = \"PyEval_EvalFrame\"\n"
      "[[probes]]\nbinary = \"/lib/libc.so.6\"\nfunction = \"malloc\"\n",
      "file.toml", c);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_EQ(c.probes.size(), 2u);
  EXPECT_EQ(c.probes[0].binary, "/usr/bin/python3");
  EXPECT_EQ(c.probes[0].function, "PyEval_EvalFrame");
  EXPECT_EQ(c.probes[1].binary, "/lib/libc.so.6");
  EXPECT_EQ(c.probes[1].function, "malloc");

  Error e = apply_error("[[probes]]\nbinary = \"/bin/true\"\nsymbol = \"main\"\n");
  EXPECT_NE(e.message.find("symbol"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("file.toml:3:1"), std::string::npos) << e.message;

  e = apply_error("probes = 1\n");
  EXPECT_NE(e.message.find("[[probes]]"), std::string::npos) << e.message;
}

TEST(Config, Durations) {
  Config c;
  Status st = apply_toml("[process_tree]\ninterval = \"100ms\"\n[output]\ninterval = \"250ms\"\nduration = \"2m\"\n",
                         "file.toml", c);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_TRUE(c.process_tree.interval.has_value());
  EXPECT_EQ(*c.process_tree.interval, Duration(milliseconds(100)));
  EXPECT_EQ(c.interval, Duration(milliseconds(250)));
  ASSERT_TRUE(c.duration.has_value());
  EXPECT_EQ(*c.duration, Duration(seconds(120)));

  Error e = apply_error("[process_tree]\ninterval = \"fast\"\n");
  EXPECT_NE(e.message.find("fast"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("file.toml:2:"), std::string::npos) << e.message;

  e = apply_error("[process_tree]\ninterval = 100\n");
  EXPECT_NE(e.message.find("interval"), std::string::npos) << e.message;
}

TEST(Config, LegacyIntervalSecsMayBeFractional) {
  Config c;
  Status st = apply_toml("[output]\ninterval_secs = 0.5\n", "file.toml", c);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(c.interval, Duration(milliseconds(500)));
}

TEST(Config, MissingFileIsNotFound) {
  Config c;
  Status st = load_config_file("/nonexistent/perf-monitor-test.toml", c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kNotFound);
  EXPECT_NE(st.error().message.find("/nonexistent/perf-monitor-test.toml"), std::string::npos);
}

}  // namespace
}  // namespace pm

namespace pm {
namespace {

TEST(ConfigHistogramUnits, ParsedAsNanosecondsAndCheckedByName) {
  Config c;
  ASSERT_TRUE(
      apply_toml("[scheduler]\nhistogram_unit = \"ns\"\n[block_io]\nhistogram_unit = \"ms\"\n", "u.toml", c).ok());
  EXPECT_EQ(c.scheduler.hist_unit_ns, 1u);
  EXPECT_EQ(c.block_io.hist_unit_ns, 1'000'000u);
  Config d;  // the default: microseconds
  EXPECT_EQ(d.scheduler.hist_unit_ns, 1000u);
  auto bad = apply_toml("[block_io]\nhistogram_unit = \"s\"\n", "u.toml", d);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("u.toml:2:18"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("histogram_unit"), std::string::npos);
}

// [prometheus] listen: an address we could listen on, checked when the file is read, with its
// place in the file. Empty is a mistake (leaving the key out is "not served").
TEST(ConfigPrometheus, ListenIsCheckedWhereItIsWritten) {
  Config c;
  ASSERT_TRUE(apply_toml("[prometheus]\nlisten = \"0.0.0.0:9464\"\n", "file.toml", c).ok());
  ASSERT_TRUE(c.prometheus_listen.has_value());
  EXPECT_EQ(c.prometheus_listen->text(), "0.0.0.0:9464");
  Error empty = apply_error("[prometheus]\nlisten = \"\"\n");
  EXPECT_NE(empty.message.find("file.toml:2:10"), std::string::npos) << empty.message;
  EXPECT_NE(empty.message.find("non-empty"), std::string::npos) << empty.message;
  Error e = apply_error("[output]\nformat = \"json\"\n[prometheus]\nlisten = \"metrics:9464\"\n");
  EXPECT_EQ(e.code, Errc::kInvalidArgument);
  EXPECT_NE(e.message.find("file.toml:4:"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("[prometheus] listen"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("127.0.0.1:9464"), std::string::npos) << e.message;  // says what to write
}

}  // namespace
}  // namespace pm
