// Cutting a placed function (passes/placement.h) into stages: functions of one device each that
// run start to finish without waiting for another device, joined by the transfers between them.
//
// An op's stage is (its device, how many transfers the longest path from the parameters to it
// crosses). Every edge then goes to a later stage or stays inside one, so the stages form an
// acyclic graph, whatever the placement: a training step whose forward pass crosses 0 -> 1 and
// whose backward pass crosses back is three stages, (0, 0), (1, 1), (0, 2). A device runs its
// stages in order; different devices run at once as their inputs arrive.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kiln::passes {

// Where a stage's input, or the placed function's result, comes from.
struct StageSource {
  int stage = -1;         // the stage computing it, or -1 for the placed function's parameter `index`
  int index = 0;          // that stage's result index, or the parameter index
  bool transfer = false;  // it lives on another device and is copied to the stage's device
  int from = 0;           // the device it lives on
};

struct Stage {
  int device = 0;
  int level = 0;                     // transfers crossed on the longest path to it
  Function* function = nullptr;      // in Partition::module, named "<f>.d<device>.s<level>"
  std::vector<StageSource> inputs;   // one per parameter of `function`
};

struct Partition {
  std::unique_ptr<Module> module;    // owns the stage functions
  std::vector<Stage> stages;         // by level, then device: each stage's sources come earlier
  std::vector<StageSource> results;  // one per result of the placed function
  int devices = 1;                   // 1 + the highest device used
};

// The stages of `placed` (placeDevices must have run on it; its transfers become the edges and
// no stage function holds one). The stage functions carry no `device` attributes.
Expected<Partition> partitionByDevice(const Function& placed);

}  // namespace kiln::passes
