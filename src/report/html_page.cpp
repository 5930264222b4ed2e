// SPDX-License-Identifier: Apache-2.0
#include "report/html_page.h"

#include <array>
#include <cstdint>

#include "core/version.h"
#include "report/assets.h"
#include "report/page_data.h"

namespace pm::report {
namespace {

// SHA-256 (FIPS 180-4), for the CSP hashes of the page's own scripts and styles.
std::array<uint8_t, 32> sha256(std::string_view data) {
  static constexpr uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  auto rotr = [](uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
  std::string msg(data);
  const uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  msg += static_cast<char>(0x80);
  while (msg.size() % 64 != 56) msg += '\0';
  for (int i = 7; i >= 0; --i) msg += static_cast<char>(bits >> (i * 8) & 0xff);
  for (size_t at = 0; at < msg.size(); at += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const unsigned char*>(msg.data() + at + i * 4);
      w[i] = uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
    }
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  std::array<uint8_t, 32> out{};
  for (int i = 0; i < 32; ++i) out[i] = static_cast<uint8_t>(h[i / 4] >> (24 - 8 * (i % 4)));
  return out;
}

// 'sha256-BASE64': what a CSP source list accepts for one inline element's exact text.
std::string csp_hash(std::string_view text) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::array<uint8_t, 32> d = sha256(text);
  std::string out = "'sha256-";
  for (size_t i = 0; i < d.size(); i += 3) {
    uint32_t v =
        uint32_t{d[i]} << 16 | (i + 1 < d.size() ? uint32_t{d[i + 1]} << 8 : 0) | (i + 2 < d.size() ? d[i + 2] : 0);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += i + 1 < d.size() ? kAlphabet[v >> 6 & 63] : '=';
    out += i + 2 < d.size() ? kAlphabet[v & 63] : '=';
  }
  return out + "'";
}

// The HTML parser turns CR LF and CR into LF before a script's text is hashed: do it first,
// so that the hash is of what the browser sees.
std::string lf_only(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\r') {
      out += text[i];
    } else if (i + 1 >= text.size() || text[i + 1] != '\n') {
      out += '\n';
    }
  }
  return out;
}

}  // namespace

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

std::string render_page(std::string_view title, std::string_view file, std::string data_json) {
  std::string page;
  write_page(
      title, file,
      [&](const Sink& data) {
        data(data_json);
        std::string().swap(data_json);  // the page is made without it: memory stays near the file's size
      },
      [&](std::string_view piece) { page += piece; });
  return page;
}

void write_page(std::string_view title, std::string_view file, const std::function<void(const Sink&)>& data,
                const Sink& out) {
  const Assets& a = assets();
  std::string app;
  for (std::string_view js : {a.common_js, a.heatmap_js, a.flame_js, a.report_js, a.compare_js, a.main_js}) {
    app += js;
    app += '\n';
  }
  app = lf_only(app);
  const std::string chartjs = lf_only(a.chartjs), css = lf_only(a.css);
  // No inline script or style runs but these, whatever the data holds: no 'unsafe-inline'.
  const std::string csp = "default-src 'none'; script-src " + csp_hash(chartjs) + " " + csp_hash(app) + "; style-src " +
                          csp_hash(css) + "; img-src data:; base-uri 'none'; form-action 'none'";
  const std::string generator = "perf-monitor " PERF_MONITOR_VERSION;
  // One pass over the template, so nothing inserted is searched for markers again.
  std::string_view page = a.page;
  while (!page.empty()) {
    size_t at = page.find('@');
    size_t end = at == std::string_view::npos ? std::string_view::npos : page.find('@', at + 1);
    if (end == std::string_view::npos) {
      out(page);
      break;
    }
    std::string_view name = page.substr(at + 1, end - at - 1);
    std::string_view before = page.substr(0, at);
    bool known = true;
    if (name == "TITLE") {
      out(before);
      out(html_escape(title));
    } else if (name == "FILE") {
      out(before);
      out(html_escape(file));
    } else if (name == "GENERATOR") {
      out(before);
      out(html_escape(generator));
    } else if (name == "CSS") {
      out(before);
      out(css);
    } else if (name == "CSP") {
      out(before);
      out(csp);
    } else if (name == "CHARTJS") {
      out(before);
      out(chartjs);
    } else if (name == "CHARTJS_VERSION") {
      out(before);
      out(a.chartjs_version);
    } else if (name == "APP") {
      out(before);
      out(app);
    } else if (name == "DATA") {
      out(before);
      GzipBase64 gz(out);
      data([&](std::string_view piece) { gz.write(piece); });
      gz.finish();
    } else {
      known = false;
    }
    if (known) {
      page.remove_prefix(end + 1);
    } else {
      out(page.substr(0, end));  // a lone '@' in the template: keep it, look on from the next
      page.remove_prefix(end);
    }
  }
}

}  // namespace pm::report
