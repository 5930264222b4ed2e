// SPDX-License-Identifier: Apache-2.0
// The report page's pieces, compiled in from src/report/assets/ and from Debian's
// libjs-chart.js (cmake/embed_assets.cmake).
#pragma once

#include <string_view>

namespace pm::report {

struct Assets {
  std::string_view page;  // report.html: the template, with @NAME@ markers
  std::string_view css;
  std::string_view common_js, heatmap_js, flame_js, report_js, compare_js, main_js;
  std::string_view chartjs;          // chart.min.js as Debian ships it
  std::string_view chartjs_version;  // "3.9.1"
};

const Assets& assets();

}  // namespace pm::report
