// Found with dl_iterate_phdr: the loaded object whose segments contain this function, then its
// PT_NOTE segments' NT_GNU_BUILD_ID note. Computed once per process (a few microseconds).
#include "codegen/build_identity.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace kiln::codegen {

namespace {

struct Search {
  uintptr_t address;
  std::string id;
};

int visit(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum && !holds; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    holds = ph.p_type == PT_LOAD && search->address >= start && search->address < start + ph.p_memsz;
  }
  if (!holds) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const uint8_t* name = p + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        for (uint32_t k = 0; k < note->n_descsz; ++k) search->id += fmt::format("{:02x}", desc[k]);
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // the right object, without a build ID
}

}  // namespace

const std::string& buildIdentity() {
  static const std::string id = [] {
    Search search{reinterpret_cast<uintptr_t>(&buildIdentity), ""};
    dl_iterate_phdr(visit, &search);
    if (!search.id.empty()) return "build-id " + search.id;
    Dl_info info;
    struct stat st;
    if (dladdr(reinterpret_cast<void*>(&buildIdentity), &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
      return fmt::format("binary {} bytes, modified {}.{:09}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    return std::string("unknown build");
  }();
  return id;
}

}  // namespace kiln::codegen
