// SPDX-License-Identifier: Apache-2.0
// Names: a symbol's as a person reads it (C++ and Rust demangled as c++filt and rustfilt print
// them) and the symbol a person's FUNCTION names (with or without parameters, crate, hash,
// trait; GCC's .cold/.part pieces never, its clones as the function).
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "core/text.h"
#include "sources/probes/symbols.h"

// libiberty's header declares basename() unless told glibc's <string.h> does.
#define HAVE_DECL_BASENAME 1
#include <demangle.h>

namespace pm::probes {
namespace {

// Messages carry names from outside (symbols, paths, what was typed): printable() keeps
// escape sequences and invalid UTF-8 off the terminal.
Error invalid(const std::string& msg) { return make_error(Errc::kInvalidArgument, printable(msg)); }

// Spaces only matter between two identifier characters ("unsigned int"): elsewhere they are
// dropped, so "add(int,double)" matches the demangler's "add(int, double)".
std::string normalise(std::string_view s) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != ' ') {
      out += s[i];
      continue;
    }
    size_t j = i;
    while (j < s.size() && s[j] == ' ') ++j;
    if (!out.empty() && j < s.size() && word(out.back()) && word(s[j])) out += ' ';
    i = j - 1;
  }
  return out;
}

// How a symbol's name relates to the function a person names. GCC splits a function's unlikely
// code into a "f.cold" fragment and may outline part of it ("f.part.0"): pieces that are not
// called as the function, never probed. Its clones ("f.isra.0", "f.constprop.0", LLVM's
// "f.llvm.123") are the function itself, for the callers that call them.
enum class Piece { kWhole, kClone, kFragment };

struct SplitName {
  std::string_view root;  // without the suffixes
  Piece piece = Piece::kWhole;
};

SplitName split_suffixes(std::string_view name) {
  size_t dot = name.find('.', 1);
  if (dot == std::string_view::npos) return {name};
  static constexpr std::string_view kClones[] = {"isra", "constprop", "lto_priv", "llvm", "localalias", "specialized"};
  static constexpr std::string_view kFragments[] = {"cold", "part"};
  auto in = [](std::string_view word, const auto& list) {
    return std::find(std::begin(list), std::end(list), word) != std::end(list);
  };
  std::string_view first = name.substr(dot + 1, name.find('.', dot + 1) - dot - 1);
  if (!in(first, kClones) && !in(first, kFragments)) return {name};
  SplitName out{name.substr(0, dot), Piece::kClone};
  for (std::string_view rest = name.substr(dot + 1); !rest.empty();) {
    std::string_view word = rest.substr(0, rest.find('.'));
    if (in(word, kFragments)) out.piece = Piece::kFragment;
    rest = word.size() == rest.size() ? std::string_view() : rest.substr(word.size() + 1);
  }
  return out;
}

// The demangled name without the " [clone .cold]" the demanglers append for those suffixes.
std::string without_clone_suffix(std::string_view demangled, const SplitName& split, std::string_view name) {
  if (split.piece == Piece::kWhole) return std::string(demangled);
  if (demangled == name) return std::string(split.root);  // C: "handle.cold"
  std::string s(demangled);
  while (s.ends_with("]")) {
    size_t open = s.rfind(" [clone .");
    if (open == std::string::npos) break;
    s.resize(open);
  }
  return s;
}

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// Rust's legacy mangling is Itanium's with a last path segment "h<16 hex digits>", the hash
// that tells apart the instances of a generic function: "h27e835dfd4d8756f", or "".
std::string_view legacy_rust_hash(std::string_view root) {
  if (!root.starts_with("_ZN") || root.size() < 24 || !root.ends_with("E")) return {};
  std::string_view tail = root.substr(root.size() - 20, 19);  // "17h" + 16 hex digits, "E"
  if (!tail.starts_with("17h") || !is_hex(tail.substr(3))) return {};
  return tail.substr(2);
}

bool is_rust(std::string_view root) { return root.starts_with("_R") || !legacy_rust_hash(root).empty(); }

// Where a C++ demangled name's parameter list opens, or npos.
size_t params_open(std::string_view s) {
  size_t close = s.rfind(')');
  if (close == std::string_view::npos || s.find('(') == std::string_view::npos) return std::string_view::npos;
  int depth = 0;
  size_t i = close + 1;
  while (i-- > 0) {
    if (s[i] == ')') ++depth;
    if (s[i] == '(' && --depth == 0) break;
  }
  if (depth != 0 || i == 0 || s.substr(0, i).ends_with("operator")) return std::string_view::npos;
  return i;
}

// Where the name begins in what precedes the parameter list: after the return type a function
// template's demangled name begins with ("long shop::twice<long>(long)").
size_t name_begin(std::string_view s, size_t end) {
  int angle = 0;
  size_t cut = 0;
  for (size_t i = 0; i < end; ++i) {
    if (s[i] == '<') ++angle;
    if (s[i] == '>') --angle;
    if (s[i] == ' ' && angle == 0 && !s.substr(0, i).ends_with("operator")) cut = i + 1;
  }
  return cut;
}

// A Rust path as it may be written: "::<" as "<", legacy's "{{closure}}" as "{closure}" (and
// v0's "{closure#2}" too when `any_closure`), "<T as Trait>::f" and "<T>::f" as "T::f".
std::string rust_loose(std::string_view s, bool any_closure) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s.substr(i).starts_with("::<")) {
      out += '<';
      i += 3;
    } else if (s.substr(i).starts_with("{{closure}}")) {
      out += "{closure}";
      i += 11;
    } else if (any_closure && s.substr(i).starts_with("{closure#")) {
      size_t end = s.find('}', i);
      out += "{closure}";
      i = end == std::string_view::npos ? s.size() : end + 1;
    } else if (s[i] == '<' && (i == 0 || s.substr(0, i).ends_with("::") || s[i - 1] == ' ' || s[i - 1] == '<')) {
      // A qualified path "<T as Trait>::rest": keep T, drop " as Trait>"; "<T>::rest": keep T.
      int depth = 0;
      size_t j = i, as = std::string_view::npos;
      for (; j < s.size(); ++j) {
        if (s[j] == '<') ++depth;
        if (s[j] == '>' && s[j - 1] != '-' && --depth == 0) break;  // not "fn() -> T"
        if (depth == 1 && as == std::string_view::npos && s.substr(j).starts_with(" as ")) as = j;
      }
      if (j == s.size() || !s.substr(j + 1).starts_with("::")) {
        out += s[i++];
        continue;
      }
      out += rust_loose(s.substr(i + 1, (as == std::string_view::npos ? j : as) - i - 1), any_closure);
      i = j + 1;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// A v0 path without the type arguments of generic instances ("scale::<u32>" -> "scale").
std::string without_instance_args(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (!s.substr(i).starts_with("::<")) {
      out += s[i++];
      continue;
    }
    int depth = 0;
    size_t j = i + 2;
    for (; j < s.size(); ++j) {
      if (s[j] == '<') ++depth;
      if (s[j] == '>' && s[j - 1] != '-' && --depth == 0) break;
    }
    i = j + 1;
  }
  return out;
}

// A C++ name without the template arguments of its last part ("shop::twice<long>" ->
// "shop::twice"), or "" where it has none.
std::string without_template_args(std::string_view s) {
  if (!s.ends_with(">") || s.ends_with("->")) return {};
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == '>') ++depth;
    if (s[i] == '<' && --depth == 0) {
      return i == 0 || s.substr(0, i).ends_with("operator") || s.substr(0, i).ends_with("operator<")
                 ? std::string()
                 : std::string(s.substr(0, i));
    }
  }
  return {};
}

// One symbol as the matching sees it.
struct Candidate {
  const ElfSymbol* sym;
  Piece piece;
  bool rust;
  std::string shown;  // demangled, clone suffix dropped
  std::string full;   // shown, normalised
  std::string base;   // without parameters and return type (C++); the path (Rust)
  std::string hash;   // legacy Rust: "h…" (16 hex digits)
  std::string loose;  // Rust: rust_loose(base)
  std::string any;    // ... with any closure as "{closure}"
  std::string bare;   // ... without the type arguments of generic instances (C++: template's)
};

std::vector<Candidate> candidates_of(const std::vector<ElfSymbol>& symbols) {
  std::vector<Candidate> out;
  out.reserve(symbols.size());
  for (const ElfSymbol& s : symbols) {
    SplitName split = split_suffixes(s.name);
    std::string shown = without_clone_suffix(s.demangled, split, s.name);
    Candidate c{&s, split.piece, is_rust(split.root), shown, normalise(shown), {}, {}, {}, {}, {}};
    c.base = c.rust ? c.full : base_name(c.full);
    if (c.rust) {
      c.hash = std::string(legacy_rust_hash(split.root));
      c.loose = rust_loose(c.base, false);
      c.any = rust_loose(c.base, true);
      c.bare = rust_loose(without_instance_args(c.base), false);
    } else {
      c.bare = without_template_args(c.base);
    }
    out.push_back(std::move(c));
  }
  return out;
}

bool names_tail(std::string_view name, std::string_view query) {
  return name == query || (name.size() > query.size() + 2 && name.ends_with(query) &&
                           name.substr(0, name.size() - query.size()).ends_with("::"));
}

struct Found {
  std::vector<const Candidate*> list;   // one per address, whole functions before clones
  bool poll = false;                    // an async fn's future's poll function, named by the fn
  const Candidate* fragment = nullptr;  // no function, but a .cold/.part piece of one, by this name
  bool mangled = false;                 // ... named by its own mangled name
};

Found find(const std::vector<Candidate>& cands, std::string_view function) {
  std::string query = normalise(function);
  size_t open = params_open(query);
  bool with_params = open != std::string::npos && open > 0;
  // Legacy symbols number no closure: "{closure#0}" names any there; "{{closure}}" any in v0.
  std::string loose = rust_loose(query, false), any = rust_loose(query, true);
  bool any_closure = query.find("{{closure}}") != std::string::npos;
  // Candidates in order of how exactly they were named; the first rule that matches decides.
  auto rules = std::to_array<std::function<bool(const Candidate&)>>({
      [&](const Candidate& c) { return c.sym->name == function || c.sym->name == query; },
      [&](const Candidate& c) {
        if (!with_params || c.rust) return false;
        size_t p = params_open(c.full);
        return c.full == query || (p != std::string::npos && c.full.substr(name_begin(c.full, p)) == query);
      },
      [&](const Candidate& c) {
        return (c.rust || !with_params) && (c.base == query || (!c.hash.empty() && c.base + "::" + c.hash == query));
      },
      [&](const Candidate& c) {
        return (c.rust || !with_params) &&
               (names_tail(c.base, query) || (!c.hash.empty() && names_tail(c.base + "::" + c.hash, query)));
      },
      [&](const Candidate& c) {
        return c.rust && (names_tail(c.loose, loose) ||
                          ((any_closure || c.sym->name.starts_with("_ZN")) && names_tail(c.any, any)));
      },
      [&](const Candidate& c) {  // every instance of a generic function, or a template
        return c.rust ? names_tail(c.bare, loose) : !with_params && !c.bare.empty() && names_tail(c.bare, query);
      },
      // An async fn's body is its future's poll function, "f::{closure#0}": where "f" has no
      // symbol of its own (inlined: all it does is make the future), that is what "f" names.
      [&](const Candidate& c) { return c.rust && names_tail(c.any, any + "::{closure}"); },
  });
  Found none;
  for (size_t r = 0; r < rules.size(); ++r) {
    std::vector<const Candidate*> hits;
    for (const Candidate& c : cands) {
      if (!rules[r](c)) continue;
      if (c.piece != Piece::kFragment) {
        hits.push_back(&c);
      } else if (none.fragment == nullptr) {
        none.fragment = &c;
        none.mangled = r == 0;
      }
    }
    if (hits.empty()) continue;
    bool whole = std::any_of(hits.begin(), hits.end(), [](const Candidate* c) { return c->piece == Piece::kWhole; });
    std::map<uint64_t, const Candidate*> by_addr;  // aliases at one address are one function
    for (const Candidate* c : hits) {
      if (!whole || c->piece == Piece::kWhole) by_addr.emplace(c->sym->addr, c);
    }
    Found f;
    for (const auto& [addr, c] : by_addr) f.list.push_back(c);
    f.poll = r == rules.size() - 1;
    return f;
  }
  return none;
}

// What to write to name exactly this candidate: its name as shown, else with the legacy hash,
// else (C++) without the return type or with it, else the mangled name.
std::string spelling(const std::vector<Candidate>& cands, const Candidate& c) {
  std::vector<std::string> tries;
  if (c.rust) {
    tries = {c.shown, c.shown + "::" + c.hash};
  } else {
    size_t p = params_open(c.shown);
    if (p != std::string::npos) tries.push_back(c.shown.substr(name_begin(c.shown, p)));
    tries.push_back(c.shown);
  }
  for (const std::string& t : tries) {
    if (t.ends_with("::")) continue;
    Found f = find(cands, t);
    if (f.list.size() == 1 && f.list[0]->sym->addr == c.sym->addr) return t;
  }
  return c.sym->name;
}

// Which candidates to show: the closest by edit distance of their short names, then the rest
// that contain the query. Never a .cold/.part piece: no one calls those.
std::string closest(const std::vector<Candidate>& cands, std::string_view query) {
  std::string q = base_name(normalise(query));
  std::string last = q.substr(q.rfind("::") == std::string::npos ? 0 : q.rfind("::") + 2);
  const size_t limit = std::max<size_t>(2, last.size() / 3);
  constexpr size_t kMaxMeasured = 512;
  constexpr size_t kMaxShown = 200;  // a hint of a page's length helps no one
  std::string any = rust_loose(normalise(query), true);
  std::vector<std::pair<size_t, std::string>> scored;
  std::set<std::string> seen;
  for (const Candidate& c : cands) {
    if (c.piece == Piece::kFragment || c.shown.size() > kMaxShown || !seen.insert(c.shown).second) continue;
    const std::string& b = c.base;
    std::string tail = b.substr(b.rfind("::") == std::string::npos ? 0 : b.rfind("::") + 2);
    // An edit distance is at least the difference in length: only names that could come within
    // the limit are measured, and only short ones (the cost is the product of the lengths).
    auto measure = [&](std::string_view a, std::string_view o) {
      size_t gap = a.size() > o.size() ? a.size() - o.size() : o.size() - a.size();
      return gap > limit || a.size() > kMaxMeasured || o.size() > kMaxMeasured ? limit + 1 : edit_distance(a, o);
    };
    size_t d = std::min(measure(q, b), measure(last, tail));
    if (b.find(last) != std::string::npos) d = std::min<size_t>(d, 1);
    if (c.rust && names_tail(c.any, any)) {
      scored.emplace_back(0, c.shown);  // another closure of the function named: first
    } else if (d <= limit) {
      scored.emplace_back(d + 1, c.shown);
    }
  }
  std::sort(scored.begin(), scored.end());
  std::string hints;
  for (size_t i = 0; i < scored.size() && i < 5; ++i) {
    hints += (i ? ", " : "") + scored[i].second;
  }
  return hints;
}

}  // namespace

std::string demangle(const std::string& name) {
  // The demangler's time and stack grow with the name: a longer one is shown as it is.
  if (name.size() > kMaxDemangledInput) return name;
  constexpr int kOptions = DMGL_PARAMS | DMGL_ANSI;  // c++filt's and rustfilt's output, hashes dropped
  char* out = nullptr;
  if (name.starts_with("_R")) {
    out = rust_demangle(name.c_str(), kOptions);  // v0
  } else if (name.starts_with("_Z")) {
    out = cplus_demangle(name.c_str(), kOptions);  // C++, and Rust's legacy mangling (tried first)
  }
  std::unique_ptr<char, void (*)(void*)> owned(out, std::free);
  return owned ? std::string(owned.get()) : name;
}

std::string base_name(std::string_view demangled) {
  // Drop cv/ref qualifiers after the parameter list, then the list itself, then the return type
  // a function template's demangled name begins with.
  size_t open = params_open(demangled);
  size_t end = open == std::string_view::npos ? demangled.size() : open;
  return std::string(demangled.substr(0, end).substr(name_begin(demangled, end)));
}

Result<ElfSymbol> match_symbol(const std::vector<ElfSymbol>& symbols, std::string_view function,
                               std::string_view binary) {
  std::vector<Candidate> cands = candidates_of(symbols);
  Found found = find(cands, function);
  std::string fn(function), bin(binary);
  if (found.list.empty() && found.fragment != nullptr) {
    // GCC's pieces are not called as the function: probed, they would count some calls, or none.
    std::string_view root = split_suffixes(found.fragment->sym->name).root;
    auto entry = std::find_if(cands.begin(), cands.end(), [&](const Candidate& c) { return c.sym->name == root; });
    if (found.mangled && entry != cands.end()) {
      return invalid("'" + fn + "' is a piece the compiler split off " + entry->shown +
                     ", not called as a function: probe " + bin + ":" + spelling(cands, *entry));
    }
    return make_error(Errc::kNotFound, printable("'" + fn + "' has no symbol in " + bin +
                                                 ": it was inlined into its callers (only " +
                                                 found.fragment->sym->demangled +
                                                 ", a piece split off it, is left, and is not called as the function)"));
  }
  if (found.list.size() == 1) {
    const Candidate& c = *found.list[0];
    ElfSymbol out = *c.sym;
    out.demangled = c.shown;
    // An async fn whose symbol makes the future: what runs is the future's poll function (a
    // future has drop glue, which a sync fn's closure of Copy captures has not).
    if (c.rust && !found.poll) {
      std::string poll = c.any + "::{closure}", drop = "core::ptr::drop_in_place<" + poll + ">";
      auto body = std::find_if(cands.begin(), cands.end(), [&](const Candidate& o) { return o.rust && o.any == poll; });
      bool future =
          std::any_of(cands.begin(), cands.end(), [&](const Candidate& o) { return o.rust && o.any == drop; });
      if (body != cands.end() && future &&
          std::count_if(cands.begin(), cands.end(), [&](const Candidate& o) { return o.rust && o.any == poll; }) == 1) {
        out = *body->sym;
        out.demangled = body->shown;
        found.poll = true;
      }
    }
    if (found.poll) {
      out.note = printable("'" + fn + "' is an async fn: probing its future's poll function " + out.demangled +
                           " (figures per poll, not per request)");
    }
    // Instances of a generic function that legacy mangling tells apart by hash alone are
    // labelled with it.
    if (c.rust && !c.hash.empty() &&
        std::count_if(cands.begin(), cands.end(), [&](const Candidate& o) { return o.full == c.full; }) > 1) {
      out.demangled += "::" + c.hash;
    }
    return out;
  }
  if (!found.list.empty()) {
    std::string names;
    const Candidate& first = *found.list[0];
    bool generic = std::all_of(found.list.begin(), found.list.end(), [&](const Candidate* c) {
      return (c->rust && c->full == first.full) || (!c->bare.empty() && c->bare == first.bare && c->base != c->bare);
    });
    for (size_t i = 0; i < found.list.size() && i < 8; ++i) names += (i ? "; " : "") + spelling(cands, *found.list[i]);
    if (found.list.size() > 8) names += "; ...";
    return invalid("'" + fn + "' names " + std::to_string(found.list.size()) + " functions in " + bin +
                   (!generic     ? ""
                    : first.rust ? " (instances of one generic function)"
                                 : " (instances of one template)") +
                   ": " + names + " (probe one by the name listed, e.g. '" + bin + ":" +
                   spelling(cands, *found.list[0]) + "')");
  }
  std::string msg = "no function '" + fn + "' in " + bin;
  std::string hints = closest(cands, function);
  if (!hints.empty()) msg += " (closest: " + hints + ")";
  return make_error(Errc::kNotFound, printable(msg));
}

}  // namespace pm::probes
