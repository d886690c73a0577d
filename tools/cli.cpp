// Flag parsing and help text shared by every subcommand.
#include "tools/cli.h"

#include <fmt/format.h>

#include <cstdio>
#include <sstream>

#include "codegen/optimize.h"
#include "tools/inputs.h"

namespace kiln::cli {

std::optional<std::string> Args::get(const std::string& flag) const {
  auto it = flags.find(flag);
  if (it == flags.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

const std::vector<std::string>& Args::all(const std::string& flag) const {
  static const std::vector<std::string> none;
  auto it = flags.find(flag);
  return it == flags.end() ? none : it->second;
}

int usageError(const Command& command, const std::string& message) {
  fmt::print(stderr, "kiln {}: {}\n(see `kiln {} --help`)\n", command.name, message, command.name);
  return kExitUsage;
}

std::optional<Args> parseArgs(const Command& command, const std::vector<std::string>& argv) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a[0] != '-' || a == "--") {
      args.positional.push_back(a);
      continue;
    }
    std::string name = a, value;
    bool inlineValue = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inlineValue = true;
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& f : command.flags)
      if (f.name == name) spec = &f;
    if (!spec) {
      usageError(command, "unknown flag '" + name + "'");
      return std::nullopt;
    }
    if (spec->valueName.empty()) {
      if (inlineValue) {
        usageError(command, name + " takes no value");
        return std::nullopt;
      }
    } else if (!inlineValue) {
      if (i + 1 >= argv.size()) {
        usageError(command, name + " needs a value (" + name + " " + spec->valueName + ")");
        return std::nullopt;
      }
      value = argv[++i];
    }
    if (!spec->repeatable && args.has(name)) {
      usageError(command, name + " given twice");
      return std::nullopt;
    }
    args.flags[name].push_back(value);
  }
  return args;
}

std::string helpText(const Command& command) {
  std::string out = fmt::format("usage: {}\n\n{}\n", command.usage, command.description);
  if (command.flags.empty()) return out;
  out += "\nflags:\n";
  for (const FlagSpec& f : command.flags) {
    std::string left = f.name + (f.valueName.empty() ? "" : " " + f.valueName);
    out += fmt::format("  {:<24} {}{}\n", left, f.help, f.repeatable ? " (repeatable)" : "");
  }
  return out;
}

std::vector<std::string> splitCommaList(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

FlagSpec fastMathFlag() {
  return {"--fast-math", "",
          "approximate division, sqrt and math functions; flush subnormals to zero (f32 on the GPU, every float on the CPU)"};
}

FlagSpec disablePassesFlag() {
  return {"--disable-passes", "LIST",
          "skip these passes of the pipeline (comma-separated; all: run none; see kiln opt --list-passes)"};
}

bool parseDisabledPasses(const Command& command, const Args& args, std::vector<std::string>& disabled) {
  auto list = args.get("--disable-passes");
  if (!list) return true;
  disabled = splitCommaList(*list);
  // A misspelt pass is a command-line mistake: say so (and what the passes are) before any work.
  if (Status s = codegen::checkDisabledPasses(disabled); !s) {
    usageError(command, "--disable-passes: " + s.error().message());
    return false;
  }
  return true;
}

FlagSpec bucketBytesFlag() {
  return {"--bucket-bytes", "N",
          "data parallel: about how many bytes of gradients one all_reduce carries (default 25 MiB; smaller buckets "
          "start reducing sooner)"};
}

bool parseBucketBytes(const Command& command, const Args& args, int64_t& bytes) {
  auto text = args.get("--bucket-bytes");
  if (!text) return true;
  auto n = parseInteger<int64_t>(*text);
  if (!n || *n < 1) {
    usageError(command, "--bucket-bytes takes a positive number of bytes, got '" + *text + "'");
    return false;
  }
  bytes = *n;
  return true;
}

FlagSpec devicesFlag() {
  return {"--devices", "N", "run the function's placement ({device = K} on ops) on N devices (docs/parallelism.md)"};
}

bool parseSchedule(const Command& command, const Args& args, PipelineSchedule& schedule) {
  std::string name = args.get("--schedule").value_or("gpipe");
  auto parsed = parsePipelineSchedule(name);
  if (!parsed) {
    usageError(command, "--schedule takes gpipe or 1f1b, got '" + name + "'");
    return false;
  }
  schedule = *parsed;
  return true;
}

FlagSpec splitFlag() {
  return {"--split", "", "with --devices N: place a function without placement across the N devices by compute"};
}

bool parseDevices(const Command& command, const Args& args, DeviceFlags& flags) {
  auto text = args.get("--devices");
  flags.split = args.has("--split");
  if (!text && flags.split) {
    usageError(command, "--split places a function across --devices N: give the device count");
    return false;
  }
  if (!text) return true;
  auto n = parseInteger<int64_t>(*text);
  if (!n || *n < 1 || *n > kMaxDevices) {
    usageError(command, "--devices takes a device count from 1 to " + std::to_string(kMaxDevices) + ", got '" + *text + "'");
    return false;
  }
  flags.devices = static_cast<int>(*n);
  return true;
}

}  // namespace kiln::cli
