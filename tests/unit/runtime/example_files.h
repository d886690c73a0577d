// The examples/*.kiln files, sorted: the graphs that runtime tests run over one by one.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln {

inline std::vector<std::string> exampleFiles() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/examples"))
    if (e.path().extension() == ".kiln") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace kiln
