// SPDX-License-Identifier: Apache-2.0
#include "report/json_line.h"

#include <vector>

#include <fmt/format.h>

namespace pm::report {
namespace {

// A SAX handler that builds the tree like nlohmann's own, but within the bounds above.
class BoundedBuilder {
 public:
  explicit BoundedBuilder(Json* root) : root_(root) {}

  bool null() { return value(Json(nullptr)); }
  bool boolean(bool b) { return value(Json(b)); }
  bool number_integer(Json::number_integer_t v) { return value(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return value(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string& /*text*/) { return value(Json(v)); }
  bool string(std::string& s) { return value(Json(std::move(s))); }
  bool binary(Json::binary_t& /*b*/) { return limit("holds binary data"); }
  bool start_object(size_t /*n*/) { return open(Json(Json::value_t::object)); }
  bool start_array(size_t /*n*/) { return open(Json(Json::value_t::array)); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    frames_.back().key = std::move(k);
    return true;
  }
  bool parse_error(size_t /*position*/, const std::string& token, const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // out_of_range: a number no double holds
      error_.kind = LineError::kNumber;
      error_.message = fmt::format("the number {} is beyond the range of a double", token.substr(0, 40));
    } else {
      error_.kind = LineError::kSyntax;
      error_.message = e.what();
    }
    return false;
  }

  [[nodiscard]] const LineError& error() const { return error_; }

 private:
  struct Frame {
    Json* j;
    std::string key;
  };
  static constexpr size_t kSearchedKeys = 64;

  bool limit(std::string why) {
    error_.kind = LineError::kLimit;
    error_.message = std::move(why);
    return false;
  }

  // Places v in the open container (or as the root); returns where it went, null when refused.
  Json* place(Json&& v) {
    if (++values_ > kMaxValuesPerLine) {
      limit(fmt::format("holds more than {} values", kMaxValuesPerLine));
      return nullptr;
    }
    if (frames_.empty()) {
      *root_ = std::move(v);
      return root_;
    }
    Frame& f = frames_.back();
    if (f.j->is_array()) {
      auto& a = f.j->get_ref<Json::array_t&>();
      a.push_back(std::move(v));
      return &a.back();
    }
    // The vector under ordered_map: its operator[] and emplace search by key, linearly.
    Json::object_t::Container& o = f.j->get_ref<Json::object_t&>();
    // A repeated key keeps its first place and its last value, as nlohmann's parser does, in
    // objects of perf-monitor's sizes. In a wider one (not perf-monitor's) a repeated key is
    // kept as it comes, so that no key costs a search: the columns take its last value.
    if (o.size() < kSearchedKeys) {
      for (auto& kv : o) {
        if (kv.first == f.key) return &(kv.second = std::move(v));
      }
    }
    o.emplace_back(std::move(f.key), std::move(v));
    return &o.back().second;
  }

  bool value(Json&& v) { return place(std::move(v)) != nullptr; }

  bool open(Json&& v) {
    if (frames_.size() >= kMaxDepth) return limit(fmt::format("nests deeper than {} levels", kMaxDepth));
    Json* at = place(std::move(v));
    if (at == nullptr) return false;
    frames_.push_back(Frame{at, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  Json* root_;
  std::vector<Frame> frames_;
  size_t values_ = 0;
  LineError error_;
};

}  // namespace

bool parse_json_line(std::string_view line, Json* out, LineError* error) {
  BoundedBuilder b(out);
  bool ok = false;
  try {
    ok = Json::sax_parse(line.data(), line.data() + line.size(), &b);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {  // nothing of the parser's should escape, but say it if it does
    *error = LineError{LineError::kSyntax, e.what()};
    return false;
  }
  if (!ok) *error = b.error();
  return ok;
}

size_t count_values(const Json& j, size_t limit) {
  size_t n = 0;
  std::vector<const Json*> todo{&j};
  while (!todo.empty() && n < limit) {
    const Json* v = todo.back();
    todo.pop_back();
    ++n;
    if (v->is_structured()) {
      for (const Json& c : *v) todo.push_back(&c);
    }
  }
  return n;
}

}  // namespace pm::report
