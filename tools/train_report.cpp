// The progress line, CSV log and plot of `kiln train`. gnuplot gets its data inline (`$data <<
// EOD`), so the plot needs no CSV file of its own.
#include "tools/train_report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace kiln::cli {

TrainReport::TrainReport(std::vector<std::string> metricNames, int64_t firstStep, int64_t lastStep, int64_t batch)
    : metricNames_(std::move(metricNames)), firstStep_(firstStep), lastStep_(lastStep), batch_(batch),
      tty_(::isatty(STDOUT_FILENO) != 0), start_(std::chrono::steady_clock::now()), lastPrint_(start_) {}

Status TrainReport::openLog(const std::string& path) {
  log_ = std::fopen(path.c_str(), "w");
  if (!log_) return Error("cannot write --log " + path);
  fmt::print(log_, "step,loss");
  for (const std::string& m : metricNames_) fmt::print(log_, ",{}", m);
  fmt::print(log_, ",samples_per_s,elapsed_s,input_wait_ms\n");
  return Status();
}

std::string TrainReport::line(const StepRecord& r) const {
  std::string s = fmt::format("step {}/{}  loss {:.6g}", r.step, lastStep_, r.loss);
  for (size_t i = 0; i < r.metrics.size(); ++i) s += fmt::format("  {} {:.4g}", metricNames_[i], r.metrics[i]);
  double remaining = r.samplesPerSecond > 0 ? static_cast<double>((lastStep_ - r.step) * batch_) / r.samplesPerSecond : 0;
  s += fmt::format("  {:.0f} samples/s  ETA {:.0f}s", r.samplesPerSecond, remaining);
  return s;
}

void TrainReport::record(int64_t step, double loss, const std::vector<double>& metrics, double inputWaitMilliseconds) {
  auto now = std::chrono::steady_clock::now();
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double rate = elapsed > 0 ? static_cast<double>((step - firstStep_ + 1) * batch_) / elapsed : 0;
  records_.push_back({step, loss, metrics, rate, elapsed, inputWaitMilliseconds});
  const StepRecord& r = records_.back();
  if (log_) {
    fmt::print(log_, "{},{:.9g}", step, loss);
    for (double m : metrics) fmt::print(log_, ",{:.9g}", m);
    fmt::print(log_, ",{:.1f},{:.3f},{:.3f}\n", rate, elapsed, inputWaitMilliseconds);
  }
  bool last = step == lastStep_;
  if (tty_) {
    if (last || now - lastPrint_ > std::chrono::milliseconds(100)) {
      fmt::print("\r\033[K{}", line(r));
      std::fflush(stdout);
      printedInPlace_ = true;
      lastPrint_ = now;
    }
  } else {
    int64_t total = lastStep_ - firstStep_ + 1, every = std::max<int64_t>(1, total / 10);
    if (last || (step - firstStep_ + 1) % every == 0) fmt::print("{}\n", line(r));
  }
}

void TrainReport::finish() {
  if (printedInPlace_) fmt::print("\n");
  // The first step waits for the pipeline to fill; after it, a producer that keeps up waits never.
  double total = 0, worst = 0, afterFirst = 0;
  for (size_t i = 0; i < records_.size(); ++i) {
    total += records_[i].inputWaitMilliseconds;
    worst = std::max(worst, records_[i].inputWaitMilliseconds);
    if (i > 0) afterFirst += records_[i].inputWaitMilliseconds;
  }
  if (!records_.empty())
    fmt::print("input: the steps waited {:.1f} ms for their batches in all (the first {:.1f} ms, the rest {:.1f} ms, "
               "at most {:.1f} ms)\n",
               total, records_[0].inputWaitMilliseconds, afterFirst, worst);
  if (log_) std::fclose(log_);
  log_ = nullptr;
}

Status plotLoss(const std::string& path, const std::vector<StepRecord>& records) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".svg" && ext != ".png") return Error("--plot " + path + ": expected a .svg or .png file");
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fmt::print(stderr, "kiln train: warning: gnuplot not found, no plot written to {} (install gnuplot-nox)\n", path);
    return Status();
  }
  std::string script = ext == ".svg" ? "set terminal svg size 800,500\n" : "set terminal png size 800,500\n";
  script += fmt::format("set output '{}'\nset xlabel 'step'\nset ylabel 'loss'\nset logscale y\nset grid\n", path);
  script += "$data << EOD\n";
  for (const StepRecord& r : records) script += fmt::format("{} {:.9g}\n", r.step, r.loss);
  script += "EOD\nplot $data using 1:2 with lines title 'training loss'\n";
  std::string scriptPath = path + ".gnuplot";
  FILE* f = std::fopen(scriptPath.c_str(), "w");
  if (!f) return Error("cannot write " + scriptPath);
  std::fputs(script.c_str(), f);
  std::fclose(f);
  int rc = std::system(("gnuplot '" + scriptPath + "' 2>&1").c_str());
  std::filesystem::remove(scriptPath);
  if (rc != 0) return Error("gnuplot failed to write " + path);
  return Status();
}

}  // namespace kiln::cli
