// `kiln onnx-test`: the ONNX backend node tests as a conformance check. Each test runs in its own
// child process (up to --jobs at once), so a crash or hang in one is that test's failure, not the
// run's; lines come out in test order.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "frontend/onnx/onnx_import.h"
#include "tools/cli.h"
#include "tools/onnx_test_case.h"

namespace kiln::cli {

namespace fs = std::filesystem;

namespace {

constexpr unsigned kDefaultTimeoutSeconds = 120;

// Test names listed in a file: one per line, the last word of each (so ONNX tier lists "1 Abs
// test_abs" work as they are); '#' starts a comment.
Expected<std::set<std::string>> readNameList(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error("cannot open '" + path + "'");
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    auto end = line.find_last_not_of(" \t\r");
    if (end == std::string::npos) continue;
    auto begin = line.find_last_of(" \t", end);
    names.insert(line.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1) + 1));
  }
  return names;
}

// Each DIR is a test folder (holding model.onnx, or data.json for a downloadable model) or a
// folder of them (data/node, data/real).
std::vector<fs::path> findTests(const std::vector<std::string>& dirs, std::string& problem) {
  std::vector<fs::path> tests;
  for (const std::string& d : dirs) {
    std::error_code ec;
    if (isOnnxTestFolder(d)) {
      tests.push_back(d);
      continue;
    }
    if (!fs::is_directory(d, ec)) {
      problem = "'" + d + "' is neither a test folder (with model.onnx or data.json) nor a folder of them";
      return {};
    }
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (isOnnxTestFolder(e.path().string())) found.push_back(e.path());
    std::sort(found.begin(), found.end());
    tests.insert(tests.end(), found.begin(), found.end());
  }
  return tests;
}

struct Running {
  pid_t pid;
  int fd;
  size_t index;
  std::string output;
};

void writeAll(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

// Reads `fd` to its end and closes it.
std::string readAll(int fd) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  return text;
}

// The child: runs one test and writes "KIND\tdetail" to `fd`.
[[noreturn]] void runChild(const fs::path& test, Backend backend, unsigned timeout, int fd) {
  alarm(timeout);
  OnnxTestOutcome o = runOnnxTestCase(test.string(), backend);
  const char* kind = o.kind == OnnxTestOutcome::Pass ? "PASS" : o.kind == OnnxTestOutcome::Fail ? "FAIL" : "UNSUPPORTED";
  writeAll(fd, std::string(kind) + "\t" + o.detail);
  _exit(0);
}

// A child process running `child(fd)` (which must _exit), with `fd` the write end of a pipe whose
// read end is returned; the error says what failed.
struct Child {
  pid_t pid;
  int fd;
};
Expected<Child> startChild(const std::function<void(int fd)>& child) {
  int fds[2];
  if (pipe(fds) != 0) return Error("cannot create a pipe");
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    child(fds[1]);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return Error("cannot start a process");
  }
  return Child{pid, fds[0]};
}

// Whether `backend` runs here, asked in a child process. The tests run in children forked from
// this process, and NVIDIA's driver refuses every call in a child forked after cuInit: so this
// process must never start the driver itself.
Status backendUsableInChild(Backend backend) {
  std::fflush(nullptr);
  auto child = startChild([&](int fd) {
    auto resolved = resolveBackend(backend);
    if (!resolved) writeAll(fd, resolved.error().message());
    _exit(resolved ? 0 : 1);
  });
  if (!child) return child.error();
  std::string why = readAll(child->fd);
  int status = 0;
  waitpid(child->pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  return Error(why.empty() ? "--backend: the process checking the backend failed" : why);
}

OnnxTestOutcome parseChild(const std::string& out, int status, unsigned timeout) {
  auto tab = out.find('\t');
  if (tab != std::string::npos && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    std::string kind = out.substr(0, tab), detail = out.substr(tab + 1);
    if (kind == "PASS") return {OnnxTestOutcome::Pass, ""};
    if (kind == "UNSUPPORTED") return {OnnxTestOutcome::Unsupported, detail};
    return {OnnxTestOutcome::Fail, detail};
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    return {OnnxTestOutcome::Fail, fmt::format("timed out after {} s", timeout)};
  if (WIFSIGNALED(status)) return {OnnxTestOutcome::Fail, fmt::format("crashed (signal {})", WTERMSIG(status))};
  return {OnnxTestOutcome::Fail, fmt::format("exited with status {}", WEXITSTATUS(status))};
}

// Runs every test with up to `jobs` children at once; outcomes in test order.
std::vector<OnnxTestOutcome> runAll(const std::vector<fs::path>& tests, Backend backend, size_t jobs, unsigned timeout,
                                    const std::function<void(size_t, const OnnxTestOutcome&)>& report) {
  std::vector<std::optional<OnnxTestOutcome>> outcomes(tests.size());
  std::vector<Running> running;
  size_t next = 0, reported = 0;
  std::fflush(nullptr);  // children must not flush the parent's buffered output again
  while (reported < tests.size()) {
    while (running.size() < jobs && next < tests.size()) {
      auto child = startChild([&](int fd) { runChild(tests[next], backend, timeout, fd); });
      if (child) running.push_back({child->pid, child->fd, next, ""});
      else outcomes[next] = OnnxTestOutcome{OnnxTestOutcome::Fail, child.error().message()};
      ++next;
    }
    if (!running.empty()) {
      // Read the oldest child to its end, then reap it (its line is short: the pipe never fills).
      Running r = running.front();
      running.erase(running.begin());
      r.output = readAll(r.fd);
      int status = 0;
      waitpid(r.pid, &status, 0);
      outcomes[r.index] = parseChild(r.output, status, timeout);
    }
    while (reported < tests.size() && outcomes[reported]) {
      report(reported, *outcomes[reported]);
      ++reported;
    }
  }
  std::vector<OnnxTestOutcome> out;
  for (auto& o : outcomes) out.push_back(*o);
  return out;
}

int run(const Command& c, const Args& args) {
  if (args.positional.empty()) return usageError(c, "missing DIR (a test folder such as .../data/node/test_abs, or .../data/node)");
  if (!onnxImportAvailable()) {
    reportError(importOnnxModel("", "").error());
    return kExitError;
  }
  Backend backend = Backend::Interp;
  if (auto name = args.get("--backend")) {
    auto b = parseBackend(*name);
    if (!b || *b == Backend::Auto) return usageError(c, "unknown backend '" + *name + "' (expected interp, cpu or cuda)");
    backend = *b;
  }
  if (Status usable = backendUsableInChild(backend); !usable) {
    reportError(usable.error());
    return kExitError;
  }
  size_t jobs = 1;
  if (auto j = args.get("--jobs")) {
    char* end = nullptr;
    long v = std::strtol(j->c_str(), &end, 10);
    if (j->empty() || *end || v < 1 || v > 256) return usageError(c, "--jobs takes a number from 1 to 256, got '" + *j + "'");
    jobs = static_cast<size_t>(v);
  }
  unsigned timeout = kDefaultTimeoutSeconds;
  if (auto t = args.get("--timeout")) {
    char* end = nullptr;
    long v = std::strtol(t->c_str(), &end, 10);
    if (t->empty() || *end || v < 1 || v > 86400) return usageError(c, "--timeout takes seconds from 1 to 86400, got '" + *t + "'");
    timeout = static_cast<unsigned>(v);
  }
  std::string problem;
  std::vector<fs::path> tests = findTests(args.positional, problem);
  if (!problem.empty()) return usageError(c, problem);
  if (args.has("--tests")) {
    std::set<std::string> selected;
    for (const std::string& list : args.all("--tests")) {
      auto names = readNameList(list);
      if (!names) {
        reportError(names.error());
        return kExitError;
      }
      selected.insert(names->begin(), names->end());
    }
    std::erase_if(tests, [&](const fs::path& t) { return !selected.count(t.filename().string()); });
  }
  std::optional<std::set<std::string>> expectPass;
  if (auto list = args.get("--expect-pass")) {
    auto names = readNameList(*list);
    if (!names) {
      reportError(names.error());
      return kExitError;
    }
    expectPass = std::move(*names);
  }

  size_t passed = 0, failed = 0, unsupported = 0;
  std::vector<std::string> regressions, newlyPassing;
  runAll(tests, backend, jobs, timeout, [&](size_t i, const OnnxTestOutcome& o) {
    std::string name = tests[i].filename().string();
    switch (o.kind) {
      case OnnxTestOutcome::Pass: ++passed; fmt::print("PASS {}\n", name); break;
      case OnnxTestOutcome::Fail: ++failed; fmt::print("FAIL {}: {}\n", name, o.detail); break;
      case OnnxTestOutcome::Unsupported: ++unsupported; fmt::print("UNSUPPORTED {}: {}\n", name, o.detail); break;
    }
    std::fflush(stdout);
    if (!expectPass) return;
    bool expected = expectPass->count(name) > 0;
    if (expected && o.kind != OnnxTestOutcome::Pass) regressions.push_back(name);
    if (!expected && o.kind == OnnxTestOutcome::Pass) newlyPassing.push_back(name);
  });
  fmt::print("onnx: {} passed, {} failed, {} unsupported\n", passed, failed, unsupported);
  if (!expectPass) return kExitOk;
  if (!newlyPassing.empty())
    fmt::print("onnx: {} test(s) pass that the expected list lacks (add them): {}\n", newlyPassing.size(), fmt::join(newlyPassing, " "));
  if (regressions.empty()) return kExitOk;
  std::fflush(stdout);  // the summary before the verdict, also when both go to one pipe
  fmt::print(stderr, "onnx: {} test(s) of the expected pass list did not pass: {}\n", regressions.size(), fmt::join(regressions, " "));
  return kExitError;
}

}  // namespace

Command onnxTestCommand() {
  Command c{"onnx-test", "run ONNX backend tests (model.onnx + test_data_set_*)",
            "kiln onnx-test DIR... [--backend interp|cpu|cuda] [--jobs N] [--timeout S] [--tests FILE]\n"
            "                     [--expect-pass FILE]",
            "Runs ONNX backend tests: each DIR is a test folder (model.onnx and test_data_set_*/input_*.pb,\n"
            "output_*.pb) or a folder of them (Debian's libonnx-testdata: /usr/share/libonnx-testdata/data/node).\n"
            "A test imports the model with its inputs known at compile time (ops that need an input's value,\n"
            "such as Reshape's shape, take it from there; a tensor without a name is the model's i-th graph\n"
            "input, as ONNX's runner binds it), runs it and compares each output as ONNX's runner does: rtol\n"
            "1e-3, atol 1e-7, or those of the folder's data.json (beside model.onnx, or naming a downloadable\n"
            "model, looked for in $ONNX_MODELS or $ONNX_HOME/models). Prints PASS name, FAIL name: <first\n"
            "mismatch or error> or\n"
            "UNSUPPORTED name: <what kiln lacks> per test, then `onnx: P passed, F failed, U unsupported`.\n"
            "--expect-pass FILE makes the exit status 1 when a test named in FILE does not pass.",
            {{"--backend", "NAME", "interp (default), cpu or cuda"},
             {"--jobs", "N", "run N tests at once, each in its own process (default 1)"},
             {"--timeout", "S", "a test still running after S seconds fails (default 120)"},
             {"--tests", "FILE", "run only the tests named in FILE (one per line, its last word; # comments)", true},
             {"--expect-pass", "FILE", "fail (exit 1) when a test named in FILE does not pass"}},
            nullptr};
  c.run = [c](const Args& args) { return run(c, args); };
  return c;
}

}  // namespace kiln::cli
