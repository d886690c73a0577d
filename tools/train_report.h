// What `kiln train` shows and writes while it trains: the progress line (rewritten in place on a
// terminal, plain lines otherwise), the CSV log, and the loss-curve plot drawn by gnuplot.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ir/status.h"

namespace kiln::cli {

struct StepRecord {
  int64_t step;  // 1-based, counting the steps of a resumed checkpoint
  double loss;
  std::vector<double> metrics;
  double samplesPerSecond;
  double elapsedSeconds;
  double inputWaitMilliseconds;  // how long the step waited for its batch (runtime/input_pipeline.h)
};

class TrainReport {
 public:
  // `metricNames`: f's results after the loss; `logPath` empty: no CSV.
  TrainReport(std::vector<std::string> metricNames, int64_t firstStep, int64_t lastStep, int64_t batch);
  Status openLog(const std::string& path);
  // Records a finished step: CSV row, progress line (on a terminal at most ~10 times a second).
  void record(int64_t step, double loss, const std::vector<double>& metrics, double inputWaitMilliseconds);
  // Ends the progress line and prints the final summary (the input wait over all steps).
  void finish();
  const std::vector<StepRecord>& records() const { return records_; }

 private:
  std::string line(const StepRecord& r) const;
  std::vector<std::string> metricNames_;
  int64_t firstStep_, lastStep_, batch_;
  bool tty_;
  FILE* log_ = nullptr;
  std::chrono::steady_clock::time_point start_, lastPrint_;
  bool printedInPlace_ = false;
  std::vector<StepRecord> records_;
};

// Draws loss against step (log-scale loss axis) into `path` (.svg or .png, by extension) with
// gnuplot. Without gnuplot on PATH prints one warning line and returns ok: training still counts.
Status plotLoss(const std::string& path, const std::vector<StepRecord>& records);

}  // namespace kiln::cli
