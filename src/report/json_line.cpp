// SPDX-License-Identifier: Apache-2.0
#include "report/json_line.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <system_error>
#include <vector>

#include <fmt/format.h>

namespace pm::report {
namespace {

// Keys searched for a repeat in an object: its first ones (a wider object is not perf-monitor's).
constexpr size_t kSearchedKeys = 64;

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

namespace pm::report {
namespace {

// JSON (RFC 8259) as nlohmann's parser takes it: the same grammar, UTF-8 checked the same way,
// the same bounds. Anything it does not take (or is unsure of) makes scan() return false.
class Scanner {
 public:
  Scanner(std::string_view line, std::vector<JsonToken>* tokens)
      : p_(line.data()), begin_(line.data()), end_(line.data() + line.size()), out_(tokens) {}

  bool scan() {
    out_->clear();
    space();
    if (p_ == end_ || *p_ != '{') return false;
    if (!value(0, true)) return false;
    space();
    return p_ == end_;
  }

 private:
  void space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  [[nodiscard]] uint32_t at() const { return static_cast<uint32_t>(p_ - begin_); }

  // One value; `listed`: its tokens go to the list (not inside an array). `depth`: the
  // containers open around it.
  bool value(size_t depth, bool listed) {
    if (++values_ > kMaxValuesPerLine || p_ == end_) return false;
    switch (*p_) {
      case '{':
        return object(depth, listed);
      case '[':
        return array(depth, listed);
      case '"': {
        uint32_t from = at();
        bool escaped = false;
        if (!string(&escaped)) return false;
        if (listed) push(JsonToken::kString, from, !escaped);
        return true;
      }
      case 't':
        return literal("true", JsonToken::kTrue, listed);
      case 'f':
        return literal("false", JsonToken::kFalse, listed);
      case 'n':
        return literal("null", JsonToken::kNull, listed);
      default:
        return number(listed);
    }
  }

  JsonToken& push(JsonToken::Kind kind, uint32_t from, bool plain) {
    JsonToken& t = out_->emplace_back();
    t.kind = kind;
    t.begin = from;
    t.end = at();
    t.plain = plain;
    return t;
  }

  bool literal(std::string_view word, JsonToken::Kind kind, bool listed) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) return false;
    uint32_t from = at();
    p_ += word.size();
    if (listed) push(kind, from, true);
    return true;
  }

  bool object(size_t depth, bool listed) {
    if (depth >= kMaxDepth) return false;
    size_t self = out_->size();
    uint32_t from = at();
    if (listed) push(JsonToken::kObject, from, true);
    ++p_;
    space();
    uint32_t members = 0;
    const size_t keys_from = keys_.size();  // this object's first keys, for repeats, on keys_
    if (p_ != end_ && *p_ == '}') {
      ++p_;
    } else {
      while (true) {
        if (p_ == end_ || *p_ != '"') return false;
        uint32_t key_from = at();
        bool escaped = false;
        if (!string(&escaped)) return false;
        if (listed) {
          if (escaped) return false;
          std::string_view key(begin_ + key_from, at() - key_from);
          if (members < kSearchedKeys) {
            for (size_t k = keys_from; k < keys_.size(); ++k) {
              if (keys_[k] == key) return false;
            }
            keys_.push_back(key);
          }
          push(JsonToken::kKey, key_from, true);
        }
        ++members;
        space();
        if (p_ == end_ || *p_ != ':') return false;
        ++p_;
        space();
        if (!value(depth + 1, listed)) return false;
        bool closed = false;
        if (!separator('}', &closed)) return false;
        if (closed) break;
      }
    }
    keys_.resize(keys_from);
    if (listed) {
      JsonToken& t = (*out_)[self];
      t.end = at();
      t.count = members;
      t.next = static_cast<uint32_t>(out_->size());
    }
    return true;
  }

  // After a member or an element: the closing bracket (*closed) or a comma and what blanks
  // follow it; false: neither.
  bool separator(char close, bool* closed) {
    space();
    if (p_ == end_) return false;
    *closed = *p_ == close;
    if (!*closed && *p_ != ',') return false;
    ++p_;
    if (!*closed) space();
    return true;
  }

  bool array(size_t depth, bool listed) {
    if (depth >= kMaxDepth) return false;
    uint32_t from = at();
    ++p_;
    space();
    uint32_t elements = 0;
    bool numbers = true;
    if (p_ != end_ && *p_ == ']') {
      ++p_;
    } else {
      while (true) {
        if (p_ == end_) return false;
        numbers = numbers && (*p_ == '-' || (*p_ >= '0' && *p_ <= '9'));
        if (!value(depth + 1, false)) return false;
        ++elements;
        bool closed = false;
        if (!separator(']', &closed)) return false;
        if (closed) break;
      }
    }
    if (listed) push(JsonToken::kArray, from, numbers).count = elements;
    return true;
  }

  // A string from its opening quote; *escaped: it holds a backslash escape.
  bool string(bool* escaped) {
    ++p_;
    while (true) {
      // The common case first: a run of plain ASCII.
      while (p_ != end_ && static_cast<unsigned char>(*p_) >= 0x20 && static_cast<unsigned char>(*p_) < 0x80 &&
             *p_ != '"' && *p_ != '\\') {
        ++p_;
      }
      if (p_ == end_) return false;
      auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        *escaped = true;
        if (!escape()) return false;
        continue;
      }
      if (!utf8()) return false;
    }
  }

  bool escape() {
    ++p_;
    if (p_ == end_) return false;
    char e = *p_++;
    switch (e) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        return true;
      case 'u': {
        int unit = hex4();
        if (unit < 0) return false;
        if (unit >= 0xDC00 && unit <= 0xDFFF) return false;  // a low surrogate alone
        if (unit >= 0xD800 && unit <= 0xDBFF) {              // a high one: its low one must follow
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
          p_ += 2;
          int low = hex4();
          return low >= 0xDC00 && low <= 0xDFFF;
        }
        return true;
      }
      default:
        return false;
    }
  }

  int hex4() {
    if (end_ - p_ < 4) return -1;
    int v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = *p_++;
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  }

  // One multi-byte UTF-8 character (RFC 3629: no overlong forms, no surrogates, none past
  // U+10FFFF).
  bool utf8() {
    auto byte = [&](size_t i) { return static_cast<unsigned char>(p_[i]); };
    auto left = static_cast<size_t>(end_ - p_);
    unsigned char c = byte(0);
    auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
      return i < left && byte(i) >= lo && byte(i) <= hi;
    };
    size_t n = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      n = cont(1) ? 2 : 0;
    } else if (c == 0xE0) {
      n = cont(1, 0xA0) && cont(2) ? 3 : 0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      n = cont(1) && cont(2) ? 3 : 0;
    } else if (c == 0xED) {
      n = cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
    } else if (c == 0xF0) {
      n = cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    } else if (c >= 0xF1 && c <= 0xF3) {
      n = cont(1) && cont(2) && cont(3) ? 4 : 0;
    } else if (c == 0xF4) {
      n = cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    }
    p_ += n;
    return n > 0;
  }

  bool number(bool listed) {
    const char* from = p_;
    bool integer = true;
    if (p_ != end_ && *p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      digits();
    } else {
      return false;
    }
    if (p_ != end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (!digits()) return false;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
    }
    if (!listed) {
      // Within an array only its range matters: beyond a double is the tree's error to give.
      double v = 0;
      return (integer && p_ - from <= 18) || std::from_chars(from, p_, v).ec == std::errc();
    }
    JsonToken& t = push(JsonToken::kNumber, static_cast<uint32_t>(from - begin_), true);
    return json_number(std::string_view(from, static_cast<size_t>(p_ - from)), &t.number, &t.plain);
  }

  bool digits() {
    const char* from = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ != from;
  }

  const char* p_;
  const char* begin_;
  const char* end_;
  std::vector<JsonToken>* out_;
  std::vector<std::string_view> keys_;
  size_t values_ = 0;
};

}  // namespace

bool json_number(std::string_view text, double* value, bool* exact) {
  constexpr double kExact = 9007199254740992.0;  // 2^53: every integer up to it is a double
  const char* from = text.data();
  const char* to = from + text.size();
  *exact = true;
  if (text.find_first_of(".eE") == std::string_view::npos) {
    int64_t i = 0;
    uint64_t u = 0;
    if (std::from_chars(from, to, i).ec == std::errc()) {
      *value = static_cast<double>(i);
      *exact = std::fabs(*value) <= kExact;
      return true;
    }
    if (text[0] != '-' && std::from_chars(from, to, u).ec == std::errc()) {
      *value = static_cast<double>(u);
      *exact = false;
      return true;
    }
  }
  auto [ptr, ec] = std::from_chars(from, to, *value);
  return ec == std::errc() && ptr == to && std::isfinite(*value);
}

bool scan_json_line(std::string_view line, std::vector<JsonToken>* tokens) {
  if (line.size() > kMaxLineBytes) return false;
  return Scanner(line, tokens).scan();
}

}  // namespace pm::report
