// Placement: which device each op of a function runs on, with an explicit `transfer` wherever a
// value crosses from one device to another (TensorFlow's `with tf.device(...)`, done as a pass).
//
//   %h = matmul %x, %w1 {device = 0}
//   %y = matmul %h, %w2 {device = 1}     # placeDevices inserts %h.d1 = transfer %h {from = 0, to = 1}
//
// An op without a `device` goes where its operands are (the first one placed); one that reads
// only parameters goes on the default device, 0; constants (and ops on constants only) go where
// their first user is, so each device makes its own. A parameter lives where its first user runs. Ops inside a map or while body run where the map or
// while does. partitionByDevice (passes/partition.h) then cuts the placed function into one
// function per device and stage.
#pragma once

#include "ir/ir.h"
#include "passes/pass.h"

namespace kiln::passes {

// True when some top-level op of `f` has a `device` attribute or is a transfer: the function asks
// to run across devices.
bool isPlaced(const Function& f);

// The device a top-level op of a placed function runs on: its `device` attribute (0 without one);
// a transfer's is its destination, `to`.
int deviceOf(const Op& op);

// Gives every top-level op of `f` but its return a `device` attribute and makes every crossing
// explicit: a use of a value on another device reads a `transfer` to the user's device (one per
// value and destination; a constant or iota is made again on that device instead). Errors, at the op: a device at or past `devices` (0: no bound), a
// negative one, a `device` inside a map or while body, a transfer from a device to itself or
// from a device its operand is not on. Running it again changes nothing.
Status placeDevices(Function& f, int devices = 0);

// The registered pass (`kiln opt --passes place`): placeDevices on every function that is placed.
PassResult place(Module& module, PassContext& context);

}  // namespace kiln::passes
