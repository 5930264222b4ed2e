// SPDX-License-Identifier: Apache-2.0
#include "report/html_page.h"

#include "core/version.h"
#include "report/assets.h"
#include "report/page_data.h"

namespace pm::report {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_page(std::string_view title, std::string_view file, const std::string& data_json) {
  const Assets& a = assets();
  std::string app;
  for (std::string_view js : {a.common_js, a.heatmap_js, a.report_js, a.compare_js, a.main_js}) {
    app += js;
    app += '\n';
  }
  const std::string data = gzip_base64(data_json);
  const std::string generator = "perf-monitor " PERF_MONITOR_VERSION;
  // One pass over the template, so nothing inserted is searched for markers again.
  std::string out;
  out.reserve(a.page.size() + a.chartjs.size() + app.size() + data.size() + 4096);
  std::string_view page = a.page;
  while (!page.empty()) {
    size_t at = page.find('@');
    size_t end = at == std::string_view::npos ? std::string_view::npos : page.find('@', at + 1);
    if (end == std::string_view::npos) {
      out += page;
      break;
    }
    std::string_view name = page.substr(at + 1, end - at - 1);
    std::string value;
    bool known = true;
    if (name == "TITLE") {
      out += page.substr(0, at);
      out += html_escape(title);
    } else if (name == "FILE") {
      out += page.substr(0, at);
      out += html_escape(file);
    } else if (name == "GENERATOR") {
      out += page.substr(0, at);
      out += html_escape(generator);
    } else if (name == "CSS") {
      out += page.substr(0, at);
      out += a.css;
    } else if (name == "CHARTJS") {
      out += page.substr(0, at);
      out += a.chartjs;
    } else if (name == "CHARTJS_VERSION") {
      out += page.substr(0, at);
      out += a.chartjs_version;
    } else if (name == "APP") {
      out += page.substr(0, at);
      out += app;
    } else if (name == "DATA") {
      out += page.substr(0, at);
      out += data;
    } else {
      known = false;
    }
    if (known) {
      page.remove_prefix(end + 1);
    } else {
      out += page.substr(0, end);  // a lone '@' in the template: keep it, look on from the next
      page.remove_prefix(end);
    }
  }
  return out;
}

}  // namespace pm::report
