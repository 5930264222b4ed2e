// SPDX-License-Identifier: Apache-2.0
// The bounds on a configuration's text (core/config.h), checked before the TOML parser sees it:
// a walk of the text as the parser's lexer would make it, closely enough to measure it.
#include <string>
#include <vector>

#include "core/config.h"

namespace pm {
namespace {

bool is_bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Walks TOML text the way its lexer would, closely enough to measure it: strings and comments
// are skipped whole, a run of keys joined by dots ("a.b.c", also in a [header]) is counted, and
// brackets opened in a value are counted. Values such as 1.5 count as runs too: harmless.
class BoundsScan {
 public:
  BoundsScan(std::string_view text, std::string_view origin) : text_(text), origin_(origin) {}

  Status run() {
    if (text_.size() > kMaxConfigBytes) {
      return make_error(Errc::kInvalidArgument, std::string(origin_) + ": larger than " +
                                                    std::to_string(kMaxConfigBytes >> 20) +
                                                    " MiB: not a perf-monitor configuration");
    }
    // A UTF-8 byte order mark is the parser's to skip.
    size_t start = text_.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
    for (size_t i = start; i < text_.size();) {
      char c = text_[i];
      if (c == '\n') {
        newline(i);
        end_run();
        value_token_ = false;
        ++i;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        value_token_ = false;
        ++i;  // also between the parts of a key: a . b
        continue;
      }
      bool fresh = line_fresh_;
      line_fresh_ = false;
      if (c == '#') {
        while (i < text_.size() && text_[i] != '\n') ++i;
        line_fresh_ = fresh;
        value_token_ = false;
        continue;
      }
      if ((c == '"' || c == '\'') && opens_string(i, start)) {
        size_t from = i;
        i = skip_string(i);
        PM_TRY(string_error_);
        PM_TRY(token(from, i));
        value_token_ = !in_key_context();  // what is glued to a string belongs to a bad token
        continue;
      }
      // TOML allows other than ASCII only in strings and comments; and toml++ 3.3 reaches an
      // "unreachable" point (undefined behaviour) when it asks whether such a character is
      // whitespace, which it does wherever a token may end.
      if (static_cast<unsigned char>(c) >= 0x80) {
        return error(i, "a character other than ASCII outside a string or comment");
      }
      if (is_bare_key_char(c)) {
        size_t from = i;
        while (i < text_.size() && is_bare_key_char(text_[i])) ++i;
        PM_TRY(token(from, i));
        value_token_ = !in_key_context();
        continue;
      }
      if (c == '.' && run_parts_ > 0 && !after_dot_) {
        after_dot_ = true;
        ++i;
        continue;
      }
      end_run();
      // Inside a value's token (0[..., 1=2) brackets and '=' are just bad characters to the
      // parser: it reads on to the token's end (a blank, ',', ']', '}' or '#').
      if (value_token_ && c != ',' && c != ']' && c != '}') {
        ++i;
        continue;
      }
      value_token_ = false;
      if (c == '[' && fresh && containers_.empty() && !in_value_) {
        i += text_.substr(i, 2) == "[[" ? 2 : 1;  // a [table] or [[array of tables]] header
        continue;
      }
      bool key = in_key_context();
      if ((c == '[' || c == '{') && !key) {
        if (containers_.size() == kMaxValueNesting) {
          return error(i, "arrays and inline tables nest more than " + std::to_string(kMaxValueNesting) + " deep");
        }
        containers_.push_back(c);
        expect_key_ = c == '{';
      } else if ((c == ']' || c == '}') && !containers_.empty()) {
        containers_.pop_back();
        expect_key_ = false;  // what follows a value: ',' or the end of its container
      } else if (c == ',' && !containers_.empty()) {
        expect_key_ = containers_.back() == '{';
      } else if (c == '=' && key) {
        if (containers_.empty()) {
          in_value_ = true;
        } else {
          expect_key_ = false;
        }
      } else if (!key && c != ',' && c != ']' && c != '}') {
        value_token_ = true;  // a value that starts with '+', ':', '=', ...
      }
      ++i;
    }
    return {};
  }

 private:
  void newline(size_t i) {
    ++line_;
    line_start_ = i + 1;
    if (containers_.empty()) {
      in_value_ = false;
      line_fresh_ = true;
    }
  }

  // A quote opens a string only where TOML can have one: where a value begins (not inside a
  // value's token: 2:"..., +c."..., 0['...), and in a key at the start, after a blank, '[',
  // '.' or ','. Elsewhere the parser reads it as part of a bad value, asking of each character
  // after it whether it is whitespace: what follows is outside any string here too. (A quoted
  // part of a dotted key inside an inline table is refused by this, when it holds other than
  // ASCII: a small price.)
  [[nodiscard]] bool opens_string(size_t i, size_t start) const {
    if (!in_key_context()) return !value_token_;
    if (i == start) return true;
    return std::string_view(" \t\r\n=[{,.").find(text_[i - 1]) != std::string_view::npos;
  }

  // Where a key is read: a line outside any value, and an inline table before its '='.
  [[nodiscard]] bool in_key_context() const {
    return containers_.empty() ? !in_value_ : containers_.back() == '{' && expect_key_;
  }

  // The index just past the string that starts at i (or where it stops being one: the parser
  // says what is wrong with it).
  size_t skip_string(size_t i) {
    const char q = text_[i];
    const std::string triple(3, q);
    const bool multi = text_.substr(i, 3) == triple;
    i += multi ? 3 : 1;
    while (i < text_.size()) {
      char c = text_[i];
      if (c == '\\' && q == '"') {
        if (multi) {
          // After a backslash toml++ asks whether what follows is whitespace (a line-ending
          // backslash trims it): the first character after any blanks and newlines must be
          // ASCII (see run()).
          size_t j = i + 1;
          while (j < text_.size() && (text_[j] == ' ' || text_[j] == '\t' || text_[j] == '\r' || text_[j] == '\n')) {
            if (text_[j] == '\n') newline(j);
            ++j;
          }
          if (j < text_.size() && static_cast<unsigned char>(text_[j]) >= 0x80) {
            string_error_ = error(j, "a character other than ASCII right after a backslash and blanks");
            return text_.size();
          }
          i = j == i + 1 ? i + 2 : j;  // an escape, or the trimmed blanks
          continue;
        }
        if (i + 1 < text_.size() && text_[i + 1] == '\n') newline(i + 1);
        i += 2;
        continue;
      }
      if (c == '\n') {
        if (!multi) return i;  // a single-line string cannot go on
        newline(i);
      }
      if (c == q && (!multi || text_.substr(i, 3) == triple)) {
        i += multi ? 3 : 1;
        // A multi-line string may end with one or two quotes of its own before the closing three.
        for (int extra = 0; multi && extra < 2 && i < text_.size() && text_[i] == q; ++extra) ++i;
        return i;
      }
      ++i;
    }
    return i;
  }

  Status token(size_t start, size_t end) {
    if (after_dot_) {
      ++run_parts_;
    } else {
      run_parts_ = 1;
      run_start_ = start;
      run_line_ = line_;
      run_col_ = start - line_start_ + 1;
    }
    after_dot_ = false;
    if (run_parts_ > kMaxKeyParts) {
      return run_error("a dotted key or table name has more than " + std::to_string(kMaxKeyParts) + " parts");
    }
    if (run_parts_ > 1 && end - run_start_ > kMaxKeyBytes) {
      return run_error("a dotted key or table name is longer than " + std::to_string(kMaxKeyBytes) + " bytes");
    }
    return {};
  }

  void end_run() {
    run_parts_ = 0;
    after_dot_ = false;
  }

  [[nodiscard]] Error error(size_t i, const std::string& what) const {
    return make_error(Errc::kInvalidArgument, std::string(origin_) + ":" + std::to_string(line_) + ":" +
                                                  std::to_string(i - line_start_ + 1) + ": " + what);
  }
  [[nodiscard]] Error run_error(const std::string& what) const {
    return make_error(Errc::kInvalidArgument, std::string(origin_) + ":" + std::to_string(run_line_) + ":" +
                                                  std::to_string(run_col_) + ": " + what);
  }

  std::string_view text_, origin_;
  Status string_error_;  // what skip_string found wrong
  size_t line_ = 1, line_start_ = 0;
  bool line_fresh_ = true;        // nothing but blanks and comments on this line so far
  bool in_value_ = false;         // after a key's '=' (until the line ends outside brackets)
  std::vector<char> containers_;  // '[' and '{' open in the value, innermost last
  bool expect_key_ = false;       // in the innermost inline table, before a key's '='
  bool value_token_ = false;      // in a value, inside a token (a number, a date, a bad one)
  size_t run_parts_ = 0;          // keys in the current dotted run (0: none)
  bool after_dot_ = false;        // the run's last token is followed by a '.'
  size_t run_start_ = 0, run_line_ = 0, run_col_ = 0;
};

}  // namespace

Status check_toml_bounds(std::string_view text, std::string_view origin) { return BoundsScan(text, origin).run(); }

}  // namespace pm
