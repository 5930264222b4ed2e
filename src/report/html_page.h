// SPDX-License-Identifier: Apache-2.0
// One self-contained HTML page: the template with its styles, Chart.js, the page's scripts and
// the data (gzip + base64) inlined.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "report/page_data.h"

namespace pm::report {

std::string html_escape(std::string_view text);

// title and file are plain text (escaped here); data is the page's JSON (page_data.h).
std::string render_page(std::string_view title, std::string_view file, std::string data_json);

// The same page written to `out` a piece at a time: `data` is called once, to write the page's
// JSON to the sink it is given, which compresses and encodes it as it goes. Nothing the size
// of the data is held.
void write_page(std::string_view title, std::string_view file, const std::function<void(const Sink&)>& data,
                const Sink& out);

}  // namespace pm::report
