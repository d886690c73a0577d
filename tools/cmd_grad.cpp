// `kiln grad`: a function's gradient function, as kiln text (reverse-mode autodiff, passes/grad.h).
#include "ir/printer.h"
#include "passes/data_parallel.h"
#include "passes/grad.h"
#include "tools/cli.h"
#include "tools/inputs.h"

namespace kiln::cli {

namespace {

int run(const Command& c, const Args& args) {
  if (args.positional.size() != 1)
    return usageError(c, args.positional.empty() ? "missing FILE" : "expected one FILE, got " + std::to_string(args.positional.size()));
  std::vector<std::string> wrt;
  for (std::string name : splitCommaList(args.get("--wrt").value_or(""))) wrt.push_back(name[0] == '%' ? name.substr(1) : name);
  if (wrt.empty()) return usageError(c, "--wrt NAME[,NAME...] is required: the parameters to differentiate with respect to");
  passes::GradientAverageOptions average;
  if (!parseBucketBytes(c, args, average.bucketBytes)) return kExitUsage;
  auto loaded = loadEntry(args);
  if (!loaded) {
    reportError(loaded.error());
    return kExitError;
  }
  // The gradient function keeps the entry's name, so its output runs as the entry did.
  Module gradient;
  auto g = passes::differentiate(gradient, *loaded->entry, wrt, loaded->entry->name());
  if (!g) {
    reportError(g.error());
    return kExitError;
  }
  if (args.has("--data-parallel")) {
    size_t firstGradient = loaded->entry->resultTypes().size();
    if (Status s = passes::averageGradientsAcrossReplicas(**g, firstGradient, average); !s) {
      reportError(s.error());
      return kExitError;
    }
  }
  return writeOutput(args, printModule(gradient));
}

}  // namespace

Command gradCommand() {
  Command c{"grad", "print a function's gradient function (reverse-mode autodiff)",
            "kiln grad FILE --wrt NAME[,NAME...] [-o OUT.kiln] [--entry NAME] [--data-parallel [--bucket-bytes N]]",
            "Differentiates the entry function of FILE (.kiln or .onnx) with respect to the named float\n"
            "parameters and prints the new function: same name and parameters; results are the original\n"
            "results followed by one gradient per named parameter, in order, each of its parameter's type.\n"
            "The first result must be a float scalar (a loss); later results (metrics) pass through.\n"
            "`map`s are vectorized first. A parameter that reaches the loss only through an op without a\n"
            "derivative (argmax, a cast to an integer, a while loop) is an error naming that op.\n"
            "The output is ordinary kiln text: `kiln run` or `kiln compile` it as any other.\n"
            "--data-parallel averages the gradients across replicas (all_reduce mean, in buckets of about\n"
            "--bucket-bytes, 25 MiB by default, filled from the last gradient backwards), as a data-parallel\n"
            "training step does before its update; under `mpirun -np N` every rank then holds the mean.",
            {{"--wrt", "LIST", "comma-separated parameters to differentiate with respect to (with or without %)"},
             {"-o", "FILE", "write the gradient function to FILE instead of standard output"},
             {"--entry", "NAME", "the function to differentiate (default: @main, else the first)"},
             {"--data-parallel", "", "average the gradients across replicas (all_reduce mean, bucketed)"},
             bucketBytesFlag()},
            nullptr};
  c.run = [c](const Args& args) { return run(c, args); };
  return c;
}

}  // namespace kiln::cli
