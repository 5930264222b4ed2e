// SPDX-License-Identifier: Apache-2.0
#include "core/host.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <sstream>

namespace pm {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string cpu_model_from_cpuinfo(std::string_view cpuinfo) {
  // In order of preference: the first key found anywhere wins over later ones in this list.
  constexpr std::array<std::string_view, 4> kKeys{"model name", "Model", "cpu model", "Hardware"};
  std::array<std::string_view, kKeys.size()> found{};
  while (!cpuinfo.empty()) {
    size_t eol = cpuinfo.find('\n');
    std::string_view line = cpuinfo.substr(0, eol);
    cpuinfo.remove_prefix(eol == std::string_view::npos ? cpuinfo.size() : eol + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = trim(line.substr(0, colon));
    for (size_t i = 0; i < kKeys.size(); ++i) {
      if (key == kKeys[i] && found[i].empty()) found[i] = trim(line.substr(colon + 1));
    }
  }
  for (std::string_view f : found) {
    if (!f.empty()) return std::string(f);
  }
  return {};
}

HostInfo read_host_info() {
  HostInfo h;
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) == 0) h.hostname = name.data();
  struct utsname u {};
  if (::uname(&u) == 0) {
    h.kernel = u.release;
    h.arch = u.machine;
  }
  std::ifstream in("/proc/cpuinfo");
  std::ostringstream text;
  text << in.rdbuf();
  h.cpu_model = cpu_model_from_cpuinfo(text.str());
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.cpus = n > 0 ? static_cast<int>(n) : 0;
  return h;
}

}  // namespace pm
