// placeDevices: read the devices written on ops, propagate them to the others (forward from
// operands, then backward from users, to a fixed point), then write them all down and insert the
// transfers the crossings need.
#include "passes/placement.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

constexpr int kUnplaced = -1;

Error atOp(const Op& op, const std::string& message) { return Error(std::string(op.name()) + ": " + message, op.loc()); }

// The op of `body` that holds `op` (itself, or the map or while whose region it sits in).
Op* topLevel(Op* op, const Block& body) {
  while (op->parentBlock() != &body) op = op->parentOp();
  return op;
}

bool isTopLevelValue(const Value* v, const Block& body) {
  return v->definingOp() ? v->definingOp()->parentBlock() == &body : v->parentBlock() == &body;
}

class Placer {
 public:
  Placer(Function& f, int devices) : f_(f), body_(f.body()), devices_(devices) {
    for (const auto& op : body_.ops())
      if (op.get() != body_.terminator()) ops_.push_back(op.get());
  }

  Status run() {
    KILN_TRY(readWritten());
    propagate();
    KILN_TRY(checkTransfers());
    for (Op* op : ops_)
      if (op->kind() != OpKind::Transfer) op->setAttr(kDeviceAttr, Attr(int64_t{opDevice_[op]}));
    insertTransfers();
    return {};
  }

 private:
  Status checkIndex(const Op& op, int64_t device, std::string_view what) {
    if (device < 0) return atOp(op, std::string(what) + " " + std::to_string(device) + " is not a device index (0, 1, ...)");
    if (devices_ > 0 && device >= devices_)
      return atOp(op, std::string(what) + " " + std::to_string(device) + " does not exist: there " +
                          (devices_ == 1 ? "is 1 device (0)" : "are " + std::to_string(devices_) + " devices (0 to " +
                                                                   std::to_string(devices_ - 1) + ")"));
    return {};
  }

  // The devices written in the text: `device` attributes and transfers' destinations.
  Status readWritten() {
    for (Op* op : ops_) {
      opDevice_[op] = kUnplaced;
      for (size_t r = 0; r < op->numRegions(); ++r) {
        Status inside;
        walkOps(*op->region(r), [&](const Op* inner) {
          if (inside && (inner->findAttr(kDeviceAttr) || inner->kind() == OpKind::Transfer))
            inside = atOp(*inner, "a map or while body runs where its map or while does: place the " +
                                      std::string(op->name()) + " instead");
        });
        KILN_TRY(inside);
      }
      if (op->kind() == OpKind::Transfer) {
        int64_t from = op->intAttr("from"), to = op->intAttr("to");
        KILN_TRY(checkIndex(*op, from, "from device"));
        KILN_TRY(checkIndex(*op, to, "to device"));
        if (from == to) return atOp(*op, "a transfer from device " + std::to_string(from) + " to itself");
        if (const Attr* d = op->findAttr(kDeviceAttr); d && d->getInt() != to)
          return atOp(*op, "a transfer runs on its destination, device " + std::to_string(to) + ", not on device " +
                               std::to_string(d->getInt()));
        opDevice_[op] = static_cast<int>(to);
      } else if (const Attr* d = op->findAttr(kDeviceAttr)) {
        KILN_TRY(checkIndex(*op, d->getInt(), "device"));
        opDevice_[op] = static_cast<int>(d->getInt());
      }
    }
    for (Value* p : f_.params()) paramDevice_[p] = kUnplaced;
    return {};
  }

  int deviceOf(const Value* v) const {
    if (const Op* def = v->definingOp()) {
      auto it = opDevice_.find(def);
      return it == opDevice_.end() ? kUnplaced : it->second;
    }
    auto it = paramDevice_.find(v);
    return it == paramDevice_.end() ? kUnplaced : it->second;
  }

  // Where the top-level op using `v` wants it: a transfer on its source device, any other op on
  // its own. The return wants nothing.
  int wantedBy(Op* user) const {
    user = topLevel(user, body_);
    if (user == body_.terminator()) return kUnplaced;
    return user->kind() == OpKind::Transfer ? static_cast<int>(user->intAttr("from")) : opDevice_.at(user);
  }

  int firstWanted(const Value* v) const {
    for (const Use& use : v->uses())
      if (int d = wantedBy(use.user); d != kUnplaced) return d;
    return kUnplaced;
  }

  // Forward in program order: an op goes where its first placed operand is; one that reads only
  // parameters (and constants) on the default device, 0. Then backward: constants, and ops that
  // read only constants, go where their first user is (each device computes its own rather than
  // receive them), and parameters likewise.
  void propagate() {
    std::unordered_map<const Op*, bool> constantOnly;
    for (Op* op : ops_) {
      bool fromConstants = true;
      for (const Value* v : op->operands()) {
        const Op* def = v->definingOp();
        fromConstants = fromConstants && def && constantOnly[def];
      }
      constantOnly[op] = fromConstants && op->numRegions() == 0;
      if (opDevice_[op] != kUnplaced) continue;
      for (const Value* v : op->operands())
        if (int d = deviceOf(v); d != kUnplaced) {
          opDevice_[op] = d;
          break;
        }
      if (opDevice_[op] == kUnplaced && !constantOnly[op]) opDevice_[op] = 0;
    }
    for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
      if (opDevice_[*it] != kUnplaced) continue;
      int wanted = kUnplaced;
      for (const Value* r : (*it)->results())
        if (wanted == kUnplaced) wanted = firstWanted(r);
      opDevice_[*it] = wanted == kUnplaced ? 0 : wanted;
    }
    for (auto& [param, device] : paramDevice_)
      if (device == kUnplaced) device = std::max(0, firstWanted(param));
  }

  Status checkTransfers() const {
    for (Op* op : ops_) {
      if (op->kind() != OpKind::Transfer) continue;
      int from = static_cast<int>(op->intAttr("from")), at = deviceOf(op->operand(0));
      if (from != at)
        return atOp(*op, "a transfer from device " + std::to_string(from) + ", but its operand is on device " +
                             std::to_string(at));
    }
    return {};
  }

  // Points each use, by an op (or a region inside it) on another device, of a value at a
  // transfer of it to that device, made before the first such op.
  void insertTransfers() {
    for (Op* op : ops_)
      if (op->kind() != OpKind::Transfer) redirectOperands(*op, *op, opDevice_[op]);
  }

  // `user`'s operands, and those of the ops in its regions, that live on another device than
  // `to`: each replaced by its copy on `to` (made before `at`, the top-level op holding `user`).
  void redirectOperands(Op& user, Op& at, int to) {
    for (size_t i = 0; i < user.numOperands(); ++i) {
      Value* v = user.operand(i);
      if (isTopLevelValue(v, body_) && deviceOf(v) != to) user.setOperand(i, copyOn(v, to, at));
    }
    for (size_t r = 0; r < user.numRegions(); ++r)
      for (const auto& inner : user.region(r)->ops()) redirectOperands(*inner, at, to);
  }

  // `v` on device `to`, made once and before `at`: a transfer, or for a constant or an iota a
  // copy of it made there.
  Value* copyOn(Value* v, int to, Op& at) {
    Value*& copy = moved_[{v, to}];
    if (copy) return copy;
    std::string name = v->name().empty() ? "" : v->name() + ".d" + std::to_string(to);
    const Op* def = v->definingOp();
    if (def && def->numOperands() == 0 && def->numRegions() == 0) {
      Op* made = body_.insertBefore(&at, Op::create(def->kind(), {}, {v->type()}, def->attrs(), def->loc()));
      made->setAttr(kDeviceAttr, Attr(int64_t{to}));
      made->result()->setName(name);
      copy = made->result();
    } else {
      copy = insertOpBefore(at, OpKind::Transfer, {v}, {{"from", Attr(deviceOf(v))}, {"to", Attr(to)}}, name);
    }
    opDevice_[copy->definingOp()] = to;
    return copy;
  }

  Function& f_;
  Block& body_;
  int devices_;
  std::vector<Op*> ops_;  // top level, without the return, in program order
  std::unordered_map<const Op*, int> opDevice_;
  std::unordered_map<const Value*, int> paramDevice_;
  std::map<std::pair<const Value*, int>, Value*> moved_;  // (value, device) -> its copy there
};

}  // namespace

bool isPlaced(const Function& f) {
  for (const auto& op : f.body().ops())
    if (op->findAttr(kDeviceAttr) || op->kind() == OpKind::Transfer) return true;
  return false;
}

int deviceOf(const Op& op) {
  if (op.kind() == OpKind::Transfer) return static_cast<int>(op.intAttr("to"));
  const Attr* d = op.findAttr(kDeviceAttr);
  return d ? static_cast<int>(d->getInt()) : 0;
}

Status placeDevices(Function& f, int devices) { return Placer(f, devices).run(); }

PassResult place(Module& module, PassContext&) {
  bool changed = false;
  for (const auto& f : module.functions()) {
    if (!isPlaced(*f)) continue;
    KILN_TRY(placeDevices(*f));
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
