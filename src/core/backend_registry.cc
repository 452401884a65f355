#include "backend_registry.h"

#include <algorithm>

namespace dlock::detail {

// backend_list.inc is written by the build: one DLOCK_BACKEND(name) per backend compiled in.
#define DLOCK_BACKEND(name) void register_##name(BackendRegistry& registry);
#include "backend_list.inc"
#undef DLOCK_BACKEND

const BackendEntry* BackendRegistry::find(std::string_view scheme) const {
  for (const BackendEntry& entry : entries_) {
    if (std::find(entry.schemes.begin(), entry.schemes.end(), scheme) != entry.schemes.end()) {
      return &entry;
    }
  }
  return nullptr;
}

const BackendRegistry& backend_registry() {
  static const BackendRegistry registry = [] {
    BackendRegistry built;
#define DLOCK_BACKEND(name) register_##name(built);
#include "backend_list.inc"
#undef DLOCK_BACKEND
    return built;
  }();
  return registry;
}

}  // namespace dlock::detail
