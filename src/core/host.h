// SPDX-License-Identifier: Apache-2.0
// What a recording says about the machine it was made on: host name, kernel, CPU model and
// count. Read once, at the start of a session, for the JSON header record.
#pragma once

#include <string>
#include <string_view>

namespace pm {

struct HostInfo {
  std::string hostname;
  std::string kernel;     // uname: release ("6.1.0-18-amd64")
  std::string arch;       // uname: machine ("x86_64")
  std::string cpu_model;  // /proc/cpuinfo; empty when the file names none
  int cpus = 0;           // online CPUs
};

// The CPU model named in a /proc/cpuinfo text: x86's "model name", else the "Model",
// "cpu model" or "Hardware" line other architectures write; empty when there is none.
std::string cpu_model_from_cpuinfo(std::string_view cpuinfo);

HostInfo read_host_info();

}  // namespace pm
