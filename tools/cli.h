// The `kiln` command's plumbing: subcommands, their flags and help text, and flag parsing.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/stage_chain.h"

namespace kiln::cli {

// Exit codes: 0 success, 1 the input was bad (diagnostics printed), 2 the command line was bad.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

struct FlagSpec {
  std::string name;         // "--backend"
  std::string valueName;    // "NAME"; empty for a boolean switch
  std::string help;
  bool repeatable = false;
};

// A parsed command line: positional arguments and flag values (repeatable flags keep them all).
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> flags;

  bool has(const std::string& flag) const { return flags.count(flag) > 0; }
  std::optional<std::string> get(const std::string& flag) const;
  const std::vector<std::string>& all(const std::string& flag) const;
};

struct Command {
  std::string name;
  std::string summary;  // one line for `kiln --help`
  std::string usage;    // "kiln run FILE [flags]"
  std::string description;
  std::vector<FlagSpec> flags;
  std::function<int(const Args&)> run;
};

// Parses argv (after the command name) against the command's flags. `--flag value` and
// `--flag=value` both work; `-` alone is a positional argument (stdin). On error prints the
// problem and a pointer to --help, and returns nullopt.
std::optional<Args> parseArgs(const Command& command, const std::vector<std::string>& argv);
std::string helpText(const Command& command);
// Prints "kiln <command>: <message>" on stderr and returns kExitUsage.
int usageError(const Command& command, const std::string& message);

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> splitCommaList(const std::string& list);

// The --fast-math flag of the compiling commands that run or print code (compile, run, bench).
FlagSpec fastMathFlag();
// The --disable-passes flag that every compiling command shares (run, compile, explain).
FlagSpec disablePassesFlag();
// Reads --disable-passes into `disabled`; an unknown pass name is a usage error naming the passes
// (printed; returns false).
bool parseDisabledPasses(const Command& command, const Args& args, std::vector<std::string>& disabled);
// --bucket-bytes N (kiln grad --data-parallel, kiln train): about how many bytes of gradients one
// all_reduce carries. Leaves `bytes` alone when absent; not a positive integer is a usage error
// (printed; returns false).
FlagSpec bucketBytesFlag();
bool parseBucketBytes(const Command& command, const Args& args, int64_t& bytes);
// --devices N (run, opt, explain, train, bench): run a placed function on N devices. Leaves
// `devices` alone when absent; anything but 1 to kMaxDevices is a usage error (printed; false).
// --split with it: place an unplaced function across the N devices by compute (passes/split_devices.h).
constexpr int kMaxDevices = 64;
struct DeviceFlags {
  int devices = 0;
  bool split = false;
};
FlagSpec devicesFlag();
FlagSpec splitFlag();
bool parseDevices(const Command& command, const Args& args, DeviceFlags& flags);
// --schedule gpipe|1f1b (kiln train, kiln bench): gpipe when absent; anything else is a usage
// error (printed; returns false).
bool parseSchedule(const Command& command, const Args& args, PipelineSchedule& schedule);

// The subcommands, each in its own file.
Command checkCommand();
Command printCommand();
Command runCommand();
Command compileCommand();
Command opsCommand();
Command optCommand();
Command explainCommand();
Command benchCommand();
Command importCommand();
Command onnxTestCommand();
Command gradCommand();
Command trainCommand();

}  // namespace kiln::cli

#include <memory>

#include "ir/ir.h"

namespace kiln::cli {

// Parses a .kiln file (or standard input for "-"; errors come back located), or imports a .onnx model.
Expected<std::unique_ptr<Module>> loadModule(const std::string& path);
// The function to work on: --entry NAME (with or without '@') if given, else the module's entry.
// `path` names the file in errors ("no function @f in x.kiln (functions: @main, @g)").
Expected<Function*> selectEntry(const Module& module, const Args& args, const std::string& path);
// The FILE argument (args.positional[0]) loaded, and its function to work on.
struct LoadedEntry {
  std::unique_ptr<Module> module;
  Function* entry;
};
Expected<LoadedEntry> loadEntry(const Args& args);
// Prints an error the way compilers do (file:line:col: error: ...) on stderr.
void reportError(const Error& error);
// Writes a command's output to the -o file (- or no -o: standard output); returns the exit code.
int writeOutput(const Args& args, const std::string& text);

}  // namespace kiln::cli
