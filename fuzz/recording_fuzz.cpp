// A recording for `perf-monitor report`: the bounded line parser, the columns, the page's data
// and the figures a comparison takes from the summary. Whatever the input, nothing crashes, the
// bounds hold, and what is written is JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "report/compare.h"
#include "report/json_line.h"
#include "report/page_data.h"
#include "report/recording.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pm::report;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto rec = parse_recording(text, "fuzz.jsonl");
  if (!rec) return 0;
  const SeriesTable& t = rec->intervals;
  require(t.series().size() <= kMaxSeries);
  for (const Series& s : t.series()) {
    require((s.as_text ? s.text.size() : s.numbers.size()) == s.rows.size());
    for (size_t k = 0; k < s.size(); ++k) {
      require(s.rows[k] < t.rows() && (k == 0 || s.rows[k - 1] < s.rows[k]));
      require(Json::accept(s.cell(k)));
    }
  }
  require(rec->span_totals.size() <= kMaxFunctions + 1);
  require(rec->spans.size() <= kMaxSpans);
  require(Json::accept(report_json(*rec)));
  auto figures = run_figures(*rec);
  if (figures) {
    require(figures->figures.size() <= kMaxFigures);
    Comparison c = compare_runs({*figures}, {*figures}, {});
    require(Json::accept(comparison_json(c)));
    (void)comparison_text(c);
  }
  return 0;
}
