// A reader for JSON files that are one flat object of scalars, such as the data.json of ONNX's
// downloadable model tests ({"model_name": "resnet50", "rtol": 0.001, ...}).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>

#include "ir/status.h"

namespace kiln::cli {

// A scalar member: a string, a number, a bool, or null (monostate).
using JsonScalar = std::variant<std::monostate, std::string, double, bool>;

struct FlatJson {
  std::map<std::string, JsonScalar> members;

  std::optional<std::string> string(const std::string& key) const;
  std::optional<double> number(const std::string& key) const;
};

// Parses `text` (`source` names it in errors); a nested array or object is an error.
Expected<FlatJson> parseFlatJson(const std::string& text, const std::string& source);
Expected<FlatJson> readFlatJson(const std::string& path);

}  // namespace kiln::cli
