// Checkpoint directories: fsync'ed files in DIR.tmp, renamed into place (POSIX rename is atomic
// within a file system; the old DIR is moved aside first because rename cannot replace a
// non-empty directory).
#include "runtime/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/npy.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

Error ioError(const std::string& what, const std::string& path) {
  return Error("cannot " + what + " " + path + ": " + std::strerror(errno));
}

Status writeSynced(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ioError("create", path);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = ioError("write", path);
      ::close(fd);
      return e;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Error e = ioError("fsync", path);
    ::close(fd);
    return e;
  }
  if (::close(fd) != 0) return ioError("close", path);
  return Status();
}

Status syncDirectory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ioError("open", path);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return ioError("fsync", path);
  return Status();
}

bool validName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

}  // namespace

Status writeCheckpoint(const std::string& dir, const Checkpoint& ckpt) {
  std::string path = fs::path(dir).lexically_normal().string();
  if (!path.empty() && path.back() == '/') path.pop_back();
  std::string tmp = path + ".tmp", old = path + ".old";
  std::error_code ec;
  fs::remove_all(tmp, ec);  // a previous run killed while saving
  if (!fs::create_directories(tmp, ec) && ec) return Error("cannot create " + tmp + ": " + ec.message());
  std::ostringstream manifest;
  manifest << "kiln-checkpoint 1\nstep " << ckpt.step << "\noptimizer " << ckpt.optimizer << "\n";
  for (const auto& [name, tensor] : ckpt.tensors) {
    if (!validName(name)) return Error("checkpoint: invalid tensor name '" + name + "'");
    KILN_TRY(writeSynced(tmp + "/" + name + ".npy", encodeNpy(tensor)));
    manifest << "tensor " << name << " " << tensor.type().str() << "\n";
  }
  KILN_TRY(writeSynced(tmp + "/" + kCheckpointManifest, manifest.str()));
  KILN_TRY(syncDirectory(tmp));
  fs::remove_all(old, ec);
  if (fs::exists(path)) {
    fs::rename(path, old, ec);
    if (ec) return Error("cannot move " + path + " aside: " + ec.message());
  }
  fs::rename(tmp, path, ec);
  if (ec) return Error("cannot rename " + tmp + " to " + path + ": " + ec.message());
  fs::path parent = fs::path(path).parent_path();
  KILN_TRY(syncDirectory(parent.empty() ? "." : parent.string()));
  fs::remove_all(old, ec);
  return Status();
}

Expected<Checkpoint> readCheckpoint(const std::string& dir) {
  std::string manifestPath = dir + "/" + kCheckpointManifest;
  std::ifstream in(manifestPath);
  if (!in) return Error("cannot read checkpoint " + dir + ": no " + kCheckpointManifest + " there");
  Checkpoint ckpt;
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (lineNo == 1) {
      if (line != "kiln-checkpoint 1") return Error(manifestPath + ":1: not a kiln checkpoint manifest");
    } else if (key == "step") {
      if (!(words >> ckpt.step) || ckpt.step < 0) return Error(manifestPath + ":" + std::to_string(lineNo) + ": bad step count");
    } else if (key == "optimizer") {
      words >> ckpt.optimizer;
    } else if (key == "tensor") {
      std::string name;
      words >> name;
      if (!validName(name)) return Error(manifestPath + ":" + std::to_string(lineNo) + ": bad tensor name");
      auto t = readNpy(dir + "/" + name + ".npy");
      if (!t) return t.error();
      ckpt.tensors.emplace_back(name, std::move(*t));
    } else if (!key.empty()) {
      return Error(manifestPath + ":" + std::to_string(lineNo) + ": unknown entry '" + key + "'");
    }
  }
  if (lineNo == 0) return Error(manifestPath + ": empty manifest");
  return ckpt;
}

}  // namespace kiln
