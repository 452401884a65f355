// The backends built into this library, by URL scheme. Each backend's folder defines one
// register_<name>(BackendRegistry&) function; the build lists the folders it compiled
// (DLOCK_WITH_<NAME>) and dlock::open() asks the registry, so that nothing outside a
// backend's folder names its types.
#ifndef DLOCK_SRC_CORE_BACKEND_REGISTRY_H_
#define DLOCK_SRC_CORE_BACKEND_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>
#include <dlock/open.h>

namespace dlock::detail {

struct BackendEntry {
  std::vector<std::string_view> schemes;  // "zk"; "postgres", "postgresql"
  std::string_view url_form;              // for messages: "zk://host:port[,host:port...][/chroot]"
  // Opens the backend named by `url` (its scheme is one of `schemes`). Throws dlock::Error.
  std::function<std::shared_ptr<Backend>(std::string_view url, const OpenOptions& options)> open;
};

class BackendRegistry {
 public:
  void add(BackendEntry entry) { entries_.push_back(std::move(entry)); }
  // The entry for `scheme`, or null.
  const BackendEntry* find(std::string_view scheme) const;
  const std::vector<BackendEntry>& entries() const noexcept { return entries_; }

 private:
  std::vector<BackendEntry> entries_;
};

// Every backend compiled in, registered once.
const BackendRegistry& backend_registry();

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_BACKEND_REGISTRY_H_
