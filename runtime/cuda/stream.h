// RAII handles for a stream and an event on the current context. They are created after a Device
// exists (the driver is loaded then) and destroyed with the context current.
#pragma once

#include <cuda.h>

#include "ir/status.h"

namespace kiln::cuda {

class Stream {
 public:
  static Expected<Stream> create();
  Stream(Stream&& o) noexcept : stream_(o.stream_) { o.stream_ = nullptr; }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  CUstream get() const { return stream_; }
  // Waits for everything queued; `after` names what was queued last, for the error message
  // (an asynchronous fault surfaces here: "cuStreamSynchronize failed after k3_row_softmax: ...").
  Status synchronize(std::string_view after = {}) const;

 private:
  explicit Stream(CUstream s) : stream_(s) {}
  CUstream stream_ = nullptr;
};

// An event for timing (CU_EVENT_DEFAULT) or only ordering streams (CU_EVENT_DISABLE_TIMING, which
// records and waits faster).
class Event {
 public:
  static Expected<Event> create(unsigned flags = CU_EVENT_DEFAULT);
  Event(Event&& o) noexcept : event_(o.event_) { o.event_ = nullptr; }
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  CUevent get() const { return event_; }
  Status record(CUstream stream) const;
  // Milliseconds between `start` and this event, both recorded and complete (synchronises).
  Expected<float> millisecondsSince(const Event& start) const;

 private:
  explicit Event(CUevent e) : event_(e) {}
  CUevent event_ = nullptr;
};

}  // namespace kiln::cuda
