// SPDX-License-Identifier: Apache-2.0
// What the configuration loader refuses before the TOML parser sees it: nesting and dotted keys
// beyond fixed bounds (the parser recurses once per level: 50,000 levels overflowed the stack),
// files larger than any configuration, and paths that are no file at all — a directory, a
// device that never ends (/dev/zero), a FIFO nobody writes to. Each is one error, at once.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "core/config.h"

namespace pm {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

Error bounds_error(const std::string& text) {
  Config c;
  Status st = apply_toml(text, "deep.toml", c);
  EXPECT_FALSE(st.ok()) << "accepted: " << text.substr(0, 80);
  return st.ok() ? Error{} : st.error();
}

bool has(const Error& e, const std::string& what) { return e.message.find(what) != std::string::npos; }

// The issue's repro: a table header of 50,000 parts.
TEST(ConfigBounds, DeepTableHeaderIsRefusedBeforeTheParser) {
  std::string text = "[" + repeat("a.", 49999) + "a]\n";
  Error e = bounds_error(text);
  EXPECT_EQ(e.code, Errc::kInvalidArgument);
  EXPECT_TRUE(has(e, "deep.toml:1:2: ")) << e.message;
  EXPECT_TRUE(has(e, "more than 16 parts")) << e.message;
  // Also as an array of tables, with blanks around the dots, and with quoted parts.
  EXPECT_TRUE(has(bounds_error("[[" + repeat("a . ", 500) + "a]]\n"), "more than 16 parts"));
  EXPECT_TRUE(has(bounds_error("[" + repeat("\"a\".", 500) + "a]\n"), "more than 16 parts"));
}

TEST(ConfigBounds, LongDottedKeyIsRefused) {
  // The issue's second repro: a key of 100,000 parts.
  Error e = bounds_error("[output]\n" + repeat("a.", 99999) + "a = 1\n");
  EXPECT_TRUE(has(e, "deep.toml:2:1: ")) << e.message;
  EXPECT_TRUE(has(e, "more than 16 parts")) << e.message;
  // Inside an inline table too.
  EXPECT_TRUE(has(bounds_error("x = { " + repeat("b.", 40) + "c = 1 }\n"), "more than 16 parts"));
  // Few parts, but long.
  Error len = bounds_error("[" + std::string(2000, 'a') + ".b]\n");
  EXPECT_TRUE(has(len, "longer than 1024 bytes")) << len.message;
}

TEST(ConfigBounds, DeepArraysAndInlineTablesAreRefused) {
  Error arrays = bounds_error("[output]\nx = " + repeat("[", 50000) + repeat("]", 50000) + "\n");
  EXPECT_TRUE(has(arrays, "nest more than 16 deep")) << arrays.message;
  EXPECT_TRUE(has(arrays, "deep.toml:2:")) << arrays.message;
  Error tables = bounds_error("x = " + repeat("{a=", 1000) + "1" + repeat("}", 1000) + "\n");
  EXPECT_TRUE(has(tables, "nest more than 16 deep")) << tables.message;
  // An array spread over lines is still one value.
  EXPECT_TRUE(has(bounds_error("x = [\n" + repeat("[\n", 40)), "nest more than 16 deep"));
}

// What is inside strings and comments is not structure; what is within the bounds is parsed.
TEST(ConfigBounds, StringsCommentsAndOrdinaryFilesPass) {
  std::string dots = repeat("a.", 100);
  std::string brackets = repeat("[{", 100);
  for (const std::string& text : {
           "[output]\nfile = \"" + dots + "x\"  # " + dots + brackets + "\n",
           "[output]\nfile = '" + brackets + "'\n",
           "[output]\nfile = \"\"\"\n" + dots + "\n" + brackets + "\n\"\"\"\n",
           "[output]\nfile = '''" + dots + "''''\n",  // ends with a quote of its own
           "[output]\nfile = \"a\\\"" + dots + "\"\n",  // an escaped quote does not end it
           "# " + brackets + "\n[output]\nformat = \"json\"\n",
           "[pmc]\nevents = [" + repeat("\"cycles\", ", 1000) + "\"cycles\"]\n",
       }) {
    EXPECT_TRUE(check_toml_bounds(text, "ok.toml").ok()) << text.substr(0, 60);
    Config c;
    Status st = apply_toml(text, "ok.toml", c);
    EXPECT_TRUE(st.ok()) << st.error().message;
  }
  // At the bounds: 16 parts and 16 levels are the parser's to judge (this one: unknown section).
  Error at = bounds_error("[" + repeat("a.", 15) + "a]\n");
  EXPECT_FALSE(has(at, "parts")) << at.message;
  EXPECT_TRUE(has(at, "unknown section")) << at.message;
  EXPECT_TRUE(check_toml_bounds("x = " + repeat("[", 16) + repeat("]", 16) + "\n", "ok.toml").ok());
}

TEST(ConfigBounds, TooLargeTextIsRefused) {
  Error e = bounds_error("[output]\n#" + std::string(kMaxConfigBytes, 'x') + "\n");
  EXPECT_TRUE(has(e, "larger than 1 MiB")) << e.message;
}

std::string scratch(const std::string& name) {
  return ::testing::TempDir() + "pm-config-" + std::to_string(::getpid()) + "-" + name;
}

// Each refusal comes at once (well within a second), never after reading for a while.
template <typename F>
Error quick_error(F&& load, milliseconds limit = milliseconds(1000)) {
  auto start = steady_clock::now();
  auto r = load();
  EXPECT_LT(steady_clock::now() - start, limit);
  EXPECT_FALSE(r.ok());
  return r.ok() ? Error{} : r.error();
}

TEST(ConfigFile, DevicesAndDirectoriesAreNotConfigurations) {
  for (const char* dev : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
    Error e = quick_error([&] { return read_config_text(dev); });
    EXPECT_EQ(e.code, Errc::kInvalidArgument);
    EXPECT_TRUE(has(e, "a character device")) << e.message;
    EXPECT_TRUE(has(e, dev)) << e.message;
  }
  Error dir = quick_error([] { return read_config_text("/tmp"); });
  EXPECT_TRUE(has(dir, "a directory")) << dir.message;
}

TEST(ConfigFile, FifoWithoutWriterIsAnErrorNotAWait) {
  std::string fifo = scratch("fifo");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Error e = quick_error([&] { return read_config_text(fifo); });
  EXPECT_TRUE(has(e, "nothing was written")) << e.message;
  ::unlink(fifo.c_str());
}

TEST(ConfigFile, FifoWhoseWriterNeverFinishesTimesOut) {
  std::string fifo = scratch("fifo-slow");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A writer that is there and says nothing (opening it needs a reader for a moment).
  int rfd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  int wfd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  ASSERT_GE(wfd, 0);
  ::close(rfd);
  auto start = steady_clock::now();
  Error e = quick_error([&] { return read_config_text(fifo); }, milliseconds(3500));
  EXPECT_GE(steady_clock::now() - start, milliseconds(1900));
  EXPECT_TRUE(has(e, "within 2 s")) << e.message;
  ::close(wfd);
  ::unlink(fifo.c_str());
}

// A pipe that delivers a configuration and closes (`--config <(...)`) is read.
TEST(ConfigFile, PipeWithContentIsRead) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string text = "[output]\nformat = \"json\"\n";
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  Config c;
  Status st = load_config_file("/proc/self/fd/" + std::to_string(fds[0]), c);
  ::close(fds[0]);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(c.format, OutputFormat::kJson);
}

TEST(ConfigFile, LargeFileIsRefusedWithoutReadingIt) {
  std::string path = scratch("large.toml");
  {
    std::ofstream out(path);
    out << "# " << std::string(kMaxConfigBytes, 'x') << "\n";
  }
  Error e = quick_error([&] { return read_config_text(path); });
  EXPECT_TRUE(has(e, "larger than 1 MiB")) << e.message;
  ::unlink(path.c_str());
}

// An empty value is never "the default": leaving the key out is.
TEST(ConfigEmptyValues, AreErrorsThatSayWhere) {
  Error file = bounds_error("[output]\nfile = \"\"\n");
  EXPECT_TRUE(has(file, "deep.toml:2:8")) << file.message;
  EXPECT_TRUE(has(file, "[output] file must be a non-empty string")) << file.message;
  EXPECT_TRUE(has(bounds_error("[output]\nduration = \"\"\n"), "invalid duration ''"));
  EXPECT_TRUE(has(bounds_error("[output]\ninterval = \"\"\n"), "invalid duration ''"));
  EXPECT_TRUE(has(bounds_error("[output]\nformat = \"\"\n"), "format"));
  EXPECT_TRUE(has(bounds_error("[process_tree]\ninterval = \"\"\n"), "invalid duration ''"));
  EXPECT_TRUE(has(bounds_error("[pmc]\nevents = []\n"), "non-empty array"));
  EXPECT_TRUE(has(bounds_error("[pmc]\nevents = [\"cycles\", \"\"]\n"), "non-empty strings"));
  EXPECT_TRUE(has(bounds_error("[scheduler]\nhistogram_unit = \"\"\n"), "histogram_unit"));
  EXPECT_TRUE(has(bounds_error("[[probes]]\nbinary = \"\"\nfunction = \"f\"\n"), "binary"));
  EXPECT_TRUE(has(bounds_error("[[probes]]\nbinary = \"./a\"\nfunction = \"\"\n"), "function"));
}

}  // namespace
}  // namespace pm

namespace pm {
namespace {

// Found by fuzzing (fuzz/config_fuzz.cpp): toml++ 3.3 reaches an "unreachable" point —
// undefined behaviour — when it asks whether a character such as U+00A1 is whitespace, which it
// does outside strings and comments, and after a backslash in a multi-line string. TOML allows
// such characters only inside strings and comments: elsewhere they are refused before parsing.
TEST(ConfigBounds, NonAsciiOutsideStringsIsRefusedBeforeTheParser) {
  for (const char* text : {"[output]\nformat = \"json\" \xc2\xa1\n", "\xc2\xa1 = 1\n", "[output\xc2\xa1]\n",
                           "a.\xc2\xa1" "b = 1\n", "a = 1979-05-27\xc2\xa1\n", "a = [ \n\xc2\xa1 ]\n",
                           "a = { \xc2\xa1 = 1 }\n", "[output]\nfile = 1\xc2\xa1\n",
                           // A quote inside a bad value opens no string: 2:"... is read as a time.
                           "a = 2:\"eeee\x01" "c.d%3-7\xcb\xb2: }\n", "a = x\"\xc2\xa1\"\n",
                           "a = +++++++c.\"++++\xef\xb3\xbf++++++c++++\n", "a= 0['[\xef\xbb\xbd\x00t",
                           "a = 1=\"\xc2\xa1\"\n", "a = [1, 2\"\xc2\xa1\"]\n"}) {
    Config c;
    Status st = apply_toml(text, "u.toml", c);
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_NE(st.error().message.find("other than ASCII outside a string or comment"), std::string::npos)
        << st.error().message;
  }
  for (const char* text : {"[output]\nfile = \"\"\"a\\\xc2\xa1\"\"\"\n", "[output]\nfile = \"\"\"a\\ \t\xc2\xa1\"\"\"\n",
                           "[output]\nfile = \"\"\"a\\\n  \n \xc2\xa1\"\"\"\n"}) {
    Config c;
    Status st = apply_toml(text, "u.toml", c);
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_NE(st.error().message.find("right after a backslash"), std::string::npos) << st.error().message;
  }
  // Where TOML allows them, they stay allowed (and a byte order mark at the start too).
  for (const char* text : {"[output]\nfile = \"\xc2\xa1\"\n", "[output]\nfile = '\xc2\xa1'\n",
                           "[output] # \xc2\xa1\nformat = \"json\"\n", "[output]\nfile = \"\"\"\xc2\xa1\n\xc2\xa1\"\"\"\n",
                           "\xEF\xBB\xBF[output]\nformat = \"json\"\n", "[output]\nfile = \"\"\"a\\\n  b\"\"\"\n",
                           "[pmc]\nevents = [\"\xc2\xa1\",\"\xc2\xa1\"]\n"}) {
    Config c;
    Status st = apply_toml(text, "u.toml", c);
    EXPECT_TRUE(st.ok()) << text << ": " << st.error().message;
  }
}

}  // namespace
}  // namespace pm
