// Small pieces kiln bench's reports share (cmd_bench.cpp, bench_data_parallel.cpp).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace kiln::cli {

// The median (upper one of an even count); 0 for none.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// `s` inside a JSON string literal.
inline std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace kiln::cli
