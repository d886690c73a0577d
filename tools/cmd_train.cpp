// `kiln train`: trains a loss function's parameters on .npy data with a compiled training step
// (runtime/train_session.h), with shuffled batches, a progress line, a CSV log, a loss plot and
// atomic checkpoints that a later run resumes exactly.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <thread>

#include "ir/npy.h"
#include "ir/printer.h"
#include "passes/placement.h"
#include "runtime/backend.h"
#include "runtime/collectives/communicator.h"
#include "runtime/input_pipeline.h"
#include "runtime/train_session.h"
#include "tools/cli.h"
#include "tools/inputs.h"
#include "tools/train_data.h"
#include "tools/train_report.h"

namespace kiln::cli {

namespace {

#define KILN_TRY_OR_FAIL(expr)              \
  do {                                      \
    Status kiln_status_ = (expr);           \
    if (!kiln_status_.ok()) return fail(kiln_status_.error()); \
  } while (0)

std::string stripPercent(const std::string& name) { return !name.empty() && name[0] == '%' ? name.substr(1) : name; }

// NAME=PATH (or NAME alone when `pathOptional`) from a comma-separated flag.
struct NamedPath {
  std::string name, path;
};
std::optional<std::vector<NamedPath>> namedPaths(const std::string& list, bool pathOptional) {
  std::vector<NamedPath> out;
  for (const std::string& item : splitCommaList(list)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos && !pathOptional) return std::nullopt;
    out.push_back({stripPercent(item.substr(0, eq)), eq == std::string::npos ? "" : item.substr(eq + 1)});
    if (out.back().name.empty() || (eq != std::string::npos && out.back().path.empty())) return std::nullopt;
  }
  return out;
}

int fail(const Error& e) {
  reportError(e);
  return kExitError;
}

// --replicas N without an MPI launcher: run this same command as N local ranks through mpirun.
int relaunchUnderMpi(const Command& c, const Args& args, int64_t replicas) {
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(replicas)};
  // Containers often run as root, which Open MPI (mpirun and every rank) refuses unless told that
  // it is meant.
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  // More ranks than cores is slow but legal (CPU data parallelism on a small machine).
  if (replicas > static_cast<int64_t>(std::thread::hardware_concurrency())) argv.push_back("--oversubscribe");
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  argv.push_back(length > 0 ? std::string(self, static_cast<size_t>(length)) : std::string("kiln"));
  argv.push_back(c.name);
  for (const std::string& p : args.positional) argv.push_back(p);
  for (const auto& [flag, values] : args.flags) {
    if (flag == "--replicas") continue;
    for (const std::string& v : values) argv.push_back(v.empty() ? flag : flag + "=" + v);
  }
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  std::fflush(stdout);
  execvp("mpirun", raw.data());
  return fail(Error("--replicas " + std::to_string(replicas) + ": cannot start mpirun (" + std::strerror(errno) +
                    "); install Open MPI (openmpi-bin) or launch the ranks yourself: mpirun -np N kiln train ..."));
}

// A hash of the parameters' bytes, to check that every replica holds the same ones.
uint64_t fingerprint(const std::vector<Tensor>& tensors) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const Tensor& t : tensors) {
    const auto* p = static_cast<const unsigned char*>(t.data());
    for (size_t i = 0; i < t.byteSize(); ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  }
  return h;
}

// Rank 0's tensors on every replica (initial parameters, resumed state), so all start equal.
Status broadcastFromRankZero(collectives::Communicator& comm, std::vector<Tensor>& tensors, const std::string& what) {
  for (size_t i = 0; i < tensors.size(); ++i)
    KILN_TRY(comm.broadcast(tensors[i].data(), static_cast<int64_t>(tensors[i].byteSize()), 0,
                            what + " " + std::to_string(i)));
  return {};
}

// Tests: KILN_TRAIN_INPUT_FAULT=STEP makes the input pipeline's producer fail on step STEP's batch
// (1-based), as a read error would, to check that training stops there with the message.
std::function<Status(int64_t)> inputFaultForTests() {
  const char* spec = std::getenv("KILN_TRAIN_INPUT_FAULT");
  if (!spec) return nullptr;
  long long faultStep = std::atoll(spec);
  return [faultStep](int64_t update) -> Status {
    if (update + 1 != faultStep) return {};
    return Error("KILN_TRAIN_INPUT_FAULT: the producer failed reading the batch");
  };
}

// Testing hook for failure handling (docs/training.md): KILN_TRAIN_FAULT=exit:RANK:STEP makes that
// rank exit abruptly before that step, as a crashed machine would; stall:RANK:STEP makes it hang
// there, as a wedged one would, until the others' collective deadline ends the job.
void maybeInjectFault(int rank, int64_t step) {
  const char* spec = std::getenv("KILN_TRAIN_FAULT");
  char kind[8] = {};
  int faultRank = -1;
  long long faultStep = -1;
  if (!spec || std::sscanf(spec, "%7[a-z]:%d:%lld", kind, &faultRank, &faultStep) != 3 || faultRank != rank ||
      faultStep != step)
    return;
  fmt::print(stderr, "kiln train: rank {}: KILN_TRAIN_FAULT: {} before step {}\n", rank,
             std::string(kind) == "stall" ? "stalling" : "exiting", step);
  std::fflush(stderr);
  if (std::string(kind) == "stall") std::this_thread::sleep_for(std::chrono::minutes(10));
  std::_Exit(3);
}

int run(const Command& c, const Args& args) {
  if (args.positional.size() != 1)
    return usageError(c, args.positional.empty() ? "missing FILE" : "expected one FILE, got " + std::to_string(args.positional.size()));
  auto params = namedPaths(args.get("--params").value_or(""), true);
  if (!params || params->empty()) return usageError(c, "--params NAME[=INIT.npy],... is required: the parameters to train");
  auto data = namedPaths(args.get("--data").value_or(""), false);
  if (!data || data->empty()) return usageError(c, "--data NAME=PATH.npy,... is required: the training data");
  auto batch = parseInteger<int64_t>(args.get("--batch").value_or(""));
  if (!batch || *batch < 1) return usageError(c, "--batch B is required: a positive number of samples per update");
  // --print-step builds the step without running it, so it needs no step count.
  auto steps = parseInteger<int64_t>(args.get("--steps").value_or(args.has("--print-step") ? "1" : ""));
  if (!steps || *steps < 1) return usageError(c, "--steps N is required: a positive number of updates");
  auto accumulate = parseInteger<int64_t>(args.get("--accumulate").value_or("1"));
  if (!accumulate || *accumulate < 1) return usageError(c, "--accumulate takes a positive number of micro-batches");
  auto seed = parseInteger<uint64_t>(args.get("--seed").value_or("0"));
  if (!seed) return usageError(c, "--seed takes a non-negative integer");
  auto prefetch = parseInteger<int64_t>(args.get("--prefetch").value_or("2"));
  if (!prefetch || *prefetch < 1) return usageError(c, "--prefetch takes a positive number of batches");
  double lr = 0;
  try {
    size_t used = 0;
    std::string text = args.get("--lr").value_or(args.has("--print-step") ? "1" : "");  // lr is a step input
    lr = std::stod(text, &used);
    if (used != text.size() || !(lr > 0)) throw std::invalid_argument("lr");
  } catch (...) {
    return usageError(c, "--lr LR is required: a positive learning rate");
  }
  auto optimizer = passes::parseOptimizer(args.get("--optimizer").value_or("sgd"));
  if (!optimizer) return usageError(c, optimizer.error().message());
  Backend requested = Backend::Auto;
  if (auto name = args.get("--backend")) {
    auto b = parseBackend(*name);
    if (!b) return usageError(c, "unknown backend '" + *name + "' (expected interp, cpu, cuda or auto)");
    requested = *b;
  }
  if (auto plot = args.get("--plot"); plot && !plot->ends_with(".svg") && !plot->ends_with(".png"))
    return usageError(c, "--plot " + *plot + ": expected a .svg or .png file");
  collectives::CommunicatorOptions commOptions;
  if (auto timeout = args.get("--collective-timeout")) {
    auto seconds = parseInteger<int64_t>(*timeout);
    if (!seconds || *seconds < 1) return usageError(c, "--collective-timeout takes a positive number of seconds");
    commOptions.timeout = std::chrono::seconds(*seconds);
  }
  int64_t bucketBytes = passes::TrainSpec{}.bucketBytes;
  if (!parseBucketBytes(c, args, bucketBytes)) return kExitUsage;
  DeviceFlags devices;
  if (!parseDevices(c, args, devices)) return kExitUsage;
  // --pipeline-stages N --micro-batches M: the model on N devices (split by compute unless placed
  // already), each update's batch in M micro-batches pipelined through them.
  int pipelineStages = 0;
  PipelineSchedule schedule = PipelineSchedule::FillDrain;
  if (!parseSchedule(c, args, schedule)) return kExitUsage;
  if (auto s = args.get("--pipeline-stages")) {
    auto n = parseInteger<int>(*s);
    if (!n || *n < 1 || *n > kMaxDevices)
      return usageError(c, "--pipeline-stages takes a stage count from 1 to " + std::to_string(kMaxDevices) + ", got '" + *s + "'");
    if (devices.devices > 0 || args.has("--accumulate"))
      return usageError(c, "--pipeline-stages N --micro-batches M places the model on N devices and accumulates M "
                           "micro-batches itself: drop --devices and --accumulate");
    auto m = parseInteger<int64_t>(args.get("--micro-batches").value_or(""));
    if (!m || *m < 1) return usageError(c, "--pipeline-stages needs --micro-batches M, a positive number of micro-batches");
    pipelineStages = *n;
    accumulate = *m;
  } else if (args.has("--micro-batches") || args.has("--schedule")) {
    return usageError(c, "--micro-batches and --schedule go with --pipeline-stages N");
  }
  const bool printStep = args.has("--print-step");
  int64_t localReplicas = 1;
  if (auto replicas = args.get("--replicas")) {
    auto n = parseInteger<int64_t>(*replicas);
    if (!n || *n < 1) return usageError(c, "--replicas takes a positive number of local ranks");
    localReplicas = *n;
    // --print-step only builds one rank's step (for kiln explain or kiln bench under mpirun).
    if (*n > 1 && !printStep && !collectives::replicaFromEnvironment().launchedByMpi) return relaunchUnderMpi(c, args, *n);
  }
  auto world = collectives::worldCommunicator(commOptions);
  if (!world) return fail(world.error());
  collectives::Communicator& comm = **world;
  const bool leader = comm.rank() == 0;
  const int replicas = comm.size() > 1 ? comm.size() : static_cast<int>(localReplicas);
  if (replicas > 1 && *batch % replicas != 0)
    return fail(Error("--batch " + std::to_string(*batch) + " does not split evenly across the " +
                      std::to_string(replicas) + " replicas (each takes batch / replicas samples)"));

  auto loaded = loadEntry(args);
  if (!loaded) return fail(loaded.error());
  const Function& f = *loaded->entry;
  std::vector<Value*> fParams = f.params();
  auto findParam = [&](const std::string& name) -> const Value* {
    for (const Value* p : fParams)
      if (p->name() == name) return p;
    return nullptr;
  };
  TrainOptions options;
  options.spec.optimizer = *optimizer;
  options.spec.dataParallel = replicas > 1;
  options.spec.bucketBytes = bucketBytes;
  options.batch = *batch / replicas;  // this replica's share of each update
  options.accumulate = *accumulate;
  options.backend = requested;
  options.devices = devices.devices;
  options.split = devices.split;
  if (pipelineStages > 0) {
    options.devices = pipelineStages;
    options.split = !passes::isPlaced(f);
    options.pipeline = true;
    options.schedule = schedule;
  }
  std::vector<Tensor> init;
  for (size_t i = 0; i < params->size(); ++i) {
    const NamedPath& p = (*params)[i];
    const Value* v = findParam(p.name);
    if (!v) return fail(Error("--params: @" + f.name() + " has no parameter %" + p.name));
    options.spec.params.push_back(p.name);
    if (p.path.empty()) {
      init.push_back(initialParam(v->type(), *seed, static_cast<int>(i)));
      continue;
    }
    auto t = readNpy(p.path);
    if (!t) return fail(t.error());
    if (t->type() != v->type())
      return fail(Error("--params " + p.name + "=" + p.path + ": %" + p.name + " is " + v->type().str() + ", the file holds " +
                        t->type().str()));
    init.push_back(std::move(*t));
  }
  // Data inputs in the order of f's data parameters, each one or more .npy shards streamed through
  // the input pipeline; each must match its parameter but in axis 0.
  std::vector<InputSource> sources;
  std::vector<const Value*> dataParams;
  for (const NamedPath& d : *data) {
    const Value* v = findParam(d.name);
    if (!v) return fail(Error("--data: @" + f.name() + " has no parameter %" + d.name));
    if (std::count(options.spec.params.begin(), options.spec.params.end(), d.name))
      return fail(Error("--data: %" + d.name + " is also named in --params"));
  }
  for (const Value* v : fParams) {
    if (std::count(options.spec.params.begin(), options.spec.params.end(), v->name())) continue;
    auto it = std::find_if(data->begin(), data->end(), [&](const NamedPath& d) { return d.name == v->name(); });
    if (it == data->end())
      return fail(Error("%" + v->name() + " is neither trained (--params) nor given data (--data NAME=PATH.npy)"));
    auto shards = expandShards(it->path);
    if (!shards) return fail(Error("--data " + v->name() + "=" + it->path + ": " + shards.error().message()));
    sources.push_back({v->name(), std::move(*shards)});
    dataParams.push_back(v);
  }
  auto pipeline = InputPipeline::open(sources);
  if (!pipeline) return fail(pipeline.error());
  InputPipeline& input = **pipeline;
  for (size_t k = 0; k < dataParams.size(); ++k) {
    const Value* v = dataParams[k];
    auto it = std::find_if(data->begin(), data->end(), [&](const NamedPath& d) { return d.name == v->name(); });
    KILN_TRY_OR_FAIL(checkDataType("--data " + v->name() + "=" + it->path, v->name(), v->type(), input.types()[k],
                                   sources[k].shards.size() > 1 ? "the files hold" : "the file holds"));
  }
  if (*batch > input.length())
    return fail(Error("--batch " + std::to_string(*batch) + " is larger than the dataset (" +
                      std::to_string(input.length()) + " samples)"));

  auto trainer = TrainStep::create(f, options);
  if (!trainer) return fail(trainer.error());
  TrainStep& t = **trainer;
  if (printStep) return leader ? writeOutput(args, printFunction(t.stepFunction())) : kExitOk;
  if (Status s = t.setParams(init); !s.ok()) return fail(s.error());
  if (auto dir = args.get("--resume")) {
    if (Status s = t.load(*dir); !s.ok()) return fail(s.error());
  }
  if (replicas > 1) {  // every replica starts from rank 0's parameters and optimizer state
    auto ps = t.params();
    auto st = t.state();
    if (!ps || !st) return fail(!ps ? ps.error() : st.error());
    KILN_TRY_OR_FAIL(broadcastFromRankZero(comm, *ps, "initial parameter"));
    KILN_TRY_OR_FAIL(broadcastFromRankZero(comm, *st, "optimizer state"));
    KILN_TRY_OR_FAIL(t.setParams(*ps));
    KILN_TRY_OR_FAIL(t.setState(*st));
  }
  std::vector<std::string> metricNames;
  const Op* ret = f.body().terminator();
  for (size_t i = 1; i < ret->numOperands(); ++i) {
    std::string n = ret->operand(i)->name();
    metricNames.push_back(n.empty() || std::isdigit(static_cast<unsigned char>(n[0])) ? "metric" + std::to_string(i) : n);
  }
  int64_t first = t.stepCount() + 1, last = t.stepCount() + *steps;
  TrainReport report(metricNames, first, last, *batch);
  // Rank 0 alone talks and writes (log, plot, checkpoint); every rank trains.
  if (auto log = args.get("--log"); log && leader) {
    if (Status s = report.openLog(*log); !s.ok()) return fail(s.error());
  }
  if (leader)
    fmt::print("training {} parameters of @{} with {} (lr {}) on {}: {} samples, batch {}{}{}, steps {}..{}\n",
               options.spec.params.size(), f.name(), passes::optimizerName(optimizer->kind), lr, backendName(t.backend()),
               input.length(), *batch,
               replicas > 1 ? fmt::format(" over {} replicas ({} each)", replicas, *batch / replicas) : "",
               *accumulate > 1 ? fmt::format(" ({} x {})", *accumulate, *batch / replicas / *accumulate) : "", first, last);
  std::fflush(stdout);
  int rank = comm.rank();
  InputPipelineOptions inputOptions;
  inputOptions.batch = *batch;
  inputOptions.seed = *seed;
  inputOptions.shard = rank;
  inputOptions.shards = replicas;
  inputOptions.firstStep = first - 1;
  inputOptions.steps = *steps;
  inputOptions.depth = static_cast<size_t>(*prefetch);
  inputOptions.fault = inputFaultForTests();
  KILN_TRY_OR_FAIL(input.start(std::move(inputOptions)));
  double nextWait = 0;
  auto next = input.next(&nextWait);
  for (int64_t step = first; step <= last; ++step) {
    maybeInjectFault(rank, step);
    if (!next) return fail(next.error());  // a bad batch ends training before the step: no checkpoint is written
    std::vector<Tensor> current = std::move(*next);
    double wait = nextWait;
    if (step < last) {
      next = input.next(&nextWait);
      // On CUDA the next batch's copy to the device overlaps this step.
      if (next) KILN_TRY_OR_FAIL(t.prefetch(*next));
      wait += nextWait;  // the time this step's loop spent waiting for input
    }
    auto r = t.step(current, static_cast<float>(lr));
    if (!r) return fail(r.error().message().find("rank") == std::string::npos
                            ? Error("rank " + std::to_string(rank) + ": " + r.error().message(), r.error().loc())
                            : r.error());
    if (leader) report.record(step, r->loss, r->metrics, wait);
  }
  if (leader) report.finish();
  // (A placed step under replicas runs through the pipeline too, but nobody asked for one.)
  if (leader && t.pipelined() && pipelineStages > 0)
    fmt::print("pipeline: {} stages x {} micro-batches ({}): the devices idled {:.1f}% of the time (the bubble; "
               "fill-drain model (N-1)/(M+N-1) = {:.1f}%){}\n",
               pipelineStages, *accumulate, pipelineScheduleName(schedule), 100 * t.pipelineBubble(),
               100 * fillDrainBubble(pipelineStages, static_cast<int>(*accumulate)),
               t.backend() == Backend::Cuda && runsOnGpuSimulator()
                   ? "; on the GPU simulator these are the host's times of the simulation, not a GPU's"
                   : "");
  if (replicas > 1) {  // no silently diverged replicas: compare every rank's parameters with rank 0's
    auto ps = t.params();
    if (!ps) return fail(ps.error());
    uint64_t mine = fingerprint(*ps), root = mine;
    KILN_TRY_OR_FAIL(comm.broadcast(&root, sizeof root, 0, "rank 0's parameter fingerprint"));
    if (mine != root)
      return fail(Error(fmt::format("rank {}: parameters differ from rank 0's after step {}: the replicas diverged",
                                    rank, t.stepCount())));
    KILN_TRY_OR_FAIL(comm.barrier("the final parameter check"));
    if (leader) fmt::print("replicas: all {} hold the same parameters (fnv1a64 {:016x})\n", replicas, root);
  }
  if (!leader) return kExitOk;
  if (auto dir = args.get("--save")) {
    if (Status s = t.save(*dir); !s.ok()) return fail(s.error());
    fmt::print("saved step {} to {}\n", t.stepCount(), *dir);
  }
  if (auto plot = args.get("--plot")) {
    if (Status s = plotLoss(*plot, report.records()); !s.ok()) return fail(s.error());
  }
  return kExitOk;
}

}  // namespace

Command trainCommand() {
  Command c{"train", "train a loss function's parameters on .npy data (forward + grad + update in one step)",
            "kiln train FILE --params NAME[=INIT.npy],... --data NAME=PATH.npy,... --batch B --steps N --lr LR [flags]",
            "The entry function takes parameters and data and returns a scalar loss first (then scalar\n"
            "metrics, e.g. accuracy). Each step runs forward, gradient and optimizer update as one compiled\n"
            "function on a batch of B samples: each --data array is cut along axis 0 and shuffled per epoch\n"
            "with --seed (a last partial batch is dropped). The arrays (one .npy file each, or shards a glob\n"
            "pattern names, concatenated) are memory-mapped and batched on a background thread, --prefetch\n"
            "batches ahead of the step; the summary says how long the steps waited for input. Axis 0 of\n"
            "every data parameter is the batch, so the batch size written in FILE is only a default.\n"
            "Parameters without INIT start Glorot-uniform (rank >= 2) or zero (biases). --steps counts\n"
            "this run's updates; --resume DIR continues from a checkpoint's step count, parameters and\n"
            "optimizer state exactly. Under `mpirun -np N` (or with --replicas N) the N ranks train\n"
            "data-parallel: rank 0's parameters are broadcast, each rank takes batch / N samples of every\n"
            "global batch, gradients are averaged across ranks before each update, and rank 0 alone\n"
            "prints, logs and saves. --devices N trains a function placed across devices ({device = K}\n"
            "on its ops) on N devices, each gradient computed where its forward op ran (--split places a\n"
            "function without placement across them by compute). --pipeline-stages N --micro-batches M\n"
            "pipelines each batch's M micro-batches through N devices (GPipe or 1F1B, --schedule) and\n"
            "reports the bubble; the updates equal --accumulate M's. See\n"
            "docs/training.md and docs/parallelism.md.",
            {{"--params", "LIST", "parameters to train, NAME or NAME=INIT.npy, comma-separated"},
             {"--data", "LIST", "data parameters, NAME=PATH.npy, comma-separated (axis 0: samples); a glob pattern (x_*.npy) names shards"},
             {"--batch", "B", "samples per update"},
             {"--prefetch", "N", "batches the input pipeline reads ahead on its own thread (default 2)"},
             {"--steps", "N", "updates to run"},
             {"--optimizer", "NAME", "sgd (default), momentum, nesterov, adam or adamw"},
             {"--lr", "LR", "learning rate"},
             {"--accumulate", "K", "split each batch into K micro-batches whose gradients are averaged"},
             {"--backend", "NAME", "interp, cpu, cuda or auto (default)"},
             {"--entry", "NAME", "the loss function (default: @main, else the first)"},
             {"--save", "DIR", "write parameters, optimizer state and step count to DIR at the end (atomically)"},
             {"--resume", "DIR", "start from a checkpoint written by --save"},
             {"--log", "PATH.csv", "write step, loss, metrics, samples/s and elapsed seconds per step"},
             {"--plot", "PATH", "draw the loss curve with gnuplot (.svg or .png)"},
             {"--seed", "S", "seed of the shuffles and the initial parameters (default 0)"},
             {"--replicas", "N", "data-parallel over N local ranks: runs itself under mpirun -np N (docs/training.md)"},
             bucketBytesFlag(),
             devicesFlag(),
             splitFlag(),
             {"--pipeline-stages", "N", "pipeline parallelism: the model on N devices (split by compute unless placed)"},
             {"--micro-batches", "M", "with --pipeline-stages: each batch in M micro-batches pipelined through the stages"},
             {"--schedule", "NAME", "with --pipeline-stages: gpipe (fill-drain, the default) or 1f1b"},
             {"--collective-timeout", "SECONDS",
              "a collective (MPI or NCCL) stalled this long means a rank died: abort all (default 300)"},
             {"--print-step", "",
              "print the step function (forward + grad + update) instead of training, e.g. for kiln explain or kiln "
              "bench; with --replicas N, one of N ranks' data-parallel step"},
             {"-o", "FILE", "with --print-step: write it to FILE"}},
            nullptr};
  c.run = [c](const Args& args) { return run(c, args); };
  return c;
}

}  // namespace kiln::cli
