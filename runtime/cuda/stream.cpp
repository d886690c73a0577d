// Stream and Event handles (stream.h).
#include "runtime/cuda/stream.h"

#include "runtime/cuda/driver.h"

namespace kiln::cuda {

Expected<Stream> Stream::create() {
  CUstream s = nullptr;
  // Non-blocking: kiln's work never serialises with the legacy default stream of other code.
  KILN_CU(cuStreamCreate, "", &s, CU_STREAM_NON_BLOCKING);
  return Stream(s);
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (stream_) api().cuStreamDestroy(stream_);
    stream_ = o.stream_;
    o.stream_ = nullptr;
  }
  return *this;
}

Stream::~Stream() {
  if (stream_) api().cuStreamDestroy(stream_);
}

Status Stream::synchronize(std::string_view after) const {
  std::string what = after.empty() ? std::string() : "after " + std::string(after);
  return check(api().cuStreamSynchronize(stream_), "cuStreamSynchronize", what);
}

Expected<Event> Event::create(unsigned flags) {
  CUevent e = nullptr;
  KILN_CU(cuEventCreate, "", &e, flags);
  return Event(e);
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (event_) api().cuEventDestroy(event_);
    event_ = o.event_;
    o.event_ = nullptr;
  }
  return *this;
}

Event::~Event() {
  if (event_) api().cuEventDestroy(event_);
}

Status Event::record(CUstream stream) const { return check(api().cuEventRecord(event_, stream), "cuEventRecord"); }

Expected<float> Event::millisecondsSince(const Event& start) const {
  KILN_CU(cuEventSynchronize, "", event_);
  float ms = 0;
  KILN_CU(cuEventElapsedTime, "", &ms, start.event_, event_);
  return ms;
}

}  // namespace kiln::cuda
