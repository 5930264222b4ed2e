// SPDX-License-Identifier: Apache-2.0
// One self-contained HTML page: the template with its styles, Chart.js, the page's scripts and
// the data (gzip + base64) inlined.
#pragma once

#include <string>
#include <string_view>

namespace pm::report {

std::string html_escape(std::string_view text);

// title and file are plain text (escaped here); data is the page's JSON (page_data.h).
std::string render_page(std::string_view title, std::string_view file, std::string data_json);

}  // namespace pm::report
